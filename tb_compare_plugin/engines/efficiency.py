"""Device efficiency of one profile: GPU Utilization, Est. SM Efficiency, Est. Achieved
Occupancy and the tensor-core kernel-time ratio as the PyTorch Profiler plugin (torch-tb-profiler
0.4.3) defines them, and on NPUs the AI Core busy ratio and cube/vector utilisation from the PMU
columns.  Pure.  Definitions, and what is missing when a trace lacks the kernel args: docs/efficiency.md.

All figures are over the plugin's device-adjusted step windows (``device_steps.step_windows``):
by default from the first step's start to the last step's end, as the plugin does; with a step
selection, over the selected windows only.  GPU figures are for the profile's main device (the
one with the most kernel time):

* ``gpu_utilization`` (0..1): time with at least one kernel running / window time;
* ``sm_efficiency`` (0..1): per instant, min(1, Σ ``blocks per SM`` of the kernels running),
  integrated over the windows / window time (None when no kernel has ``blocks per SM``);
* ``achieved_occupancy`` (percent): kernels' ``est. achieved occupancy %`` weighted by their
  time inside the windows (None when no kernel has it);
* ``tensor_core_ratio`` (0..1): kernel time of tensor-core / matrix-core kernels over all kernel
  time (kernels linked to their launch; the whole capture, or with a selection the kernels running
  in its windows; ``kernel_classes.is_tensor_core_name``);
  ``tensor_core_ratio_ttp``: the same with the plugin's own 2021 allowlist only;
* ``ai_core_utilization`` (0..1, NPU): time with at least one AI Core / AI Vector task running /
  window time; ``cube_utilization`` / ``vector_utilization``: Σ aic_mac_time / Σ aicore_time and
  Σ aiv_vec_time / Σ aiv_time of those tasks (PMU columns, Ascend Level1+).
"""
from __future__ import annotations

import numpy as np

from ..model import KIND_COMM, KIND_COMPUTE, jit
from ..model.intervals import intersect
from .device_steps import StepWindows, step_windows
from .kernel_classes import tensor_core_flags, text_flags

EFFICIENCY = ("gpu_utilization", "sm_efficiency", "achieved_occupancy", "tensor_core_ratio",
              "ai_core_utilization")
EXTRA = ("tensor_core_ratio_ttp", "cube_utilization", "vector_utilization", "device", "window_ms", "steps")
AI_CORE_TYPES = frozenset({"ai_core", "ai_vector_core", "mix_aic", "mix_aiv", "kernel_aicore", "kernel_aivec"})


def side_efficiency(profile, steps=None, window_ns=None) -> dict:
    """``{key: value or None}`` for every key of ``EFFICIENCY`` (and ``EXTRA``), plus ``notes``
    (why a figure is None, what was left out).  ``steps``: step ids to restrict to (None: all).
    ``window_ns``: an explicit (start, end) window instead of the steps' (to hold the figures
    against another tool's window)."""
    out = {k: None for k in EFFICIENCY + EXTRA}
    notes: list = []
    out["notes"] = notes
    if window_ns is not None:
        a, b = (int(x) for x in window_ns)
        win = StepWindows(np.array([-1]), np.array([a]), np.array([b]), np.array([0]))
    else:
        win = step_windows(profile)
        notes.extend(win.notes)
        win = win.select(steps) if steps is not None else win
        out["steps"] = [int(s) for s in win.step.tolist()]
        win = win.span() if steps is None else win
    if not len(win) or win.total_ns <= 0:
        notes.append("no step window with a positive duration: efficiency cannot be computed")
        return out
    out["window_ms"] = round(win.total_ns / 1e6, 6)
    if profile.meta.device == "GPU":
        _gpu(profile, win, out, notes, whole=steps is None and window_ns is None)
    elif profile.meta.device == "NPU":
        _npu(profile, win, out, notes)
    else:
        notes.append("no device activity: a CPU-only profile has no device efficiency")
    return out


# ------------------------------------------------------------------------------------------ GPU

def _clip(s, e, win: StepWindows):
    """Each interval's overlap with the (disjoint, sorted) windows, summed: ns per interval."""
    k = jit.kernels(len(s))
    if k is not None:                   # one pass, no temporaries per window
        return k.window_overlap(np.asarray(s, np.int64), np.asarray(e, np.int64),
                                np.asarray(win.start_ns, np.int64), np.asarray(win.end_ns, np.int64))
    inside = np.zeros(len(s), np.int64)
    for a, b in zip(win.start_ns.tolist(), win.end_ns.tolist()):
        inside += np.maximum(np.minimum(e, b) - np.maximum(s, a), 0)
    return inside


def _busy(s, e, win: StepWindows) -> int:
    """Length of (∪ intervals) ∩ (∪ windows)."""
    a, b = intersect(s, e, win.start_ns, win.end_ns)
    return int((b - a).sum())


def _capped_sum(s, e, v, win: StepWindows) -> float:
    """∫ min(1, Σ v of the intervals covering t) dt over the windows (the plugin's
    ``merge_ranges_with_value``: at equal times starts come before ends)."""
    t = np.concatenate([s, e])
    kind = np.concatenate([np.zeros(len(s), np.int8), np.ones(len(e), np.int8)])
    dv = np.concatenate([v, -v])
    o = np.lexsort((kind, t))
    k = jit.kernels(len(t))
    if k is not None and t.dtype == np.int64 and dv.dtype == np.float64:    # the lines below in one pass
        seg_s, seg_e, val = k.level_segments(t[o], dv[o])
        return float((_clip(seg_s, seg_e, win) * val).sum())
    t, level = t[o], np.cumsum(dv[o])
    seg_s, seg_e, val = t[:-1], t[1:], np.minimum(level[:-1], 1.0)
    m = (seg_e > seg_s) & (level[:-1] > 0.0)
    seg_s, seg_e, val = seg_s[m], seg_e[m], val[m]
    return float((_clip(seg_s, seg_e, win) * val).sum())


