"""The numba-compiled body of :mod:`.kineto_plan` (imported only when numba is present).

Two passes over a scanned chunk's per-event tables (:mod:`.kineto_scan`): :func:`classify` gives
each event its class and ``ts``; :func:`gather` writes the kept events' numbers and value numbers,
grouped by table, into one column-major matrix.  Strings are not decoded here: each distinct text
(by its two 64-bit hashes) gets a value number in a table that lives for the whole load; the ones
first met in this chunk are listed ("pending") for the Python side to decode once.
"""
import numba as nb
import numpy as np

from .kineto_scan_codes import (K_ABSENT, K_FLOAT, K_INT, K_NULL, K_STR, N_DUR, N_ID, N_PID, N_TID, N_TS,
                                NO_NS, NUM, SPAN)
from .kineto_values import (C_FLOW, C_FWDBWD, C_KERNEL, C_MEM, C_MEMCPY, C_MEMSET, C_OP, C_OTHER, C_PYF,
                            C_RUNTIME)

jit = nb.njit(cache=True, nogil=True, boundscheck=False)
inline = nb.njit(cache=True, nogil=True, boundscheck=False, inline="always")

# statuses
DONE, DECODE, GROW, BAIL = 0, 1, 2, 3
# value domains (a text field's decoded string, a raw JSON field's bytes, a (grid, block) pair)
DOM_STR, DOM_RAW, DOM_PAIR = 1, 2, 3
V_NONE, V_EMPTY = 0, 1          # the value numbers of "no string" (None) and "no raw text" (b"")
# groups (tables) and their column layout in gather's matrix
G_KERNEL, G_OP, G_PYF, G_FLOW, G_FWDBWD, G_MEM = range(6)
NG = 6
ROW, TS, DUR, GIVEN, PHV, PID, TID, NAMEV = range(8)
K_STREAM, K_DEVICE, K_CORR, K_BYTES, K_REGS, K_SHMEM, K_NELEMS, K_PAIRV, K_PGV, K_PGRV, K_DTYPEV, K_COLLV = \
    range(8, 20)
O_EXT, O_RTCORR, O_SEQ, O_DIMSV, O_TYPESV, O_STACKV = range(8, 14)
P_PYID, P_PYPAR = 8, 9
F_ID = 8
M_DEV, M_NBYTES, M_ADDR = 8, 9, 10
TXT = 20
NCOL = 21
# float columns
K_BPS, K_OCC = 0, 1
M_ALLOC, M_RES = 0, 1

S_CAT, S_NAME, S_PH, S_STACK = SPAN["cat"], SPAN["name"], SPAN["ph"], SPAN["Call stack"]
S_PG, S_PGR, S_DTYPE, S_COLL = (SPAN["Process Group Name"], SPAN["Process Group Ranks"], SPAN["dtype"],
                                SPAN["Collective name"])
S_DIMS, S_TYPES, S_GRID, S_BLOCK = SPAN["Input Dims"], SPAN["Input type"], SPAN["grid"], SPAN["block"]
N_EXT, N_EXT2, N_CORR, N_STREAM, N_DEVICE, N_BYTES, N_SEQ = (
    NUM["External id"], NUM["external id"], NUM["correlation"], NUM["stream"], NUM["device"], NUM["bytes"],
    NUM["Sequence number"])
N_PYID, N_PYPAR, N_DEVID, N_MBYTES, N_ADDR, N_ALLOC, N_RES, N_NELEMS = (
    NUM["Python id"], NUM["Python parent id"], NUM["Device Id"], NUM["Bytes"], NUM["Addr"], NUM["Total Allocated"],
    NUM["Total Reserved"], NUM["In msg nelems"])
N_REGS, N_SHMEM, N_BPS, N_OCC = (NUM["registers per thread"], NUM["shared memory"], NUM["blocks per SM"],
                                 NUM["est. achieved occupancy %"])

_GOLD = np.uint64(0x9E3779B97F4A7C15)
_DOMMIX = np.uint64(0xC2B2AE3D27D4EB4F)


