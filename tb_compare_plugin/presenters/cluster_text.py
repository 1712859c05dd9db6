"""Terminal tables of ``tb-compare cluster``: from the cluster JSON (``ClusterResult.to_dict()``,
docs/cluster.md) to plain text, 80 columns unless ``wide``.

What is printed: the ranks x metrics table (each rank's mean over its steps, in ms; slow ranks
marked ``*``), the slow ranks and the slow links with their reasons, the parallel-strategy hints,
and with a second run the diff summary (slowest rank of each side, which phase regressed) and the
per-rank differences.  A cluster of many ranks prints its slow ranks, the extremes and the
median; the JSON and the workbook hold every rank."""
from __future__ import annotations

import math
import textwrap

# (JSON key stem, short header, long header)
METRICS = (("step_time", "Step", "Step time"), ("computing", "Comp", "Computing"),
           ("communication_not_overlapped", "CommNO", "Comm not overlapped"),
           ("overlapped", "Ovlp", "Overlapped"), ("communication", "Comm", "Communication"),
           ("free", "Free", "Free"), ("wait", "Wait", "Wait"), ("transmit", "Trans", "Transmit"),
           ("preparing", "Prep", "Preparing"), ("bubble", "Bubble", "Bubble"))
LEGEND = ("ms per step (mean over the rank's steps). Step = step time, Comp = computing, CommNO = "
          "communication not overlapped, Ovlp = overlapped, Comm = communication, Trans = transmit, "
          "Prep = preparing; * = a slow rank, - = not in the profile")
DIFF_METRICS = ("computing", "communication_not_overlapped", "free", "wait", "transmit", "preparing")
MOST_ROWS = 24          # ranks listed in the table before it keeps only the telling ones


def num(v, width: int = 7) -> str:
    """A millisecond figure in at most ``width - 1`` characters (about four significant digits)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    for fmt in ("{:.3f}", "{:.2f}", "{:.1f}", "{:.0f}"):
        t = fmt.format(v)
        if len(t) < width and (fmt != "{:.3f}" or a < 10):
            return t
    return f"{v:.3g}"


def signed(v, width: int = 7) -> str:
    t = num(v, width - 1 if v is not None and v > 0 else width)
    return "+" + t if v is not None and v > 0 and t.strip("0.") else t


def per_rank_means(rows: list) -> list:
    """One row per rank: ``rank``, ``worker``, ``steps`` (count) and each metric's mean over
    the rank's steps (None when no step holds it)."""
    by: dict = {}
    for r in rows:
        by.setdefault(r["rank"], []).append(r)
    out = []
    for rank in sorted(by):
        rs = by[rank]
        row = {"rank": rank, "worker": rs[0].get("worker"), "steps": len(rs)}
        for key, _s, _l in METRICS:
            vals = [r.get(f"{key}_ms") for r in rs if r.get(f"{key}_ms") is not None]
            row[f"{key}_ms"] = sum(vals) / len(vals) if vals else None
        out.append(row)
    return out


def _wrap(text: str, indent: str = "  ", wide: bool = False) -> list:
    if wide:
        return [indent + text]
    return textwrap.wrap(text, 80, initial_indent=indent, subsequent_indent=indent + "  ") or [indent]


def _chosen(rows: list, keep: set, key: str, most: int) -> tuple[list, int]:
    """At most ``most`` rows: those whose rank is in ``keep``, then the extremes of ``key``
    (both ends), in rank order; and how many were left out."""
    if len(rows) <= most:
        return rows, 0
    chosen = {r["rank"] for r in rows if r["rank"] in keep}
    ordered = sorted((r for r in rows if r.get(key) is not None), key=lambda r: r[key])
    i = 0
    while len(chosen) < most and i < len(ordered):
        for r in (ordered[-1 - i], ordered[i]):
            if len(chosen) < most:
                chosen.add(r["rank"])
        i += 1
    return [r for r in rows if r["rank"] in chosen], len(rows) - len(chosen)


def ranks_table(d: dict, wide: bool = False, all_ranks: bool = False) -> list:
    rows = per_rank_means(d.get("ranks") or [])
    slow = {s["rank"] for s in d.get("slow_ranks") or []}
    shown, left = (rows, 0) if all_ranks else _chosen(rows, slow, "step_time_ms", MOST_ROWS)
    w = 12 if wide else 7
    label = 2 if wide else 1
    head = f"{'Rank':>6}  " + "".join(f"{m[label]:>{w}}" for m in METRICS)
    lines = [head, "-" * len(head)]
    for r in shown:
        mark = "*" if r["rank"] in slow else " "
        lines.append(f"{r['rank']:>6}{mark} " + "".join(f"{num(r[f'{k}_ms'], w):>{w}}" for k, _s, _l in METRICS))
    if rows and len(rows) > 2:
        med = {k: _median([r[f"{k}_ms"] for r in rows]) for k, _s, _l in METRICS}
        lines.append(f"{'median':>6}  " + "".join(f"{num(med[k], w):>{w}}" for k, _s, _l in METRICS))
    if left:
        lines += _wrap(f"... {left} more ranks (the slow ranks and the extremes of step time are shown; "
                       "--all-ranks, --json or --xlsx for every rank)", wide=wide)
    return lines


