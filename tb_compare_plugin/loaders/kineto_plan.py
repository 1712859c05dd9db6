"""The quick plan of the fast Kineto path: a scanned chunk's tables -> column pieces in one numba pass.

:mod:`.kineto_fast` turns a chunk into column pieces with numpy, field by field (``_plan`` /
``_commit``: the careful path).  This module does the same for the common chunk in one compiled
pass (:func:`._kineto_plan_jit.plan`), which classifies the events and writes the kept ones'
numbers, grouped by table, into one matrix.  The scan and the pass go :data:`BLOCK` events at a
time (:func:`._kineto_plan_jit.scan_plan`), so the scanner's tables are ~800 KB, not ~50 MB a chunk;
a chunk the pass does not take is scanned whole for the careful path.  Text and raw JSON values become value numbers in a
hash table that lives for the whole load (keyed by both 64-bit hashes of their bytes), so each
distinct text of the trace is decoded once, not once per chunk; what the loader makes of a value
(its symbol id, its cat's symbol, its (grid, block) code) is kept with it and written by the pass
directly.  A value's id is taken when a column first needs it, in the column's order of first sight
and in the order the careful path interns the columns, so the symbol ids are the same.

Whenever the pass meets something the careful path judges (a value that is not a plain number, a
text pid / tid it does not read, a string that is not valid UTF-8, a hash collision, ...) ``take``
returns False before changing the collector, and the chunk takes the careful path, which accepts it
or gives the reason it is refused; the quick plan never refuses a chunk itself.
"""
from __future__ import annotations

import mmap

import msgspec
import numpy as np

from ..model.profile import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET
from ..model import jit as jit_cache
from . import kineto_fast
from . import kineto_scan as ks
from .kineto_values import C_KERNEL, C_MEMCPY, C_OTHER, C_PYF, C_OP, CAT_CLASS, DTYPE_SIZE, collective_type

_J = None                   # the compiled module once imported


def _jit():
    """The compiled pass's module (numba's, or its bundle's kernels: :mod:`..model.jit_bundle`)."""
    global _J
    if _J is None:
        from ..model import jit_bundle
        jit_bundle.provide(__package__ + "._kineto_plan_jit", _self_test, jit_cache.cache_dir())
    return _J


def _self_test(J) -> None:
    """Plan a two-event chunk with ``J`` (loads its kernels); raises when it cannot run here."""
    global _J
    _J = J
    try:
        buf = np.frombuffer(b'[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "pid": 0, "tid": "7", '
                            b'"args": {"grid": [1, 1, 1], "block": [1, 1, 1]}}, {"ph": "X", "cat": "cpu_op", '
                            b'"name": "op", "ts": 1, "dur": 1, "pid": 0, "tid": 7}]', np.uint8)
        s = State()
        status, rows = s.run(buf)
        s._grow()
        if status != J.DONE or rows != 2:
            raise RuntimeError(f"the quick plan refused its own test chunk (status {status}, {rows} rows)")
    except BaseException:
        _J = None
        raise


_CLASS_LABEL = {C_KERNEL: "GPU kernel/memcpy/memset", C_OP: "CPU op/runtime", C_PYF: "python_function"}
_DIMS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
_PH = {"s": 1, "f": 2, "X": 3}


def warm() -> None:
    """Load the pass (its bundle, else numba's cache, else a compile) and run it on a two-event
    chunk (:func:`_self_test`); raises when it cannot run here."""
    _jit()


