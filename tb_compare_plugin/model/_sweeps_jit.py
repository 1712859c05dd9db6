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
def nest_sweep(order, end, g, parent, depth, stack):
    """The stack sweep over rows in (group, start, longer first, row) order: each row's parent
    (the innermost open interval of its group ending no earlier; -1 for a root) and depth, written
    into ``parent`` and ``depth`` (``stack``: scratch; all three uninitialised, as many rows as
    ``order``; the caller allocates them: numpy's big arrays take 2 MB pages, numba's never do,
    and their 4 KB page faults were most of these kernels' system time)."""
    n = len(order)
    top = 0
    for k in range(n):
        r = order[k]
        if k and g[r] != g[order[k - 1]]:
            top = 0
        e = end[r]
        while top and end[stack[top - 1]] < e:
            top -= 1
        parent[r] = stack[top - 1] if top else -1
        depth[r] = top
        stack[top] = r
        top += 1
    return parent, depth


@jit
def preorder_walk(parent, by_start, first, sib, order, ppos, depth, size, pos, stack):
    """Pre-order positions of a forest: ``by_start`` is every row in sibling order (start,
    longer first, row); children are bucketed by parent in that order, the roots (parent -1)
    first.  Returns (order, parent position, depth, size) by position, and the number of rows
    reached from the roots (fewer than all only when ``parent`` has a cycle).  The arrays after
    ``by_start`` are uninitialised int64, n + 2 rows for ``first`` and n for the others, allocated
    by the caller (see :func:`nest_sweep`); ``first``, ``sib``, ``pos``, ``stack`` are scratch."""
    n = len(parent)
    for k in range(n + 2):                     # children of row p: sib[first[p + 1]:first[p + 2]]
        first[k] = 0
    for i in range(n):
        first[parent[i] + 2] += 1
    for k in range(n + 1):
        first[k + 1] += first[k]
    for i in range(n):
        r = by_start[i]
        slot = parent[r] + 1
        sib[first[slot]] = r
        first[slot] += 1
    for k in range(n, 0, -1):                  # back to the block starts
        first[k] = first[k - 1]
    first[0] = 0
    for i in range(n):
        depth[i] = 0
        size[i] = 1
        pos[i] = -1
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
def preorder_prefix(parent, by_start, order, ppos, depth, size, sz, at):
    """:func:`preorder_walk`'s answer in two sequential passes over ``by_start``, when every
    parent comes before its children there (a nesting by time: a parent starts no later, and at
    an equal start it is the longer one or the earlier row): subtree sizes in reverse order, then
    each row's position = its parent's next free slot (the parent's position + 1, plus the sizes
    of its earlier children), roots one after another.  Returns False as soon as a row comes
    before its parent (the outputs are then unfinished: use :func:`preorder_walk`).  ``sz`` and
    ``at`` are int64 scratch of n rows (by row): a row's subtree size, then once it is placed its
    next free slot; its position."""
    n = len(parent)
    for i in range(n):
        sz[i] = 1
        at[i] = -1
    for i in range(n - 1, -1, -1):
        r = by_start[i]
        p = parent[r]
        if p >= 0:
            sz[p] += sz[r]
    free = 0
    for i in range(n):
        r = by_start[i]
        p = parent[r]
        s = sz[r]
        if p < 0:
            k = free
            free += s
            q = -1
            d = 0
        else:
            q = at[p]
            if q < 0:
                return False
            k = sz[p]
            sz[p] = k + s
            d = depth[q] + 1
        at[r] = k
        sz[r] = k + 1
        order[k] = r
        ppos[k] = q
        depth[k] = d
        size[k] = s
    return True


@jit
def id_range(ids):
    """(min, max) of a non-empty id array, in one pass."""
    lo = ids[0]
    hi = ids[0]
    for i in range(len(ids)):
        v = ids[i]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    return lo, hi


@jit
def lut_take(lut, ids, out):
    """``out[i] = lut[ids[i]]`` (``lut[ids]``, the ids known to be in range)."""
    for i in range(len(ids)):
        out[i] = lut[ids[i]]
    return out


@jit
def mark_seen(ids, seen):
    """``seen[ids] = True`` (the ids known to be in range)."""
    for i in range(len(ids)):
        seen[ids[i]] = True


@jit
def window_overlap(s, e, ws, we):
    """Per interval [s, e), its overlap with the windows [ws, we) summed (int64 ns)."""
    out = np.empty(len(s), np.int64)
    for i in range(len(s)):
        acc = 0
        a = s[i]
        b = e[i]
        for j in range(len(ws)):
            lo = a if a > ws[j] else ws[j]
            hi = b if b < we[j] else we[j]
            if hi > lo:
                acc += hi - lo
        out[i] = acc
    return out


@jit
def level_segments(t, dv):
    """For event times ``t`` (sorted) carrying level changes ``dv``: the pieces between
    consecutive times where the running level (``np.cumsum(dv)``, summed in order) is above 0,
    as (start, end, min(level, 1))."""
    n = len(t)
    m = 0
    seg_s = np.empty(max(n - 1, 0), np.int64)
    seg_e = np.empty(max(n - 1, 0), np.int64)
    val = np.empty(max(n - 1, 0), np.float64)
    level = 0.0
    for i in range(n - 1):
        level = dv[i] if i == 0 else level + dv[i]
        if t[i + 1] > t[i] and level > 0.0:
            seg_s[m] = t[i]
            seg_e[m] = t[i + 1]
            val[m] = level if level < 1.0 else 1.0
            m += 1
    return seg_s[:m], seg_e[:m], val[:m]


