"""The numba-compiled body of :mod:`.kineto_plan` (imported only when numba is present).

One pass (:func:`plan`) over a scanned chunk's per-event tables (:mod:`.kineto_scan`) gives each
event its class and writes the kept events' numbers, grouped by table, into one column-major
matrix.  Strings are not decoded here: each distinct text (by its two 64-bit hashes) gets a value
number in a table that lives for the whole load; the ones first met in this chunk are listed
("pending") for the Python side to decode once, and what the loader made of a value (its symbol
id, class as a cat, ...) is a row of ``vp``, written to the matrix directly where it is known.
"""
import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ._kineto_scan_jit import scan
from .kineto_scan_codes import (K_ABSENT, K_FLOAT, K_INT, K_NULL, K_STR, N_DUR, N_ID, N_PID, N_TID, N_TS,
                                NO_NS, NUM, OK, PAUSE, SPAN)
from .kineto_values import (C_FLOW, C_FWDBWD, C_KERNEL, C_MEM, C_MEMCPY, C_MEMSET, C_OP, C_OTHER, C_PYF,
                            C_RUNTIME)

jit = nb.njit(cache=True, nogil=True, boundscheck=False)
inline = nb.njit(cache=True, nogil=True, boundscheck=False, inline="always")

SCANNER_SHA1 = "5dad7ce527001c08988d45fcec3e2fbc74e4fcbc"
"""sha1 of ``_kineto_scan_jit.py`` + ``kineto_scan_codes.py`` (in that order) as this file was last
compiled against.  :func:`scan_plan`'s compiled code holds the scanner's (numba links callees in),
and numba's cache checks only this file: a scanner changed alone would leave the cached
:func:`scan_plan` running the old scanner (or crashing, when the tables' layout changed).  So every
change to those two files changes this line (``tests/test_fast_parse.py`` checks it), and with it
this file's stamp."""

# statuses (FULL: a group has no room left in ``out``; PENDING: texts met in the block just planned
# are to be decoded before the next block is scanned over them; SCAN: the scanner stopped, its
# status in ``pos[4]``)
DONE, DECODE, GROW, BAIL, FULL, PENDING, SCAN = 0, 1, 2, 3, 4, 5, 6
# value domains (a text field's decoded string, a raw JSON field's bytes, a (grid, block) pair)
DOM_STR, DOM_RAW, DOM_PAIR = 1, 2, 3
V_NONE, V_EMPTY = 0, 1          # the value numbers of "no string" (None) and "no raw text" (b"")
# what is known of a value (columns of vp; -1 where not known yet): it decodes, its class as a cat,
# it is "[memory]", its ph code (1 s, 2 f, 3 X), str_memo id, dims_memo id, types_memo id, the
# dims_memo2 code of a (grid, block) pair, its cat's symbol id
P_OK, P_CLS, P_MEM, P_PH, P_SID, P_SDIMS, P_STYPES, P_PAIR, P_CATSYM = range(9)
NP = 9
# groups (tables) and their columns in plan's matrix; a column of ids holds -(value + 2) where the
# id is not known yet (the caller fills it in)
G_KERNEL, G_OP, G_PYF, G_FLOW, G_FWDBWD, G_MEM = range(6)
NG = 6
ROW, CLS, TS, DUR, GIVEN, PH, PID, TID, NAME, CATSYM, TXT = range(11)
K_STREAM, K_DEVICE, K_CORR, K_BYTES, K_REGS, K_SHMEM, K_NELEMS, K_PAIR, K_PGV, K_PGRV, K_DTYPEV, K_COLLV = \
    range(11, 23)
O_EXT, O_RTCORR, O_SEQ, O_DIMS, O_TYPES, O_STACK = range(11, 17)
P_PYID, P_PYPAR = 11, 12
F_ID = 11
M_DEV, M_NBYTES, M_ADDR = 11, 12, 13
NCOL = 23
# float columns
K_BPS, K_OCC = 0, 1
M_ALLOC, M_RES = 0, 1
# counts: rows per group, then device events, kept events without a usable ts, rows with a text
# pid / tid, ids not known yet, cats without a symbol id yet
C_DEV, C_BADTS, C_TXT, C_MISS, C_NEWCAT = NG, NG + 1, NG + 2, NG + 3, NG + 4
NCOUNT = NG + 5

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

