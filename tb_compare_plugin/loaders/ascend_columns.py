"""Column building blocks shared by the Ascend text loader's trace decoder and side-file readers.

Owns the exact value conversions (µs text -> int64 ns, ids -> int64 with stable negative ids for
odd strings, numbers -> float64, interning) and :class:`Field`, the compact chunk-by-chunk store of
one raw JSON field: per chunk, all-int values become an int64 piece, all-string values int32 codes
into a per-field :class:`Vocab`, all-None a count, anything else (mixed or odd types) stays as
Python objects.  Conversions whose result depends on a whole column (the negative ids :func:`ints`
hands out, the order :func:`intern` assigns symbol ids in) are applied once, at the end, to exactly
the rows a table keeps, so a chunked decode gives the same tables as decoding everything at once.
Text columns reach the tables as :class:`Texts` (codes + distinct strings), so interning and
classifying run once per distinct string (:func:`per_distinct` does the same for plain values).
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

    Fast path for text with exactly 3 decimals ("1736408883688177.930", maybe with a trailing TAB
    as in the CSVs): the values, joined with a "," after each, are read as one byte matrix by digit
    arithmetic (:func:`_fixed_point`).  Anything else (numbers, other decimals, junk) goes through
    timeconv's exact per-value rules.
    """
    n = len(values)
    if not n:                                  # a header-only CSV
        return np.full(0, -1, dtype=np.int64)
    try:
        text = ",".join(values) + ","
    except TypeError:                          # not all text
        return np.array(_slow_ns(values), dtype=np.int64)
    width = len(values[0])
    if len(text) == n * (width + 1):
        got = _fixed_point(text, n, width)
        # every row read: the n inserted commas sit exactly at the row ends, so every value has
        # this width (a value with another width would move them)
        if got is not None and got[1] is None:
            return got[0]
    return _ns_by_width(values)


def _ns_by_width(values) -> np.ndarray:
    """:func:`ts_ns` of text values of mixed widths: the fast path per width, the rest value by value."""
    n = len(values)
    out = np.full(n, -1, dtype=np.int64)
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    slow = np.zeros(n, dtype=bool)
    for width in np.unique(lens).tolist():
        if width == 0:                         # "" -> -1, as us_to_ns has it
            continue
        idx = np.flatnonzero(lens == width)
        sub = [values[i] for i in idx.tolist()]
        got = _fixed_point(",".join(sub) + ",", len(sub), width)
        if got is None:
            slow[idx] = True
            continue
        acc, bad = got
        if bad is None:
            out[idx] = acc
        else:
            out[idx[~bad]] = acc[~bad]
            slow[idx[bad]] = True
    if slow.any():
        rows = np.flatnonzero(slow)
        out[rows] = _slow_ns([values[i] for i in rows.tolist()])
    return out


_PATTERNS: dict = {}


def _pattern(ndig: int, tab: bool) -> tuple:
    """(byte template, digit columns, columns that must match exactly) for rows of ``ndig`` digits
    with the dot before the last 3, an optional TAB, then ",";  templates hold "0" for digits."""
    key = (ndig, tab)
    if key not in _PATTERNS:
        text = "0" * (ndig - 3) + ".000" + ("\t" if tab else "") + ","
        tmpl = np.frombuffer(text.encode(), dtype=np.uint8).copy()
        digit = tmpl == 48
        _PATTERNS[key] = (tmpl, np.flatnonzero(digit).tolist(), np.flatnonzero(~digit))
    return _PATTERNS[key]


def _fixed_point(text: str, n: int, width: int):
    """Rows of ``width`` chars each followed by "," -> (ns, bad rows or None when all are read);
    None when no row can be read this way.  A row is read when it is ASCII digits with a dot
    before the last 3 (optionally then one TAB): exactly what timeconv.us_str_to_ns reads as
    whole * 1000 + frac for such text."""
    try:
        buf = text.encode("ascii")
    except UnicodeEncodeError:
        return None
    return fixed_point_rows(np.frombuffer(buf, dtype=np.uint8).reshape(n, width + 1), width)


