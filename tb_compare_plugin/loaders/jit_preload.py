"""Imported by the parser processes' fork server when the inputs are big (:mod:`.jit_warm`):
loads numba and the compiled scanners once, so every forked parser starts with them
(:mod:`.jit_preload_ascend`: the same without the Kineto scanner, for Ascend exports)."""
from __future__ import annotations

from ..timing import mark
from .jit_load import load as warm

warm()
mark("fork server: numba loaded")
