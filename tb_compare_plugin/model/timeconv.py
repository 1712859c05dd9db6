"""Exact conversion of profiler timestamps to integer nanoseconds.

Ascend writes ``ts`` as strings of microseconds with three decimals
("1736408883688177.930") and CSV times with a trailing TAB; Kineto writes
integer or fractional microseconds as JSON numbers; SQLite exports hold ns.
Float64 cannot hold a 16-digit microsecond value with 3 decimals, so strings are
split at the dot and never go through float.
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np

MISSING = -1


def us_str_to_ns(s: str) -> int:
    """'1736408883688177.930\\t' -> 1736408883688177930.  Raises ValueError on junk."""
    s = s.strip()
    if not s:
        raise ValueError("empty timestamp")
    neg = s.startswith("-")
    if neg or s.startswith("+"):
        s = s[1:]
    if "e" in s or "E" in s:
        v = us_to_ns(float(s))
        return -v if neg else v
    whole, _, frac = s.partition(".")
    if not whole:
        whole = "0"
    if not (whole.isdigit() and (not frac or frac.isdigit())):
        raise ValueError(f"not a number: {s!r}")
    frac = (frac + "000")[:3] if len(frac) <= 3 else frac
    v = int(whole) * 1000 + (int(frac[:3]) if frac else 0)
    if len(frac) > 3 and frac[3] >= "5":  # round half up on sub-ns digits
        v += 1
    return -v if neg else v


def us_to_ns(v) -> int:
    """Microseconds as int/float/str -> int ns.  Raises ValueError for NaN/inf/junk."""
    if isinstance(v, bool):
        raise ValueError("boolean timestamp")
    if isinstance(v, int):
        return v * 1000
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"non-finite timestamp {v}")
        return int(round(v * 1000.0))
    if isinstance(v, str):
        return us_str_to_ns(v)
    raise ValueError(f"bad timestamp type {type(v).__name__}")


def us_values_to_ns(values: Iterable) -> np.ndarray:
    """Vector form of :func:`us_to_ns`; bad or missing cells become -1 (MISSING)."""
    out = []
    app = out.append
    lim = 2 ** 63 - 1
    for v in values:
        try:
            ns = us_to_ns(v)
            app(ns if -lim <= ns <= lim else MISSING)
        except (ValueError, TypeError, OverflowError):
            app(MISSING)
    return np.array(out, dtype=np.int64)


def us_str_column_to_ns(col) -> np.ndarray:
    """A pandas/numpy column of µs strings (CSV cells, maybe TAB-suffixed, '' or 'N/A') -> int64 ns.

    Fast path: vectorised split on '.', falling back per cell on anything odd.
    """
    import pandas as pd
    s = pd.Series(col, dtype=object)
    if len(s) == 0:
        return np.zeros(0, dtype=np.int64)
    st = s.astype(str).str.strip()
    parts = st.str.partition(".")
    whole, frac = parts[0], parts[2].str.ljust(3, "0").str.slice(0, 3)
    ok = whole.str.fullmatch(r"\d+") & frac.str.fullmatch(r"\d{3}") & (parts[2].str.len() <= 3)
    out = np.full(len(s), MISSING, dtype=np.int64)
    okv = ok.to_numpy(dtype=bool)
    if okv.any():
        out[okv] = (whole[okv].astype("int64").to_numpy() * 1000 + frac[okv].astype("int64").to_numpy())
    bad = np.flatnonzero(~okv)
    for i in bad:
        cell = st.iat[i]
        if cell in ("", "N/A", "nan", "None"):
            continue
        try:
            out[i] = us_str_to_ns(cell)
        except ValueError:
            pass
    return out
