"""Interval algebra on int64 ns arrays: nesting, union, intersection, overlap.

Used by loaders (op/python-function nesting) and engines (compute/communication
overlap).  Everything is vectorised or a single linear sweep; no per-µs ticks.  On big inputs
the nesting, its sort and the union's merge run as numba kernels (:mod:`.jit`), with the same
results.
"""
from __future__ import annotations

import numpy as np

from . import jit


def nest(start: np.ndarray, end: np.ndarray, group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Parent index and depth of each interval, nesting by time within each group (thread).

    An interval is a child of the innermost earlier-starting interval of the same group that
    contains it (start >= parent.start and end <= parent.end; ties in start: the longer one is the
    parent).  Partially overlapping intervals are treated as siblings (no crossing edges).
    Returns (parent, depth) aligned with the input rows; parent -1 for roots.

    In (group, start, longer-first) order this is the classic stack sweep, and the stack sweep's
    answer is each interval's *previous greater-or-equal end* in its group: every earlier interval
    starts no later, so it contains this one exactly when it ends no earlier, and an interval the
    sweep popped was popped by a later one ending after it.  That is found for all rows at once
    by pointer jumping (each candidate hops to its own candidate), O(n log n) numpy work; with
    numba (:mod:`.jit`) it is the stack sweep itself.
    """
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int16)
    if n == 0:
        return parent, depth
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    g = np.zeros(n, dtype=np.int64) if group is None else np.asarray(group)
    order = sweep_order(start, end, g)
    k = jit.kernels(n)
    if k is not None:
        parent, dep = k.nest_sweep(order, end, np.asarray(g, np.int64), *(np.empty(n, np.int64) for _ in range(3)))
        depth[:] = dep
        return parent, depth
    e = end[order]
    gs = g[order]
    first = np.r_[True, gs[1:] != gs[:-1]]
    cand = np.arange(-1, n - 1, dtype=np.int64)     # candidate parent (sorted positions)
    cand[first] = -1
    todo = np.flatnonzero(cand >= 0)
    while len(todo):
        c = cand[todo]
        hop = e[c] < e[todo]                         # c ends first: not a container, nor anything
        todo = todo[hop]                             # between c's own candidate and c
        nxt = cand[c[hop]]
        cand[todo] = nxt
        todo = todo[nxt >= 0]
    dep = depths(cand)
    parent[order] = np.where(cand >= 0, order[np.maximum(cand, 0)], -1)
    depth[order] = dep
    return parent, depth


def sweep_order(start: np.ndarray, end: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Row order by (group, start, longer first, row): ``np.lexsort`` on those keys, but as two
    stable sorts (fast on the nearly sorted start times of a trace) plus a lexsort of the rows
    that share a (group, start).  With numba (:mod:`.jit`) and groups that are small ints (op
    nesting's thread ids, a tree's parent rows): the rows by (start, longer first, row), then a
    counting sort by group."""
    k = jit.kernels(len(start))
    if k is not None and len(g) and g.dtype.kind in "iu":
        lo, hi = int(g.min()), int(g.max())
        if hi - lo <= 2 * len(g):
            start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
            by_start = k.longer_first(np.argsort(start, kind="stable"), start, end)
            return k.bucket_order(by_start, np.asarray(g, np.int64), lo, hi - lo + 1)
    order = np.argsort(start, kind="stable")
    order = order[np.argsort(g[order], kind="stable")]
    s, gs = start[order], g[order]
    same = (s[1:] == s[:-1]) & (gs[1:] == gs[:-1])
    if same.any():
        tied = np.zeros(len(order), bool)
        tied[1:] |= same
        tied[:-1] |= same
        pos = np.flatnonzero(tied)
        run = np.cumsum(np.r_[True, ~same])[pos]     # one id per run of equal (group, start)
        rows = order[pos]
        order[pos] = rows[np.lexsort((-(end[rows] - start[rows]), run))]
    return order


def depths(parent: np.ndarray) -> np.ndarray:
    """Depth of each node of a forest given by parent row indices (-1 = root), by pointer jumping."""
    dep = (parent >= 0).astype(np.int64)
    up = parent.copy()
    live = np.flatnonzero(up >= 0)
    for _ in range(64):                 # hops double each round; more rounds only on a cycle
        if not len(live):
            break
        u = up[live]
        # dep[x] counts the hops from x to up[x]; add the hops from up[x] to up[up[x]]
        dep_u, up_u = dep[u], up[u]
        dep[live] += dep_u
        up[live] = up_u
        live = live[up_u >= 0]
    return dep


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals into a sorted, disjoint set (touching intervals merge)."""
    if len(start) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    o = np.argsort(start, kind="stable")
    k = jit.kernels(len(o))
    if k is not None and np.asarray(start).dtype == np.int64 and np.asarray(end).dtype == np.int64:
        return k.union_sorted(np.asarray(start), np.asarray(end), o)
    s, e = np.asarray(start)[o], np.asarray(end)[o]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    us = s[idx]
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
