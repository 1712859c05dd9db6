"""The reference's cell rules (``reference_rows``) over whole columns: each rule applied once
per distinct value (numbers told apart by their bits, so 0.0 / -0.0 and NaNs stay what they
are) and spread back with numpy, for the big sheets' tens of thousands of rows.  The cells are
the Python objects the one-row rules give (``round(x, 2)``, ``_ref_ratio``, ``_none``), equal
and of the same type, so the workbook's XML is the same.
"""
from __future__ import annotations

import numpy as np


def per_distinct(x: np.ndarray, rule) -> np.ndarray:
    """``rule(v)`` of each float of ``x`` (an object array), computed once per distinct value."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if not len(x):
        return np.empty(0, dtype=object)
    bits, inv = np.unique(x.view(np.int64), return_inverse=True)
    out = np.empty(len(bits), dtype=object)
    out[:] = [rule(v) for v in bits.view(np.float64).tolist()]
    return out[inv.reshape(-1)]


def rounded(x: np.ndarray, digits: int) -> np.ndarray:
    """``round(v, digits)`` of each value (an object array of floats)."""
    return per_distinct(x, lambda v: round(v, digits))


def ref_ratios(t: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``_ref_ratio(t, b)`` of each pair: 1.0 when both are 0, inf when only b is, else
    ``round(t / b, 4)`` (an object array)."""
    t = np.asarray(t, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    out = np.empty(len(t), dtype=object)
    zb = b == 0
    out[zb] = float("inf")
    out[zb & (t == 0)] = 1.0
    ok = ~zb
    with np.errstate(all="ignore"):
        out[ok] = rounded(t[ok] / b[ok], 4)
    return out


def nonempty(values: list) -> np.ndarray:
    """``_none`` of each value: a non-empty str as it is, anything else None (an object array;
    once per distinct value)."""
    memo = {v: v if isinstance(v, str) and v else None for v in set(values)}
    out = np.empty(len(values), dtype=object)
    out[:] = list(map(memo.__getitem__, values))
    return out


def objects(values) -> np.ndarray:
    """A list (or array) as a 1-d object array of the same objects."""
    out = np.empty(len(values), dtype=object)
    out[:] = values if isinstance(values, list) else list(values)
    return out
