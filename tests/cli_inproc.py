"""``tb-compare`` run in the test process (``cli.main(argv)``) for tests about what the command
answers rather than about its process: the same arguments, exit code, stdout and stderr as the
real command, without a fresh interpreter per run (~2-3 s of CPU each: Python, numpy, pandas and
the engines imported again, a fork server started and its preloads imported again).

What stays a subprocess: tests of the process boundary (signals, exit of the parser processes,
stderr of the children, memory of the process tree), and runs whose parser processes must see an
environment variable (``--max-expanded-mb``, ``TB_COMPARE_FAST_KINETO``, ...): in this process the
parser processes are forked from a fork server started once, with the environment of that moment.

Each run is put back the way it found this process: the environment (``--no-cache`` sets
``TB_COMPARE_CACHE=0`` for the rest of a real run), the CLI's stderr log handler (bound to this run's
stderr), the ``tb_compare_plugin`` logger's level and propagation, the warning filters and
``sys.unraisablehook``."""
from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import warnings
from dataclasses import dataclass


@dataclass
class CliRun:
    """What ``subprocess.run(..., capture_output=True, text=True)`` would give."""
    returncode: int
    stdout: str
    stderr: str
    args: tuple = ()


def run_cli(*args, env: dict | None = None) -> CliRun:
    """``tb-compare ARGS`` in this process; ``env``: variables set for the run only (read by the
    CLI process itself, not by its parser processes)."""
    from tb_compare_plugin import cli
    argv = [str(a) for a in args]
    saved_env = dict(os.environ)
    log = logging.getLogger("tb_compare_plugin")
    saved_log = (list(log.handlers), log.level, log.propagate)
    saved_hook = sys.unraisablehook
    out, err = io.StringIO(), io.StringIO()
    try:
        if env:
            os.environ.update({k: str(v) for k, v in env.items()})
        for h in list(log.handlers):            # the CLI adds its handler once, bound to the stderr of then
            if getattr(h, "tbc_cli", False):
                log.removeHandler(h)
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        log.handlers[:] = saved_log[0]
        log.setLevel(saved_log[1])
        log.propagate = saved_log[2]
        sys.unraisablehook = saved_hook
    return CliRun(code, out.getvalue(), err.getvalue(), tuple(argv))
