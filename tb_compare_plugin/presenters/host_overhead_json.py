"""Graph-mode host overhead for the overview (``compare/overall``, ``tb-compare --json``): the
``"host_overhead"`` block, the overview's host-overhead row group (unit ``"ms host"``: host time
that runs beside the device's, so the overview's bars and waterfall leave it out) and the hint
note when it is most of a step.  Figures from ``Comparison.host_overhead()``."""
from __future__ import annotations

from ..engines.host_overhead import LABELS

GROUP = "Host Overhead (graph mode)"
UNIT = "ms host"
DOMINATES = 0.5                         # share of the step time above which the hint is given
# (key, label, depth) of the row group, in the order the overview shows it
ROWS = (("total", GROUP, 0), ("framework", LABELS["framework"], 1), ("torchair", LABELS["torchair"], 1),
        ("torchair_python", LABELS["torchair_python"], 2), ("torchair_cpp", LABELS["torchair_cpp"], 2),
        ("ge", LABELS["ge"], 1))


def host_overhead_block(cmp) -> dict:
    """``{"baseline": SIDE|null, "target": SIDE|null, "differences": [...]}``: totals over the chosen
    step or the capture."""
    return cmp.host_overhead().to_dict()


def host_overhead_rows(cmp) -> list:
    """The overview's row group (empty when neither side has graph-mode events); the figures follow
    the comparison's per-step choice like the overview's other rows."""
    ho = cmp.host_overhead()
    if ho.baseline is None and ho.target is None:
        return []
    div = dict(zip(("baseline", "target"), cmp.step_scale().divisors))
    rows = []
    for key, label, depth in ROWS:
        row = {"name": label, "depth": depth, "unit": UNIT, "host_overhead": key}
        vals = {}
        for who in ("baseline", "target"):
            side = getattr(ho, who)
            if side is None:
                row[who] = {"duration_ms": None, "count": None}
                continue
            vals[who] = side.total_ns(key) / 1e6 / div[who]
            row[who] = {"duration_ms": vals[who], "count": len(side.runs)}
        b, t = vals.get("baseline"), vals.get("target")
        row["diff_ms"] = (t - b) if b is not None and t is not None else None
        row["ratio"] = (t / b) if b and t is not None else None
        rows.append(row)
    return rows


def host_overhead_notes(cmp) -> list:
    """The hint: for each side whose host overhead is at least half its step time, how much, and the
    part that moved most between the sides."""
    ho = cmp.host_overhead()
    notes = []
    diffs = ho.differences()
    dom = ho.dominant(DOMINATES)
    if dom:
        parts = []
        for who, share in dom:
            side = getattr(ho, who)
            parts.append(f"{who} {side.total_ns('total') / 1e6:.3f} of {side.step_time_ns / 1e6:.3f} ms step time "
                         f"({share:.0%}, {len(side.runs)} graph runs: framework {side.total_ns('framework') / 1e6:.3f}, "
                         f"TorchAir {side.total_ns('torchair') / 1e6:.3f}, GE {side.total_ns('ge') / 1e6:.3f} ms)")
        text = "Graph-mode host overhead dominates the steps: " + "; ".join(parts)
        if diffs and abs(diffs[0]["diff_ms"]) > 0:
            d = diffs[0]
            n = len(ho.target.runs) or 1
            text += (f". Largest change: {d['label']} {d['diff_ms']:+.3f} ms "
                     f"({d['diff_ms'] / n:+.3f} ms per target graph run)")
        notes.append(text + ".")
    for who in ("baseline", "target"):
        side = getattr(ho, who)
        for w in (side.warnings if side is not None else []):
            notes.append(f"Host overhead ({who}): {w}.")
    return notes


def host_overhead_steps(cmp) -> dict:
    """The Steps view's graph-mode block: ``{"baseline": [STEP]|null, "target": [STEP]|null}``,
    STEP = ``{"step", "graph_runs", "framework_ms", "torchair_ms", "torchair_python_ms",
    "torchair_cpp_ms", "ge_ms"}`` per step of that side's graph runs (``step`` -1: runs outside
    every step); null for a side without graph-mode events."""
    ho = cmp.host_overhead()
    return {who: (None if getattr(ho, who) is None else getattr(ho, who).per_step())
            for who in ("baseline", "target")}