@jit
def first_match(v, ov, rows, key, ok, out):
    """For each ``r`` (the keys ``key`` in the order ``ok``, ascending): ``out[r]`` = ``rows[i]``
    of the first ``i`` in ``ov`` (``v`` ascending, ties in row order) with ``v[i] == key[r]``;
    negative keys and keys without a match leave ``out`` as it is.  A merge of two sorted lists."""
    j = 0
    m = len(ov)
    for i in range(len(ok)):
        r = ok[i]
        c = key[r]
        if c < 0:
            continue
        while j < m and v[ov[j]] < c:
            j += 1
        if j == m:
            break
        if v[ov[j]] == c:
            out[r] = rows[ov[j]]


@jit
def child_sums(parent, value):
    """Per row, the sum of ``value`` over the rows whose ``parent`` it is (int64, in row order)."""
    out = np.zeros(len(parent), np.int64)
    for i in range(len(parent)):
        p = parent[i]
        if p >= 0:
            out[p] += value[i]
    return out


@jit
def subtree_spans(node, size, dur, comm, first, hi, total, in_comm):
    """For a pre-ordered forest (``size`` per position) and rows sorted by the ``node`` they hang
    under: per node, the rows of its subtree [lo, hi), their summed ``dur``, and of it the rows
    flagged ``comm``.  ``first`` (n + 1 rows; lo is its first n), ``hi``, ``total``, ``in_comm``
    (n rows) are uninitialised arrays allocated by the caller (see :func:`nest_sweep`): int64, or
    int32 for ``first`` and ``hi`` when the rows fit."""
    n = len(size)
    m = len(node)
    for i in range(n + 1):                     # first row of each node
        first[i] = 0
    for j in range(m):
        first[node[j] + 1] += 1
    for i in range(n):
        first[i + 1] += first[i]
    cum = np.zeros(m + 1, np.int64)
    ccum = np.zeros(m + 1, np.int64)
    for j in range(m):
        cum[j + 1] = cum[j] + dur[j]
        ccum[j + 1] = ccum[j] + (dur[j] if comm[j] else 0)
    lo = first[:n]
    for i in range(n):
        a = first[i]
        b = first[i + size[i]]
        hi[i] = b
        total[i] = cum[b] - cum[a]
        in_comm[i] = ccum[b] - ccum[a]
    return lo, hi, total, in_comm


@jit
def union_sorted(start, end, order):
    """Merge intervals visited in ``order`` (by start) into sorted disjoint pieces: a piece ends
    at the running maximum of the ends so far, a new one starts past it (touching ones merge)."""
    n = len(order)
    us = np.empty(n, np.int64)
    ue = np.empty(n, np.int64)
    m = 0
    cur = 0
    for k in range(n):
        r = order[k]
        s = start[r]
        e = end[r]
        if k == 0 or s > cur:
            if k:
                ue[m - 1] = cur
            us[m] = s
            m += 1
        if k == 0 or e > cur:
            cur = e
    if n:
        ue[m - 1] = cur
    return us[:m].copy(), ue[:m].copy()


@jit
def outermost(mask, parent):
    """Rows of ``mask`` whose parent is not in ``mask`` (a parent outside [0, len) counts as not)."""
    n = len(mask)
    out = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if mask[i]:
            p = parent[i]
            if p < 0 or p >= n or not mask[p]:
                out[m] = i
                m += 1
    return out[:m].copy()


@jit
def group_extreme(idx, vals, n, fill, take_max):
    """Per group ``idx`` in [0, n), the min (or max) of ``vals``; ``fill`` where a group has none."""
    out = np.full(n, fill, np.int64)
    seen = np.zeros(n, np.bool_)
    for i in range(len(idx)):
        g = idx[i]
        v = vals[i]
        if not seen[g]:
            seen[g] = True
            out[g] = v
        elif (v > out[g]) if take_max else (v < out[g]):
            out[g] = v
    return out


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
    nest_sweep(i, np.array([5, 3, 4], np.int64), np.zeros(3, np.int64), *(np.empty(3, np.int64) for _ in range(3)))
    preorder_walk(p, i, np.empty(5, np.int64), *(np.empty(3, np.int64) for _ in range(7)))
    preorder_prefix(p, i, *(np.empty(3, np.int64) for _ in range(6)))
    i32 = np.empty(3, np.int32)
    preorder_prefix(p, i, i32, i32.copy(), i32.copy(), np.empty(3, np.int64), i32.copy(), i32.copy())
    pair_ids(i, p, 4)
    child_sums(p, i)
    first_match(i, i, i, i, i, np.full(3, -1, np.int64))
    window_overlap(i, i + 1, i, i + 2)
    level_segments(i, np.ones(3, np.float64))
    for ids in (i, i.astype(np.int32)):             # symbol ids come as int32 (columns) or int64
        id_range(ids)
        mark_seen(ids, np.zeros(3, np.bool_))
        lut_take(np.zeros(3, np.bool_), ids, np.empty(3, np.bool_))
        lut_take(np.zeros(3, np.int8), ids, np.empty(3, np.int8))
    union_sorted(i, i + 1, i)
    outermost(np.ones(3, np.bool_), p)
    group_extreme(i, i, 3, 0, True)
    subtree_spans(np.zeros(1, np.int64), np.ones(3, np.int64), np.ones(1, np.int64), np.ones(1, np.bool_),
                  np.empty(4, np.int64), *(np.empty(3, np.int64) for _ in range(3)))
    subtree_spans(np.zeros(1, np.int64), np.ones(3, np.int64), np.ones(1, np.int64), np.ones(1, np.bool_),
                  np.empty(4, np.int32), np.empty(3, np.int32), np.empty(3, np.int64), np.empty(3, np.int64))
