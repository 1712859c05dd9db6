"""One comparison of a baseline and a target profile: the single place engine results are
computed and memoised, so the UI routes, the xlsx workbook and the CLI read the very same
numbers.  Holds no file or HTTP knowledge.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from .engines.options import Options    # noqa: F401  (re-exported: callers import it from here)


@dataclass
class Side:
    """Identity of one side, for presenters: where the profile came from."""
    run: str
    worker: str
    path: str = ""

    def to_dict(self) -> dict:
        return {"run": self.run, "worker": self.worker}


class Comparison:
    """Lazily computed, memoised engine results for one (baseline, target, options)."""

    def __init__(self, base, target, options: Options | None = None,
                 base_side: Side | None = None, target_side: Side | None = None) -> None:
        self.base, self.target = base, target
        self.options = options or Options()
        self.base_side = base_side or Side("", "baseline", base.meta.path)
        self.target_side = target_side or Side("", "target", target.meta.path)
        self._results: dict = {}
        self._lock = threading.Lock()           # guards the two dicts, never held while computing
        self._computing: dict = {}              # result name -> RLock held while it is computed

    def _memo(self, name: str, fn):
        """``fn()`` once per name.  Each result has its own lock, so two threads can compute two
        different results at once (the CLI computes the steps beside the overview and workbook);
        engines ask for their parts (trees, matched) in one direction only, so no two locks are
        ever taken in opposite orders."""
        with self._lock:
            if name in self._results:
                return self._results[name]
            lock = self._computing.setdefault(name, threading.RLock())
        with lock:
            with self._lock:
                if name in self._results:
                    return self._results[name]
            value = fn()
            with self._lock:
                self._results[name] = value
            return value

    def step_scale(self):
        """The per-step choice (``engines.per_step``) every view, the workbook and the CLI follow:
        the same rule the overview applies, so no table adds up six steps against one."""
        from .engines.per_step import step_scale
        return self._memo("step_scale", lambda: step_scale(self.base, self.target, self.options))

    def overall(self):
        from .engines.overall import compare_overall
        o = self.options
        return self._memo("overall", lambda: compare_overall(
            self.base, self.target, base_step=o.base_step, target_step=o.target_step, per_step=o.per_step,
            reference_compat=o.reference_compat))

    def communication(self):
        from .engines.communication import compare_communication
        o = self.options
        return self._memo("communication", lambda: compare_communication(
            self.base, self.target, base_step=o.base_step, target_step=o.target_step))

    def kernels(self):
        from .engines.kernel import compare_kernels
        o = self.options
        return self._memo("kernels", lambda: compare_kernels(self.base, self.target, o.base_step, o.target_step,
                                                                 divide=self.step_scale().divisors))

    def api(self):
        from .engines.api import compare_api
        o = self.options
        return self._memo("api", lambda: compare_api(self.base, self.target, o.base_step, o.target_step,
                                                         divide=self.step_scale().divisors))

    def trees(self):
        """Both sides' host-op trees (``optree.tree_of``: built once per profile), for the operator,
        module and memory engines.  Two at once, on two threads: most of the work is numpy, which
        lets go of the GIL (1 GB pair: 0.72 s one after the other, 0.46 s at once)."""
        from concurrent.futures import ThreadPoolExecutor
        from .engines.optree import tree_of
        from .engines.scope_tree import op_view

        def build():                # a side without host ops but with scope paths: its scope view
            with ThreadPoolExecutor(1, thread_name_prefix="tbc-tree") as ex:
                base = ex.submit(lambda: tree_of(op_view(self.base)))
                target = tree_of(op_view(self.target))
                return base.result(), target
        return self._memo("trees", build)

    def matched(self):
        """The aligned top-layer op pairs shared by the operator and memory comparisons."""
        from .engines.operator import match_ops
        return self._memo("matched", lambda: match_ops(self.base, self.target, self.options, trees=self.trees()))

    def operators(self):
        from .engines.operator import compare_operators
        return self._memo("operators", lambda: compare_operators(self.base, self.target, self.options,
                                                                 matched=self.matched(),
                                                                 divide=self.step_scale().divisors))

    def modules(self):
        from .engines.module import compare_modules
        return self._memo("modules", lambda: compare_modules(self.base, self.target, self.options,
                                                             trees=self.trees(),
                                                             divide=self.step_scale().divisors))

    def memory(self):
        from .engines.memory import compare_memory
        if not (self.base.has()["memory"] or self.target.has()["memory"]):
            return self._memo("memory", lambda: compare_memory(self.base, self.target, self.options,
                                                               divide=self.step_scale().divisors))
        return self._memo("memory", lambda: compare_memory(self.base, self.target, self.options,
                                                           matched=self.matched(),
                                                           divide=self.step_scale().divisors))

    def memory_peak(self):
        from .engines.memory_peak import peak_attribution
        return self._memo("memory_peak", lambda: peak_attribution(self.base, self.target))

    def memory_curves(self):
        """Both sides' memory curves; each side's is kept with its profile (``side_memory_curves``),
        so one computed as soon as that side was in (the CLI) is not computed again."""
        return self._memo("memory_curves", lambda: {"baseline": side_memory_curves(self.base),
                                                    "target": side_memory_curves(self.target)})

    def steps(self):
        """The step-level comparison (``engines.steps``): per step breakdown, phases, efficiency,
        noise-aware metric diffs; the route ``compare/steps``, the CLI and the workbook read it."""
        from .engines.steps import compare_steps
        return self._memo("steps", lambda: compare_steps(self.base, self.target, self.options))

    def host_overhead(self):
        """Graph-mode host overhead (``engines.host_overhead``): framework / TorchAir / GE parts per
        graph run, per step and per side (None for a side without graph-mode events)."""
        from .engines.host_overhead import compare_host_overhead
        o = self.options
        return self._memo("host_overhead", lambda: compare_host_overhead(self.base, self.target,
                                                                         o.base_step, o.target_step))

    def analysis(self, name: str):
        """The table of the registered analysis ``name`` (``analyses.registry``), memoised."""
        from .analyses import get
        a = get(name)
        return self._memo(f"analysis:{name}", lambda: a.table(self))

    def swapped(self) -> "Comparison":
        o = self.options
        from dataclasses import replace
        opts = replace(o, base_step=o.target_step, target_step=o.base_step)
        return Comparison(self.target, self.base, opts, self.target_side, self.base_side)


def side_memory_curves(profile) -> dict:
    """One profile's memory curves (``engines.memory_curve``), built once per profile (the
    derived-data cache): callers read them, never change them."""
    from .engines.memory_curve import memory_curves
    from .model.derived import derived
    return derived(profile, "memory_curves", lambda: memory_curves(profile))
