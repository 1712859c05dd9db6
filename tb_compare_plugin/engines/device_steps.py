"""The step windows the efficiency figures are computed over: the steps' device-aware windows
of ``step_breakdown.step_windows`` (the PyTorch Profiler plugin's ``StepParser`` rule, one
implementation for the breakdown and the efficiency figures), with the selection and span helpers
the efficiency engine needs, and the plugin's fallback when a profile has no step: one step
spanning the host operators (``cpu_op`` / ``operator``), else the device activity.  Pure.

The rule (docs/steps.md, docs/reference_ttp.md section 2): a step's device work is what the
launches lying wholly inside its host range started; the step ends at the later of its host end and
that work's end, starts at the later of its host start and the previous step's end (the first
step: after the previous iteration's leftover device work); trailing steps that launched nothing,
or less than 80% of the step before, are left out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import step_breakdown
from .kernel_classes import text_flags

HOST_CATS = frozenset({"cpu_op", "operator"})


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


def _fallback(profile) -> StepWindows:
    """No step: one window over the host operators, else over the device activity."""
    ops = profile.ops
    host = np.flatnonzero(text_flags(profile.symbols, ops["cat"].to_numpy(), lambda s: s in HOST_CATS))
    if len(host):
        s = ops["start_ns"].to_numpy()[host]
        e = s + ops["dur_ns"].to_numpy()[host]
        note = "no ProfilerStep: one step spanning the host operators, as the PyTorch Profiler plugin does"
    elif len(profile.kernels):
        k = profile.kernels
        s = k["start_ns"].to_numpy()
        e = s + k["dur_ns"].to_numpy()
        note = "no steps and no host operators: one step spanning the device activity"
    else:
        return StepWindows()
    one = lambda v: np.array([v], np.int64)  # noqa: E731
    return StepWindows(one(0), one(s.min()), one(e.max()), one(0), [note])


def step_windows(profile) -> StepWindows:
    """The steps' device-aware windows (module docstring)."""
    if not len(profile.steps):
        return _fallback(profile)
    w = step_breakdown.step_windows(profile)
    return StepWindows(w.steps.astype(np.int64), w.start.astype(np.int64), w.end.astype(np.int64),
                       w.launched.astype(np.int64), list(w.notes))
