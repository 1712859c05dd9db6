"""Step-level comparison of two profiles: per step and per side the step-time breakdown
(Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec, Other: the PyTorch
Profiler plugin's priority rule, so the parts add up to the step's wall time), the three phases
(iteration gap, forward+backward, tail), the side's device efficiency (``engines.efficiency``),
and per metric the across-step statistics of both sides with a noise verdict
(``within_noise``).

This module is the contract the presenters (route ``compare/steps``, ``tb-compare --json``
``"steps"``, ``--steps``, the StepCompare/Efficiency sheets) and the Steps view read:
:meth:`StepsComparison.to_dict` gives the JSON object of issue 15.  Pure: no files, no HTTP,
no format ids.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .efficiency import EFFICIENCY, side_efficiency

BREAKDOWN = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
PHASES = ("iteration_gap", "fwd_bwd", "tail")

NS_PER_MS = 1e6


def _ms(ns) -> float:
    return round(float(ns) / NS_PER_MS, 6)


@dataclass
class StepRow:
    """One step of one side, in ns."""
    step: int
    start_ns: int
    duration_ns: int
    breakdown_ns: dict = field(default_factory=dict)     # BREAKDOWN key -> ns
    phases_ns: dict = field(default_factory=dict)        # PHASES key (and extra sub-phases) -> ns

    def to_dict(self, origin_ns: int) -> dict:
        return {"step": int(self.step),
                "start_ms": _ms(self.start_ns - origin_ns),
                "duration_ms": _ms(self.duration_ns),
                "breakdown_ms": {k: _ms(v) for k, v in self.breakdown_ns.items()},
                "phases_ms": {k: _ms(v) for k, v in self.phases_ns.items()}}


@dataclass
class SideSteps:
    """Every step of one side, and the side's device efficiency."""
    steps: list = field(default_factory=list)            # [StepRow]
    efficiency: dict = field(default_factory=lambda: {k: None for k in EFFICIENCY})
    notes: list = field(default_factory=list)            # what could not be computed, and why

    def to_dict(self) -> dict:
        origin = self.steps[0].start_ns if self.steps else 0
        return {"steps": [s.to_dict(origin) for s in self.steps],
                "efficiency": dict(self.efficiency), "notes": list(self.notes)}


@dataclass
class Stat:
    mean_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    stdev_ms: float | None = None
    n: int = 0

    def to_dict(self) -> dict:
        return {"mean_ms": self.mean_ms, "min_ms": self.min_ms, "max_ms": self.max_ms,
                "stdev_ms": self.stdev_ms, "n": self.n}


def stat_of(values_ns) -> Stat:
    v = np.asarray(values_ns, dtype=np.float64) / NS_PER_MS
    if not len(v):
        return Stat()
    sd = float(np.std(v, ddof=1)) if len(v) > 1 else None
    return Stat(round(float(v.mean()), 6), round(float(v.min()), 6), round(float(v.max()), 6),
                None if sd is None else round(sd, 6), int(len(v)))


@dataclass
class MetricDiff:
    """One step-level metric on both sides; ``within_noise`` None = noise unknown (one step)."""
    name: str
    baseline: Stat
    target: Stat
    diff_ms: float | None
    ratio: float | None
    within_noise: bool | None
    p_value: float | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "baseline": self.baseline.to_dict(), "target": self.target.to_dict(),
                "diff_ms": self.diff_ms, "ratio": self.ratio, "within_noise": self.within_noise,
                "p_value": self.p_value}


@dataclass
class StepsComparison:
    baseline: SideSteps
    target: SideSteps
    metrics: list = field(default_factory=list)          # [MetricDiff]
    noise_test: str = ""                                 # how within_noise is decided, one line

    def to_dict(self) -> dict:
        return {"baseline": self.baseline.to_dict(), "target": self.target.to_dict(),
                "metrics": [m.to_dict() for m in self.metrics], "noise_test": self.noise_test}


def side_steps(profile) -> SideSteps:
    """Every step of ``profile`` (skeleton: step windows only; the breakdown and phases follow)."""
    st = profile.tables["steps"]
    rows = [StepRow(int(s), int(a), int(b) - int(a), {k: 0 for k in BREAKDOWN}, {k: 0 for k in PHASES})
            for s, a, b in zip(st["step"], st["start_ns"], st["end_ns"])]
    return SideSteps(rows, side_efficiency(profile))


def _metric(name: str, b_ns, t_ns) -> MetricDiff:
    b, t = stat_of(b_ns), stat_of(t_ns)
    diff = None if b.mean_ms is None or t.mean_ms is None else round(t.mean_ms - b.mean_ms, 6)
    ratio = (round(t.mean_ms / b.mean_ms, 6) if diff is not None and b.mean_ms else None)
    return MetricDiff(name, b, t, diff, ratio, None)


def compare_steps(base, target, options=None) -> StepsComparison:
    """Both sides' steps and, per metric, the across-step statistics and the noise verdict."""
    b, t = side_steps(base), side_steps(target)
    metrics = [_metric("step_time", [s.duration_ns for s in b.steps], [s.duration_ns for s in t.steps])]
    for group, keys in (("phases", PHASES), ("breakdown", BREAKDOWN)):
        for k in keys:
            metrics.append(_metric(f"{group}.{k}", [getattr(s, f"{group}_ns").get(k, 0) for s in b.steps],
                                   [getattr(s, f"{group}_ns").get(k, 0) for s in t.steps]))
    return StepsComparison(b, t, metrics, "not decided yet")
