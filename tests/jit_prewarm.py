"""Fill numba's JIT cache once, before the test workers run their tests (scripts/test.sh's
``pytest -n 2``; started by conftest's ``pytest_sessionstart`` in each worker).

numba's cache is keyed by the source folder's path and the source files' times, so a clean clone
(CI) compiles the Kineto scanner, its quick plan, the Ascend scanner and the model's kernels
(~110 s of CPU in all).  Without this, every process that met a part first compiled it on its
own: both workers, and the fork servers of the CLI and TensorBoard processes they started, at
the same time (two tests of ~160 s in a loaded run were two workers compiling the scanner side by
side).  Here each part is compiled by one process: each worker runs this script, which takes a
part nobody is compiling (an exclusive ``flock`` per part: the Kineto scanner with its plan,
which calls it; the Ascend scanner; the kernels), compiles it or loads it from the cache when
the other worker did it, and waits for the parts the other worker holds (a cold cache: ~110 s
of CPU over the two cores; 185 s with the scanner and the plan compiled side by side).  On a
warm cache it only loads them (~2 s of CPU).  Usage: ``python jit_prewarm.py LOCK_PREFIX``.
"""
from __future__ import annotations

import fcntl
import os
import sys


def _steps() -> dict:
    from tb_compare_plugin.model import jit
    d = jit.cache_dir()
    if d and "NUMBA_CACHE_DIR" not in os.environ:     # as the fork server's preload does
        os.environ["NUMBA_CACHE_DIR"] = d
    from tb_compare_plugin.loaders import ascend_fast, kineto_plan, kineto_scan

    def kineto():               # the plan calls the scanner: compiled with it, not beside it
        kineto_scan.available()
        kineto_plan.warm()
    return {"kineto": kineto, "ascend": ascend_fast.available, "model": lambda: jit.kernels(jit.IMPORT_ROWS)}


def main(prefix: str) -> None:
    steps = _steps()
    pending = list(steps)
    while pending:
        for part in pending:                          # a part nobody holds now
            f = open(f"{prefix}{part}.lock", "a")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            break
        else:                                         # the other worker holds every one left
            part = pending[0]
            f = open(f"{prefix}{part}.lock", "a")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            steps[part]()
        finally:
            f.close()
        pending.remove(part)


if __name__ == "__main__":
    main(sys.argv[1])
