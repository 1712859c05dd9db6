"""The numba-compiled linear sweeps behind :mod:`.jit` (imported only when numba is present).

Each kernel is the one-pass form of a numpy computation in :mod:`.intervals` or the engines and
gives the same answer; the callers keep the numpy form for when numba cannot run.
"""
import numba as nb
import numpy as np

jit = nb.njit(cache=True, nogil=True, boundscheck=False)


@jit
def bucket_order(order, key, kmin, nk):
    """``order`` stably re-sorted by ``key[order]`` (a counting sort; keys in [kmin, kmin + nk))."""
    n = len(order)
    cnt = np.zeros(nk + 1, np.int64)
    for i in range(n):
        cnt[key[order[i]] - kmin + 1] += 1
    for k in range(nk):
        cnt[k + 1] += cnt[k]
    out = np.empty(n, np.int64)
    for i in range(n):
        r = order[i]
        k = key[r] - kmin
        out[cnt[k]] = r
        cnt[k] += 1
    return out


@jit
def longer_first(order, start, end):
    """``order`` (rows by start, then row) with each run of equal start re-sorted longer first,
    in place (an insertion sort, stable; a long run is merge-sorted)."""
    n = len(order)
    i = 0
    while i < n:
        s = start[order[i]]
        j = i + 1
        while j < n and start[order[j]] == s:
            j += 1
        if j - i > 32:
            run = order[i:j].copy()
            key = np.empty(j - i, np.int64)
            for a in range(j - i):
                key[a] = start[run[a]] - end[run[a]]
            o = np.argsort(key, kind="mergesort")
            for a in range(j - i):
                order[i + a] = run[o[a]]
        elif j - i > 1:
            for a in range(i + 1, j):
                r = order[a]
                d = end[r] - start[r]
                b = a - 1
                while b >= i and end[order[b]] - start[order[b]] < d:
                    order[b + 1] = order[b]
                    b -= 1
                order[b + 1] = r
        i = j
    return order


@jit
def nest_sweep(order, end, g):
    """The stack sweep over rows in (group, start, longer first, row) order: each row's parent
    (the innermost open interval of its group ending no earlier; -1 for a root) and depth."""
    n = len(order)
    parent = np.full(n, -1, np.int64)
    depth = np.zeros(n, np.int64)
    stack = np.empty(n, np.int64)
    top = 0
    for k in range(n):
        r = order[k]
        if k and g[r] != g[order[k - 1]]:
            top = 0
        e = end[r]
        while top and end[stack[top - 1]] < e:
            top -= 1
        if top:
            parent[r] = stack[top - 1]
        depth[r] = top
        stack[top] = r
        top += 1
    return parent, depth


@jit
def preorder_walk(parent, sib):
    """Pre-order positions of a forest: ``sib`` is every row by (parent, sibling order), the roots
    (parent -1) first.  Returns (order, parent position, depth, size) by position, and the number
    of rows reached from the roots (fewer than all only when ``parent`` has a cycle)."""
    n = len(parent)
    first = np.zeros(n + 2, np.int64)          # children of row p: sib[first[p + 1]:first[p + 2]]
    for i in range(n):
        first[parent[i] + 2] += 1
    for k in range(n + 1):
        first[k + 1] += first[k]
    order = np.empty(n, np.int64)
    ppos = np.empty(n, np.int64)
    depth = np.zeros(n, np.int64)
    size = np.ones(n, np.int64)
    pos = np.full(n, -1, np.int64)
    stack = np.empty(n, np.int64)
    top = 0
    for i in range(first[1] - 1, -1, -1):       # roots, the first on top
        stack[top] = sib[i]
        top += 1
    k = 0
    while top:
        top -= 1
        r = stack[top]
        pos[r] = k
        order[k] = r
        p = parent[r]
        if p >= 0:
            ppos[k] = pos[p]
            depth[k] = depth[pos[p]] + 1
        else:
            ppos[k] = -1
        k += 1
        for i in range(first[r + 2] - 1, first[r + 1] - 1, -1):
            stack[top] = sib[i]
            top += 1
    for j in range(k - 1, 0, -1):               # a parent comes before its subtree
        if ppos[j] >= 0:
            size[ppos[j]] += size[j]
    return order, ppos, depth, size, k


@jit
def pair_ids(a, b, cap):
    """Dense ids of equal (a, b) pairs in first-seen order and the distinct pairs, for inputs
    with at most ``cap`` distinct pairs (a thread id per event); -1 as the count when more."""
    n = len(a)
    ids = np.empty(n, np.int64)
    ua = np.empty(cap, a.dtype)
    ub = np.empty(cap, b.dtype)
    m = 0
    last = -1
    for i in range(n):
        x = a[i]
        y = b[i]
        if last >= 0 and ua[last] == x and ub[last] == y:
            ids[i] = last
            continue
        j = 0
        while j < m and not (ua[j] == x and ub[j] == y):
            j += 1
        if j == m:
            if m == cap:
                return ids, ua, ub, -1
            ua[m] = x
            ub[m] = y
            m += 1
        ids[i] = j
        last = j
    return ids, ua[:m], ub[:m], m


def warm() -> None:
    """Run every kernel once on a tiny input (compiles them, or loads them from the JIT cache)."""
    i = np.array([0, 1, 2], np.int64)
    p = np.array([-1, 0, -1], np.int64)
    bucket_order(i, p, -1, 2)
    longer_first(i.copy(), np.zeros(3, np.int64), np.array([1, 3, 2], np.int64))
    nest_sweep(i, np.array([5, 3, 4], np.int64), np.zeros(3, np.int64))
    preorder_walk(p, bucket_order(i, p, -1, 2))
    pair_ids(i, p, 4)
