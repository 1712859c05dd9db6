"""The three phases of each step (MindSpore Insight's tuning method), from the events of any format.

Inside a step's window [start, end) (``step_breakdown.step_windows``):

* ``iteration_gap``: from the window start to the first forward device work (the first compute
  kernel / AI Core task).  With the plugin's windows the start is the previous step's end, i.e.
  its last device activity whenever the device (not the host) set the pace; for the first step it
  is the step's start.  Device idle while waiting for data lands here.
* ``fwd_bwd``: from there to the end of the last backward compute kernel.  Backward kernels are
  those launched from the autograd thread (``ops.is_backward``); a profile without that fact
  ends forward+backward at the last compute kernel launched before the step's last
  ``Optimizer.step#`` host range, else at the step's last compute kernel (tail = idle only).
* ``tail``: the rest of the window (optimizer, gradient refresh, collectives, idle), with the
  sub-phases ``tail_compute`` (union of compute kernels in the tail) and ``tail_communication``
  (collectives in the tail not covered by compute).  What is left of the tail is idle.

When the profile's steps table carries the profiler's own FP start / BP end (``fp_start_ns`` /
``bp_end_ns``: MindSpore's step trace), those are the gap end and the forward+backward end of
the step instead (noted).

So iteration_gap + fwd_bwd + tail = the step's duration.  A step without compute kernels is all
gap (noted).  Pure numpy over sorted arrays; loops only over steps.
"""
from __future__ import annotations

import numpy as np

from .kernel_classes import text_flags
from .step_breakdown import Roles, StepWindows, window_lengths

PHASES = ("iteration_gap", "fwd_bwd", "tail")
SUB_PHASES = ("tail_compute", "tail_communication")


def _optimizer_starts(profile) -> np.ndarray:
    ops = profile.ops
    m = text_flags(profile.symbols, ops["name"].to_numpy(), lambda s: s.startswith("optimizer.step#"))
    return np.sort(ops["start_ns"].to_numpy()[m])


def _traced_bounds(profile, win):
    """(has, fp, bp) per window from the steps table's ``fp_start_ns`` / ``bp_end_ns`` (a fact of the
    profile: the profiler's step trace marked them), kept only where start <= fp <= bp <= end of
    the window; None when no step has them."""
    st = profile.steps
    if not len(st) or not (st["fp_start_ns"].to_numpy() >= 0).any():
        return None
    by = dict(zip(st["step"].tolist(), zip(st["fp_start_ns"].tolist(), st["bp_end_ns"].tolist())))
    fp = np.array([by.get(s, (-1, -1))[0] for s in win.steps.tolist()], np.int64)
    bp = np.array([by.get(s, (-1, -1))[1] for s in win.steps.tolist()], np.int64)
    has = (fp >= 0) & (win.start <= fp) & (fp <= bp) & (bp <= win.end)
    return (has, fp, bp) if has.any() else None


def phases(profile, roles: Roles, win: StepWindows, notes: list | None = None) -> dict:
    """phase key -> int64 ns per step (PHASES + SUB_PHASES), aligned with ``win.steps``."""
    n = len(win.steps)
    out = {k: np.zeros(n, np.int64) for k in PHASES + SUB_PHASES}
    if not n:
        return out
    k, ops = profile.kernels, profile.ops
    comp = roles.device_rows["compute"]
    cs = k["start_ns"].to_numpy()[comp]
    ce = cs + k["dur_ns"].to_numpy()[comp]
    order = np.argsort(cs, kind="stable")
    cs, ce, comp = cs[order], ce[order], comp[order]
    lo = k["launch_op"].to_numpy()[comp]
    has_launch = (lo >= 0) & (lo < len(ops))
    bwd_op = ops["is_backward"].to_numpy()
    is_bwd = np.zeros(len(comp), bool)
    is_bwd[has_launch] = bwd_op[lo[has_launch]]
    launch_t = np.full(len(comp), np.iinfo(np.int64).max, np.int64)
    launch_t[has_launch] = ops["start_ns"].to_numpy()[lo[has_launch]]
    opt = _optimizer_starts(profile)
    # running max of compute ends, so "last end among kernels started before t" is one lookup
    ce_run = np.maximum.accumulate(ce) if len(ce) else ce
    cu_s, cu_e = roles.union_of("kernel")            # the compute kernels' union
    comm_only = roles.comm_not_overlapped()
    b_first = np.searchsorted(cs, win.start, "left")
    b_last = np.searchsorted(cs, win.end, "left")          # compute kernels starting in [start, end)
    bound = np.zeros(n, np.int64)
    gap_end = np.zeros(n, np.int64)
    rule_counts = {"backward": 0, "optimizer": 0, "last": 0, "none": 0}
    for j in range(n):
        a, b = int(b_first[j]), int(b_last[j])
        ws, we = int(win.start[j]), int(win.end[j])
        if a >= b:
            gap_end[j] = bound[j] = we
            rule_counts["none"] += 1
            continue
        gap_end[j] = max(ws, int(cs[a]))
        bw = np.flatnonzero(is_bwd[a:b])
        if len(bw):
            end = int(ce[a:b][bw].max())
            rule_counts["backward"] += 1
        else:
            o = opt[(opt >= win.host_start[j]) & (opt <= win.host_end[j])]
            before = np.flatnonzero(launch_t[a:b] < o[-1]) if len(o) else np.zeros(0, np.int64)
            if len(before):
                end = int(ce[a:b][before].max())
                rule_counts["optimizer"] += 1
            else:
                end = int(ce_run[b - 1])
                rule_counts["last"] += 1
        bound[j] = min(max(end, gap_end[j]), we)
    traced = _traced_bounds(profile, win)
    if traced is not None:                  # the profiler's own FP start / BP end, where it gives them
        has, fp, bp = traced
        gap_end = np.where(has, fp, gap_end)
        bound = np.where(has, bp, bound)
        if notes is not None:
            notes.append(f"{int(has.sum())} step(s): iteration gap / forward+backward / tail from the "
                         "profiler's step trace (FP start, BP end)")
    out["iteration_gap"] = gap_end - win.start
    out["fwd_bwd"] = bound - gap_end
    out["tail"] = win.end - bound
    out["tail_compute"] = window_lengths(cu_s, cu_e, bound, win.end)
    out["tail_communication"] = window_lengths(*comm_only, bound, win.end)
    if notes is not None:
        if rule_counts["optimizer"] or rule_counts["last"]:
            how = []
            if rule_counts["optimizer"]:
                how.append(f"{rule_counts['optimizer']} at the last compute launched before Optimizer.step")
            if rule_counts["last"]:
                how.append(f"{rule_counts['last']} at the last compute kernel (tail = idle only)")
            notes.append("no backward-thread kernels in some steps: forward+backward ends " + "; ".join(how))
        if rule_counts["none"]:
            notes.append(f"{rule_counts['none']} step(s) without compute kernels: the whole step counts as "
                         "iteration gap")
    return out
