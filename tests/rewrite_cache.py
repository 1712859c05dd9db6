"""pytest's rewritten test modules, written once by the pytest-xdist controller for its workers.

Each worker collects every test module, and pytest rewrites each module's asserts before it
imports it (parse, rewrite, compile: ~2.3 s of CPU for the ~95 files).  pytest keeps the result in
``__pycache__/*.cpython-311-pytest-<version>.pyc`` next to the source, but never writes it when
``PYTHONDONTWRITEBYTECODE`` is set (it is on the CI machine): both workers rewrote every module,
on every run (the suite's collection, alone: 7.4 s of CPU a process, 2.6 s with the cache).  It
reads such a file whatever that setting, when the source's hash matches.  So the controller, which
collects nothing itself, writes them (``write_for_workers``, in a thread started before the
workers are) with the same configuration, the way pytest does (a temporary file renamed into
place, so a worker reads a whole file or none); a worker collecting before a file is there
rewrites that module itself, as before.  Uses pytest's own (private) rewrite functions; if they
are not there, nothing is written."""
from __future__ import annotations

import os
import threading
from pathlib import Path


def _write(config, tests: Path) -> None:
    try:
        from _pytest.assertion import rewrite as rw
    except ImportError:
        return
    for fn in [tests / "conftest.py"] + sorted(tests.glob("test_*.py")):     # the order collection imports them
        try:
            pyc = rw.get_cache_dir(fn) / (fn.name[:-3] + rw.PYC_TAIL)
            if rw._read_pyc(fn, pyc) is not None:
                continue
            source_hash, co = rw._rewrite_test(fn, config)
            pyc.parent.mkdir(exist_ok=True)
            tmp = f"{pyc}.{os.getpid()}"
            with open(tmp, "wb") as fp:
                rw._write_pyc_fp(fp, source_hash, co)
            os.replace(tmp, pyc)
        except Exception:  # noqa: BLE001 - an optimisation: the worker rewrites the module itself
            continue


def write_for_workers(config, tests: Path) -> threading.Thread:
    """Start writing the rewritten modules of ``tests`` (``test_*.py`` and ``conftest.py``)."""
    t = threading.Thread(target=_write, args=(config, tests), name="rewrite-cache", daemon=True)
    t.start()
    return t
