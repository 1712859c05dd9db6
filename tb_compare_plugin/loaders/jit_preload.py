"""Imported by the parser processes' fork server when the inputs are big (:mod:`.jit_warm`):
loads numba and the compiled scanners once, so every forked parser starts with them."""
from __future__ import annotations

from ..timing import mark


def warm() -> None:
    """Load every numba part a big load uses (each compiled once per user and numba version, then
    read from the JIT cache); one that cannot run here is left for the child to find and report."""
    from . import ascend_fast, kineto_plan, kineto_scan
    from ..model import jit
    for step in (kineto_scan.available, kineto_plan.warm, ascend_fast.available,
                 lambda: jit.kernels(jit.IMPORT_ROWS)):
        try:
            step()
        except Exception:  # noqa: BLE001 - the parser child meets the same failure and says so
            pass


warm()
mark("fork server: numba loaded")
