"""Byte scanner for Kineto event chunks (numba): one pass over ``[ev, ev, ...]`` -> field columns.

Owns the compiled part of the fast Kineto path (:mod:`.kineto_fast` turns its output into the
loader's column pieces).  For every event of a chunk it records, per known field, the value's kind
(absent, null, int, float, string, other), its number (ints; floats as exact ns for ``ts``/``dur``
and as a double for the float args; for a number field holding text, its span) and, for text and
raw-JSON fields, the byte span and two independent 64-bit hashes of it.  The tables have one row
per event (an event's fields share cache lines).  The quick plan scans a chunk a block of events at
a time into small tables of its own (:func:`new_tables`; the scanner's ``pos`` / ``lim``); a whole
chunk's tables (:func:`scan`, for the careful path) are kept and reused by the next such scan once
no view of them is left (:func:`release` lets them go).  It validates the JSON it walks (strings, numbers, literals, nesting); anything it
does not accept makes it return a status other than OK and the chunk goes to the general decoder.

The scanner is used by default (``TB_COMPARE_FAST_KINETO=0`` or ``kineto_json.load(..., fast=False)``
turn it off, :func:`wanted`).  numba is an install requirement; when it cannot be imported or run
here, :func:`available` is False, the loader uses the general decoder for every chunk and the
profile's warnings say so.  The JIT cache is a per-user folder (:func:`jit_cache_dir`).
"""
from __future__ import annotations

import os
import sys

import numpy as np

from ..model import jit as jit_cache
from .jit_warm import FAST_MIN_BYTES
from .kineto_scan_codes import (ARG_KEYS, BAD_JSON, ESC_KEY, K_ABSENT, K_FLOAT, K_HARD, K_INT,  # noqa: F401
                                K_NULL, K_OTHER, K_STR, MISMATCH, N_DUR, N_ID, N_PID, N_RAW0, N_TID, N_TS,
                                NO_NS, NUM, NUM_KEYS, OK, PAUSE, RAW_KEYS, SPAN, SPAN_KEYS, STATUS_TEXT, STR_KEYS,
                                TOO_DEEP, TOO_MANY, TOP_KEYS)

_scan = None
_import_error = None
first_seen = None           # _kineto_scan_jit.first_seen once compiled


def key_code(key: bytes) -> int:
    """Where a key sits in the lookup table (by its length, first and last byte); the scanner
    computes the same from the key's bytes."""
    return (((len(key) & 31) << 7) ^ key[0] ^ (key[-1] << 4)) & 4095


def _key_table(keys, slot_of):
    """Each key's length, its bytes as 4 little-endian uint64 words (zero padded), the slot it fills
    (numeric slot, or span slot + 1000), + a 4096-entry table code -> key index (-1: not a key we read)."""
    raw = [k.encode() for k in keys]
    words = np.zeros((len(raw), 4), np.uint64)
    lut = np.full(4096, -1, np.int64)
    for i, r in enumerate(raw):
        assert 0 < len(r) <= 32 and r.isascii()
        words[i] = np.frombuffer(r.ljust(32, b"\0"), "<u8")
        assert lut[key_code(r)] == -1, f"two keys share a lookup code: {r!r}"
        lut[key_code(r)] = i
    return (np.array([len(r) for r in raw], np.int64), words, np.array([slot_of(k) for k in keys], np.int64),
            lut)


def _slot(k: str, top: bool) -> int:
    if top and k == "args":
        return 9999
    if k in NUM and (top or k not in ("pid", "tid", "ts", "dur", "id")):
        return NUM[k]
    return 1000 + SPAN[k]


# Keys Kineto traces write that the scanner does not read (slot -1: skipped, as an unknown key is).
# Listed, they take part in the next-key prediction: the key after one of them is checked in place
# instead of being read and looked up.
SKIP_TOP_KEYS = ("bp", "s")
SKIP_ARG_KEYS = ("Trace name", "Trace iteration", "Profiler Event Index", "Module Hierarchy", "cbid", "Fwd thread id",
                 "context", "queued", "warps per SM", "Ev Idx", "Record function id", "kind", "name")
TOP_TABLE = _key_table(TOP_KEYS + SKIP_TOP_KEYS, lambda k: -1 if k in SKIP_TOP_KEYS else _slot(k, True))
ARG_TABLE = _key_table(ARG_KEYS + SKIP_ARG_KEYS, lambda k: -1 if k in SKIP_ARG_KEYS else _slot(k, False))


# Traces smaller than FAST_MIN_BYTES (a ``.gz`` counted at 8x its size) use the general decoder unless
# the scanner is asked for: a process's first scan costs ~0.8 s of CPU (importing numba, loading the
# compiled scanner), which the scanner wins back only over ~100 MB of JSON.


