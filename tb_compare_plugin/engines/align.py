"""Order-preserving alignment of two key sequences (operator names, module paths).

The reference matches op sequences with ``difflib.SequenceMatcher`` (spec c.3, f.14): quadratic,
and not a longest common subsequence.  Here the matching is a true LCS on small problems and a
near-linear anchored approximation on large ones:

1. the common prefix and suffix are matched outright;
2. a range with at most ``DP_CELLS`` cells is solved exactly (numpy row-wise LCS, earliest
   matches preferred);
3. a larger range is anchored: the k-th occurrences of each common key are paired, counted from
   the start and (when the counts differ) from the end (a key unique in both is the patience-diff
   case); the longest increasing chain of those pairs (LIS, O(k log k)) becomes the anchors, and
   the gaps between anchors are aligned recursively with their own key counts;
4. after MAX_DEPTH anchoring rounds a still-large gap falls back to a greedy walk (next
   occurrence within a look-ahead window).

:func:`align` returns the rows in the reference's order: within each block, the unmatched
baseline items before it, then the unmatched target items, then the matched pairs; trailing
leftovers last (baseline first).
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Sequence

import numpy as np
import pandas as pd

DP_CELLS = 4_000_000        # exact LCS below this many cells (int32 table: 16 MB)
GREEDY_WINDOW = 64          # look-ahead of the greedy fallback
MAX_DEPTH = 48              # anchoring rounds before a still-large gap goes greedy


def encode(a: Sequence, b: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes for two key sequences over their joint alphabet, in sorted key order when the
    keys are comparable, so that the codes do not depend on which sequence comes first (the exact
    LCS breaks a tie between equal-length sequences by comparing their codes)."""
    na = len(a)
    if na + len(b) < 2048:      # small (the common case: module children): a dict is faster
        both = list(a) + list(b)
        uniq = set(both)
        try:
            lut = {k: i for i, k in enumerate(sorted(uniq))}
        except TypeError:       # keys of mixed types: first-seen order
            lut = {}
            for x in both:
                lut.setdefault(x, len(lut))
        codes = np.fromiter((lut[x] for x in both), dtype=np.int64, count=na + len(b))
        return codes[:na], codes[na:]
    both = pd.Series(list(a) + list(b), dtype=object)
    try:
        codes, _ = pd.factorize(both, sort=True, use_na_sentinel=False)
    except TypeError:
        codes, _ = pd.factorize(both, use_na_sentinel=False)
    codes = codes.astype(np.int64)
    return codes[:na], codes[na:]


def match_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Matched index pairs (both increasing) of two int code arrays."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    out_a: list[np.ndarray] = []
    out_b: list[np.ndarray] = []
    stack = [(0, len(a), 0, len(b), 0)]
    while stack:
        a0, a1, b0, b1, depth = stack.pop()
        # common prefix
        k = min(a1 - a0, b1 - b0)
        if k <= 0:
            continue
        neq = np.flatnonzero(a[a0:a0 + k] != b[b0:b0 + k])
        p = k if len(neq) == 0 else int(neq[0])
        if p:
            out_a.append(np.arange(a0, a0 + p))
            out_b.append(np.arange(b0, b0 + p))
            a0 += p
            b0 += p
        # common suffix
        k = min(a1 - a0, b1 - b0)
        if k <= 0:
            continue
        neq = np.flatnonzero(a[a1 - k:a1][::-1] != b[b1 - k:b1][::-1])
        s = k if len(neq) == 0 else int(neq[0])
        if s:
            out_a.append(np.arange(a1 - s, a1))
            out_b.append(np.arange(b1 - s, b1))
            a1 -= s
            b1 -= s
        n, m = a1 - a0, b1 - b0
        if n == 0 or m == 0:
            continue
        x, y = a[a0:a1], b[b0:b1]
        if n * m <= DP_CELLS:
            ia, ib = _lcs_dp(x, y)
        else:
            ia, ib = _anchors(x, y) if depth < MAX_DEPTH else (np.zeros(0, np.int64),) * 2
            if len(ia):
                out_a.append(ia + a0)
                out_b.append(ib + b0)
                # gaps before, between and after the anchors
                ga0 = np.concatenate([[0], ia + 1])
                ga1 = np.concatenate([ia, [n]])
                gb0 = np.concatenate([[0], ib + 1])
                gb1 = np.concatenate([ib, [m]])
                live = np.flatnonzero((ga1 > ga0) & (gb1 > gb0))
                for g in live[::-1].tolist():
                    stack.append((a0 + int(ga0[g]), a0 + int(ga1[g]), b0 + int(gb0[g]), b0 + int(gb1[g]),
                                  depth + 1))
                continue
            ia, ib = _greedy(x, y)
        if len(ia):
            out_a.append(ia + a0)
            out_b.append(ib + b0)
    if not out_a:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ma = np.concatenate(out_a).astype(np.int64)
    mb = np.concatenate(out_b).astype(np.int64)
    o = np.argsort(ma, kind="stable")
    return ma[o], mb[o]


