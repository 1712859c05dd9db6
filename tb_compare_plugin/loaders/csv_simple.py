"""A numpy reader for the plain CSVs of an Ascend export (``memory_record.csv``,
``operator_memory.csv``): no quotes, every line ended by LF or every one by CRLF, every row with
the header's number of cells.

It reads such a file without pandas' tokenizer (~3x less CPU on a 13.7 MB ``memory_record.csv``):
the separators are found once over the bytes, each wanted column is cut out of them, and a column
is converted the way ``ascend_csv`` converts the pandas frame's, with the same values:

* ``"ts"``: µs text with 3 decimals and a TAB, every non-empty cell the same width -> exact int64
  ns (``ascend_columns.fixed_point_rows``, the same code ``ts_ns`` runs on such text), "" -> -1;
* ``"float"``: "" and "N/A" -> NaN, else ``[-]digits[.digits]`` with at most 15 digits, read as
  integer / 10**decimals (both exact doubles, so the quotient is the correctly rounded value:
  Python's ``float()`` of the cell, which pandas' C parser gives too);
* ``"text"``: each distinct cell decoded once (UTF-8), "" and "N/A" -> None, as
  :class:`ascend_columns.Texts` (codes into the distinct strings: interned and classified once each).

When this process has the Ascend scanner loaded (a large ``trace_view.json`` is read here), its
compiled helpers (``_ascend_scan_jit.csv_seps``, ``cell_words``, ``cell_floats``) find and check the
separators, cut the cells and read the number cells in one pass each: the same arrays and the same
refusals as the numpy code (tests/test_csv_simple.py runs every case both ways), except that a
number column with more than 20,000 distinct cells is read here too (its values are the ones pandas
gives).  The scanner is never loaded for them.

Anything else -- a quote, a stray CR, a NUL, a ragged row, a header without every wanted column or with
one twice, no rows, a cell one of those rules does not read -- returns None and the caller reads
the file with pandas as before (its warnings and errors unchanged).
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from .ascend_columns import Texts, fixed_point_rows, objects
from .regular import open_regular

_NA = (b"", b"N/A")
_MAX_DIGITS = 15
_MAX_DISTINCT = 20000
_PAD = 64
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], np.uint64)


def read(path: str, kinds: dict[str, str]) -> dict | None:
    """Columns ``{header: kind}`` of ``path`` by the rules above, or None (read it with pandas)."""
    try:
        with open_regular(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            whole = bytearray(size + _PAD)          # (cells are cut 8 bytes at a time: room past the end)
            if fh.readinto(memoryview(whole)[:size]) != size or fh.read(1):
                return None
    except OSError:
        return None
    raw = memoryview(whole)[:size]
    skip = 3 if raw[:3] == b"\xef\xbb\xbf" else 0
    raw = raw[skip:]
    text = whole                            # (bytes methods; the BOM is skipped by offsets)
    if not size or raw[-1] != 10 or text.find(b'"', skip) >= 0 or text.find(b"\0", skip, size) >= 0:
        return None
    if not whole.isascii():                 # pandas decodes every cell, read or not: so do we
        try:
            str(raw, "utf-8")
        except UnicodeDecodeError:
            return None
    crlf = size - skip >= 2 and raw[-2] == 13   # every line ends so (checked below), or none does
    if not crlf and text.find(b"\r", skip) >= 0:
        return None
    eol = 13 if crlf else 10
    head_end = text.find(b"\r\n" if crlf else b"\n", skip) - skip
    try:
        header = [h.strip() for h in bytes(raw[:head_end]).decode("utf-8").split(",")]
    except UnicodeDecodeError:
        return None
    if len(set(header)) != len(header) or not all(h in header for h in kinds):
        return None
    ncol = len(header)
    b = np.frombuffer(whole, np.uint8)
    step = 2 if crlf else 1
    body = skip + head_end + step
    sep = _separators(b, text, skip, body, size, eol, crlf, ncol)
    if sep is None:
        return None
    n = len(sep)
    first = np.empty(n, np.int64)
    first[0] = body
    first[1:] = sep[:-1, -1] + step
    out = {}
    for name, kind in kinds.items():
        j = header.index(name)
        lo = first if j == 0 else sep[:, j - 1] + 1
        hi = sep[:, j]
        got = {"ts": times, "float": _floats, "text": _texts}[kind](b, lo, hi)
        if got is None:
            return None
        out[name] = got
    return out


def _kernels():
    """The Ascend scanner's compiled CSV helpers (``_ascend_scan_jit``: ``csv_seps``, ``cell_words``,
    ``cell_floats``; :mod:`.csv_quoted`'s ``csv_read`` too) when this process has the scanner
    loaded already (a large trace_view.json is read here: its parser process has them from the
    fork server); None otherwise (never loaded here: the numpy code below gives the same arrays)."""
    from . import ascend_fast
    return ascend_fast.loaded()


def _separators(b, text, skip: int, body: int, size: int, eol: int, crlf: bool, ncol: int) -> np.ndarray | None:
    """The (rows, ncol) offsets of the body's separators, every row ncol - 1 commas then ``eol``
    (with CRLF: CR LF, and as many rows as the file has LFs after the header's, since a lone LF
    in a cell or in the header would be a line break to pandas); None when a row is not so or
    there is no row."""
    kern = _kernels()
    if kern is not None:            # (a row is at least its separators; pages never written are never mapped)
        out = np.empty(((size - body) // ncol + 1, ncol), np.int64)
        n = kern.csv_seps(b, body, size, eol, crlf, out)   # (with CRLF: every LF of the body ends a row)
        return out[:n] if n > 0 and not (crlf and text.count(b"\n", skip, body) != 1) else None
    lines = text.count(b"\n", skip, size)
    part = b[body:size]
    sep = np.flatnonzero((part == 44) | (part == eol)) + body
    if not len(sep) or len(sep) % ncol or (crlf and len(sep) // ncol != lines - 1):
        return None
    sep = sep.reshape(-1, ncol)
    if (b[sep[:, -1]] != eol).any() or (ncol > 1 and (b[sep[:, :-1]] != 44).any()) \
            or (crlf and (b[sep[:, -1] + 1] != 10).any()):
        return None
    return sep


def _words(b: np.ndarray, lo: np.ndarray, hi: np.ndarray, width: int) -> np.ndarray | None:
    """The cells as an (n, ceil(width / 8)) uint64 matrix: 8 bytes a word (little-endian), the
    bytes past each cell's end zero (None: wider than _PAD)."""
    k = -(-width // 8)
    if 8 * k > _PAD:
        return None
    kern = _kernels()
    if kern is not None:
        out = np.empty((len(lo), k), np.uint64)
        kern.cell_words(b, np.ascontiguousarray(lo, np.int64), np.ascontiguousarray(hi, np.int64), out)
        return out
    at = np.ndarray((len(b) - 8,), np.uint64, b, 0, (1,))     # the 8 bytes from each offset
    n = hi - lo
    out = np.empty((len(lo), k), np.uint64)
    for j in range(k):
        w = at[lo + 8 * j]
        keep = np.clip(n - 8 * j, 0, 8).astype(np.uint64)
        w &= _MASKS[keep]
        out[:, j] = w
    return out


def _cells(b, lo, hi, width: int) -> np.ndarray | None:
    """The cells as an (n, width) byte matrix, zero-padded (None: wider than _PAD)."""
    w = _words(b, lo, hi, width)
    return None if w is None else np.ascontiguousarray(w.view(np.uint8)[:, :width])


def times(b, lo, hi):
    """The "ts" cells ``[lo, hi)`` of ``b`` (8 bytes past the end; each non-empty one followed by a
    comma) as exact int64 ns: empty cells -> -1 (as ``ts_ns``); the others must share one width and
    read exactly, else None."""
    w = hi - lo
    full = np.flatnonzero(w)
    if not len(full):
        return None
    width = int(w[full[0]])
    if (w[full] != width).any() or b[hi[full[0]]] != 44:
        return None
    m = _cells(b, lo[full], hi[full] + 1, width + 1)
    got = None if m is None or width < 1 else fixed_point_rows(m, width)
    if got is None or got[1] is not None:
        return None
    if len(full) == len(w):
        return got[0]
    out = np.full(len(w), -1, np.int64)
    out[full] = got[0]
    return out


def _distinct(b, lo, hi):
    """(codes, distinct cells as bytes) of a column, or None."""
    words = _words(b, lo, hi, max(int((hi - lo).max()), 1))
    if words is None:
        return None
    codes, _ = pd.factorize(words[:, 0])
    for k in range(1, words.shape[1]):              # exact: pairs of codes, factorized again
        more, uniq = pd.factorize(words[:, k])
        codes, _ = pd.factorize(codes.astype(np.int64) * len(uniq) + more)
    first = np.full(int(codes.max()) + 1, len(codes), np.int64)
    np.minimum.at(first, codes, np.arange(len(codes)))
    return codes, [words[i].tobytes().rstrip(b"\0") for i in first.tolist()]


def _texts(b, lo, hi):
    """A text column as :class:`Texts` ("" and "N/A" None): its distinct strings, decoded once."""
    got = _distinct(b, lo, hi)
    if got is None:
        return None
    codes, uniq = got
    try:
        vals = [None if u in _NA else u.decode("utf-8") for u in uniq]
    except UnicodeDecodeError:
        return None
    keep = [v for v in vals if v is not None]
    lut = np.full(len(vals) + 1, -1, np.int32)          # (code -1: none here)
    lut[[i for i, v in enumerate(vals) if v is not None]] = np.arange(len(keep), dtype=np.int32)
    return Texts(lut[codes], keep)


def _floats(b, lo, hi):
    kern = _kernels()
    if kern is not None:                    # each cell read in place: the values below, no distinct limit
        out = np.empty(len(lo), np.float64)
        bad = kern.cell_floats(b, np.ascontiguousarray(lo, np.int64), np.ascontiguousarray(hi, np.int64), out)
        return out if bad < 0 else None
    got = _distinct(b, lo, hi)
    if got is None:
        return None
    codes, uniq = got
    if len(uniq) > _MAX_DISTINCT:           # a Python step per distinct cell: pandas is quicker
        return None
    vals = []
    for u in uniq:
        if u in _NA:
            vals.append(np.nan)
            continue
        neg = u.startswith(b"-")
        whole, dot, frac = (u[1:] if neg else u).partition(b".")
        digits = whole + frac
        if not (whole.isdigit() and (frac.isdigit() or not dot) and digits.isascii()
                and len(digits) <= _MAX_DIGITS):
            return None
        v = int(digits) / 10.0 ** len(frac)
        vals.append(-v if neg else v)
    return np.array(vals, np.float64)[codes]
