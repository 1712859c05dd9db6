"""Imported by the parser processes' fork server when the inputs are big (:mod:`.jit_warm`):
loads numba and the compiled scanners once, so every forked parser starts with them.

numba's cache load (``numba.core.caching.Cache.load_overload``) first "refreshes" the CPU target:
it imports and registers the implementations of everything numba can compile (numpy functions,
typed containers, random, linear algebra, ...), ~0.15 s of CPU, the largest part of loading the
compiled functions from the JIT cache.  Code read back from the cache needs none of that, only
numba's runtime (NRT) initialised; a compile runs the refresh itself (``CompilerBase``).  So while
the preload loads the compiled functions, a cache load initialises the runtime only
(:func:`_cache_loads_without_refresh`); any failure there takes numba's own path, and after the
preload numba's own load is back (a parser that compiles or loads something else pays the refresh
then, as before).
"""
from __future__ import annotations

import contextlib
import os
import sys

from ..timing import mark


def _import_numba() -> None:
    """Import numba (without yaml when no ``.numba_config.yaml`` is there to read); an import that
    fails is left for the loaders to meet and report."""
    hide = "yaml" not in sys.modules and not os.path.exists(".numba_config.yaml")
    if hide:
        sys.modules["yaml"] = None          # numba's config: "import yaml" fails, _HAVE_YAML False
    try:
        import numba  # noqa: F401
    except Exception:  # noqa: BLE001 - the scanners' own import says what fails
        pass
    finally:
        if hide and sys.modules.get("yaml", 0) is None:
            del sys.modules["yaml"]


@contextlib.contextmanager
def _cache_loads_without_refresh():
    """While inside: numba's cache loads skip the target's refresh (the runtime is initialised
    instead); numba's own method is used when anything about this is not as expected."""
    try:
        from numba.core.caching import Cache
        from numba.core.runtime import rtsys
        own = Cache.__dict__["load_overload"]
    except Exception:  # noqa: BLE001 - another numba (or none): its own loads, unchanged
        yield
        return

    def load_overload(self, sig, target_context):
        try:
            rtsys.initialize(target_context)
            return self._load_overload(sig, target_context)
        except Exception:  # noqa: BLE001 - numba's own load (refresh first), which says what fails
            return own(self, sig, target_context)

    Cache.load_overload = load_overload
    try:
        yield
    finally:
        Cache.load_overload = own


def warm() -> None:
    """Load the numba parts this load uses (``jit_warm.wanted_parts``: the Kineto scanner and its
    quick plan, the Ascend scanner, the model's kernels; each compiled once per user and numba
    version, then read from the JIT cache); one that cannot run here is left for the child to
    find and report, one not loaded here is loaded by the child that calls it."""
    from . import ascend_fast, jit_warm, kineto_plan, kineto_scan
    from ..model import jit
    d = jit.cache_dir()
    if d and "NUMBA_CACHE_DIR" not in os.environ:   # before numba's first import, which reads it
        os.environ["NUMBA_CACHE_DIR"] = d
    want = jit_warm.wanted_parts()
    steps = []
    if "kineto" in want:
        steps += [kineto_scan.available, kineto_plan.warm]
    if "ascend" in want:
        steps.append(ascend_fast.available)
    if "model" in want:
        steps.append(lambda: jit.kernels(jit.IMPORT_ROWS))
    _import_numba()
    with _cache_loads_without_refresh():
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001 - the parser child meets the same failure and says so
                pass


warm()
mark("fork server: numba loaded")