@intrinsic
def _get(typingctx, addr, k):
    """The int64 at address ``addr + 8 k`` (an array's element read through the array's address:
    numba updates an array's reference count, an atomic add, wherever it is passed, also to an
    inlined helper, and its pruning pass leaves the pairs across the helpers' branches -- it was
    more than half of this pass's time)."""
    sig = types.int64(addr, k)

    def codegen(context, builder, signature, args):
        a, i = args
        ptr = builder.inttoptr(builder.add(a, builder.mul(i, ir.Constant(ir.IntType(64), 8))),
                               ir.IntType(64).as_pointer())
        return builder.load(ptr, align=8)
    return sig, codegen


@intrinsic
def _set(typingctx, addr, k, val):
    """Store the int64 ``val`` at address ``addr + 8 k``."""
    sig = types.void(addr, k, types.int64)

    def codegen(context, builder, signature, args):
        a, i, v = args
        v = context.cast(builder, v, signature.args[2], types.int64)
        ptr = builder.inttoptr(builder.add(a, builder.mul(i, ir.Constant(ir.IntType(64), 8))),
                               ir.IntType(64).as_pointer())
        builder.store(v, ptr, align=8)
        return context.get_dummy_value()
    return sig, codegen


_GOLD = np.uint64(0x9E3779B97F4A7C15)
_DOMMIX = np.uint64(0xC2B2AE3D27D4EB4F)


@inline
def _find(T, h, g, dom, a, b):
    """The value number of (h, g) in domain ``dom``; a new one (listed in ``pend`` with ``a``, ``b``:
    the row and field where its text is, or the pair's two values) when first met.  -2: the same
    first hash with another second hash (a collision); -3: the table is too full (grow it).
    ``T``: (tab's address, its rows, st's address, pend's address, its rows), see :func:`plan`.
    ``tab`` rows: first hash (its bits as int64), second hash, value number (-1: free), domain;
    ``st``: entries, values, hash shift, pending."""
    tp, size, sp, pp, npend = T
    hi = np.int64(h)
    key = h ^ (np.uint64(dom) * _DOMMIX)
    p = np.int64((key * _GOLD) >> np.uint64(_get(sp, 2))) & (size - 1)
    while True:
        v = _get(tp, 4 * p + 2)
        if v < 0:
            q = _get(sp, 3)
            if _get(sp, 0) * 4 >= size * 3 or q >= npend:
                return -3
            v = _get(sp, 1)
            _set(tp, 4 * p, hi)
            _set(tp, 4 * p + 1, g)
            _set(tp, 4 * p + 2, v)
            _set(tp, 4 * p + 3, dom)
            _set(sp, 0, _get(sp, 0) + 1)
            _set(sp, 1, v + 1)
            _set(pp, 3 * q, a)
            _set(pp, 3 * q + 1, b)
            _set(pp, 3 * q + 2, dom)
            _set(sp, 3, q + 1)
            return v
        if _get(tp, 4 * p) == hi and _get(tp, 4 * p + 3) == dom:
            if _get(tp, 4 * p + 1) == g:
                return v
            return -2
        p = (p + 1) & (size - 1)


@inline
def _text(kS, sh, sg, T, r, f, dom, none):
    """The value number of text / raw field ``f`` of row ``r`` (``none`` when it is not a string)."""
    if kS[r, f] != K_STR:
        return none
    return _find(T, sh[r, f], sg[r, f], dom, r, f)


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
def _put_int(kn, iv, op, r, f, k, default):
    """out[k] = integer field ``f`` of row ``r`` (``op``: the output's address, ``k`` the flat
    index of (column, row)); False when it is not plain."""
    x, ok = _int(kn, iv, r, f, default)
    _set(op, k, x)
    return ok