def _small_pages(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised array in its own anonymous mapping, which (unlike numpy's big arrays) is
    not advised to use huge pages: only the 4 KB pages written become resident.  The pass's output
    has a stretch of room per (column, group) and uses a small part of each; in 2 MB pages nearly
    all of it (~90 MB on a 16 MB chunk) was resident."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.frombuffer(mmap.mmap(-1, max(size, 1)), dtype, int(np.prod(shape))).reshape(shape)


class State:
    """The load's value table: hash pair -> value number, each value decoded once (``vals``), and
    what the loader has made of it so far (``vp``, -1 where not yet); the pass's output buffers."""

    def __init__(self) -> None:
        J = _jit()
        self._table(12)
        self.st = np.array([0, 2, 64 - 12, 0], np.int64)     # entries, values, hash shift, pending
        self.vals: list = [None, b""]                          # J.V_NONE, J.V_EMPTY
        self.vp = np.full((2, J.NP), -1, np.int64)
        self.vp[:, [J.P_OK, J.P_CLS, J.P_MEM, J.P_PH]] = [1, C_OTHER, 0, 0]
        self.vp[J.V_NONE, J.P_SID] = 0                         # str_memo[None]
        self._vp_room = self.vp                                # vp is the first rows of this
        self.n_bad = 0                                         # values that do not decode
        self.cap = 0                                           # events a group can hold in out
        self.out = self.fout = None
        self.tables = None                                     # the scanner's tables for one block
        self.newcat = np.empty(64, np.int64)
        self.counts = np.zeros(J.NCOUNT, np.int64)
        self.coll: dict = {}                                   # (name id, "Collective name" value) -> type

    def _table(self, bits: int) -> None:
        size = 1 << bits
        self.tab = np.zeros((size, 4), np.int64)     # first hash, second hash, value (-1: free), domain
        self.tab[:, 2] = -1
        self.pend = np.empty((size, 3), np.int64)
        self.bits = bits

    def _grow(self) -> None:
        old = self.tab
        self._table(self.bits + 1)
        _jit().rehash(old, self.tab, self.bits)
        self.st[2] = 64 - self.bits

    def _decode(self, buf: np.ndarray, ss: np.ndarray, se: np.ndarray) -> None:
        """Decode the values listed as pending by the last pass (their text is in this chunk)."""
        J = _jit()
        m = int(self.st[3])
        if not m:
            return
        self.st[3] = 0
        vals = self.vals
        rows = np.full((m, J.NP), -1, np.int64)
        for i, (a, b, dom) in enumerate(self.pend[:m].tolist()):
            good = True
            if dom == J.DOM_PAIR:
                v = (vals[a], vals[b])
            else:
                v = buf[ss[a, b]:se[a, b]].tobytes()
                if dom == J.DOM_STR:
                    try:
                        v = msgspec.json.decode(b'"' + v + b'"') if b"\\" in v else v.decode("utf-8")
                    except (UnicodeDecodeError, msgspec.DecodeError):
                        v, good = None, False
            vals.append(v)                   # a pair's two values come before it
            s = v if isinstance(v, str) else None
            rows[i, :J.P_SID] = (good, CAT_CLASS.get(s.lower(), C_OTHER) if s is not None else C_OTHER,
                                 s == "[memory]", _PH.get(s, 0))
            self.n_bad += not good
        n = len(self.vp)
        if n + m > len(self._vp_room):       # (the blocks list new texts a few at a time: amortised growth)
            room = np.full((max(2 * len(self._vp_room), n + m), J.NP), -1, np.int64)
            room[:n] = self.vp
            self._vp_room = room
        self._vp_room[n:n + m] = rows
        self.vp = self._vp_room[:n + m]

    def _room(self, cap: int, keep: np.ndarray | None = None) -> None:
        """Output buffers with room for ``cap`` rows a group; ``keep``: rows a group already holds,
        moved over."""
        J = _jit()
        out = _small_pages((J.NCOL, J.NG * cap), np.int64)
        fout = _small_pages((2, J.NG * cap), np.float64)
        if keep is not None:
            for g in range(J.NG):
                k = int(keep[g])
                out[:, g * cap:g * cap + k] = self.out[:, g * self.cap:g * self.cap + k]
                fout[:, g * cap:g * cap + k] = self.fout[:, g * self.cap:g * self.cap + k]
        self.cap, self.out, self.fout = cap, out, fout

    def run(self, buf: np.ndarray) -> tuple[int, int]:
        """Scan and plan the chunk ``buf`` block by block (:func:`._kineto_plan_jit.scan_plan`) until
        its end or a stop: (status, rows planned).  DONE, or BAIL (the careful path decides: a value
        it must judge, a text that does not decode, or the scanner stopped, its reason then given
        by the whole chunk's scan)."""
        J = _jit()
        if self.tables is None:
            self.tables = ks.new_tables(BLOCK)
        want = len(buf) // EVENT_BYTES + MIN_ROOM             # FULL says when it is short
        if self.cap < want:                     # (the next chunks may be a little longer: room for them)
            self._room(want + want // 4)
        kn, iv, fv, kS, ss, se, sh, sg = self.tables
        pos = np.zeros(5, np.int64)
        base = np.zeros(J.NCOUNT, np.int64)
        bad = self.n_bad
        wbuf = jit_cache.writable_view(buf)
        while True:
            status = J.scan_plan(wbuf, pos, BLOCK, kn, iv, fv, kS, ss, se, sh, sg, *ks.TOP_TABLE, *ks.ARG_TABLE,
                                 self.tab, self.st, self.pend, self.vp, self.cap, self.out, self.fout, self.newcat,
                                 base, self.counts)
            self._decode(buf, ss, se)
            if self.n_bad != bad:                   # (a text met here that does not decode)
                return J.BAIL, int(pos[1])
            if status == J.GROW:
                self._grow()
            elif status == J.FULL:
                self._room(2 * self.cap, base)
            elif status == J.DONE:
                return status, int(pos[1])
            elif status not in (J.DECODE, J.PENDING):
                return J.BAIL, int(pos[1])

    def fix(self, arr: np.ndarray, p: int, make=None) -> None:
        """Fill in the ids not known when the pass ran (-(value + 2)) from property ``p``, taking
        the missing ones from ``make`` in the order the column first shows them (as the careful
        path interns a column's distinct values)."""
        neg = arr < 0
        if not neg.any():
            return
        vs = -arr[neg] - 2
        if make is not None:
            vp, vals = self.vp, self.vals
            _, first = np.unique(vs, return_index=True)
            for v in vs[np.sort(first)].tolist():
                if vp[v, p] < 0:
                    vp[v, p] = make(vals[v])
        arr[neg] = self.vp[vs, p]


_usable = None              # True once the pass ran here; False when numba cannot compile it


def take_chunk(col, view) -> str | None:
    """Scan a chunk and put its columns into ``col`` (None), by the quick plan when it takes the
    chunk, else by the careful path (:func:`.kineto_fast.careful`); or change nothing and say why
    the chunk was not taken (it then goes to the general decoder)."""
    global _usable
    buf = np.frombuffer(view, np.uint8)
    if _usable is None:
        try:
            warm()
            _usable = True
        except Exception:                  # numba cannot compile the pass here: the careful path does all
            _usable = False
    if _usable and take(col, buf):
        return None
    status, n, *cols = ks.scan(buf)        # the whole chunk's tables, for the careful path
    if status != ks.OK:
        return ks.STATUS_TEXT[status]
    return kineto_fast.careful(col, buf, n, cols)


BLOCK = 1024
"""Events scanned and planned at a time: their tables (~800 KB) stay in the cache between the
scan that writes them and the plan that reads them (docs/performance.md, session 11)."""
EVENT_BYTES, MIN_ROOM = 128, 1024
"""The pass's output has room for a chunk's bytes / EVENT_BYTES + MIN_ROOM rows a group at first
(GPU traces have ~250 bytes an event), twice as many whenever a group fills it."""


def take(col, buf: np.ndarray) -> bool:
    """Put the chunk's columns into ``col`` (True), or change nothing (False: the careful path decides,
    or the scanner does not accept the chunk)."""
    J = _jit()
    s = col.fast_state
    if s is None:
        s = col.fast_state = State()
    status, n = s.run(buf)
    if status != J.DONE or not n or n > len(buf) // 24 + 16:
        return False                       # (an empty chunk: the careful path counts it; more events
    counts = s.counts                      # than the whole chunk's tables hold: the scanner says so)
    groups = [s.out[:, g * s.cap:g * s.cap + counts[g]] if counts[g] else None for g in range(J.NG)]
    if counts[J.C_TXT] and not _text_ids(buf, groups):
        return False
    _commit(col, s, n, groups)
    return True


def _text_ids(buf, groups) -> bool:
    """Read the text pids / tids (as ``_Chunk.ints`` does, one table's group at a time: how a text
    is read depends on the others of its group); False when the careful path must judge them."""
    J = _jit()
    for o in groups:
        if o is None:
            continue
        for bit, c, key in ((1, J.PID, "pid"), (2, J.TID, "tid")):
            rows = np.flatnonzero(o[J.TXT] & bit)
            if len(rows):
                try:
                    o[c, rows] = kineto_fast.text_ids(buf, key, o[c, rows])
                except kineto_fast.Refuse:
                    return False
    return True


def _commit(col, s: State, n: int, groups: list) -> None:
    """Store the chunk exactly as ``kineto_fast._commit`` (and ``_Collector._extract``) would."""
    J = _jit()
    col.n_events += n
    counts, vals, memo = s.counts, s.vals, col.cat_memo
    for v in s.newcat[:counts[J.C_NEWCAT]].tolist():           # new cats, in order of first sight
        c = vals[v]
        if c not in memo:
            memo[c] = len(col.cat_cls)
            col.cat_cls.append(CAT_CLASS.get(c.lower(), C_OTHER) if isinstance(c, str) else C_OTHER)
            col.cat_sym.append(col.sym.intern(c) if isinstance(c, str) else 0)
        s.vp[v, J.P_CATSYM] = col.cat_sym[memo[c]]
    col.n_device_seen += int(counts[J.C_DEV])
    col.n_bad_ts += int(counts[J.C_BADTS])
    miss = counts[J.C_MISS] > 0
    if miss:
        for o in groups:
            if o is not None:
                s.fix(o[J.CATSYM], J.P_CATSYM)
                s.fix(o[J.PH], J.P_PH)
    intern = col.str_memo.__getitem__

    def names(o, c=J.NAME, p=J.P_SID, make=intern):
        if miss:
            s.fix(o[c], p, make)
        return o[c].astype(np.int32)

    def dur(o, c):
        d = o[J.DUR]                   # (the pass's scratch: changed in place)
        neg = d < 0
        if neg.any():
            d[neg] = 0
            nb = int((neg & ((o[J.GIVEN] == 1) | (o[J.PH] == 3))).sum())
            if nb:
                label = _CLASS_LABEL[c]
                col.bad_dur[label] = col.bad_dur.get(label, 0) + nb
        return d

    o = groups[J.G_KERNEL]
    if o is not None:
        _kernels(col, s, o, s.fout[:, :o.shape[1]], dur(o, C_KERNEL), names(o), miss)
    o = groups[J.G_OP]
    if o is not None:
        d = dur(o, C_OP)
        nm = names(o)
        col._put("ops", o.shape[1], name=nm, cat=o[J.CATSYM].astype(np.int32), start_ns=o[J.TS], dur_ns=d,
                 pid=o[J.PID], tid=o[J.TID], corr=o[J.O_EXT], seq=o[J.O_SEQ],
                 input_shapes=names(o, J.O_DIMS, J.P_SDIMS, col.dims_memo.__getitem__),
                 input_types=names(o, J.O_TYPES, J.P_STYPES, col.types_memo.__getitem__),
                 call_stack=names(o, J.O_STACK), _rtcorr=o[J.O_RTCORR])
    o = groups[J.G_PYF]
    if o is not None:
        d = dur(o, C_PYF)
        col._put("pyfuncs", o.shape[1], name=names(o), start_ns=o[J.TS], dur_ns=d, pid=o[J.PID],
                 tid=o[J.TID], py_id=o[J.P_PYID], py_parent=o[J.P_PYPAR])
    for g, table in ((J.G_FLOW, "_flows"), (J.G_FWDBWD, "_fwdbwd")):
        o = groups[g]
        if o is not None:
            ph = o[J.PH]
            sel = np.flatnonzero((ph == 1) | (ph == 2))
            col._put(table, len(sel), is_s=(ph[sel] == 1), id=o[J.F_ID][sel], ts=o[J.TS][sel],
                     pid=o[J.PID][sel], tid=o[J.TID][sel])
    o = groups[J.G_MEM]
    if o is not None:
        a = J.G_MEM * s.cap
        f = s.fout[:, a:a + o.shape[1]]
        col._put("_mem", o.shape[1], ts=o[J.TS], pid=o[J.PID], tid=o[J.TID],
                 dev=o[J.M_DEV], nbytes=o[J.M_NBYTES], addr=o[J.M_ADDR],
                 alloc=f[J.M_ALLOC], res=f[J.M_RES])


def _kernels(col, s: State, o, f, dur, names, miss) -> None:
    J = _jit()
    vals = s.vals
    col._update_nccl()
    m = o.shape[1]
    c = o[J.CLS]
    kind = np.where(c == C_KERNEL, KIND_COMPUTE, np.where(c == C_MEMCPY, KIND_MEMCPY, KIND_MEMSET)).astype(np.int8)
    pid, tid = o[J.PID], o[J.TID]
    stream = o[J.K_STREAM]
    col.n_no_stream += int((stream < 0).sum())
    stream = np.where(stream >= 0, stream, tid)
    device = o[J.K_DEVICE]
    col.n_no_device += int((device < 0).sum())
    device = np.where(device >= 0, device, pid)
    geo = {k: np.full(m, -1, np.int64) for k in _DIMS + ("registers", "shared_mem")}
    geo["blocks_per_sm"] = np.full(m, np.nan)
    geo["occupancy_pct"] = np.full(m, np.nan)
    rows = np.flatnonzero(c == C_KERNEL)
    if len(rows):
        codes = o[J.K_PAIR][rows]
        if miss:
            s.fix(codes, J.P_PAIR, col.dims_memo2.__getitem__)
        col.fill_geometry(geo, rows, codes, o[J.K_REGS][rows], o[J.K_SHMEM][rows], f[J.K_BPS][rows],
                          f[J.K_OCC][rows])
    rows = None
    if col.nccl_ids:                    # (kind is final before _put copies it)
        rows = np.flatnonzero(np.isin(names, np.fromiter(col.nccl_ids, np.int32)) & (kind == KIND_COMPUTE))
        kind[rows] = KIND_COMM
    first = col._put("kernels", m, name=names, task_type=o[J.CATSYM].astype(np.int32), kind=kind, stream=stream,
                     device=device, start_ns=o[J.TS], dur_ns=dur, corr=o[J.K_CORR],
                     bytes=o[J.K_BYTES], _pid=pid, _tid=tid, **geo)
    if rows is not None:
        if len(rows):
            pg = [vals[v] for v in o[J.K_PGV][rows].tolist()]
            pg = [g if g is not None else vals[v] for g, v in zip(pg, o[J.K_PGRV][rows].tolist())]
            nel = o[J.K_NELEMS][rows]
            size = np.array([DTYPE_SIZE.get((vals[v] or "").lower(), -1) for v in o[J.K_DTYPEV][rows].tolist()],
                            np.int64)
            nbytes = np.where((nel >= 0) & (size > 0), nel * size, -1)
            memo = s.coll
            op_type = []
            for key in zip(names[rows].tolist(), o[J.K_COLLV][rows].tolist()):
                t = memo.get(key)
                if t is None:
                    t = memo[key] = collective_type(col.sym.string(key[0]), vals[key[1]])
                op_type.append(t)
            col._put("comm_ops", len(rows), kernel=rows + first, group=col._intern(pg),
                     op_type=col._intern(op_type), bytes=nbytes)
