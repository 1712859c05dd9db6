"""The quick plan of the fast Kineto path: a scanned chunk's tables -> column pieces in two numba passes.

:mod:`.kineto_fast` turns a chunk into column pieces with numpy, field by field (``_plan`` /
``_commit``: the careful path).  This module does the same for the common chunk in two compiled
passes (:mod:`._kineto_plan_jit`): ``classify`` gives each event its class and ``ts``, ``gather``
writes the kept events' numbers, grouped by table, into one matrix.  Text and raw JSON values become
value numbers in a hash table that lives for the whole load (keyed by both 64-bit hashes of their
bytes), so each distinct text of the trace is decoded once, not once per chunk; a value's symbol
id is taken when a column first needs it, in the column's order of first sight, as the careful
path interns them (so the symbol ids are the same).

Whenever the quick plan meets something the careful path judges (a value that is not a plain
number, a text pid / tid, a string that is not valid UTF-8, a hash collision, ...) it returns
False before changing the collector, and the chunk takes the careful path, which accepts it or
gives the reason it is refused; the quick plan never refuses a chunk itself.
"""
from __future__ import annotations

import msgspec
import numpy as np

from ..model.profile import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET
from . import kineto_fast
from . import kineto_scan as ks
from .kineto_values import C_KERNEL, C_MEMCPY, C_OTHER, C_PYF, C_OP, CAT_CLASS, DTYPE_SIZE, collective_type

_J = None                   # the compiled module once imported


def _jit():
    global _J
    if _J is None:
        from . import _kineto_plan_jit
        _J = _kineto_plan_jit
    return _J


def warm() -> None:
    """Compile the passes (or load them from numba's cache) on a two-event chunk; raises when they
    cannot run here."""
    J = _jit()
    buf = np.frombuffer(b'[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "pid": 0, "tid": "7", '
                        b'"args": {"grid": [1, 1, 1], "block": [1, 1, 1]}}, {"ph": "X", "cat": "cpu_op", '
                        b'"name": "op", "ts": 1, "dur": 1, "pid": 0, "tid": 7}]', np.uint8)
    status, n, kn, iv, fv, kS, ss, se, sh, sg = ks.scan(buf)
    s = State()
    cls, catv, ts, stats = np.empty(n, np.int8), np.empty(n, np.int64), np.empty(n, np.int64), np.zeros(2, np.int64)
    s.run(buf, ss, se, lambda: J.classify(n, kn, iv, kS, sh, sg, s.tab, s.st, s.pend, s.cls, s.mem, s.ok, cls,
                                          catv, ts, stats))
    off = np.array([0, 1, 2, 2, 2, 2, 2], np.int64)
    out, fout = np.empty((J.NCOL, n), np.int64), np.empty((2, n), np.float64)
    s.run(buf, ss, se, lambda: J.gather(n, kn, iv, fv, kS, sh, sg, s.tab, s.st, s.pend, cls, ts, off, out, fout,
                                        np.zeros(1, np.int64)))
    s._grow()


_CLASS_LABEL = {C_KERNEL: "GPU kernel/memcpy/memset", C_OP: "CPU op/runtime", C_PYF: "python_function"}
_DIMS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
_PH = {"s": 1, "f": 2, "X": 3}


