"""When the parser processes' fork server should load the numba scanners before it forks them.

Importing numba and loading the compiled Kineto / Ascend scanners, the quick plan and the model's
kernels costs ~1-1.5 s of CPU per process.  Each parser child used to pay it after its fork, both
children at once on a 2-core machine, after the fork server had imported everything else.  When
the inputs hold a trace the scanners will read (:data:`FAST_MIN_BYTES` or more), the fork server
loads them once instead (:mod:`.jit_preload`, which imports the scanners; this module is imported by them), while the parent is still importing, and every child
starts with them in memory.  Small inputs never import numba.

This module imports nothing heavy: the CLI asks :func:`worth_it` before anything else starts.
"""
from __future__ import annotations

import os

FAST_MIN_BYTES = 64 << 20
"""From this size on (a ``.gz`` counted at 8x) a Kineto or Ascend trace is read by the numba
scanner (``kineto_scan.wanted``, ``ascend_fast.wanted``)."""

_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def _setting(name: str) -> str:
    return os.environ.get(name, "auto").strip().lower()


def worth_it(paths, max_entries: int = 2000, max_depth: int = 6) -> bool:
    """Whether a load of ``paths`` (files or folders) will use a scanner: a regular file of
    :data:`FAST_MIN_BYTES` or more under them (at most ``max_entries`` folder entries looked at,
    symbolic links to folders not followed), or a scanner forced on by its setting."""
    kineto, ascend = _setting("TB_COMPARE_FAST_KINETO"), _setting("TB_COMPARE_FAST_ASCEND")
    if kineto in _OFF and ascend in _OFF:
        return False
    if kineto in _ON or ascend in _ON:
        return True
    seen = 0
    todo = [(str(p), 0) for p in paths]
    while todo:
        path, depth = todo.pop()
        try:
            if os.path.isfile(path):
                size = os.stat(path).st_size
                if size * (8 if path.endswith(".gz") else 1) >= FAST_MIN_BYTES:
                    return True
                continue
            if depth >= max_depth or not os.path.isdir(path):
                continue
            with os.scandir(path) as it:
                for entry in it:
                    seen += 1
                    if seen > max_entries:
                        return False
                    if entry.is_dir(follow_symlinks=False):
                        todo.append((entry.path, depth + 1))
                    elif entry.is_file():
                        size = entry.stat().st_size
                        if size * (8 if entry.name.endswith(".gz") else 1) >= FAST_MIN_BYTES:
                            return True
        except OSError:
            continue
    return False