def fixed_point_rows(m: np.ndarray, width: int):
    """:func:`_fixed_point` of its rows as an (n, width + 1) byte matrix."""
    tab = width >= 6 and m[0, width - 1] == 9
    ndig = width - 1 - tab
    if not 4 <= ndig <= 19:
        return None
    tmpl, digits, exact = _pattern(ndig, bool(tab))
    e = m - tmpl                                   # digits -> 0..9; anything else wraps to > 9
    bad = None
    odd = m[:, exact] != tmpl[exact]               # the dot, TAB and "," columns
    if e.max() > 9 or odd.any() or (ndig == 19 and e[:, 0].max() > 8):
        bad = (e > 9).any(axis=1) | odd.any(axis=1)
        if ndig == 19:                             # 19 digits: stay below the int64 limit
            bad |= e[:, 0] > 8
    # the digits read left to right (acc * 10 + digit), a column at a time: no (rows, width)
    # int64 matrix (~30 MB of fresh memory for memory_record.csv's 175k timestamps)
    acc = e[:, digits[0]].astype(np.int64)
    for c in digits[1:]:
        acc *= 10
        acc += e[:, c]
    return acc, bad


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


def per_distinct(values, fn, dtype) -> np.ndarray:
    """``[fn(v) for v in values]`` with ``fn`` run once per distinct value (``fn`` must give equal
    results for equal values, e.g. 1 == 1.0 == True); unhashable values go value by value."""
    if isinstance(values, Texts):
        return values.map(fn, dtype)
    arr = values if isinstance(values, np.ndarray) and values.dtype == object else objects(values)
    try:
        codes, uniq = pd.factorize(arr)
    except TypeError:
        return np.array([fn(v) for v in arr], dtype=dtype)
    out = np.array([fn(v) for v in uniq] + [fn(None)], dtype=dtype)[codes]
    na = codes < 0                         # None, NaN: each value itself
    if na.any() and not _all_none(arr[na]):
        out[na] = [fn(v) for v in arr[na]]
    return out


def _all_none(arr: np.ndarray) -> bool:
    """Whether every value is None (``list.count`` tells None apart by identity, without a loop here)."""
    vals = arr.tolist()
    try:
        return vals.count(None) == len(vals)
    except (TypeError, ValueError):        # a value whose == None does not give a truth value
        return all(v is None for v in vals)


def intern(sym: SymbolTable, values) -> np.ndarray:
    if isinstance(values, Texts):
        return values.intern(sym)
    try:
        return sym.intern_many(values)
    except TypeError:                      # unhashable values (lists) -> their text
        return sym.intern_many([v if v is None or isinstance(v, str) else str(v) for v in values])


def as_objects(values):
    """A text column (:class:`Texts`, object array or list) as plain values."""
    return values.objects() if isinstance(values, Texts) else values


def equals(values, s: str) -> np.ndarray:
    """values == s, element-wise, for a text column."""
    if isinstance(values, Texts):
        return values.codes == (values.values.index(s) if s in values.values else -2)
    return objects(values) == s