@inline
def _find(tab, st, pend, h, g, dom, a, b):
    """The value number of (h, g) in domain ``dom``; a new one (listed in ``pend`` with ``a``, ``b``:
    the row and field where its text is, or the pair's two values) when first met.  -2: the same
    first hash with another second hash (a collision); -3: the table is too full (grow it).
    ``tab`` rows: first hash (its bits as int64), second hash, value number (-1: free), domain."""
    size = len(tab)
    hi = np.int64(h)
    key = h ^ (np.uint64(dom) * _DOMMIX)
    p = np.int64((key * _GOLD) >> np.uint64(st[2])) & (size - 1)
    while True:
        v = tab[p, 2]
        if v < 0:
            if st[0] * 4 >= size * 3 or st[3] >= len(pend):
                return -3
            tab[p, 0] = hi
            tab[p, 1] = g
            tab[p, 3] = dom
            v = st[1]
            tab[p, 2] = v
            st[0] += 1
            st[1] += 1
            pend[st[3], 0] = a
            pend[st[3], 1] = b
            pend[st[3], 2] = dom
            st[3] += 1
            return v
        if tab[p, 0] == hi and tab[p, 3] == dom:
            if tab[p, 1] == g:
                return v
            return -2
        p = (p + 1) & (size - 1)


@inline
def _text(kS, sh, sg, tab, st, pend, r, f, dom, none):
    """The value number of text / raw field ``f`` of row ``r`` (``none`` when it is not a string)."""
    if kS[r, f] != K_STR:
        return none
    return _find(tab, st, pend, sh[r, f], sg[r, f], dom, r, f)


@jit
def rehash(tab, ntab, bits):
    """Move every entry into the bigger table (``bits``: log2 of its size)."""
    size = len(ntab)
    for i in range(len(tab)):
        if tab[i, 2] < 0:
            continue
        key = np.uint64(tab[i, 0]) ^ (np.uint64(tab[i, 3]) * _DOMMIX)
        p = np.int64((key * _GOLD) >> np.uint64(64 - bits)) & (size - 1)
        while ntab[p, 2] >= 0:
            p = (p + 1) & (size - 1)
        for c in range(4):
            ntab[p, c] = tab[i, c]


@jit
def classify(n, kn, iv, kS, sh, sg, tab, st, pend, v_cls, v_mem, v_ok, cls, catv, ts, stats):
    """Each event's class (``cls``), its cat's value number (``catv``) and ``ts`` in ns (-1 where the
    event is not kept), as ``kineto_fast._plan`` decides them.  DECODE: cats or names met for the
    first time must be decoded first (then call again); BAIL: something the careful path decides.
    ``stats``: [device events, kept events with no usable ts]."""
    nknown = len(v_cls)
    need = False
    for r in range(n):
        c = C_OTHER
        v = _text(kS, sh, sg, tab, st, pend, r, S_CAT, DOM_STR, V_NONE)
        if v == -3:
            return GROW
        if v == -2:
            return BAIL
        if v >= nknown:
            need = True
        elif not v_ok[v]:
            return BAIL
        else:
            c = v_cls[v]
        catv[r] = v
        cls[r] = c
    if need:
        return DECODE
    for r in range(n):
        if cls[r] != C_OTHER or kS[r, S_NAME] != K_STR:
            continue
        v = _text(kS, sh, sg, tab, st, pend, r, S_NAME, DOM_STR, V_NONE)
        if v == -3:
            return GROW
        if v == -2:
            return BAIL
        if v >= nknown:
            need = True
        elif not v_ok[v]:
            return BAIL
        elif v_mem[v]:
            cls[r] = C_MEM
    if need:
        return DECODE
    ndev = 0
    nbad = 0
    for r in range(n):
        c = cls[r]
        ts[r] = -1
        if c == C_OTHER:
            continue
        if c == C_KERNEL or c == C_MEMCPY or c == C_MEMSET:
            ndev += 1
        k = kn[r, N_TS]
        t = -1
        if k == K_INT or k == K_FLOAT:
            t = iv[r, N_TS]
            if t == NO_NS:
                return BAIL
        elif k != K_ABSENT and k != K_NULL:
            return BAIL
        if t == -1:
            nbad += 1
            cls[r] = C_OTHER
        ts[r] = t
    stats[0] = ndev
    stats[1] = nbad
    return DONE


@inline
def _int(kn, iv, r, f, default):
    """(value, ok) as ``_Chunk.ints`` reads a plain integer field (not ok: the careful path decides)."""
    k = kn[r, f]
    if k == K_INT:
        return iv[r, f], True
    if k == K_ABSENT:
        return default, True
    if k == K_NULL:
        return -1, True
    return 0, False


