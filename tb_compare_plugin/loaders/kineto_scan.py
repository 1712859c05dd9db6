"""Byte scanner for Kineto event chunks (numba): one pass over ``[ev, ev, ...]`` -> field columns.

Owns the compiled part of the fast Kineto path (:mod:`.kineto_fast` turns its output into the
loader's column pieces).  For every event of a chunk it records, per known field, the value's kind
(absent, null, int, float, string, other), its number (ints; floats as exact ns for ``ts``/``dur``
and as a double for the float args; for a number field holding text, its span) and, for text and
raw-JSON fields, the byte span and two independent 64-bit hashes of it.  The tables have one row
per event (an event's fields share cache lines).  It validates the JSON it walks (strings, numbers, literals, nesting); anything it
does not accept makes it return a status other than OK and the chunk goes to the general decoder.

numba is optional (not an install requirement): :func:`available` is False when it cannot be
imported, and the loader then uses the general decoder for every chunk.  The scanner is used only
when asked for (``TB_COMPARE_FAST_KINETO=1``, or ``kineto_json.load(..., fast=True)``), see
:func:`wanted`.  The JIT cache lives under the project's cache folder
(``<cache dir>/numba``) unless ``NUMBA_CACHE_DIR`` is set.
"""
from __future__ import annotations

import os

import numpy as np

from .kineto_scan_codes import (ARG_KEYS, BAD_JSON, ESC_KEY, K_ABSENT, K_FLOAT, K_HARD, K_INT,  # noqa: F401
                                K_NULL, K_OTHER, K_STR, MISMATCH, N_DUR, N_ID, N_PID, N_RAW0, N_TID, N_TS,
                                NO_NS, NUM, NUM_KEYS, OK, RAW_KEYS, SPAN, SPAN_KEYS, STATUS_TEXT, STR_KEYS,
                                TOO_DEEP, TOO_MANY, TOP_KEYS)

_scan = None
_import_error = None


def key_code(key: bytes) -> int:
    """Where a key sits in the lookup table (by its length, first and last byte); the scanner
    computes the same from the key's bytes."""
    return (((len(key) & 31) << 7) ^ key[0] ^ (key[-1] << 4)) & 4095


def _key_table(keys, slot_of):
    """Flat key bytes + offsets + the slot each key fills (numeric slot, or span slot + 1000),
    + a 4096-entry table code -> key index (-1: not a key we read)."""
    raw = [k.encode() for k in keys]
    off = np.zeros(len(raw) + 1, np.int64)
    off[1:] = np.cumsum([len(r) for r in raw])
    lut = np.full(4096, -1, np.int64)
    for i, r in enumerate(raw):
        assert lut[key_code(r)] == -1, f"two keys share a lookup code: {r!r}"
        lut[key_code(r)] = i
    return (np.frombuffer(b"".join(raw), np.uint8).copy(), off, np.array([slot_of(k) for k in keys], np.int64),
            lut)


def _slot(k: str, top: bool) -> int:
    if top and k == "args":
        return 9999
    if k in NUM and (top or k not in ("pid", "tid", "ts", "dur", "id")):
        return NUM[k]
    return 1000 + SPAN[k]


TOP_TABLE = _key_table(TOP_KEYS, lambda k: _slot(k, True))
ARG_TABLE = _key_table(ARG_KEYS, lambda k: _slot(k, False))


def wanted() -> bool:
    """Whether loads use the scanner by default: only when ``TB_COMPARE_FAST_KINETO=1`` for now (it
    gives the same profiles as the general decoder but is not faster yet; docs/performance.md)."""
    return os.environ.get("TB_COMPARE_FAST_KINETO", "0").lower() in ("1", "true", "yes", "on")


def available() -> bool:
    """numba imports (the first call compiles the scanner or loads it from the JIT cache)."""
    return _compile() is not None


def _compile():
    global _scan, _import_error
    if _scan is not None or _import_error is not None:
        return _scan
    if "NUMBA_CACHE_DIR" not in os.environ:
        from ..cache import default_dir
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(default_dir(), "numba")
    try:
        from . import _kineto_scan_jit as jit
    except Exception as e:              # numba missing or unusable on this platform
        _import_error = f"numba unavailable ({type(e).__name__}: {e})"
        return None
    _scan = jit.scan
    return _scan


def unavailable_reason() -> str | None:
    _compile()
    return _import_error


def scan(buf: np.ndarray):
    """(status, n, kinds[cap, NUM], ivals, fvals, span kinds[cap, SPAN], starts, ends, hashes, second
    hashes): one row per event, so an event's fields sit together in memory."""
    cap = len(buf) // 24 + 16
    nn, ns = len(NUM_KEYS), len(SPAN_KEYS)
    kn = np.zeros((cap, nn), np.uint8)
    iv = np.empty((cap, nn), np.int64)
    fv = np.empty((cap, nn), np.float64)
    ks = np.zeros((cap, ns), np.uint8)
    ss = np.empty((cap, ns), np.int64)
    se = np.empty((cap, ns), np.int64)
    sh = np.empty((cap, ns), np.uint64)
    sg = np.empty((cap, ns), np.int64)
    status, n = _scan(buf, kn, iv, fv, ks, ss, se, sh, sg, *TOP_TABLE, *ARG_TABLE)
    return status, n, kn, iv, fv, ks, ss, se, sh, sg
