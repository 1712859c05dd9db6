"""Interval algebra on int64 ns arrays: nesting, union, intersection, overlap.

Used by loaders (op/python-function nesting) and engines (compute/communication
overlap).  Everything is vectorised or a single linear sweep; no per-µs ticks.
"""
from __future__ import annotations

import numpy as np


def nest(start: np.ndarray, end: np.ndarray, group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Parent index and depth of each interval, nesting by time within each group (thread).

    An interval is a child of the innermost earlier-starting interval of the same group that
    contains it (start >= parent.start and end <= parent.end; ties in start: the longer one is the
    parent).  Partially overlapping intervals are treated as siblings (no crossing edges).
    Returns (parent, depth) aligned with the input rows; parent -1 for roots.
    """
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int16)
    if n == 0:
        return parent, depth
    g = np.zeros(n, dtype=np.int64) if group is None else np.asarray(group)
    order = np.lexsort((-(end - start), start, g))
    s_l = start[order].tolist()
    e_l = end[order].tolist()
    g_l = g[order].tolist()
    o_l = order.tolist()
    par = [-1] * n
    dep = [0] * n
    stack: list[int] = []        # positions in sorted order
    cur_g = None
    for k in range(n):
        gk = g_l[k]
        if gk != cur_g:
            stack.clear()
            cur_g = gk
        sk, ek = s_l[k], e_l[k]
        while stack and not (sk >= s_l[stack[-1]] and ek <= e_l[stack[-1]]):
            stack.pop()
        if stack:
            p = stack[-1]
            par[o_l[k]] = o_l[p]
            dep[o_l[k]] = dep[o_l[p]] + 1
        stack.append(k)
    parent[:] = par
    depth[:] = dep
    return parent, depth


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals into a sorted, disjoint set (touching intervals merge)."""
    if len(start) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    o = np.argsort(start, kind="stable")
    s, e = np.asarray(start)[o], np.asarray(end)[o]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    us = s[idx]
    ue = np.maximum.reduceat(e, idx) if len(idx) else e
    # the end of each merged block is the running max at the block's last element
    last = np.append(idx[1:] - 1, len(s) - 1)
    ue = run_end[last]
    return us, ue


def total_length(start: np.ndarray, end: np.ndarray) -> int:
    """Length of the union of the intervals."""
    us, ue = union(start, end)
    return int((ue - us).sum())


def intersect(a_start, a_end, b_start, b_end) -> tuple[np.ndarray, np.ndarray]:
    """Intersection of two interval sets (each is unioned first)."""
    as_, ae = union(np.asarray(a_start), np.asarray(a_end))
    bs, be = union(np.asarray(b_start), np.asarray(b_end))
    if not len(as_) or not len(bs):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # candidate pairs via searchsorted: for each a, the b's that can overlap it
    lo = np.searchsorted(be, as_, side="right")
    hi = np.searchsorted(bs, ae, side="left")
    counts = np.maximum(hi - lo, 0)
    if counts.sum() == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ai = np.repeat(np.arange(len(as_)), counts)
    bi = np.concatenate([np.arange(l, h) for l, h in zip(lo[counts > 0], hi[counts > 0])])
    s = np.maximum(as_[ai], bs[bi])
    e = np.minimum(ae[ai], be[bi])
    keep = e > s
    return s[keep], e[keep]


def overlap_length(a_start, a_end, b_start, b_end) -> int:
    """Length of (union a) ∩ (union b)."""
    s, e = intersect(a_start, a_end, b_start, b_end)
    return int((e - s).sum())


def subtract(a_start, a_end, b_start, b_end) -> tuple[np.ndarray, np.ndarray]:
    """(union a) minus (union b), as disjoint sorted intervals."""
    as_, ae = union(np.asarray(a_start), np.asarray(a_end))
    bs, be = union(np.asarray(b_start), np.asarray(b_end))
    out_s, out_e = [], []
    j = 0
    nb = len(bs)
    for s, e in zip(as_.tolist(), ae.tolist()):
        while j < nb and be[j] <= s:
            j += 1
        k = j
        cur = s
        while k < nb and bs[k] < e:
            if bs[k] > cur:
                out_s.append(cur)
                out_e.append(int(bs[k]))
            cur = max(cur, int(be[k]))
            k += 1
        if cur < e:
            out_s.append(cur)
            out_e.append(e)
    return np.array(out_s, dtype=np.int64), np.array(out_e, dtype=np.int64)