@inline
def _float(kn, fv, r, f):
    k = kn[r, f]
    if k == K_INT:
        return fv[r, f], True
    if k == K_FLOAT:
        x = fv[r, f]
        return x, not np.isnan(x)
    if k == K_ABSENT or k == K_NULL:
        return np.nan, True
    return np.nan, False


@inline
def _put_int(kn, iv, out, r, f, col, j, default):
    """out[col, j] = integer field ``f`` of row ``r``; False when it is not plain."""
    x, ok = _int(kn, iv, r, f, default)
    out[col, j] = x
    return ok


@inline
def _put_text(kS, sh, sg, tab, st, pend, out, r, f, col, j, dom, none):
    """out[col, j] = the value number of text / raw field ``f`` of row ``r`` (returned; < 0: stop)."""
    v = _text(kS, sh, sg, tab, st, pend, r, f, dom, none)
    out[col, j] = v
    return v


@jit
def group_of():
    g = np.full(16, -1, np.int64)
    g[C_KERNEL] = G_KERNEL
    g[C_MEMCPY] = G_KERNEL
    g[C_MEMSET] = G_KERNEL
    g[C_OP] = G_OP
    g[C_RUNTIME] = G_OP
    g[C_PYF] = G_PYF
    g[C_FLOW] = G_FLOW
    g[C_FWDBWD] = G_FWDBWD
    g[C_MEM] = G_MEM
    return g