@inline
def _put_text(kS, sh, sg, T, vpp, nv, op, r, f, k):
    """out[k] = the value number of text field ``f`` of row ``r`` (returned; -1: one known not
    to decode, -2 / -3 as ``_find``)."""
    v = _text(kS, sh, sg, T, r, f, DOM_STR, V_NONE)
    if v >= 0 and _bad(vpp, nv, v):
        v = -1
    _set(op, k, v)
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


@inline
def _id(vpp, nv, v, p, op, k, miss):
    """out[k] = property ``p`` of value ``v`` (``vpp``: vp's address, ``nv`` its rows), or -(v + 2)
    when not known yet (misses + 1)."""
    if v < nv:
        x = _get(vpp, v * NP + p)
        if x >= 0:
            _set(op, k, x)
            return miss
    _set(op, k, -(v + 2))
    return miss + 1


@inline
def _bad(vpp, nv, v):
    """Value ``v`` is known not to decode (one met for the first time is checked by the caller)."""
    return v < nv and _get(vpp, v * NP + P_OK) == 0


@jit
def plan(n, kn, iv, fv, kS, sh, sg, tab, st, pend, vp, cap, out, fout, newcat, base, counts, r0):
    """Classify each event as ``kineto_fast._plan`` does and write the kept ones, grouped by table
    (group g in columns g * cap + [0, counts[g])), in event order: numbers as ``_Chunk`` reads them,
    ids of text and raw fields (-(value + 2) where not known yet; the NCCL texts as value numbers),
    text pids / tids as their spans (flagged in column TXT: 1 pid, 2 tid).  ``newcat``: the cats
    without a symbol id yet, in order of first sight.  DECODE: texts met for the first time decide
    a class (decode them, then call again); BAIL: a value the careful path must judge; GROW: the
    value table is full; FULL: a group has ``cap`` rows.  The rows are a block of the chunk: the
    counts start from ``base`` (the blocks before it), ``r0`` is its first row in the chunk."""
    nknown = len(vp)
    nv = nknown
    vpp = vp.ctypes.data                # vp and out go to the helpers as addresses (_get, _set)
    op = out.ctypes.data
    W = out.shape[1]
    T = (tab.ctypes.data, len(tab), st.ctypes.data, pend.ctypes.data, len(pend))   # the value table (_find)
    gmap = group_of()
    for g in range(NCOUNT):
        counts[g] = base[g]
    ndev = base[C_DEV]
    nbad = base[C_BADTS]
    ntxt = base[C_TXT]
    miss = base[C_MISS]
    nnew = base[C_NEWCAT]
    need = False                       # a class depends on a text met for the first time
    for r in range(n):
        v = V_NONE
        if kS[r, S_CAT] == K_STR:
            v = _find(T, sh[r, S_CAT], sg[r, S_CAT], DOM_STR, r, S_CAT)
            if v < 0:
                return GROW if v == -3 else BAIL
            if v >= nknown:
                need = True
                continue
        if vp[v, P_OK] == 0:
            return BAIL
        c = vp[v, P_CLS]
        catsym = vp[v, P_CATSYM]
        if catsym < 0:
            seen = False
            for i in range(nnew):
                seen |= newcat[i] == v
            if not seen:
                if nnew >= len(newcat):
                    return BAIL
                newcat[nnew] = v
                nnew += 1
        if c == C_OTHER:
            if kS[r, S_NAME] != K_STR:
                continue
            w = _find(T, sh[r, S_NAME], sg[r, S_NAME], DOM_STR, r, S_NAME)
            if w < 0:
                return GROW if w == -3 else BAIL
            if w >= nknown:
                need = True
                continue
            if vp[w, P_OK] == 0:
                return BAIL
            if vp[w, P_MEM] == 0:
                continue
            c = C_MEM
        if need:
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
            continue
        g = gmap[c]
        if counts[g] >= cap:
            return FULL
        j = g * cap + counts[g]
        counts[g] += 1
        out[ROW, j] = r0 + r
        out[CLS, j] = c
        out[TS, j] = t
        if catsym >= 0:
            out[CATSYM, j] = catsym
        else:
            out[CATSYM, j] = -(v + 2)
            miss += 1
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
        v = _text(kS, sh, sg, T, r, S_PH, DOM_STR, V_NONE)
        if v < 0:
            return GROW if v == -3 else BAIL
        if _bad(vpp, nv, v):
            return BAIL
        miss = _id(vpp, nv, v, P_PH, op, PH * W + j, miss)
        txt = 0                                      # text pid / tid: their spans, read by the caller
        if kn[r, N_PID] == K_STR:
            out[PID, j] = iv[r, N_PID]
            txt = 1
        elif not _put_int(kn, iv, op, r, N_PID, PID * W + j, -1):
            return BAIL
        if kn[r, N_TID] == K_STR:
            out[TID, j] = iv[r, N_TID]
            txt |= 2
        elif not _put_int(kn, iv, op, r, N_TID, TID * W + j, -1):
            return BAIL
        out[TXT, j] = txt
        ntxt += txt != 0
        if g <= G_PYF:
            v = _text(kS, sh, sg, T, r, S_NAME, DOM_STR, V_NONE)
            if v < 0:
                return GROW if v == -3 else BAIL
            if _bad(vpp, nv, v):
                return BAIL
            miss = _id(vpp, nv, v, P_SID, op, NAME * W + j, miss)
        if g == G_KERNEL:
            if not (_put_int(kn, iv, op, r, N_STREAM, K_STREAM * W + j, -1)
                    and _put_int(kn, iv, op, r, N_DEVICE, K_DEVICE * W + j, -1)
                    and _put_int(kn, iv, op, r, N_CORR, K_CORR * W + j, -1)
                    and _put_int(kn, iv, op, r, N_BYTES, K_BYTES * W + j, -1)
                    and _put_int(kn, iv, op, r, N_NELEMS, K_NELEMS * W + j, -1)):
                return BAIL
            v = _put_text(kS, sh, sg, T, vpp, nv, op, r, S_PG, K_PGV * W + j)
            if v >= 0:
                v = _put_text(kS, sh, sg, T, vpp, nv, op, r, S_PGR, K_PGRV * W + j)
            if v >= 0:
                v = _put_text(kS, sh, sg, T, vpp, nv, op, r, S_DTYPE, K_DTYPEV * W + j)
            if v >= 0:
                v = _put_text(kS, sh, sg, T, vpp, nv, op, r, S_COLL, K_COLLV * W + j)
            if v < 0:
                return GROW if v == -3 else BAIL
            if c == C_KERNEL:
                if not (_put_int(kn, iv, op, r, N_REGS, K_REGS * W + j, -1)
                        and _put_int(kn, iv, op, r, N_SHMEM, K_SHMEM * W + j, -1)):
                    return BAIL
                y, ok = _float(kn, fv, r, N_BPS)
                if not ok:
                    return BAIL
                fout[K_BPS, j] = y
                y, ok = _float(kn, fv, r, N_OCC)
                if not ok:
                    return BAIL
                fout[K_OCC, j] = y
                gv = _text(kS, sh, sg, T, r, S_GRID, DOM_RAW, V_EMPTY)
                if gv < 0:
                    return GROW if gv == -3 else BAIL
                bv = _text(kS, sh, sg, T, r, S_BLOCK, DOM_RAW, V_EMPTY)
                if bv < 0:
                    return GROW if bv == -3 else BAIL
                v = _find(T, (np.uint64(gv) << np.uint64(32)) | np.uint64(bv), 0, DOM_PAIR, gv, bv)
                if v < 0:
                    return GROW if v == -3 else BAIL
                miss = _id(vpp, nv, v, P_PAIR, op, K_PAIR * W + j, miss)
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
            if not _put_int(kn, iv, op, r, N_SEQ, O_SEQ * W + j, -1):
                return BAIL
            v = _text(kS, sh, sg, T, r, S_DIMS, DOM_RAW, V_EMPTY)
            if v < 0:
                return GROW if v == -3 else BAIL
            miss = _id(vpp, nv, v, P_SDIMS, op, O_DIMS * W + j, miss)
            v = _text(kS, sh, sg, T, r, S_TYPES, DOM_RAW, V_EMPTY)
            if v < 0:
                return GROW if v == -3 else BAIL
            miss = _id(vpp, nv, v, P_STYPES, op, O_TYPES * W + j, miss)
            v = _text(kS, sh, sg, T, r, S_STACK, DOM_STR, V_NONE)
            if v < 0:
                return GROW if v == -3 else BAIL
            if _bad(vpp, nv, v):
                return BAIL
            miss = _id(vpp, nv, v, P_SID, op, O_STACK * W + j, miss)
        elif g == G_PYF:
            if not (_put_int(kn, iv, op, r, N_PYID, P_PYID * W + j, -1)
                    and _put_int(kn, iv, op, r, N_PYPAR, P_PYPAR * W + j, -1)):
                return BAIL
        elif g == G_FLOW or g == G_FWDBWD:
            if not _put_int(kn, iv, op, r, N_ID, F_ID * W + j, -1):
                return BAIL
        else:
            if not (_put_int(kn, iv, op, r, N_DEVID, M_DEV * W + j, -1)
                    and _put_int(kn, iv, op, r, N_MBYTES, M_NBYTES * W + j, 0)
                    and _put_int(kn, iv, op, r, N_ADDR, M_ADDR * W + j, -1)):
                return BAIL
            y, ok = _float(kn, fv, r, N_ALLOC)
            if not ok:
                return BAIL
            fout[M_ALLOC, j] = y
            y, ok = _float(kn, fv, r, N_RES)
            if not ok:
                return BAIL
            fout[M_RES, j] = y
    if need:
        return DECODE
    counts[C_DEV] = ndev
    counts[C_BADTS] = nbad
    counts[C_TXT] = ntxt
    counts[C_MISS] = miss
    counts[C_NEWCAT] = nnew
    return DONE


