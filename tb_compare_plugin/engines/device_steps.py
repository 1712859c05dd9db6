"""Step windows on the device's clock: each host step (``ProfilerStep#N`` / Ascend step) stretched
to the device work it launched, as the PyTorch Profiler plugin (torch-tb-profiler 0.4.3,
``StepParser``) does before it computes GPU Utilization, Est. SM Efficiency and the step-time
breakdown.  Pure.

The plugin's rule, for a GPU trace:

1. the device events (kernels, memcpy, memset) of a step are those launched by a runtime call
   (``Runtime``; we also take ``cuda_runtime`` / ``cuda_driver``, which 0.4.3 does not know;
   linked by correlation id) lying wholly inside the host step;
2. if any step launched device work, step 0 starts no earlier than the end of the last device
   event that ends before step 0's first device event and was not launched inside a step
   (the previous iteration's tail);
3. step i runs from max(previous step's end, its host start) to max(its host end, the end of
   its last device event) (a step without device work: to max(host end, its start));
4. trailing steps that launched no device work are dropped, and so is the last kept step when
   it launched fewer than 80% of the device events of the step before it (the profiler may have
   stopped before all its kernels ran).

With no step at all the plugin uses one step spanning the host ops (``cpu_op``/``operator``).
NPU profiles have no runtime calls in this sense: a device task belongs to the step the loader
gave it (``kernels.step``: kernel_details ``Step Id``, or its launch time).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET
from .kernel_classes import text_flags

# launch calls: the plugin's ``Runtime`` events, and the ``cuda_runtime`` / ``cuda_driver`` events
# every PyTorch since 2021 writes instead (0.4.3 does not know them: docs/reference_ttp.md, B1)
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "runtime"})
HOST_CATS = frozenset({"cpu_op", "operator"})
DEVICE_KINDS = (KIND_COMPUTE, KIND_COMM, KIND_MEMCPY, KIND_MEMSET)


@dataclass
class StepWindows:
    """Kept steps in time order: ids, device-adjusted [start, end) in ns, device events each."""
    step: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    start_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    end_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    matched: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    notes: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.step)

    def select(self, steps) -> "StepWindows":
        """Only the windows of the step ids in ``steps`` (None: all)."""
        if steps is None:
            return self
        m = np.isin(self.step, np.asarray(list(steps), np.int64))
        return StepWindows(self.step[m], self.start_ns[m], self.end_ns[m], self.matched[m], list(self.notes))

    def span(self) -> "StepWindows":
        """One window from the first step's start to the last step's end (gaps between steps
        included), which is what the plugin's figures over "all steps" divide by."""
        if not len(self):
            return self
        return StepWindows(self.step[:1], self.start_ns[:1], self.end_ns[-1:], self.matched.sum(keepdims=True),
                           list(self.notes))

    @property
    def total_ns(self) -> int:
        return int((self.end_ns - self.start_ns).sum())


def _host_steps(profile) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    st = profile.steps
    notes: list = []
    if len(st):
        order = np.argsort(st["start_ns"].to_numpy(), kind="stable")
        return (st["step"].to_numpy()[order], st["start_ns"].to_numpy()[order],
                st["end_ns"].to_numpy()[order], notes)
    ops = profile.ops
    host = np.flatnonzero(text_flags(profile.symbols, ops["cat"].to_numpy(), lambda s: s in HOST_CATS))
    if len(host):
        s = ops["start_ns"].to_numpy()[host]
        e = s + ops["dur_ns"].to_numpy()[host]
        notes.append("no ProfilerStep: one step spanning the host operators, as the PyTorch Profiler plugin does")
        return np.array([0], np.int64), np.array([s.min()], np.int64), np.array([e.max()], np.int64), notes
    k = profile.kernels
    if len(k):
        s = k["start_ns"].to_numpy()
        e = s + k["dur_ns"].to_numpy()
        notes.append("no steps and no host operators: one step spanning the device activity")
        return np.array([0], np.int64), np.array([s.min()], np.int64), np.array([e.max()], np.int64), notes
    return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), notes


