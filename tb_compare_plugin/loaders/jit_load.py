"""Loading the numba parts a big load uses (the fork server's preload: :mod:`.jit_preload`,
:mod:`.jit_preload_ascend`; which one, :func:`.jit_warm.preload_module`)."""
from __future__ import annotations


def load(kineto: bool = True) -> None:
    """Load every numba part a big load uses (each compiled once per user and numba version, then
    read from the JIT cache); one that cannot run here is left for the parser process to find and
    report.  ``kineto=False``: not the Kineto scanner and quick plan (inputs that are Ascend
    exports)."""
    from . import ascend_fast
    from ..model import jit
    steps = [ascend_fast.available, lambda: jit.kernels(jit.IMPORT_ROWS)]
    if kineto:
        from . import kineto_plan, kineto_scan
        steps = [kineto_scan.available, kineto_plan.warm] + steps
    for step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - the parser process meets the same failure and says so
            pass
