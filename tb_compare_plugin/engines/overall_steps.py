"""Which rows of a profile one overall breakdown looks at: the whole capture or one step.

A step's *host* window comes from the steps table (ProfilerStep#N op or STEP_TIME).  Device
work launched in step N can run after that window closes (asynchronous launch), so:

* kernels belong to step N when their ``step`` column says so; kernels without a step id
  (e.g. Ascend tasks that are not in kernel_details.csv) are taken when they start inside
  the step's *device window* = the host window widened to cover the step's kernels;
* interval tables (Overlap Analysis, collectives, HCCL tasks, memory records) are taken when
  they start inside the device window.

Without a step every row is selected and ``steps_count`` is the number of steps the capture
holds (at least 1), used for per-step normalisation; ``marked`` says whether the profile has step
markers at all (a side without them covers an unknown number of steps and is never divided).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Selection:
    step: int | None
    steps_count: int
    window: tuple[int, int] | None          # device window (ns) of the chosen step
    kernels: np.ndarray                     # bool masks per table
    comm_ops: np.ndarray
    comm_tasks: np.ndarray
    overlap: np.ndarray
    mem_records: np.ndarray
    next_start: int | None = None           # first device activity of the following step
    marked: bool = True                     # the profile has step markers (steps_count is real)


class StepError(ValueError):
    """The requested step is not in the profile (message lists the valid ones)."""


def _in(start: np.ndarray, window) -> np.ndarray:
    return (start >= window[0]) & (start <= window[1])


def select(profile, step: int | None) -> Selection:
    t = profile.tables
    k, co, ct, ov, mr = t["kernels"], t["comm_ops"], t["comm_tasks"], t["overlap"], t["mem_records"]
    steps = t["steps"]
    n_steps = int(steps["step"].nunique()) if len(steps) else 0
    if step is None:
        return Selection(None, max(1, n_steps), None,
                         np.ones(len(k), bool), np.ones(len(co), bool), np.ones(len(ct), bool),
                         np.ones(len(ov), bool), np.ones(len(mr), bool), marked=n_steps > 0)
    rows = steps[steps["step"] == int(step)]
    kstep = k["step"].to_numpy()
    tagged = kstep == int(step)
    if not len(rows) and not tagged.any():
        valid = ", ".join(str(s) for s in profile.step_ids()) or "none"
        raise StepError(f"step {step} is not in this profile (valid steps: {valid})")
    lo = int(rows["start_ns"].min()) if len(rows) else None
    hi = int(rows["end_ns"].max()) if len(rows) else None
    ks = k["start_ns"].to_numpy()
    ke = ks + k["dur_ns"].to_numpy()
    if tagged.any():
        a, b = int(ks[tagged].min()), int(ke[tagged].max())
        lo = a if lo is None else min(lo, a)
        hi = b if hi is None else max(hi, b)
    window = (lo, hi)
    kmask = tagged | ((kstep < 0) & _in(ks, window))
    return Selection(int(step), 1, window, kmask,
                     _in(co["start_ns"].to_numpy(), window), _in(ct["start_ns"].to_numpy(), window),
                     _in(ov["start_ns"].to_numpy(), window), _in(mr["ts_ns"].to_numpy(), window),
                     _next_step_start(steps, kstep, ks, int(step)))


def _next_step_start(steps, kstep: np.ndarray, ks: np.ndarray, step: int) -> int | None:
    """Start of the next step's device work (its first tagged kernel, else its host window):
    a step's device time runs until the next step begins, so the gap between steps is its Free
    time, as in Ascend's step_trace_time.csv."""
    later = sorted({int(x) for x in steps["step"].to_numpy() if int(x) > step} |
                   {int(x) for x in np.unique(kstep) if int(x) > step})
    if not later:
        return None
    nxt = later[0]
    tagged = kstep == nxt
    if tagged.any():
        return int(ks[tagged].min())
    rows = steps[steps["step"] == nxt]
    return int(rows["start_ns"].min()) if len(rows) else None
