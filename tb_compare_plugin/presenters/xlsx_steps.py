"""The workbook's step sheets, from the very object the ``compare/steps`` route answers
(``presenters.steps_json.steps_payload``), so the sheets, the route and the CLI agree:

* ``StepCompare`` — per step, the two sides side by side (the i-th step of each side on row i):
  step id, start (ms from the side's first step), duration, the eight breakdown parts and the
  phases (``iteration_gap``, ``fwd_bwd``, ``tail`` and the sub-phases the engine gives), then the
  duration difference; after it, the metrics table: per step-level metric each side's mean, min,
  max, stdev and n over its steps, the difference, the ratio, the noise verdict, the p-value (General
  format) and the rank among the step-level differences; ranked differences first (``top_differences``), the
  rest in the engine's order; a metric within step-to-step noise is greyed.
* ``Efficiency`` — each side's device efficiency (GPU utilization, est. SM efficiency, est.
  achieved occupancy, tensor-core kernel-time ratio, AI Core busy ratio, and any extra figure the
  engine gives) in percent, and the difference in percentage points; then the notes.
"""
from __future__ import annotations

import math

from . import xlsx_style as S
from .cli_text import EFFICIENCY_LABELS, steps_order
from .steps_json import noise_word

STEP_COMPARE, EFFICIENCY_SHEET = "StepCompare", "Efficiency"
BREAKDOWN_HEAD = (("kernel", "Kernel"), ("memcpy", "Memcpy"), ("memset", "Memset"),
                  ("communication", "Communication"), ("runtime", "Runtime"), ("dataloader", "DataLoader"),
                  ("cpu_exec", "CPU Exec"), ("other", "Other"))
PHASE_HEAD = {"iteration_gap": "Iteration Gap", "fwd_bwd": "Forward+Backward", "tail": "Tail",
              "tail_compute": "Tail Compute", "tail_communication": "Tail Communication"}
METRIC_HEAD = ["Metric", *(f"{side} {what}" for side in ("Baseline", "Target")
                           for what in ("Mean(ms)", "Min(ms)", "Max(ms)", "Stdev(ms)", "n")),
               "Diff Mean(ms)", "Ratio", "Noise", "p-value", "Rank"]
METRIC_KINDS = ("text", *(["ms3"] * 4 + ["id"]) * 2, "diff", "rratio", "text", "num", "id")


def phase_keys(steps: dict) -> list[str]:
    """The phase keys of both sides: the three phases first, then the sub-phases as they come."""
    keys = ["iteration_gap", "fwd_bwd", "tail"]
    for side in ("baseline", "target"):
        for st in steps[side]["steps"]:
            keys += [k for k in st.get("phases_ms", {}) if k not in keys]
    return keys


def _step_cells(st: dict | None, phases: list) -> list:
    if st is None:
        return [None] * (3 + len(BREAKDOWN_HEAD) + len(phases))
    b, p = st.get("breakdown_ms") or {}, st.get("phases_ms") or {}
    return [st["step"], st.get("start_ms"), st.get("duration_ms"), *(b.get(k) for k, _ in BREAKDOWN_HEAD),
            *(p.get(k) for k in phases)]


def step_compare_sheet(steps: dict) -> S.SheetData:
    phases = phase_keys(steps)
    side_cols = [("Step", "id", 8), ("Start(ms)", "ms3", 12), ("Duration(ms)", "ms3", 14),
                 *((f"{label}(ms)", "ms3", 13) for _, label in BREAKDOWN_HEAD),
                 *((f"{PHASE_HEAD.get(k, k)}(ms)", "ms3", 16) for k in phases)]
    n = len(side_cols)
    layout = S._layout(STEP_COMPARE, [("Step #", "id", 8), *side_cols, *side_cols,
                                      ("Diff Duration(ms)", "diff", 18)], (1, n), (n + 1, 2 * n))
    bs, ts = steps["baseline"]["steps"], steps["target"]["steps"]
    rows = []
    for i in range(max(len(bs), len(ts))):
        b = bs[i] if i < len(bs) else None
        t = ts[i] if i < len(ts) else None
        diff = (t["duration_ms"] - b["duration_ms"]) if b is not None and t is not None else None
        rows.append([i + 1, *_step_cells(b, phases), *_step_cells(t, phases), diff])
    data = S.SheetData(layout, rows)
    data.blocks.append(metrics_block(steps))
    return data


def metrics_block(steps: dict) -> S.Block:
    rank = {name: i + 1 for i, name in enumerate(steps.get("top_differences") or [])}
    rows, muted = [], []
    for m in steps_order(steps):
        side = [m[s].get(k) for s in ("baseline", "target") for k in ("mean_ms", "min_ms", "max_ms", "stdev_ms", "n")]
        rows.append([m["name"], *side, m.get("diff_ms"), m.get("ratio"), noise_word(m.get("within_noise")),
                     m.get("p_value"), rank.get(m["name"])])
        muted.append(m.get("within_noise") is True)
    return S.Block(METRIC_HEAD, rows, METRIC_KINDS, muted)


EFFICIENCY_LAYOUT = S._layout(EFFICIENCY_SHEET, [("Metric", "text", 30), ("Key", "text", 22),
                                                 ("Baseline(%)", "float", 14), ("Target(%)", "float", 14),
                                                 ("Diff(points)", "float", 14)], (2, 2), (3, 3))


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def efficiency_rows(steps: dict) -> list:
    """[label, key, baseline %, target %, diff in points] per efficiency figure (ratios 0..1 in
    percent; achieved occupancy is a percent already); every key of the issue, then extras."""
    eb, et = steps["baseline"].get("efficiency") or {}, steps["target"].get("efficiency") or {}
    labels = {k: (label, kind) for k, label, kind in EFFICIENCY_LABELS}
    keys = [k for k, _, _ in EFFICIENCY_LABELS[:5]]
    keys += [k for k in dict.fromkeys([*eb, *et]) if k not in keys and (_num(eb.get(k)) or _num(et.get(k)))]
    rows = []
    for k in keys:
        label, kind = labels.get(k, (k.replace("_", " "), "ratio"))
        scale = 1.0 if kind == "percent" else 100.0
        b = eb.get(k) * scale if _num(eb.get(k)) else None
        t = et.get(k) * scale if _num(et.get(k)) else None
        rows.append([label[0].upper() + label[1:], k, b, t, None if b is None or t is None else t - b])
    return rows


def efficiency_sheet(steps: dict) -> S.SheetData:
    data = S.SheetData(EFFICIENCY_LAYOUT, efficiency_rows(steps))
    notes = []
    for side in ("baseline", "target"):
        n = (steps[side].get("efficiency") or {}).get("notes")
        notes += [f"{side}: {x}" for x in (n if isinstance(n, list) else [n] if n else [])]
    if notes:
        data.blocks.append((["Notes"], [[x] for x in notes]))
    return data


def steps_sheets(cmp, notes: list) -> list[S.SheetData]:
    """StepCompare and Efficiency; a pair whose steps cannot be compared gets a note instead."""
    from .steps_json import steps_payload
    try:
        steps = steps_payload(cmp)
    except ValueError as e:
        notes.append(f"The step sheets were not written: {e}")
        return []
    out = [step_compare_sheet(steps), efficiency_sheet(steps)]
    notes.extend(f"Steps: {n}" for n in steps.get("notes") or [])
    return out
