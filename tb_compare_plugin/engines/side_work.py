"""Per-side reductions: the parts of the engines that depend on one profile only (its steps,
its API and kernel statistics, its overall time split), named, so a caller can compute them
where and when that side is at hand -- in the parser process that just read it, or on a thread
as soon as it is loaded -- and the comparison then finds them in the derived-data cache
(``model.derived``) instead of computing them after both sides are in.

A job is ``(name, args)`` with ``name`` one of :data:`JOBS`; :func:`compute` runs jobs on a
profile and returns their values by derived-cache key, :func:`seed` puts such values into the
derived-data cache of another copy of the same profile (the one the parser process handed
back).  Values are what the engines' ``side_*`` accessors build: the same call gives the same
value whichever copy of the profile it ran on.  Pure: no files, no formats.
"""
from __future__ import annotations

from typing import Any, Iterable


def _steps(profile):
    from .steps import steps_of
    return steps_of(profile)


def _api(profile, step=None):
    from .api import side_api_stats
    return side_api_stats(profile, step)


def _kernels(profile, step=None):
    from .kernel import side_kernel_stats
    return side_kernel_stats(profile, step)


def _breakdown(profile, step=None, reference_compat=False):
    from .overall import side_breakdown
    return side_breakdown(profile, step, reference_compat)


def _tree(profile):
    """The op tree the operator, module and memory comparisons read, when they read the
    profile itself (a scope view is built where it is used)."""
    from .optree import tree_of
    from .scope_tree import op_view
    if op_view(profile) is profile:
        tree_of(profile)


def _modules(profile, step=None):
    """The module forests the module sheets read (``module.side_modules``), when the profile has
    nn.Module events of its own (a scope view is built where it is used).  Before the tree job:
    it builds the tree, which that job then sends on."""
    from .module import side_modules
    from .scope_tree import op_view
    if profile.has()["modules"] and op_view(profile) is profile:
        side_modules(profile, None, step)


def _placement(profile):
    """Where each allocation sits in the op tree (``memory.side_placement``), when the profile has
    allocations and is its own op view.  Before the tree job, like the modules job."""
    from .memory import side_placement
    from .scope_tree import op_view
    if len(profile.mem_allocs) and op_view(profile) is profile:
        side_placement(profile)


JOBS = {"steps": _steps, "api": _api, "kernels": _kernels, "breakdown": _breakdown, "tree": _tree,
        "modules": _modules, "placement": _placement}
# the derived-cache key each job's accessor stores its value under (tests/test_side_work.py
# checks they agree with the accessors)
_KEYS = {"steps": lambda: "side_steps", "tree": lambda: "optree",
         "api": lambda step=None: f"api_stats:{step}",
         "kernels": lambda step=None: f"kernel_stats:{step}",
         "modules": lambda step=None: f"modules:{step}", "placement": lambda: "placement",
         "breakdown": lambda step=None, reference_compat=False: f"breakdown:{step}:{bool(reference_compat)}:{_top()}"}


def _top() -> int:
    from .overall import TOP_KERNELS
    return TOP_KERNELS


def key(name: str, args: tuple = ()) -> str:
    return _KEYS[name](*args)


def run(profile, jobs: Iterable[tuple]) -> None:
    """Build every job's value in ``profile``'s derived-data cache (a job that fails leaves its
    failure there, for whoever asks for the value)."""
    for name, args in jobs:
        try:
            JOBS[name](profile, *args)
        except Exception:  # noqa: BLE001 - the comparison asks again and reports it
            pass


def compute(profile, jobs: Iterable[tuple]) -> dict[str, Any]:
    """Run ``jobs`` on ``profile``; the values that were built, by derived-cache key (failed
    jobs are left out: the receiving side computes them again and meets the error itself)."""
    from ..model.derived import DERIVED
    jobs = list(jobs)
    run(profile, jobs)
    built = DERIVED.built(profile)
    return {k: built[k] for k in (key(name, args) for name, args in jobs) if k in built}


def seed(profile, values: dict[str, Any]) -> None:
    """Put ``values`` (from :func:`compute` on another copy of ``profile``) into ``profile``'s
    derived-data cache; an entry already there is kept."""
    from ..model.derived import DERIVED
    for key, value in values.items():
        DERIVED.put(profile, key, value)
