"""Put two sides' per-key statistics next to each other: the shared shape of every
"group by name, then compare" table (kernel, API, operator and memory statistics).

Rows keep the reference's order: baseline keys in their first-seen order, then the
target-only keys in theirs.  Column names get ``b_`` / ``t_`` prefixes; ``status`` says
whether a key is on both sides or on one only.
"""
from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd

BOTH, BASE_ONLY, TARGET_ONLY = "both", "baseline_only", "target_only"


def merge_sides(base: pd.DataFrame, target: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Outer-join two stats frames on ``keys``; value columns become b_<col> and t_<col>."""
    b = base.copy()
    t = target.copy()
    b["_bo"] = np.arange(len(b))
    t["_to"] = np.arange(len(t))
    vals_b = [c for c in b.columns if c not in keys and c != "_bo"]
    vals_t = [c for c in t.columns if c not in keys and c != "_to"]
    b = b.rename(columns={c: f"b_{c}" for c in vals_b})
    t = t.rename(columns={c: f"t_{c}" for c in vals_t})
    m = b.merge(t, on=keys, how="outer", sort=False)
    has_b, has_t = m["_bo"].notna(), m["_to"].notna()
    m["status"] = np.where(has_b & has_t, BOTH, np.where(has_b, BASE_ONLY, TARGET_ONLY))
    m["_order"] = np.where(has_b, m["_bo"], len(b) + m["_to"].fillna(0))
    m = m.sort_values("_order", kind="stable").drop(columns=["_bo", "_to", "_order"]).reset_index(drop=True)
    return m


def ratio(target, base) -> np.ndarray:
    """target / base: 1.0 when both are 0, inf when only the base is 0 (the reference's rule)."""
    t = np.asarray(target, dtype=float)
    b = np.asarray(base, dtype=float)
    t0 = np.nan_to_num(t)
    b0 = np.nan_to_num(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(b0 != 0, t0 / np.where(b0 != 0, b0, 1), np.where(t0 != 0, np.inf, 1.0))
    return r


def ratio1(target: float, base: float) -> float:
    """:func:`ratio` of two numbers, for row-by-row sheet code (same rule, no array overhead)."""
    t, b = _finite(float(target)), _finite(float(base))
    if b:
        return t / b
    return float("inf") if t else 1.0


def _finite(x: float) -> float:
    """``np.nan_to_num`` of one number: nan -> 0, ±inf -> ± the largest float."""
    if x != x:
        return 0.0
    if x in (float("inf"), float("-inf")):
        return math.copysign(sys.float_info.max, x)
    return x