def _device_step_of(profile, h_start, h_end, dev_rows) -> np.ndarray:
    """Index into the host steps of the step that launched each device event (-1: none)."""
    k = profile.kernels
    out = np.full(len(dev_rows), -1, np.int64)
    if profile.meta.device == "GPU":
        ops = profile.ops
        launch = k["launch_op"].to_numpy()[dev_rows]
        ok = launch >= 0
        if not ok.any() or not len(ops):
            return out
        is_rt = text_flags(profile.symbols, ops["cat"].to_numpy(), lambda s: s in RUNTIME_CATS)
        lr = np.maximum(launch, 0)
        ok &= is_rt[lr]
        rs = ops["start_ns"].to_numpy()[lr]
        re_ = rs + ops["dur_ns"].to_numpy()[lr]
        i = np.searchsorted(h_start, rs, "right") - 1          # last step starting at or before rs
        i_c = np.maximum(i, 0)
        inside = ok & (i >= 0) & (rs >= h_start[i_c]) & (re_ <= h_end[i_c])
        out[inside] = i[inside]
        return out
    step = k["step"].to_numpy()[dev_rows]
    return out if not len(h_start) else _index_of(step, profile.steps, h_start)


def _index_of(step_ids, steps_df, h_start) -> np.ndarray:
    ids = steps_df["step"].to_numpy()
    order = np.argsort(steps_df["start_ns"].to_numpy(), kind="stable")
    pos = {int(s): i for i, s in enumerate(ids[order].tolist())}
    return np.fromiter((pos.get(int(s), -1) for s in step_ids), np.int64, len(step_ids))


def step_windows(profile) -> StepWindows:
    """The plugin's device-adjusted step windows of ``profile`` (module docstring)."""
    ids, h_start, h_end, notes = _host_steps(profile)
    n = len(ids)
    if not n:
        return StepWindows(notes=notes)
    k = profile.kernels
    dev_rows = np.flatnonzero(np.isin(k["kind"].to_numpy(), DEVICE_KINDS))
    ds = k["start_ns"].to_numpy()[dev_rows]
    de = ds + k["dur_ns"].to_numpy()[dev_rows]
    which = _device_step_of(profile, h_start, h_end, dev_rows) if len(dev_rows) else np.zeros(0, np.int64)
    matched_rows = which >= 0
    matched = np.bincount(which[matched_rows], minlength=n).astype(np.int64)
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    dmin = np.full(n, big, np.int64)
    dmax = np.full(n, small, np.int64)
    np.minimum.at(dmin, which[matched_rows], ds[matched_rows])
    np.maximum.at(dmax, which[matched_rows], de[matched_rows])
    start, end = h_start.copy(), h_end.copy()
    use_device = bool(matched_rows.any())
    if use_device:
        prev = int(h_start[0])
        if matched[0]:
            before = ~matched_rows & (de < dmin[0])
            if before.any():
                prev = max(prev, int(de[before].max()))
        for i in range(n):
            s = max(prev, int(h_start[i]))
            e = int(h_end[i])
            e = max(e, s) if not matched[i] else max(e, int(dmax[i]), s)
            start[i], end[i] = s, e
            prev = e
    keep = n
    if use_device and n > 1:
        last = np.flatnonzero(matched > 0)
        if len(last):
            i = int(last[-1])
            keep = i + 1
            if i > 0 and matched[i - 1] * 0.8 > matched[i]:
                keep = i
            if keep < n:
                notes.append(f"the last {n - keep} step(s) left out, as the PyTorch Profiler plugin does: they "
                             "launched no device work, or much less than the step before (the profiler may "
                             "have stopped before all their kernels ran)")
    return StepWindows(ids[:keep].astype(np.int64), start[:keep], end[:keep], matched[:keep], notes)