@jit
def scan_plan(b, pos, lim, kn, iv, fv, kS, ss, se, sh, sg, klen, kword, kslot, klut, aklen, akword, akslot, aklut,
              tab, st, pend, vp, cap, out, fout, newcat, base, counts):
    """Scan a chunk ``lim`` events at a time into the small tables and plan each block while its
    rows are still in the cache (a chunk's tables would be ~50 MB).  ``pos``: [0] the byte the scan
    goes on from, [1] rows of the chunk planned so far, [2] rows of the block in the tables not
    planned yet, [3] 1 once the scan reached the chunk's end, [4] the scanner's status when it
    stopped on something it does not accept (SCAN).  Returns DONE at the chunk's end, or the
    plan's status (the caller decodes / grows and calls again: the block is planned again), or
    PENDING after a block that met new texts (decoded before the next block's scan overwrites
    their spans)."""
    while True:
        if pos[2] == 0:
            if pos[3]:
                return DONE
            status, m = scan(b, pos, lim, kn, iv, fv, kS, ss, se, sh, sg, klen, kword, kslot, klut, aklen, akword,
                             akslot, aklut)
            if status == OK:
                pos[3] = 1
            elif status != PAUSE:
                pos[4] = status
                return SCAN
            if m == 0:
                continue
            pos[2] = m
        status = plan(pos[2], kn, iv, fv, kS, sh, sg, tab, st, pend, vp, cap, out, fout, newcat, base, counts, pos[1])
        if status != DONE:
            return status
        for g in range(NCOUNT):
            base[g] = counts[g]
        pos[1] += pos[2]
        pos[2] = 0
        if st[3] > 0:
            return PENDING