def _median(vals: list):
    v = sorted(x for x in vals if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def findings(d: dict, wide: bool = False, who: str = "") -> list:
    """Slow ranks, slow links and hints of one run's JSON."""
    lines = []
    slow = d.get("slow_ranks") or []
    n = (d.get("summary") or {}).get("rank_count") or len({r["rank"] for r in d.get("ranks") or []})
    if slow:
        lines.append(f"{who}Slow ranks ({len(slow)} finding(s)):")
        for s in slow:
            reason = s.get("reason") or ""
            if not reason.startswith(f"rank {s['rank']}"):
                reason = f"rank {s['rank']}: {reason}"
            lines += _wrap(f"{reason} [{s['metric']}, phase {s.get('phase') or '?'}]", wide=wide)
    else:
        why = " (two ranks: no test can tell which of two is abnormal)" if n == 2 else ""
        lines.append(f"{who}Slow ranks: none found{why}")
    links = d.get("slow_links") or []
    if links:
        lines.append(f"{who}Slow links ({len(links)}):")
        for s in links:
            lines += _wrap(s.get("reason") or f"link {s['src_rank']}->{s['dst_rank']} ({s['transport']})", wide=wide)
    else:
        lines.append(f"{who}Slow links: none found" + ("" if d.get("links") else " (the profiles hold no links)"))
    hints = d.get("hints") or []
    if hints:
        lines.append(f"{who}Hints:")
        for h in hints:
            lines += _wrap(f"- {h}", wide=wide)
    return lines


def title(d: dict) -> str:
    s = d.get("summary") or {}
    steps = s.get("steps") or sorted({r["step"] for r in d.get("ranks") or []})
    st = ("no steps" if not steps else f"step {steps[0]}" if len(steps) == 1
          else f"{len(steps)} steps {steps[0]}..{steps[-1]}")
    n = s.get("rank_count") or len({r["rank"] for r in d.get("ranks") or []})
    errs = d.get("errors") or []
    left = f", {len(errs)} left out (see the warnings)" if errs else ""
    return f"Cluster {d.get('run')}: {n} ranks{left}, {st}"


def diff_lines(d: dict, wide: bool = False, all_ranks: bool = False) -> list:
    """The diff summary and the per-rank differences (target - baseline, ms; positive = slower)."""
    ds = d.get("diff_summary") or {}
    other = (d.get("against") or {}).get("run")
    lines = _wrap(f"Against {other}: baseline {d.get('run')} ({ds.get('base_ranks')} ranks), "
                  f"target {other} ({ds.get('target_ranks')} ranks); differences are target - "
                  "baseline, ms (positive = the target is slower)", indent="", wide=wide)

    def slowest(x):
        return "-" if not x else f"rank {x['rank']} (step {num(x.get('step_time_ms'))} ms, own {num(x.get('busy_ms'))} ms)"
    lines.append(f"  slowest rank, baseline: {slowest(ds.get('slowest_base'))}")
    lines.append(f"  slowest rank, target:   {slowest(ds.get('slowest_target'))}")
    lines.append(f"  median step time: {signed(ds.get('step_time_diff_ms'), 12).strip()} ms")
    ph = ds.get("phase_regressed")
    if ph:
        lines.append(f"  phase regressed most: {ph} ({signed(ds.get('phase_regressed_ms'), 12).strip()} ms, medians)")
    else:
        lines.append("  phase regressed: none (no phase's median grew)")
    for key, who in (("only_base_ranks", "baseline"), ("only_target_ranks", "target")):
        if ds.get(key):
            lines += _wrap(f"ranks only in the {who}: {', '.join(map(str, ds[key][:32]))}"
                           f"{' ...' if len(ds[key]) > 32 else ''}", indent="  ", wide=wide)
    rows = d.get("diff") or []
    per = [r for r in rows if r.get("scope") == "rank"]
    agg = [r for r in rows if r.get("scope") != "rank"]
    if all_ranks or len(per) <= MOST_ROWS:
        shown, left = per, 0
    else:                   # the largest step-time differences, then ranks one side lacks
        def size(r):
            d = r.get("step_time_diff_ms")
            return (d is not None, abs(d) if d is not None else 0.0)
        keep = {id(r) for r in sorted(per, key=size, reverse=True)[:MOST_ROWS]}
        shown = [r for r in per if id(r) in keep]
        left = len(per) - len(shown)
    w = 12 if wide else 7
    names = {k: (s if not wide else lng) for k, s, lng in METRICS}
    head = (f"{'Rank':>6} {'Step base':>{w + 2}}{'Step tgt':>{w + 2}}{'Diff':>{w + 1}} "
            + "".join(f"{names[k]:>{w}}" for k in DIFF_METRICS))
    lines += ["", head, "-" * len(head)]
    for r in shown + agg:
        label = str(r["rank"]) if r.get("scope") == "rank" else r.get("scope")
        lines.append(f"{label:>6} {num(r.get('step_time_base_ms'), w + 2):>{w + 2}}{num(r.get('step_time_ms'), w + 2):>{w + 2}}"
                     f"{signed(r.get('step_time_diff_ms'), w + 1):>{w + 1}} "
                     + "".join(f"{signed(r.get(f'{k}_diff_ms'), w):>{w}}" for k in DIFF_METRICS))
    if left:
        lines += _wrap(f"... {left} more ranks (the largest step-time differences are shown; --all-ranks "
                       "or --json)", wide=wide)
    return lines


def cluster_text(d: dict, wide: bool = False, all_ranks: bool = False) -> str:
    """The whole terminal answer of ``tb-compare cluster``."""
    lines = [title(d)]
    lines += ranks_table(d, wide, all_ranks)
    lines += _wrap(LEGEND, indent="", wide=wide)
    lines.append("")
    lines += findings(d, wide)
    other = d.get("against")
    if other:
        lines.append("")
        lines.append(title(other))
        lines += findings(other, wide, who="  ")
        lines.append("")
        lines += diff_lines(d, wide, all_ranks)
    return "\n".join(lines)