def _lcs_dp(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact LCS (earliest matches preferred); rows run over the shorter sequence, of two equally
    long ones over the smaller by code (lexicographic).  A tie between two LCS is broken by
    skipping a row item first, so which sequence gives the rows must not depend on the argument
    order: swapping baseline and target then pairs the same items."""
    if len(x) > len(y) or (len(x) == len(y) and x.tolist() > y.tolist()):
        ib, ia = _lcs_dp(y, x)
        return ia, ib
    n, m = len(x), len(y)
    # S[i, j] = LCS(x[i:], y[j:]); a row is a reversed running max (see module docstring)
    S = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(n - 1, -1, -1):
        nxt = S[i + 1]
        t = np.where(y == x[i], nxt[1:] + 1, nxt[:-1])
        S[i, :m] = np.maximum.accumulate(t[::-1])[::-1]
    ia, ib = [], []
    i = j = 0
    xl, yl = x.tolist(), y.tolist()
    while i < n and j < m:
        if xl[i] == yl[j]:
            ia.append(i)
            ib.append(j)
            i += 1
            j += 1
        elif S[i + 1, j] >= S[i, j + 1]:
            i += 1
        else:
            j += 1
    return np.array(ia, dtype=np.int64), np.array(ib, dtype=np.int64)


def _anchors(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Longest increasing chain of rank-paired occurrences of the keys common to x and y.

    The k-th occurrence of a key in x is paired with its k-th occurrence in y, counted from the
    start and (when the counts differ) from the end too; a key unique in both gives the one pair
    of patience diff.  Wrong pairings (shifted by an insertion) cross the right ones of the other
    keys, so the LIS keeps mostly true pairs.
    """
    keys, inv = np.unique(np.concatenate([x, y]), return_inverse=True)
    lx, ly = inv[:len(x)], inv[len(x):]
    nk = len(keys)
    cx = np.bincount(lx, minlength=nk)
    cy = np.bincount(ly, minlength=nk)
    c = np.minimum(cx, cy)
    if not c.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ox = np.argsort(lx, kind="stable")          # positions grouped by key, increasing within a key
    oy = np.argsort(ly, kind="stable")
    sx = np.concatenate([[0], np.cumsum(cx)[:-1]])
    sy = np.concatenate([[0], np.cumsum(cy)[:-1]])
    ks = np.flatnonzero(c)
    cnt = c[ks]
    kr = np.repeat(ks, cnt)
    r = np.arange(len(kr)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    px = [ox[sx[kr] + r]]
    py = [oy[sy[kr] + r]]
    diff = cx[kr] != cy[kr]
    if diff.any():
        kd, rd = kr[diff], r[diff]
        px.append(ox[sx[kd] + cx[kd] - 1 - rd])
        py.append(oy[sy[kd] + cy[kd] - 1 - rd])
    px = np.concatenate(px)
    py = np.concatenate(py)
    code = np.unique(px * (len(y) + 1) + (len(y) - py))   # sorted by px asc, then py desc
    px = code // (len(y) + 1)
    py = len(y) - code % (len(y) + 1)
    keep = _lis(py)
    return px[keep].astype(np.int64), py[keep].astype(np.int64)


def _lis(v: np.ndarray) -> np.ndarray:
    """Indices of one longest strictly increasing subsequence of ``v`` (patience sorting)."""
    vals = v.tolist()
    tails: list[int] = []          # smallest tail value of an increasing run of each length
    tail_idx: list[int] = []
    prev = [-1] * len(vals)
    for i, val in enumerate(vals):
        k = bisect_left(tails, val)
        if k == len(tails):
            tails.append(val)
            tail_idx.append(i)
        else:
            tails[k] = val
            tail_idx[k] = i
        prev[i] = tail_idx[k - 1] if k else -1
    out = []
    i = tail_idx[-1] if tail_idx else -1
    while i >= 0:
        out.append(i)
        i = prev[i]
    return np.array(out[::-1], dtype=np.int64)


def _greedy(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Match each x item to the next equal y item within GREEDY_WINDOW positions."""
    order = np.argsort(y, kind="stable")
    ys = y[order]
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    ends = np.r_[starts[1:], len(ys)]
    where = {int(ys[s]): order[s:e].tolist() for s, e in zip(starts, ends)}
    ia, ib = [], []
    j = 0
    for i, key in enumerate(x.tolist()):
        pos = where.get(key)
        if not pos:
            continue
        k = bisect_left(pos, j)
        if k < len(pos) and pos[k] - j <= GREEDY_WINDOW:
            ia.append(i)
            ib.append(pos[k])
            j = pos[k] + 1
    return np.array(ia, dtype=np.int64), np.array(ib, dtype=np.int64)


def order_rows(ma: np.ndarray, mb: np.ndarray, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows (base index, target index; -1 = absent) in the reference's block order."""
    ma = np.asarray(ma, dtype=np.int64)
    mb = np.asarray(mb, dtype=np.int64)
    in_a = np.zeros(n, dtype=bool)
    in_a[ma] = True
    in_b = np.zeros(m, dtype=bool)
    in_b[mb] = True
    ua = np.flatnonzero(~in_a)
    ub = np.flatnonzero(~in_b)
    block = np.concatenate([np.searchsorted(ma, ua), np.searchsorted(mb, ub), np.arange(len(ma))])
    kind = np.concatenate([np.zeros(len(ua), np.int8), np.ones(len(ub), np.int8),
                           np.full(len(ma), 2, np.int8)])
    pos = np.concatenate([ua, ub, ma])
    ai = np.concatenate([ua, np.full(len(ub), -1, np.int64), ma])
    bi = np.concatenate([np.full(len(ua), -1, np.int64), ub, mb])
    o = np.lexsort((pos, kind, block))
    return ai[o], bi[o]


def align(a: Sequence, b: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Align two key sequences; rows as (base index, target index), -1 where a side is absent."""
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return (np.concatenate([np.arange(n), np.full(m, -1)]).astype(np.int64),
                np.concatenate([np.full(n, -1), np.arange(m)]).astype(np.int64))
    ca, cb = encode(a, b)
    ma, mb = match_pairs(ca, cb)
    return order_rows(ma, mb, n, m)


def unmatched(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows with no matching at all (``disable_details``): every base item, then every target item."""
    return (np.concatenate([np.arange(n), np.full(m, -1)]).astype(np.int64),
            np.concatenate([np.full(n, -1), np.arange(m)]).astype(np.int64))
