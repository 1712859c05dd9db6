"""When the model and the engines use their numba kernels (:mod:`._sweeps_jit`), and loading them.

The kernels are one-pass forms of numpy computations (the stack sweep of op nesting, the
pre-order walk of the op tree, ...); each caller keeps its numpy form, which gives the same
answer, for small inputs and for when numba cannot run.  :func:`kernels` says which to use:

- ``TB_COMPARE_JIT=0`` (or false / no / off): never the kernels;
- below :data:`MIN_ROWS` rows: numpy (a kernel's first call in a process loads it from the JIT
  cache, a few ms; numpy is as fast on small inputs);
- from :data:`MIN_ROWS` rows when numba is already imported (the fast Kineto scanner ran in this
  process), from :data:`IMPORT_ROWS` rows otherwise (importing numba costs ~0.5 s of CPU).

A read-only array (a column mapped from the cache, a buffer from ``bytes``) is a different type
to numba than a writable one, so each kernel would be compiled, and loaded, twice: the kernels
are called through :class:`_Kernels`, which hands them read-only arrays as writable-typed views
of the same memory (:func:`writable_view`; the kernels never write into their inputs -- numba
refuses to compile a write into a read-only array, and both forms compiled).

numba keeps the compiled kernels in the JIT cache folder the Kineto scanner uses
(``loaders.kineto_scan.jit_cache_dir``: ``$NUMBA_CACHE_DIR``, else a per-user folder); the first
use on a machine compiles them (a few seconds, once).  Once they were read back from that cache,
a bundle of them lets later processes call them without importing numba (:mod:`.jit_bundle`).
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading

from ..envflags import switched_off

MIN_ROWS = 1 << 15
IMPORT_ROWS = 1 << 19

_lock = threading.Lock()
_mod = None
_error: str | None = None


def kernels(n: int):
    """The kernels module to use for an input of ``n`` rows, or None for the numpy form."""
    if n < MIN_ROWS or _error is not None:
        return None
    if switched_off("TB_COMPARE_JIT"):
        return None
    if _mod is None:
        if n < IMPORT_ROWS and "numba" not in sys.modules:
            return None
        _load()
    return _mod


def unavailable_reason() -> str | None:
    """Why the kernels cannot run here (None: they can, or were not tried yet)."""
    return _error


def cache_dir() -> str:
    """numba's cache folder: ``$NUMBA_CACHE_DIR`` when set, else ``tb-compare/numba`` under
    ``$XDG_CACHE_HOME`` or ``~/.cache``, or the temp folder when that one cannot be written
    (every numba module of the package uses this rule: the Kineto and Ascend scanners through
    ``loaders.kineto_scan.jit_cache_dir``)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for d in (os.path.join(base, "tb-compare", "numba"),
              os.path.join(tempfile.gettempdir(), f"tb-compare-numba-{getattr(os, 'getuid', lambda: 0)()}")):
        try:
            os.makedirs(d, exist_ok=True)
        except OSError:
            continue
        if os.access(d, os.W_OK):
            return d
    return ""


def _load() -> None:
    global _mod, _error
    with _lock:
        if _mod is not None or _error is not None:
            return
        try:
            from . import jit_bundle
            mod = jit_bundle.provide(__package__ + "._sweeps_jit", _warm, cache_dir())
        except Exception as e:          # numba missing or unusable on this platform
            _error = f"numba unavailable ({type(e).__name__}: {e})"
            return
        _mod = _Kernels(mod)


def _warm(mod) -> None:
    """numba's module: run every kernel once (loads them from numba's cache); a bundle's are loaded."""
    if hasattr(mod, "warm"):
        mod.warm()


class _Array:
    """Holds a read-only array while a writable-typed view of its memory exists."""

    def __init__(self, a) -> None:
        self.keep = a
        self.__array_interface__ = {"data": (a.ctypes.data, False), "shape": a.shape, "typestr": a.dtype.str,
                                    "strides": a.strides, "version": 3}


def writable_view(a):
    """``a`` itself, or when ``a`` is a read-only numpy array, a writable-typed view of the same
    memory (no copy; it keeps ``a`` alive): numba then uses the one compiled form it has for
    writable arrays.  Only for code that never writes into it."""
    import numpy as np
    if isinstance(a, np.ndarray) and not a.flags.writeable:
        return np.asarray(_Array(a))
    return a


class _Kernels:
    """The kernels module, each kernel called with read-only array arguments as writable-typed
    views (:func:`writable_view`): one compiled form per kernel, not two."""

    def __init__(self, mod) -> None:
        self._mod = mod

    def __getattr__(self, name):
        from .jit_bundle import Kernel
        f = getattr(self._mod, name)
        if not (hasattr(f, "py_func") or isinstance(f, Kernel)):    # not a kernel
            return f

        def call(*args):
            return f(*[writable_view(a) for a in args])
        call.__name__ = name
        self.__dict__[name] = call
        return call
