"""Imported by the parser processes' fork server instead of :mod:`.jit_preload` when every big
input lies in an Ascend export (:func:`.jit_warm.preload_module`): numba, the Ascend scanner and
the model's kernels, not the Kineto scanner and quick plan (~0.35 s of CPU the Ascend parsers
never use)."""
from __future__ import annotations

from ..timing import mark
from .jit_load import load

load(kineto=False)
mark("fork server: numba loaded (Ascend)")