def wanted(size: int | None = None, path: str = "") -> bool:
    """Whether a load of ``size`` bytes (``path`` tells a gzip file) uses the scanner.
    ``TB_COMPARE_FAST_KINETO``: 0 / false / no / off never, 1 / true / yes / on always, unset or auto
    from :data:`FAST_MIN_BYTES` on (it gives the same profiles as the general decoder, ~2x faster on
    big traces; docs/performance.md)."""
    v = os.environ.get("TB_COMPARE_FAST_KINETO", "auto").strip().lower()
    if v in ("0", "false", "no", "off"):
        return False
    if v in ("1", "true", "yes", "on") or size is None:
        return True
    return size * (8 if path.endswith(".gz") else 1) >= FAST_MIN_BYTES


def available() -> bool:
    """numba imports and the scanner runs (the first call compiles it, or loads it from the JIT cache)."""
    return _compile() is not None


def jit_cache_dir() -> str:
    """Where numba keeps the compiled scanner: ``$NUMBA_CACHE_DIR`` when set, else a per-user folder
    that outlives the profile cache (``$XDG_CACHE_HOME`` or ``~/.cache``, ``tb-compare/numba``;
    ``TB_COMPARE_CACHE_DIR`` is not used: it is often a scratch folder, and a compile costs ~10 s),
    or the temp folder when that one cannot be written.  One rule for every numba module of the
    package: :func:`..model.jit.cache_dir`."""
    return jit_cache.cache_dir()


def _compile():
    global _scan, _import_error
    if _scan is not None or _import_error is not None:
        return _scan
    try:
        if sys.byteorder != "little":
            raise RuntimeError("the scanner reads 8 bytes at a time as little-endian words")
        from ..model import jit_bundle
        jit = jit_bundle.provide(__package__ + "._kineto_scan_jit", _self_test, jit_cache_dir())
    except Exception as e:              # numba missing or unusable on this platform
        _import_error = f"numba unavailable ({type(e).__name__}: {e})"
        return None
    global first_seen
    first_seen = jit.first_seen
    _scan = jit.scan
    return _scan
def unavailable_reason() -> str | None:
    _compile()
    return _import_error


def scan(buf: np.ndarray):
    """(status, n, kinds[cap, NUM], ivals, fvals, span kinds[cap, SPAN], starts, ends, hashes, second
    hashes): one row per event, so an event's fields sit together in memory.  Rows from ``n`` on
    hold garbage.  The tables are reused by the next scan when nothing refers to them any more."""
    return _run(_scan, buf)


_pool: list = []
"""The last scan's tables, reused when no view of them is left: fresh tables cost a page fault
and a zeroed page per 4 KB touched (~1 s of system time per GB of trace)."""


def release() -> None:
    """Let the tables kept for the next scan go (~50 MB touched for 16 MB chunks)."""
    _pool.clear()


def _tables(cap: int) -> list:
    global _pool
    # each table is referenced only by the list, the loop variable and getrefcount's argument
    if _pool and _pool[0].shape[0] >= cap and all(sys.getrefcount(a) == 3 for a in _pool):
        return [a[:cap] for a in _pool]
    _pool = new_tables(cap + cap // 4)    # the next chunks may be a little longer (cut at an event's end)
    return [a[:cap] for a in _pool]


def new_tables(rows: int) -> list:
    """Empty tables (kinds, ints, floats, span kinds, starts, ends, hashes, second hashes) for
    ``rows`` events, as :func:`scan` returns them."""
    nn, ns = len(NUM_KEYS), len(SPAN_KEYS)
    return [np.empty((rows, nn), np.uint8), np.empty((rows, nn), np.int64), np.empty((rows, nn), np.float64),
            np.empty((rows, ns), np.uint8), np.empty((rows, ns), np.int64), np.empty((rows, ns), np.int64),
            np.empty((rows, ns), np.uint64), np.empty((rows, ns), np.int64)]


def _self_test(jit) -> None:
    """Run the scanner on a one-event chunk (loads it): numba's module, or its bundle's kernels
    (:mod:`..model.jit_bundle`)."""
    got = _run(jit.scan, np.frombuffer(bytearray(b'[{"ph": "X", "ts": 1.5, "args": {"grid": [1, 1, 1]}}]'), np.uint8))
    if got[0] != OK or got[1] != 1:
        raise RuntimeError(f"the scanner refused its own test chunk (status {got[0]})")
    jit.first_seen(np.zeros(2, np.uint64))


def _run(fn, buf: np.ndarray):
    """The scan of ``buf``; a read-only buffer (decompressed ``bytes``) goes in as a writable-typed
    view of its memory, so numba compiles and loads one form of the scanner, not two (it never
    writes into the buffer)."""
    cap = len(buf) // 24 + 16
    tables = _tables(cap)
    status, n = fn(jit_cache.writable_view(buf), np.zeros(1, np.int64), cap + 1, *tables, *TOP_TABLE, *ARG_TABLE)
    return (status, n, *tables)
