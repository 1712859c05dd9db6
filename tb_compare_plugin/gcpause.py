"""Pausing Python's cyclic garbage collector around allocation-heavy work, safely across threads.

Decoding a trace and building a workbook allocate millions of short-lived objects that form no
cycles; every collection they trigger walks all live objects, so both pause the collector.
``gc.disable()`` is process-wide, and TensorBoard serves requests on many threads, so the pauses
are counted: the first one in turns the collector off, the last one out turns it back on (only if
it was on before the first), whatever order the threads finish in.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused():
    """Run the block with the cyclic garbage collector off (nested and concurrent uses count)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
