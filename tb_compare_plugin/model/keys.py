"""Lookups of int64 keys (ids, correlation ids, timestamps) that stay in int64.

A pandas ``map`` of ids to ns goes through float64 as soon as one key is missing, which rounds
epoch ns (> 2^53) by up to 256 ns; these helpers search sorted distinct keys instead.
"""
from __future__ import annotations

import numpy as np


def id_kernels(ids: np.ndarray):
    """The numba kernels (``model.jit``) for one pass over ``ids`` -- a big, contiguous int32 or
    int64 array -- else None (numpy then)."""
    if ids.dtype not in (np.int32, np.int64) or not ids.flags.c_contiguous:
        return None
    from . import jit
    return jit.kernels(len(ids))


def lut_fits(lo: int, hi: int, n: int) -> bool:
    """Whether ids in [lo, hi] (``n`` of them) index a lookup table cheaply: none negative, and
    the table not much larger than the ids (at most 4 entries an id, or 1 M)."""
    return lo >= 0 and hi <= 4 * n + (1 << 20)


def id_bounds(ids: np.ndarray, k=None) -> tuple[int, int]:
    """(min, max) of a non-empty id array (one pass with the kernels ``k``)."""
    if k is not None:
        lo, hi = k.id_range(ids)
        return int(lo), int(hi)
    return int(ids.min()), int(ids.max())


def lut_take(lut: np.ndarray, ids: np.ndarray, k=None) -> np.ndarray:
    """``lut[ids]`` for ids known to be within ``lut`` (one pass with the kernels ``k``)."""
    if k is not None:
        return k.lut_take(lut, ids, np.empty(len(ids), lut.dtype))
    return lut[ids]


def id_mask(ids: np.ndarray, wanted) -> np.ndarray:
    """``np.isin(ids, wanted)`` for non-negative ids from a small range (symbol ids): a lookup
    table indexed by id, one pass over ``ids``."""
    ids = np.asarray(ids)
    wanted = np.asarray(wanted, np.int64).ravel()
    if not len(ids) or not len(wanted):
        return np.zeros(len(ids), bool)
    k = id_kernels(ids)
    lo, hi = id_bounds(ids, k)
    if not lut_fits(lo, hi, len(ids)):
        return np.isin(ids, wanted)
    lut = np.zeros(hi + 1, bool)
    lut[wanted[(wanted >= 0) & (wanted <= hi)]] = True
    return lut_take(lut, ids, k)


def member(values: np.ndarray, few: np.ndarray) -> np.ndarray:
    """``np.isin(values, few)`` for a small ``few``: a binary search per value, no sort of ``values``."""
    few = np.unique(few)
    if not len(few):
        return np.zeros(len(values), bool)
    return few[np.minimum(np.searchsorted(few, values), len(few) - 1)] == values


def value_at_key(keys: np.ndarray, values: np.ndarray, want: np.ndarray, keep: str = "first"):
    """For each ``want[i]``: (the value of the first -- or, with ``keep="last"``, the last -- row
    whose key equals it, found?); -1 where not found.  int64 all the way."""
    want = np.asarray(want)
    if not len(keys):
        return np.full(len(want), -1, np.int64), np.zeros(len(want), bool)
    if keep == "last":
        uniq, first_rev = np.unique(keys[::-1], return_index=True)
        row = len(keys) - 1 - first_rev
    else:
        uniq, row = np.unique(keys, return_index=True)
    pos = np.minimum(np.searchsorted(uniq, want), len(uniq) - 1)
    found = uniq[pos] == want
    return np.where(found, np.asarray(values)[row[pos]], -1).astype(np.int64), found
