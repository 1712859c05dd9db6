"""Totals of a time range of one side, for the timeline's range selection.

Owns :func:`range_totals`: per kernel class the kernels' time inside the range (each kernel
clipped to it), and by the overview's rules Computing (its union of compute work, or the
profiler's Overlap Analysis), uncovered Communication with its Wait / Transmit split and Free
(the rest of the range), all from the intervals :mod:`timeline_lanes` prepared once.  A range
equal to one step's device window gives that step's Overview / Steps figures.  Pure.
"""
from __future__ import annotations

import numpy as np

from .timeline_lanes import KERNEL_CLASSES, CLASSES


def _clipped_length(iv: tuple, lo: int, hi: int) -> int:
    """Length of disjoint sorted intervals ``iv`` inside [lo, hi)."""
    s, e = iv
    if not len(s) or hi <= lo:
        return 0
    a = int(np.searchsorted(e, lo, side="right"))
    b = int(np.searchsorted(s, hi, side="left"))
    if b <= a:
        return 0
    return int((np.minimum(e[a:b], hi) - np.maximum(s[a:b], lo)).clip(min=0).sum())


def range_totals(profile, lanes, start_ns: int, end_ns: int) -> dict:
    """``{class: ms}`` of [start_ns, end_ns) for one side (see module docstring).

    Keys: the kernel classes (``matmul`` .. ``other``: Σ of their kernels' time in the range),
    ``computing``, ``communication`` (uncovered by computing), ``wait``, ``transmit``
    (= communication − wait), ``free`` (= range − computing − communication) and ``range``."""
    lo, hi = int(start_ns), int(max(end_ns, start_ns))
    out = {c: 0.0 for c in KERNEL_CLASSES}
    ks = lanes.k_start
    if len(ks) and hi > lo:
        a = int(np.searchsorted(lanes.k_maxend, lo, side="right"))
        b = int(np.searchsorted(ks, hi, side="left"))
        s, e, c = ks[a:b], lanes.k_end[a:b], lanes.k_cls[a:b]
        d = (np.minimum(e, hi) - np.maximum(s, lo)).clip(min=0)
        per = np.bincount(c.astype(np.int64), weights=d.astype(np.float64), minlength=len(CLASSES))
        for i, name in enumerate(KERNEL_CLASSES):
            out[name] = float(per[i]) / 1e6
    comp = _clipped_length(lanes.computing, lo, hi)
    unc = _clipped_length(lanes.uncovered, lo, hi)
    wait = _clipped_length(lanes.wait, lo, hi)
    out.update(computing=comp / 1e6, communication=unc / 1e6, wait=wait / 1e6, transmit=(unc - wait) / 1e6,
               free=max(0, hi - lo - comp - unc) / 1e6, range=(hi - lo) / 1e6)
    return out


def step_window(profile, step: int) -> tuple[int, int]:
    """[first, last) ns of ``step``'s device window, the span the overview counts as its E2E Time:
    the profiler's Overlap Analysis intervals of the step when it wrote them (and the device tasks
    are not a database's); else from the step's first device activity (its kernels and collectives)
    to its last and, on a GPU, on to the next step's first device activity when that comes later
    (the gap before the next step is this step's Free Time there).  Raises ``StepError``.  Kept per
    profile and step in the derived cache (every zoom and pan asks for it)."""
    from ..model.derived import derived
    return derived(profile, f"timeline_step:{int(step)}", lambda: _step_window(profile, int(step)))


def _span(df, mask):
    if not len(df) or not mask.any():
        return None
    s = df["start_ns"].to_numpy()[mask]
    e = s + df["dur_ns"].to_numpy()[mask]
    ok = s >= 0
    return (int(s[ok].min()), int(e[ok].max())) if ok.any() else None


def _step_window(profile, step: int) -> tuple[int, int]:
    from .overall_steps import select
    sel = select(profile, step)
    k, ov, co = profile.kernels, profile.overlap, profile.comm_ops
    if len(ov) and not profile.meta.task_types_from_db:
        spans = [_span(ov, sel.overlap)]
    else:
        spans = [_span(k, sel.kernels), _span(co, sel.comm_ops)]
    spans = [x for x in spans if x is not None]
    if not spans:
        lo, hi = sel.window
        return int(lo), int(hi)
    lo, hi = min(x[0] for x in spans), max(x[1] for x in spans)
    if profile.meta.device != "NPU" and sel.next_start is not None and sel.next_start > hi:
        hi = int(sel.next_start)
    return lo, hi
