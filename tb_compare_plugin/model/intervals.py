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


def intersect(a_s, a_e, b_s, b_e) -> tuple[np.ndarray, np.ndarray]:
    """(∪a) ∩ (∪b) as sorted disjoint pieces, fully vectorised."""
    as_, ae = union(np.asarray(a_s, np.int64), np.asarray(a_e, np.int64))
    bs, be = union(np.asarray(b_s, np.int64), np.asarray(b_e, np.int64))
    if not len(as_) or not len(bs):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo = np.searchsorted(be, as_, "right")
    cnt = np.maximum(np.searchsorted(bs, ae, "left") - lo, 0)
    total = int(cnt.sum())
    ai = np.repeat(np.arange(len(as_)), cnt)
    bi = lo[ai] + (np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    s, e = np.maximum(as_[ai], bs[bi]), np.minimum(ae[ai], be[bi])
    keep = e > s
    return s[keep], e[keep]


def overlap_length(a_s, a_e, b_s, b_e) -> int:
    s, e = intersect(a_s, a_e, b_s, b_e)
    return int((e - s).sum())


def subtract(a_s, a_e, b_s, b_e, b_inside_a: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(∪a) minus (∪b) as sorted disjoint pieces, vectorised (no Python loop).

    ``b_inside_a``: both are already sorted disjoint unions and b ⊆ a (skips the set-up)."""
    if b_inside_a:
        as_, ae, bs, be = a_s, a_e, b_s, b_e
    else:
        as_, ae = union(np.asarray(a_s, np.int64), np.asarray(a_e, np.int64))
        bs, be = intersect(b_s, b_e, as_, ae)
    # now b is inside a: a's pieces are the gaps between the b intervals of each a interval
    lo = np.searchsorted(bs, as_, "left")
    hi = np.searchsorted(bs, ae, "left")
    empty = lo == hi
    has = ~empty
    a_of_b = np.searchsorted(as_, bs, "right") - 1
    inner = a_of_b[:-1] == a_of_b[1:]
    s = np.concatenate([as_[empty], as_[has], be[hi[has] - 1], be[:-1][inner]])
    e = np.concatenate([ae[empty], bs[lo[has]], ae[has], bs[1:][inner]])
    keep = e > s
    s, e = s[keep], e[keep]
    o = np.argsort(s, kind="stable")
    return s[o], e[o]