class State:
    """The load's value table: hash pair -> value number, each value decoded once, and what the
    loader has made of it so far (symbol ids, cat code, (grid, block) code; -1 not yet)."""

    def __init__(self) -> None:
        J = _jit()
        self._table(12)
        self.st = np.array([0, 2, 64 - 12, 0], np.int64)     # entries, values, hash shift, pending
        self.vals: list = [None, b""]                          # J.V_NONE, J.V_EMPTY
        self.ok = np.ones(2, bool)
        self.n_bad = 0                                         # values that did not decode
        self.cls = np.full(2, C_OTHER, np.int8)                # as a cat
        self.mem = np.zeros(2, bool)                           # == "[memory]"
        self.ph = np.zeros(2, np.int8)                         # 1 "s", 2 "f", 3 "X"
        self.sid = np.array([0, -1], np.int64)                 # str_memo id (texts)
        self.sid_dims = np.full(2, -1, np.int64)               # dims_memo id (raw)
        self.sid_types = np.full(2, -1, np.int64)              # types_memo id (raw)
        self.cat = np.full(2, -1, np.int64)                    # cat_memo code (texts)
        self.pair = np.full(2, -1, np.int64)                   # dims_memo2 code (pairs)
        self.nccl = np.zeros(2, bool)                          # text starts with "nccl"
        self.gmap = J.group_of()
        self.out = np.empty((J.NCOL, 0), np.int64)             # gather's matrices, reused chunk to chunk
        self.fout = np.empty((2, 0), np.float64)

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
        vals, new, ok = self.vals, [], []
        for a, b, dom in self.pend[:m].tolist():
            if dom == J.DOM_PAIR:
                v, good = (vals[a], vals[b]), True
            else:
                raw = buf[ss[a, b]:se[a, b]].tobytes()
                v, good = raw, True
                if dom == J.DOM_STR:
                    try:
                        v = msgspec.json.decode(b'"' + raw + b'"') if b"\\" in raw else raw.decode("utf-8")
                    except (UnicodeDecodeError, msgspec.DecodeError):
                        v, good = None, False
            new.append(v)
            vals.append(v)                 # a pair's two values come before it
            ok.append(good)
        self.n_bad += ok.count(False)
        strs = [v if isinstance(v, str) else None for v in new]
        self.ok = np.append(self.ok, ok)
        self.cls = np.append(self.cls, np.array([CAT_CLASS.get(s.lower(), C_OTHER) if s is not None else C_OTHER
                                                 for s in strs], np.int8))
        self.mem = np.append(self.mem, np.array([s == "[memory]" for s in strs], bool))
        self.ph = np.append(self.ph, np.array([_PH.get(s, 0) for s in strs], np.int8))
        self.nccl = np.append(self.nccl, np.array([s is not None and s[:4].lower() == "nccl" for s in strs], bool))
        minus = np.full(m, -1, np.int64)
        self.sid, self.sid_dims, self.sid_types, self.cat, self.pair = (
            np.append(a, minus) for a in (self.sid, self.sid_dims, self.sid_types, self.cat, self.pair))

    def run(self, buf, ss, se, call) -> int:
        """Run a pass until it is done or bails: decode what it met first, grow the table, again."""
        J = _jit()
        while True:
            status = call()
            self._decode(buf, ss, se)
            if status == J.GROW:
                self._grow()
            elif status != J.DECODE:
                return status


def _ids(arr: np.ndarray, ids: np.ndarray, make, vals: list) -> np.ndarray:
    """``ids`` of the values ``arr`` (int32), taking the missing ones from ``make`` in the order the
    column first shows them (as the careful path interns a column's distinct values)."""
    out = ids[arr]
    miss = out < 0
    if miss.any():
        cand = arr[miss]
        _, first = np.unique(cand, return_index=True)
        for v in cand[np.sort(first)].tolist():
            if ids[v] < 0:
                ids[v] = make(vals[v])
        out = ids[arr]
    return out.astype(np.int32)


