"""Column building blocks shared by the Ascend text loader's trace decoder and side-file readers.

Owns the exact value conversions (µs text -> int64 ns, ids -> int64 with stable negative ids for
odd strings, numbers -> float64, interning) and :class:`Field`, the compact chunk-by-chunk store of
one raw JSON field: per chunk, all-int values become an int64 piece, all-string values int32 codes
into a per-field :class:`Vocab`, all-None a count, anything else (mixed or odd types) stays as
Python objects.  Conversions whose result depends on a whole column (the negative ids :func:`ints`
hands out, the order :func:`intern` assigns symbol ids in) are applied once, at the end, to exactly
the rows a table keeps, so a chunked decode gives the same tables as decoding everything at once.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import SymbolTable, timeconv

_NONE_T = type(None)
_NUMS = frozenset({int, float, _NONE_T})


def objects(values) -> np.ndarray:
    """1-d object array without numpy probing each element for nested sequences."""
    return np.fromiter(values, dtype=object, count=len(values))


def floats(values) -> np.ndarray:
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(np.float64)


def ts_ns(values) -> np.ndarray:
    """µs values -> exact int64 ns (-1 when unreadable), value by value.

    Fast path for strings with exactly 3 decimals ("1736408883688177.930"): values of equal
    width are joined into one byte matrix and converted by digit arithmetic.  Anything else
    (numbers, other decimals, junk) goes through timeconv's exact per-value rules.
    """
    n = len(values)
    out = np.full(n, -1, dtype=np.int64)
    if not n:                                  # a header-only CSV
        return out
    if set(map(type, values)) - {str}:
        return np.array(_slow_ns(values), dtype=np.int64)
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    slow = np.zeros(n, dtype=bool)
    widths = [int(lens[0])] if (lens == lens[0]).all() else np.unique(lens).tolist()
    for width in widths:
        idx = np.arange(n) if len(widths) == 1 else np.flatnonzero(lens == width)
        if not 5 <= width <= 20:
            slow[idx] = True
            continue
        sub = values if len(idx) == n else [values[i] for i in idx.tolist()]
        try:
            buf = ("".join(sub)).encode("ascii")
        except UnicodeEncodeError:
            slow[idx] = True
            continue
        m = np.frombuffer(buf, dtype=np.uint8).reshape(len(idx), width)
        dot = width - 4
        bad = m[:, dot] != 46
        if width == 20:                            # 19 digits: stay below the int64 limit
            bad |= m[:, 0] > 56
        acc = np.zeros(len(idx), dtype=np.int64)
        for c in range(width):
            if c != dot:
                col = m[:, c] - np.uint8(48)       # non-digits wrap around to > 9
                bad |= col > 9
                acc *= 10
                acc += col
        out[idx[~bad]] = acc[~bad]
        slow[idx[bad]] = True
    if slow.any():
        rows = np.flatnonzero(slow)
        out[rows] = _slow_ns([values[i] for i in rows.tolist()])
    return out


def _slow_ns(values) -> list[int]:
    out = []
    for v in values:
        try:
            t = timeconv.us_to_ns(v)
        except (ValueError, TypeError, OverflowError, AttributeError):
            t = -1
        out.append(t if -(1 << 63) < t < (1 << 63) else -1)
    return out


def ints(values: list, default: int = -1) -> np.ndarray:
    """Python values -> int64; None/junk/out of range -> default, non-numeric strings -> stable
    negative ids (numbered over ``values``: apply it to exactly the rows a table keeps)."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        pass
    odd: dict = {}

    def one(v):
        if v is None or isinstance(v, bool):
            return default
        if isinstance(v, float):
            return int(v) if np.isfinite(v) else default
        if isinstance(v, str):
            s = v.strip()
            if s.lstrip("-").isdigit():
                return int(s)
            if not s or s.upper() in ("N/A", "NA", "NONE", "NAN"):
                return default
            return odd.setdefault(s, -2 - len(odd))
        try:
            return int(v)
        except (TypeError, ValueError, OverflowError):
            return default

    def fit(i: int) -> int:                # beyond int64 (e.g. a corrupted 2^64 id): missing
        return i if -(1 << 63) <= i < (1 << 63) else default
    return np.array([fit(v) if type(v) is int else fit(one(v)) for v in values], dtype=np.int64)


def intern(sym: SymbolTable, values) -> np.ndarray:
    try:
        return sym.intern_many(values)
    except TypeError:                      # unhashable values (lists) -> their text
        return sym.intern_many([v if v is None or isinstance(v, str) else str(v) for v in values])


