"""Handing freed heap memory back to the system (glibc ``malloc_trim``).

glibc keeps what a process frees inside its heap for reuse: after a parse drops its column pieces
(a few hundred KB each, heap-allocated) the pages stay resident though nothing uses them, and the
next big step then adds its own memory on top.  :func:`give_back` returns every whole free page
(a few ms for a few hundred MB); elsewhere than glibc it does nothing."""
from __future__ import annotations

import ctypes

_trim = None


def give_back() -> None:
    global _trim
    if _trim is None:
        try:
            _trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):      # not glibc
            _trim = False
    if _trim:
        _trim(0)
