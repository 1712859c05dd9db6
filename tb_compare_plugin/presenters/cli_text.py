"""Plain-text overview table for the terminal: 80 columns by default, more with --wide.

A name longer than its column is shortened in the middle with an ellipsis (its start and its
end both stay readable: ``allreduce [Group 0 Co…unication]``), never cut mid-word at the end;
with --wide the collective column grows to the longest name, so names are whole."""
from __future__ import annotations

import math


def _ms(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:,.3f}"


def _num(v) -> str:
    return "-" if v is None else f"{v:,.3f}"


def _ratio(r) -> str:
    if r is None:
        return "new" if r is None else "-"
    return f"{r:.2f}x"


def fit(name: str, width: int) -> str:
    """``name`` in at most ``width`` characters: whole, or its start and end around "…"."""
    if len(name) <= width:
        return name
    if width < 2:
        return name[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return name[:head] + "…" + (name[-tail:] if tail else "")


def overview_table(payload: dict, wide: bool = False, color: bool = False) -> str:
    b, t = payload["baseline"], payload["target"]
    lines = []
    title = (f"Baseline: {b.get('run') or ''}/{b.get('worker')} ({b.get('device')}, {b.get('format')})\n"
             f"Target:   {t.get('run') or ''}/{t.get('worker')} ({t.get('device')}, {t.get('format')})")
    lines.append(title)
    name_w = 34 if not wide else 46
    head = f"{'Metric':<{name_w}}{'Baseline ms':>12}{'Target ms':>12}{'Diff ms':>12}{'Ratio':>8}"
    if wide:
        head += f"{'Base n':>9}{'Target n':>9}"
    lines.append(head)
    lines.append("-" * len(head))
    red, green, reset = ("\x1b[31m", "\x1b[32m", "\x1b[0m") if color else ("", "", "")
    for row in payload.get("overall_metrics", []):
        name = "  " * int(row.get("depth", 0)) + str(row["name"])
        if len(name) > name_w - 1:
            name = name[: name_w - 2] + "…"
        bd, td = row["baseline"].get("duration_ms"), row["target"].get("duration_ms")
        diff = row.get("diff_ms")
        ratio = row.get("ratio")
        rs = "-" if ratio is None and not bd else (_ratio(ratio) if ratio is not None else "new")
        line = f"{name:<{name_w}}{_ms(bd):>12}{_ms(td):>12}{_ms(diff):>12}{rs:>8}"
        if wide:
            bc, tc = row["baseline"].get("count"), row["target"].get("count")
            line += f"{'' if bc is None else bc:>9}{'' if tc is None else tc:>9}"
        if color and diff and abs(diff) > 1e-9 and row.get("depth", 0) <= 1:
            line = (red if diff > 0 else green) + line + reset
        lines.append(line)
    mem = payload.get("memory") or {}
    mb = (mem.get("baseline") or {}).get("peak_reserved_gb")
    mt = (mem.get("target") or {}).get("peak_reserved_gb")
    if mb or mt:
        d = (mt or 0) - (mb or 0)
        lines.append(f"{'Mem Usage (peak reserved, GB)':<{name_w}}{_num(mb):>12}{_num(mt):>12}{_num(d):>12}"
                     f"{(_ratio(mt / mb) if mb and mt is not None else '-'):>8}")
    bw = payload.get("bandwidth") or {}
    for key, label in (("sdma_gbps", "SDMA Bandwidth (GB/s)"), ("rdma_gbps", "RDMA Bandwidth (GB/s)")):
        vb, vt = (bw.get("baseline") or {}).get(key), (bw.get("target") or {}).get(key)
        if vb or vt:
            lines.append(f"{label:<{name_w}}{_num(vb):>12}{_num(vt):>12}{_num((vt or 0) - (vb or 0)):>12}{'':>8}")
    comm = payload.get("communication") or []
    if comm:
        names = [_collective_name(row, comm) for row in comm]
        if wide:                                        # whole names: the column grows
            name_w = max(name_w, max(len(n) for n in names) + 1)
        lines.append("")
        chead = f"{'Collective':<{name_w}}{'Baseline ms':>12}{'Target ms':>12}{'Diff ms':>12}{'Ratio':>8}"
        lines.append(chead)
        lines.append("-" * len(chead))
        for row, name in zip(comm, names):
            bd, td = (row.get("baseline") or {}).get("total_ms"), (row.get("target") or {}).get("total_ms")
            ratio = row.get("ratio")
            lines.append(f"{_fit_collective(row, name, name_w - 1):<{name_w}}{_ms(bd):>12}{_ms(td):>12}{_ms(row.get('diff_ms')):>12}"
                         f"{(_ratio(ratio) if ratio is not None else '-'):>8}")
    for n in payload.get("notes", []):
        lines.append(f"note: {n}")
    return "\n".join(lines)


def _collective_name(row: dict, comm: list) -> str:
    if row.get("aggregate") or not row.get("group"):
        return row["name"]
    if any(r.get("aggregate") for r in comm):
        return f"  {row['group']}"
    return f"{row['name']} [{row['group']}]"


def _fit_collective(row: dict, name: str, width: int) -> str:
    """``name [group]`` in ``width``: the group is shortened first (the op name stays whole
    while the group keeps 6 characters), else the whole in the middle."""
    if len(name) <= width or not name.endswith("]") or " [" not in name:
        return fit(name, width)
    op = name[:name.rindex(" [")]
    room = width - len(op) - 3
    group = name[len(op) + 2:-1]
    return f"{op} [{fit(group, room)}]" if room >= 6 else fit(name, width)


# ----------------------------------------------------------------------------- --steps

NOISE_MARKS = {True: "~", False: "*", None: "?"}
NOISE_LEGEND = "* beyond step-to-step noise, ~ within noise, ? noise unknown (one step a side)"
EFFICIENCY_LABELS = (("gpu_utilization", "GPU utilization", "ratio"),
                     ("sm_efficiency", "est. SM efficiency", "ratio"),
                     ("achieved_occupancy", "est. achieved occupancy", "percent"),
                     ("tensor_core_ratio", "tensor-core kernel time", "ratio"),
                     ("ai_core_utilization", "AI Core busy", "ratio"),
                     ("cube_utilization", "cube utilization", "ratio"),
                     ("vector_utilization", "vector utilization", "ratio"))


def _short(v) -> str:
    """A millisecond figure with about four significant digits."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    return f"{v:,.1f}" if a >= 1000 else f"{v:.2f}" if a >= 100 else f"{v:.3f}" if a >= 0.01 or a == 0 else f"{v:.4f}"


def _short_ratio(r: float) -> str:
    """A ratio in at most five characters where it can be: 0.64x, 10.4x, 123x."""
    return f"{r:.2f}x" if abs(r) < 10 else f"{r:.1f}x" if abs(r) < 100 else f"{r:,.0f}x"


def _stat_text(s: dict) -> str:
    if not s or s.get("mean_ms") is None:
        return "-"
    mean, sd = _short(s["mean_ms"]), s.get("stdev_ms")
    places = len(mean.rsplit(".", 1)[1]) if "." in mean else 0       # the stdev to the mean's precision
    return f"{mean} ± {f'{sd:,.{places}f}' if sd is not None else '?'} ({s.get('n', 0)})"


def _signed(v) -> str:
    if v is None:
        return "-"
    t = _short(v)
    return t if t.startswith("-") or t.strip("0.,") == "" else "+" + t


def steps_order(steps: dict) -> list:
    """The metrics of a steps payload in the order every presenter shows them: the ranked
    step-level differences (``top_differences``) first, then the others in the engine's order."""
    metrics = steps.get("metrics") or []
    by_name = {m["name"]: m for m in metrics}
    top = [by_name[n] for n in steps.get("top_differences") or [] if n in by_name]
    seen = {m["name"] for m in top}
    return top + [m for m in metrics if m["name"] not in seen]


def efficiency_text(eff: dict) -> str:
    """``GPU utilization 85.2%, est. SM efficiency 70.1%, ...`` (figures that exist), or ``-``."""
    parts = []
    for key, label, kind in EFFICIENCY_LABELS:
        v = (eff or {}).get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            parts.append(f"{label} {v:.1f}%" if kind == "percent" else f"{label} {v * 100:.1f}%")
    if parts:
        return ", ".join(parts)
    why = (eff or {}).get("notes")
    why = why[0] if isinstance(why, list) and why else why if isinstance(why, str) else ""
    return f"not available ({' '.join(str(why).split())})" if why else "not available"


def steps_table(steps: dict, wide: bool = False, color: bool = False) -> str:
    """The ``--steps`` table: per step-level metric both sides' mean ± stdev (n) over the steps,
    the difference, the ratio and the noise mark; ranked differences first; then one line per
    side with its device efficiency, and the notes."""
    b, t = steps.get("baseline") or {}, steps.get("target") or {}
    nb, nt = len(b.get("steps") or []), len(t.get("steps") or [])
    lines = [f"Steps: baseline {nb}, target {nt} (per step: mean ± stdev over the steps (n), ms)"]
    rows = steps_order(steps)
    ranked = set(steps.get("top_differences") or [])
    cells = [(m["name"], _stat_text(m.get("baseline")), _stat_text(m.get("target")), _signed(m.get("diff_ms")),
              _short_ratio(m["ratio"]) if m.get("ratio") is not None else "-", NOISE_MARKS.get(m.get("within_noise"), "?"))
             for m in rows]
    name_w = max([len("Metric")] + [len(c[0]) for c in cells]) + 1
    if not wide:
        name_w = min(name_w, 26)
    bw = max([len("Baseline")] + [len(c[1]) for c in cells]) + 1
    tw = max([len("Target")] + [len(c[2]) for c in cells]) + 1
    dw = max([len("Diff")] + [len(c[3]) for c in cells]) + 1
    rw = max([len("Ratio")] + [len(c[4]) for c in cells]) + 1
    if not wide:                        # 80 columns: the name column gives way (names shortened in the middle)
        name_w = max(16, min(name_w, 80 - (bw + tw + dw + rw + 2)))
    head = f"{'Metric':<{name_w}}{'Baseline':>{bw}}{'Target':>{tw}}{'Diff':>{dw}}{'Ratio':>{rw}}  "
    lines += [head, "-" * len(head)]
    red, green, grey, reset = ("\x1b[31m", "\x1b[32m", "\x1b[2m", "\x1b[0m") if color else ("", "", "", "")
    for i, (m, c) in enumerate(zip(rows, cells)):
        if i and rows[i - 1]["name"] in ranked and m["name"] not in ranked:
            lines.append("")                      # the ranked differences, then the rest
        line = f"{fit(c[0], name_w - 1):<{name_w}}{c[1]:>{bw}}{c[2]:>{tw}}{c[3]:>{dw}}{c[4]:>{rw}} {c[5]}"
        d = m.get("diff_ms")
        if color and m.get("within_noise") is True:
            line = grey + line + reset
        elif color and m.get("within_noise") is False and d:
            line = (red if d > 0 else green) + line + reset
        lines.append(line)
    lines.append(NOISE_LEGEND)
    lines.append("")
    import textwrap
    for who, side in (("baseline", b), ("target", t)):
        text = f"Efficiency {who + ':':<10}{efficiency_text(side.get('efficiency'))}"
        lines += [text] if wide else textwrap.wrap(text, 80, subsequent_indent=" " * 21)
    for n in steps.get("notes") or []:
        lines.append(f"note: {n}")
    return "\n".join(lines)
