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

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from . import step_trace
from .efficiency import EFFICIENCY, side_efficiency
from .noise import DESCRIPTION as NOISE_TEST, within_noise
from .step_breakdown import BREAKDOWN, breakdown, role_pieces, step_windows
from .step_phases import PHASES, SUB_PHASES, phases

# the leaf phases the "step-level differences" ranking walks (TEAM15.md); step_time, phases.tail
# and breakdown.* overlap them and are shown, not ranked
RANKED = ("phases.iteration_gap", "phases.fwd_bwd", "phases.tail_compute", "phases.tail_communication")

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
    # Ascend step trace columns (model STEP_TRACE_COLUMNS) -> ns or None, and where they come
    # from: "file" (step_trace_time.csv / analysis.db) or "events" (recomputed, engines.step_trace)
    step_trace_ns: dict = field(default_factory=dict)
    step_trace_source: str | None = None

    def to_dict(self, origin_ns: int) -> dict:
        return {"step": int(self.step),
                "start_ms": _ms(self.start_ns - origin_ns),
                "duration_ms": _ms(self.duration_ns),
                "breakdown_ms": {k: _ms(v) for k, v in self.breakdown_ns.items()},
                "phases_ms": {k: _ms(v) for k, v in self.phases_ns.items()},
                "step_trace_ms": {k: None if v is None else _ms(v) for k, v in self.step_trace_ns.items()},
                "step_trace_source": self.step_trace_source}


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

    def metric(self, name: str) -> MetricDiff | None:
        return next((m for m in self.metrics if m.name == name), None)

    def top_differences(self, n: int | None = None) -> list:
        """The leaf phase metrics (``RANKED``) by |diff_ms|, largest first, skipping those within
        noise (``within_noise`` True) and those without a difference; at most ``n``."""
        cands = [m for m in self.metrics if m.name in RANKED and m.diff_ms is not None
                 and m.within_noise is not True and m.diff_ms != 0]
        cands.sort(key=lambda m: (-abs(m.diff_ms), RANKED.index(m.name)))
        return cands if n is None else cands[:n]


def side_steps(profile, ttp_compat: bool = False) -> SideSteps:
    """Every step of ``profile``: its window, breakdown and phases (ns), and the side's efficiency.
    ``ttp_compat``: the breakdown as torch-tb-profiler 0.4.3 makes it, bugs included (tests)."""
    win = step_windows(profile, ttp_compat)
    notes = list(win.notes)
    roles = role_pieces(profile, ttp_compat)
    parts = breakdown(roles, win)
    ph = phases(profile, roles, win, notes)
    filed = step_trace.from_file(profile)
    computed, _ = step_trace.from_events(profile, roles)
    rows = []
    for j, sid in enumerate(win.steps):
        sid = int(sid)
        trace, src = (filed[sid], "file") if sid in filed else (computed.get(sid), "events")
        rows.append(StepRow(sid, int(win.start[j]), int(win.end[j] - win.start[j]),
                            {k: int(parts[k][j]) for k in BREAKDOWN},
                            {k: int(ph[k][j]) for k in PHASES + SUB_PHASES},
                            dict(trace or {}), src if trace else None))
    return SideSteps(rows, side_efficiency(profile), notes)


def steps_of(profile) -> SideSteps:
    """``side_steps(profile)``, built once per profile in the derived-data cache
    (``model.derived``), so a caller can start a side as soon as it is loaded (the CLI does,
    while the other side still parses) and the comparison then takes it from there."""
    from ..model.derived import derived
    return derived(profile, "side_steps", lambda: side_steps(profile))


def _metric(name: str, b_ns, t_ns) -> MetricDiff:
    b, t = stat_of(b_ns), stat_of(t_ns)
    diff = None if b.mean_ms is None or t.mean_ms is None else round(t.mean_ms - b.mean_ms, 6)
    ratio = (round(t.mean_ms / b.mean_ms, 6) if diff is not None and b.mean_ms else None)
    verdict, p = within_noise(np.asarray(b_ns, np.float64) / NS_PER_MS, np.asarray(t_ns, np.float64) / NS_PER_MS)
    return MetricDiff(name, b, t, diff, ratio, verdict, None if p is None else round(p, 6))


METRIC_KEYS = (("phases", PHASES + SUB_PHASES), ("breakdown", BREAKDOWN))


def compare_steps(base, target, options=None) -> StepsComparison:
    """Both sides' steps and, per metric, the across-step statistics and the noise verdict.
    The two sides are computed in two threads (numpy work, mostly outside the GIL)."""
    if base is target:
        b = t = steps_of(base)
    else:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="steps") as ex:
            fb, ft = ex.submit(steps_of, base), ex.submit(steps_of, target)
            b, t = fb.result(), ft.result()
    metrics = [_metric("step_time", [s.duration_ns for s in b.steps], [s.duration_ns for s in t.steps])]
    for group, keys in METRIC_KEYS:
        for k in keys:
            metrics.append(_metric(f"{group}.{k}", [getattr(s, f"{group}_ns").get(k, 0) for s in b.steps],
                                   [getattr(s, f"{group}_ns").get(k, 0) for s in t.steps]))
    return StepsComparison(b, t, metrics, NOISE_TEST)