def take(col, buf: np.ndarray, n: int, kn, iv, fv, kS, ss, se, sh, sg) -> bool:
    """Put the chunk's columns into ``col`` (True), or change nothing (False: the careful path decides)."""
    J = _jit()
    s = col.fast_state
    if s is None:
        s = col.fast_state = State()
    if not n:
        return False                       # the careful path counts it (nothing to gain here)
    cls = np.empty(n, np.int8)
    catv = np.empty(n, np.int64)
    ts = np.empty(n, np.int64)
    stats = np.zeros(2, np.int64)
    st = s.st
    status = s.run(buf, ss, se, lambda: J.classify(n, kn, iv, kS, sh, sg, s.tab, st, s.pend,
                                                   s.cls, s.mem, s.ok, cls, catv, ts, stats))
    if status != J.DONE:
        return False
    per_cls = np.bincount(cls.view(np.uint8), minlength=len(s.gmap))
    off = np.zeros(J.NG + 1, np.int64)
    for c, g in enumerate(s.gmap.tolist()):
        if g >= 0 and c < len(per_cls):
            off[g + 1] += per_cls[c]
    off = np.cumsum(off)
    kept = int(off[-1])
    out = fout = None
    if kept:
        if s.out.shape[1] < kept:
            s.out = np.empty((J.NCOL, kept + kept // 4), np.int64)
            s.fout = np.empty((2, kept + kept // 4), np.float64)
        out, fout = s.out, s.fout
        counts = np.zeros(1, np.int64)
        status = s.run(buf, ss, se, lambda: J.gather(n, kn, iv, fv, kS, sh, sg, s.tab, st, s.pend,
                                                     cls, ts, off, out, fout, counts))
        if status != J.DONE:
            return False
        if counts[0] and not _text_ids(buf, out, off):
            return False
        if s.n_bad and not _all_ok(s, out, off):
            return False
    _commit(col, s, n, cls, catv, stats, off, out, fout)
    return True


def _text_ids(buf, out, off) -> bool:
    """Read the text pids / tids (as ``_Chunk.ints`` does, one table's group at a time: how a text
    is read depends on the others of its group); False when the careful path must judge them."""
    J = _jit()
    for g in range(J.NG):
        o = out[:, off[g]:off[g + 1]]
        for bit, c, key in ((1, J.PID, "pid"), (2, J.TID, "tid")):
            rows = np.flatnonzero(o[J.TXT] & bit)
            if len(rows):
                try:
                    o[c, rows] = kineto_fast.text_ids(buf, key, o[c, rows])
                except kineto_fast.Refuse:
                    return False
    return True


def _all_ok(s: State, out, off) -> bool:
    """Every text the careful path decodes decodes (ph, names, call stacks, the NCCL fields)."""
    J = _jit()
    ok = s.ok
    if not ok[out[J.PHV]].all():
        return False
    k = slice(off[J.G_KERNEL], off[J.G_KERNEL + 1])
    for c in (J.K_PGV, J.K_PGRV, J.K_DTYPEV, J.K_COLLV):
        if not ok[out[c, k]].all():
            return False
    o = slice(off[J.G_OP], off[J.G_OP + 1])
    return bool(ok[out[J.NAMEV, :off[J.G_PYF + 1]]].all() and ok[out[J.O_STACKV, o]].all())


def _commit(col, s: State, n: int, cls, catv, stats, off, out, fout) -> None:
    """Store the chunk exactly as ``kineto_fast._commit`` (and ``_Collector._extract``) would."""
    J = _jit()
    col.n_events += n
    vals = s.vals
    memo = col.cat_memo

    def cat_code(c):
        if c not in memo:
            memo[c] = len(col.cat_cls)
            col.cat_cls.append(CAT_CLASS.get(c.lower(), C_OTHER) if isinstance(c, str) else C_OTHER)
            col.cat_sym.append(col.sym.intern(c) if isinstance(c, str) else 0)
        return memo[c]

    code = _ids(catv, s.cat, cat_code, vals)
    col.n_device_seen += int(stats[0])
    col.n_bad_ts += int(stats[1])
    if out is None:
        return
    catsym = np.array(col.cat_sym, np.int32)
    intern = col.str_memo.__getitem__

    def group(g):
        a, b = int(off[g]), int(off[g + 1])
        return (out[:, a:b], fout[:, a:b]) if b > a else (None, None)

    def dur(o, c):
        d = o[J.DUR].copy()
        neg = d < 0
        if neg.any():
            d[neg] = 0
            nb = int((neg & ((o[J.GIVEN] == 1) | (s.ph[o[J.PHV]] == 3))).sum())
            if nb:
                label = _CLASS_LABEL[c]
                col.bad_dur[label] = col.bad_dur.get(label, 0) + nb
        return d

    o, f = group(J.G_KERNEL)
    if o is not None:
        _kernels(col, s, o, f, cls[o[J.ROW]], catsym[code[o[J.ROW]]], dur(o, C_KERNEL), intern)
    o, f = group(J.G_OP)
    if o is not None:
        d = dur(o, C_OP)
        names = _ids(o[J.NAMEV], s.sid, intern, vals)
        col._put("ops", o.shape[1], name=names, cat=catsym[code[o[J.ROW]]], start_ns=o[J.TS].copy(), dur_ns=d,
                 pid=o[J.PID].copy(), tid=o[J.TID].copy(), corr=o[J.O_EXT].copy(), seq=o[J.O_SEQ].copy(),
                 input_shapes=_ids(o[J.O_DIMSV], s.sid_dims, col.dims_memo.__getitem__, vals),
                 input_types=_ids(o[J.O_TYPESV], s.sid_types, col.types_memo.__getitem__, vals),
                 call_stack=_ids(o[J.O_STACKV], s.sid, intern, vals), _rtcorr=o[J.O_RTCORR].copy())
    o, f = group(J.G_PYF)
    if o is not None:
        d = dur(o, C_PYF)
        col._put("pyfuncs", o.shape[1], name=_ids(o[J.NAMEV], s.sid, intern, vals), start_ns=o[J.TS].copy(),
                 dur_ns=d, pid=o[J.PID].copy(), tid=o[J.TID].copy(), py_id=o[J.P_PYID].copy(),
                 py_parent=o[J.P_PYPAR].copy())
    for g, table in ((J.G_FLOW, "_flows"), (J.G_FWDBWD, "_fwdbwd")):
        o, f = group(g)
        if o is not None:
            ph = s.ph[o[J.PHV]]
            sel = np.flatnonzero((ph == 1) | (ph == 2))
            col._put(table, len(sel), is_s=(ph[sel] == 1), id=o[J.F_ID][sel], ts=o[J.TS][sel],
                     pid=o[J.PID][sel], tid=o[J.TID][sel])
    o, f = group(J.G_MEM)
    if o is not None:
        col._put("_mem", o.shape[1], ts=o[J.TS].copy(), pid=o[J.PID].copy(), tid=o[J.TID].copy(),
                 dev=o[J.M_DEV].copy(), nbytes=o[J.M_NBYTES].copy(), addr=o[J.M_ADDR].copy(),
                 alloc=f[J.M_ALLOC].copy(), res=f[J.M_RES].copy())


def _kernels(col, s: State, o, f, c, cat, dur, intern) -> None:
    J = _jit()
    vals = s.vals
    names = _ids(o[J.NAMEV], s.sid, intern, vals)
    col._update_nccl()
    m = len(c)
    kind = np.where(c == C_KERNEL, KIND_COMPUTE, np.where(c == C_MEMCPY, KIND_MEMCPY, KIND_MEMSET)).astype(np.int8)
    pid, tid = o[J.PID].copy(), o[J.TID].copy()
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
        codes = _ids(o[J.K_PAIRV][rows], s.pair, col.dims_memo2.__getitem__, vals).astype(np.int64)
        col.fill_geometry(geo, rows, codes, o[J.K_REGS][rows], o[J.K_SHMEM][rows], f[J.K_BPS][rows],
                          f[J.K_OCC][rows])
    first = col._put("kernels", m, name=names, task_type=cat, kind=kind, stream=stream, device=device,
                     start_ns=o[J.TS].copy(), dur_ns=dur, corr=o[J.K_CORR].copy(), bytes=o[J.K_BYTES].copy(),
                     _pid=pid, _tid=tid, **geo)
    if col.nccl_ids:
        is_nccl = np.isin(names, np.fromiter(col.nccl_ids, np.int32)) & (kind == KIND_COMPUTE)
        rows = np.flatnonzero(is_nccl)
        if len(rows):
            kind[rows] = KIND_COMM
            pg = [vals[v] for v in o[J.K_PGV][rows].tolist()]
            pg = [g if g is not None else vals[v] for g, v in zip(pg, o[J.K_PGRV][rows].tolist())]
            nel = o[J.K_NELEMS][rows]
            size = np.array([DTYPE_SIZE.get((vals[v] or "").lower(), -1) for v in o[J.K_DTYPEV][rows].tolist()],
                            np.int64)
            nbytes = np.where((nel >= 0) & (size > 0), nel * size, -1)
            op_type = [collective_type(col.sym.string(nm), vals[v])
                       for nm, v in zip(names[rows].tolist(), o[J.K_COLLV][rows].tolist())]
            col._put("comm_ops", len(rows), kernel=rows + first, group=col._intern(pg),
                     op_type=col._intern(op_type), bytes=nbytes)