class Vocab(dict):
    """Distinct strings -> codes 0, 1, ... in order of first appearance; None -> -1."""

    def __init__(self) -> None:
        super().__init__({None: -1})
        self.values: list = []

    def __missing__(self, key):
        code = self[key] = len(self.values)
        self.values.append(key)
        return code


class Field:
    """One raw JSON field of many events, accumulated chunk by chunk (see the module doc)."""
    __slots__ = ("pieces", "vocab")

    def __init__(self) -> None:
        # ("s", codes) / ("i", int64, None-mask or None) / ("n", count: all None) / ("f", float64) / ("o", objects)
        self.pieces: list = []
        self.vocab = Vocab()

    def add(self, vals, kind: str) -> None:
        """Append one chunk's values; ``kind`` is the expected type: "s" text, "i" int, "f" number."""
        n = len(vals)
        if kind == "s":
            voc = self.vocab
            before = len(voc.values)
            try:
                codes = np.fromiter(map(voc.__getitem__, vals), np.int32, n)
            except TypeError:                         # unhashable values
                codes = None
            new = voc.values[before:]
            if new and set(map(type, new)) != {str}:  # 1 == 1.0 == True: only str may be keys
                for v in new:
                    if type(v) is not str:
                        voc.pop(v, None)
                codes = None
            self.pieces.append(("s", codes) if codes is not None else ("o", objects(vals)))
            return
        types = set(map(type, vals))
        try:
            if kind == "f" and types <= _NUMS:
                self.pieces.append(("f", np.array(vals, dtype=np.float64)))
                return
            if kind == "i" and types == {int}:
                self.pieces.append(("i", np.fromiter(vals, np.int64, n), None))
                return
            if kind == "i" and types == {_NONE_T}:
                self.pieces.append(("n", n))
                return
            if kind == "i" and types == {int, _NONE_T}:
                f = np.array(vals, dtype=np.float64)
                none = np.isnan(f)
                if not (np.abs(f[~none]) >= 2.0 ** 53).any():
                    self.pieces.append(("i", np.where(none, -1.0, f).astype(np.int64), none))
                    return
        except OverflowError:
            pass
        self.pieces.append(("o", objects(vals)))

    def count_odd(self) -> int:
        """How many values are neither text nor None (mis-typed values of a text field)."""
        return sum(type(v) is not str and v is not None for p in self.pieces if p[0] == "o" for v in p[1])

    def _plain(self, kind: str) -> bool:
        return all(p[0] == kind or p[0] == "n" for p in self.pieces)

    def _piece_objects(self, p) -> np.ndarray:
        k = p[0]
        if k == "s":
            return objects(self.vocab.values + [None])[p[1]]                  # code -1 -> None
        if k == "n":
            return np.full(p[1], None, dtype=object)
        if k == "i":
            o = p[1].astype(object)
            if p[2] is not None:
                o[p[2]] = None
            return o
        return p[1].astype(object) if k == "f" else p[1]

    def objects(self, rows=None) -> np.ndarray:
        """The raw values (as decoded) of ``rows`` (all when None) as an object array."""
        if self._plain("s"):
            parts = [p[1] if p[0] == "s" else np.full(p[1], -1, np.int32) for p in self.pieces]
            codes = np.concatenate(parts) if parts else np.zeros(0, np.int32)
            return self._piece_objects(("s", codes if rows is None else codes[rows]))
        parts = [self._piece_objects(p) for p in self.pieces]
        o = np.concatenate(parts) if parts else np.zeros(0, dtype=object)
        return o if rows is None else o[rows]

    def ints(self, rows=None) -> np.ndarray:
        """:func:`ints` of the values of ``rows``: computed on int pieces when it can."""
        if self._plain("i"):
            parts = [p[1] if p[0] == "i" else np.full(p[1], -1, np.int64) for p in self.pieces]
            a = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            return a if rows is None else a[rows]
        return ints(self.objects(rows).tolist())

    def column(self, rows, text: bool):
        """What the tables read: text as an object array; numbers as int64 when every value is an
        int or None (``ints`` is then known), else the raw values as a list, for the table code
        to apply :func:`ints` to exactly the rows it keeps."""
        if text:
            return self.objects(rows)
        return self.ints(rows) if self._plain("i") else self.objects(rows).tolist()

    def floats(self) -> np.ndarray:
        if all(p[0] == "f" for p in self.pieces):
            return np.concatenate([p[1] for p in self.pieces]) if self.pieces else np.zeros(0)
        return floats(self.objects().tolist())