class Texts:
    """A text column as int32 codes into its distinct strings (a :class:`Field`'s vocabulary; -1 is
    None): tables intern, compare and classify each distinct string once instead of once per row."""
    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: list) -> None:
        self.codes, self.values = codes, values

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows) -> "Texts":
        return Texts(self.codes[rows], self.values)

    def padded(self, n: int) -> "Texts":
        """The column followed by ``n`` None."""
        return Texts(np.concatenate([self.codes, np.full(n, -1, np.int32)]), self.values)

    def objects(self) -> np.ndarray:
        return objects(self.values + [None])[self.codes]

    def map(self, fn, dtype) -> np.ndarray:
        """``fn`` of each value (run once per distinct string and once for None)."""
        return np.array([fn(v) for v in self.values] + [fn(None)], dtype=dtype)[self.codes]

    def intern(self, sym: SymbolTable) -> np.ndarray:
        """``intern(sym, self.objects())``: ids assigned in the same (first appearance) order."""
        if not len(self.codes):
            return np.zeros(0, dtype=np.int32)
        first, uniq = pd.factorize(self.codes)
        values = self.values
        lut = np.fromiter((sym.intern(values[c]) if c >= 0 else 0 for c in uniq.tolist()),
                          dtype=np.int32, count=len(uniq))
        return lut[first]


def plain_texts(values):
    """Values as str/None (a mis-typed JSON value, e.g. a list, becomes its text): hashable keys.
    Values that are all str/None already come back as they are."""
    if set(map(type, values)) <= _PLAIN_TYPES:
        return values
    return [plain_text(v) for v in values]


_PLAIN_TYPES = {str, _NONE_T}


def plain_text(v):
    return v if v is None or type(v) is str else str(v)


def innermost_ops(op_start: np.ndarray, op_end: np.ndarray, op_parent: np.ndarray,
                  times: np.ndarray) -> np.ndarray:
    """For each time, the innermost op (row into the given arrays) containing it, or -1.

    The ops are one thread's, nested (``op_parent`` indexes the same arrays).
    """
    out = np.full(len(times), -1, dtype=np.int64)
    if not len(op_start) or not len(times):
        return out
    order = np.lexsort((op_start - op_end, op_start))      # ties: the longer (outer) op first
    pos = np.searchsorted(op_start[order], times, side="right") - 1
    rows = np.flatnonzero((pos >= 0) & (times >= 0))
    k = order[pos[rows]]                      # the last op starting at or before t; then its parents
    t = times[rows]
    up = np.flatnonzero(op_end[k] < t)
    while len(up):
        k[up] = op_parent[k[up]]
        up = up[k[up] >= 0]
        up = up[op_end[k[up]] < t[up]]
    out[rows] = k
    return out


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
        """Append one chunk's values; ``kind`` is the expected type: "s" text, "i" int, "f" number;
        "I" / "F": ints / numbers, or None, by the decoding schema (the type checks only run when
        a value is None or out of range)."""
        n = len(vals)
        if kind == "I" or kind == "F":
            try:
                self.pieces.append(("i", np.fromiter(vals, np.int64, n), None) if kind == "I" else
                                   ("f", np.array(vals, dtype=np.float64)))
                return
            except (TypeError, OverflowError):        # None (int64 only), or out of range
                kind = kind.lower()
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

    def all_ints(self) -> bool:
        """Every value is an int within int64 (no None, no other type)."""
        return all(p[0] == "i" and p[2] is None for p in self.pieces)

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

    def texts(self, rows):
        """The values of ``rows`` as :class:`Texts` when every value is text or None, else as an
        object array."""
        if not self._plain("s"):
            return self.objects(rows)
        parts = [p[1] if p[0] == "s" else np.full(p[1], -1, np.int32) for p in self.pieces]
        codes = np.concatenate(parts) if parts else np.zeros(0, np.int32)
        return Texts(codes[rows], self.vocab.values)

    def column(self, rows, text: bool):
        """What the tables read: text as :meth:`texts`; numbers as int64 when every value is an
        int or None (``ints`` is then known), else the raw values as a list, for the table code
        to apply :func:`ints` to exactly the rows it keeps."""
        if text:
            return self.texts(rows)
        return self.ints(rows) if self._plain("i") else self.objects(rows).tolist()

    def floats(self) -> np.ndarray:
        if all(p[0] == "f" for p in self.pieces):
            return np.concatenate([p[1] for p in self.pieces]) if self.pieces else np.zeros(0)
        return floats(self.objects().tolist())