def _gpu(profile, win: StepWindows, out: dict, notes: list, whole: bool = True) -> None:
    k, sym = profile.kernels, profile.symbols
    kind = k["kind"].to_numpy()
    rows = np.flatnonzero((kind == KIND_COMPUTE) | (kind == KIND_COMM))   # the plugin's "Kernel" events
    if not len(rows):
        notes.append("no GPU kernels")
        return
    dev = k["device"].to_numpy()[rows]
    s = k["start_ns"].to_numpy()[rows]
    dur = k["dur_ns"].to_numpy()[rows]
    e = s + dur
    devices, inv = np.unique(dev, return_inverse=True)
    main = int(devices[np.argmax(np.bincount(inv, weights=dur))])
    if len(devices) > 1:
        notes.append(f"kernels on {len(devices)} devices ({', '.join(str(int(d)) for d in devices)}): "
                     f"figures are for device {main}, the one with the most kernel time")
    out["device"] = main
    on = dev == main
    rows, s, e, dur = rows[on], s[on], e[on], dur[on]
    total = win.total_ns
    busy = _busy(s, e, win)
    out["gpu_utilization"] = busy / total
    if not busy:
        notes.append(f"none of the {len(rows):,} kernels runs inside the step window(s)")

    bps = k["blocks_per_sm"].to_numpy()[rows]
    has = np.isfinite(bps) & (bps > 0)
    if has.any():
        out["sm_efficiency"] = _capped_sum(s[has], e[has], bps[has], win) / total
        if (~has).any():
            notes.append(f"{int((~has).sum()):,} of {len(rows):,} kernels have no 'blocks per SM': they add "
                         "nothing to Est. SM Efficiency")
    else:
        notes.append("no kernel has a 'blocks per SM' arg (e.g. ROCm traces, or Kineto without CUPTI's "
                     "launch records): Est. SM Efficiency is unknown")
    occ = k["occupancy_pct"].to_numpy()[rows]
    has = np.isfinite(occ)
    if has.any():
        w = _clip(s[has], e[has], win)
        out["achieved_occupancy"] = float((occ[has] * w).sum() / w.sum()) if w.sum() > 0 else None
    else:
        notes.append("no kernel has an 'est. achieved occupancy %' arg: Est. Achieved Occupancy is unknown")

    # tensor cores: kernels linked to their launch (the plugin counts the kernels its op tree reaches)
    linked = k["launch_op"].to_numpy()[rows] >= 0
    if not whole:                           # a selection: the kernels running in its windows
        linked &= _clip(s, e, win) > 0
    if not linked.any():
        linked = np.ones(len(rows), bool)
        notes.append("no kernel is linked to a runtime call: the tensor-core ratio is over every kernel")
    names = k["name"].to_numpy()[rows[linked]]
    d = dur[linked]
    tot = int(d.sum())
    if tot > 0:
        out["tensor_core_ratio"] = float(d[tensor_core_flags(sym, names)].sum() / tot)
        out["tensor_core_ratio_ttp"] = float(d[tensor_core_flags(sym, names, ttp=True)].sum() / tot)
    else:
        out["tensor_core_ratio"] = out["tensor_core_ratio_ttp"] = 0.0


# ------------------------------------------------------------------------------------------ NPU

def _npu(profile, win: StepWindows, out: dict, notes: list) -> None:
    k, sym = profile.kernels, profile.symbols
    core = (text_flags(sym, k["accel_core"].to_numpy(), lambda x: x in AI_CORE_TYPES)
            | text_flags(sym, k["task_type"].to_numpy(), lambda x: x in AI_CORE_TYPES))
    rows = np.flatnonzero(core & (k["kind"].to_numpy() == KIND_COMPUTE))
    if not len(rows):
        notes.append("no AI Core / AI Vector tasks: AI Core utilisation is unknown")
        return
    s = k["start_ns"].to_numpy()[rows]
    e = s + k["dur_ns"].to_numpy()[rows]
    busy = _busy(s, e, win)
    out["ai_core_utilization"] = busy / win.total_ns
    if not busy:
        notes.append(f"none of the {len(rows):,} AI Core tasks runs inside the step window(s)")
    inside = _clip(s, e, win) > 0
    rows = rows[inside]

    def col(c):
        return k[c].to_numpy()[rows]

    def pmu_ratio(part_time, ratio, whole_time, legacy=None) -> float | None:
        whole = col(whole_time)
        part = col(part_time)
        if legacy is not None:
            part = np.where(np.isfinite(part), part, col(legacy))
        part = np.where(np.isfinite(part), part, col(ratio) * whole)
        ok = np.isfinite(part) & np.isfinite(whole) & (whole > 0)
        den = float(whole[ok].sum())
        return float(part[ok].sum() / den) if den > 0 else None

    out["cube_utilization"] = pmu_ratio("aic_mac_time_us", "aic_mac_ratio", "aicore_time_us", "mac_time_us")
    out["vector_utilization"] = pmu_ratio("aiv_vec_time_us", "aiv_vec_ratio", "aiv_time_us")
    if out["cube_utilization"] is None and out["vector_utilization"] is None:
        notes.append("no PMU columns (aic_mac_time / aiv_vec_time; Ascend Level1 PipeUtilization and above): "
                     "cube and vector utilisation are unknown")