@jit
def gather(n, kn, iv, fv, kS, sh, sg, tab, st, pend, cls, ts, off, out, fout, counts):
    """Fill ``out`` [NCOL, kept] (int64) and ``fout`` [2, kept] (float64) with the kept events grouped
    by table (group g in columns off[g]:off[g+1], in event order): numbers as ``_Chunk`` reads them,
    text and raw fields as value numbers, text pids / tids as their spans (flagged in column TXT, 1 pid,
    2 tid; ``counts[0]``: rows with one).  BAIL when a value is one the careful path must judge
    (it reads the NCCL fields of every kernel event, whether or not the chunk has NCCL kernels)."""
    gmap = group_of()
    pos = off[:NG].copy()
    ntxt = 0
    for r in range(n):
        c = cls[r]
        if c == C_OTHER:
            continue
        g = gmap[c]
        j = pos[g]
        pos[g] += 1
        out[ROW, j] = r
        out[TS, j] = ts[r]
        if g <= G_PYF:                               # dur as _Chunk.ns reads it
            k = kn[r, N_DUR]
            d = -1
            given = 0
            if k == K_INT or k == K_FLOAT:
                d = iv[r, N_DUR]
                given = 1
                if d == NO_NS:
                    return BAIL
            elif k != K_ABSENT and k != K_NULL:
                return BAIL
            out[DUR, j] = d
            out[GIVEN, j] = given
        v = _text(kS, sh, sg, tab, st, pend, r, S_PH, DOM_STR, V_NONE)
        if v < 0:
            return GROW if v == -3 else BAIL
        out[PHV, j] = v
        txt = 0                                      # text pid / tid: their spans, read by the caller
        if kn[r, N_PID] == K_STR:
            out[PID, j] = iv[r, N_PID]
            txt = 1
        elif not _put_int(kn, iv, out, r, N_PID, PID, j, -1):
            return BAIL
        if kn[r, N_TID] == K_STR:
            out[TID, j] = iv[r, N_TID]
            txt |= 2
        elif not _put_int(kn, iv, out, r, N_TID, TID, j, -1):
            return BAIL
        out[TXT, j] = txt
        ntxt += txt != 0
        if g <= G_PYF:
            v = _text(kS, sh, sg, tab, st, pend, r, S_NAME, DOM_STR, V_NONE)
            if v < 0:
                return GROW if v == -3 else BAIL
            out[NAMEV, j] = v
        if g == G_KERNEL:
            if not (_put_int(kn, iv, out, r, N_STREAM, K_STREAM, j, -1)
                    and _put_int(kn, iv, out, r, N_DEVICE, K_DEVICE, j, -1)
                    and _put_int(kn, iv, out, r, N_CORR, K_CORR, j, -1)
                    and _put_int(kn, iv, out, r, N_BYTES, K_BYTES, j, -1)
                    and _put_int(kn, iv, out, r, N_NELEMS, K_NELEMS, j, -1)):
                return BAIL
            v = _put_text(kS, sh, sg, tab, st, pend, out, r, S_PG, K_PGV, j, DOM_STR, V_NONE)
            if v >= 0:
                v = _put_text(kS, sh, sg, tab, st, pend, out, r, S_PGR, K_PGRV, j, DOM_STR, V_NONE)
            if v >= 0:
                v = _put_text(kS, sh, sg, tab, st, pend, out, r, S_DTYPE, K_DTYPEV, j, DOM_STR, V_NONE)
            if v >= 0:
                v = _put_text(kS, sh, sg, tab, st, pend, out, r, S_COLL, K_COLLV, j, DOM_STR, V_NONE)
            if v < 0:
                return GROW if v == -3 else BAIL
            if c == C_KERNEL:
                if not (_put_int(kn, iv, out, r, N_REGS, K_REGS, j, -1)
                        and _put_int(kn, iv, out, r, N_SHMEM, K_SHMEM, j, -1)):
                    return BAIL
                y, ok = _float(kn, fv, r, N_BPS)
                if not ok:
                    return BAIL
                fout[K_BPS, j] = y
                y, ok = _float(kn, fv, r, N_OCC)
                if not ok:
                    return BAIL
                fout[K_OCC, j] = y
                gv = _text(kS, sh, sg, tab, st, pend, r, S_GRID, DOM_RAW, V_EMPTY)
                if gv < 0:
                    return GROW if gv == -3 else BAIL
                bv = _text(kS, sh, sg, tab, st, pend, r, S_BLOCK, DOM_RAW, V_EMPTY)
                if bv < 0:
                    return GROW if bv == -3 else BAIL
                v = _find(tab, st, pend, (np.uint64(gv) << np.uint64(32)) | np.uint64(bv), 0,
                          DOM_PAIR, gv, bv)
                if v < 0:
                    return GROW if v == -3 else BAIL
                out[K_PAIRV, j] = v
            else:
                out[K_PAIRV, j] = -1
        elif g == G_OP:
            x, ok = _int(kn, iv, r, N_EXT, -1)
            if not ok:
                return BAIL
            if x == -1:                                # 2021 traces spell it "external id"
                x, ok = _int(kn, iv, r, N_EXT2, -1)
                if not ok:
                    return BAIL
            out[O_EXT, j] = x
            x = -1
            if c == C_RUNTIME:
                x, ok = _int(kn, iv, r, N_CORR, -1)
                if not ok:
                    return BAIL
            out[O_RTCORR, j] = x
            x, ok = _int(kn, iv, r, N_SEQ, -1)
            if not ok:
                return BAIL
            out[O_SEQ, j] = x
            v = _put_text(kS, sh, sg, tab, st, pend, out, r, S_DIMS, O_DIMSV, j, DOM_RAW, V_EMPTY)
            if v >= 0:
                v = _put_text(kS, sh, sg, tab, st, pend, out, r, S_TYPES, O_TYPESV, j, DOM_RAW, V_EMPTY)
            if v >= 0:
                v = _put_text(kS, sh, sg, tab, st, pend, out, r, S_STACK, O_STACKV, j, DOM_STR, V_NONE)
            if v < 0:
                return GROW if v == -3 else BAIL
        elif g == G_PYF:
            if not (_put_int(kn, iv, out, r, N_PYID, P_PYID, j, -1)
                    and _put_int(kn, iv, out, r, N_PYPAR, P_PYPAR, j, -1)):
                return BAIL
        elif g == G_FLOW or g == G_FWDBWD:
            x, ok = _int(kn, iv, r, N_ID, -1)
            if not ok:
                return BAIL
            out[F_ID, j] = x
        else:
            if not (_put_int(kn, iv, out, r, N_DEVID, M_DEV, j, -1)
                    and _put_int(kn, iv, out, r, N_MBYTES, M_NBYTES, j, 0)
                    and _put_int(kn, iv, out, r, N_ADDR, M_ADDR, j, -1)):
                return BAIL
            y, ok = _float(kn, fv, r, N_ALLOC)
            if not ok:
                return BAIL
            fout[M_ALLOC, j] = y
            y, ok = _float(kn, fv, r, N_RES)
            if not ok:
                return BAIL
            fout[M_RES, j] = y
    counts[0] = ntxt
    return DONE
