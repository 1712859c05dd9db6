"""The timeline's lanes of one profile: what the side-by-side timeline draws, as sorted numpy columns.

Owns :func:`side_lanes` (built once per profile in the derived cache, name ``"timeline_lanes"``),
the class palette (:data:`CLASSES`) and how every device kernel gets its class: the overview's own
categorisation (``overall._categorise`` over the whole capture, ``kernel_classes`` bucket codes)
folded into the timeline's classes, so a kernel the overview counts as Matmul is drawn as matmul.

Lanes (each :class:`Lane` holds columns sorted by start inside every depth *run*):

* ``host``: one lane per (pid, tid) of host ops, nested by ``ops.depth`` (one run per depth);
* ``device``: one lane per stream of kernels, coloured by class;
* ``communication``: per communication group, its collectives (class communication) and, where the
  profile has communication tasks, one lane per plane with each task ``wait`` (a Notify_Wait that
  counts as waiting, as the overview counts it) or ``transmit``;
* ``free``: the device's idle gaps (no kernel and no collective running on any stream).

Besides the lanes, the totals a range selection needs (:mod:`timeline_range`) are prepared here
once: every device kernel by start with its class, and the disjoint Computing / uncovered
communication / wait intervals by the overview's rules.

A first paint need not wait for all that: :func:`window_lanes` gives the lanes as one window
sees them (each run cut to the rows a window inside it reads, so :mod:`timeline_lod` draws the
same items from them), made from the columns without sorting every host op and kernel.  The
parts both share are built once per profile: the kernel classes (:func:`side_kernel_classes`),
the thread directory, and, with the full lanes, the device / communication / free lanes
(:func:`side_base`).  Pure: no files, no HTTP, no format ids.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET
from ..model.derived import derived
from ..model.intervals import intersect, subtract, union
from . import kernel_classes as kc

CLASSES = ("matmul", "conv", "flash_attention", "vector", "communication", "sdma", "other",
           "host", "wait", "transmit", "free")
CODE = {name: i for i, name in enumerate(CLASSES)}
MATMUL, CONV, FA, VECTOR, COMM, SDMA, OTHER, HOST, WAIT, TRANSMIT, FREE = range(len(CLASSES))
KERNEL_CLASSES = CLASSES[:7]

# kernel_classes bucket code -> timeline class
_BUCKET_CLASS = np.full(kc.N_CODES, OTHER, np.int8)
for _codes, _cls in (((kc.FA_FWD_CUBE, kc.FA_FWD_VEC, kc.FA_BWD_CUBE, kc.FA_BWD_VEC, kc.PA), FA),
                     ((kc.CONV_FWD_CUBE, kc.CONV_FWD_VEC, kc.CONV_BWD_CUBE, kc.CONV_BWD_VEC), CONV),
                     ((kc.MM_CUBE, kc.MM_VEC, kc.CUBE_OTHER), MATMUL),
                     ((kc.VEC_TRANS, kc.VEC_NOTRANS), VECTOR),
                     ((kc.SDMA_TM,), SDMA), ((kc.MC2,), COMM)):
    _BUCKET_CLASS[list(_codes)] = _cls

WIDE_RUN = 20000      # events of a run in a window above which its bins are summed from prefix sums
BLOCK = 256           # events per block of the per-run longest-duration index (Lane.blockmax)
RUN_COUNTING = 8      # ops per run of one thread's ops above which threads are counted per run

# what a lane's ids point into: kernels, ops, comm_ops, comm_tasks, none (free gaps)
SOURCE_PREFIX = {"kernels": "k", "ops": "o", "comm_ops": "c", "comm_tasks": "t", "": ""}


@dataclass
class Lane:
    """One drawable lane: columns sorted by (depth, start); ``runs`` = [lo, hi) of each depth."""
    name: str
    kind: str                       # "host" | "device" | "communication" | "free"
    source: str                     # table the rows point into ("" = none)
    start_ns: np.ndarray
    end_ns: np.ndarray
    cls: np.ndarray                 # int8 class code (CLASSES)
    label: np.ndarray               # int32 symbol id
    row: np.ndarray                 # int64 row in ``source`` (-1 none)
    depth: np.ndarray               # int16
    runs: list = field(default_factory=list)        # [(depth, lo, hi)]
    run_maxend: list = field(default_factory=list)  # running max of end_ns per run
    run_cum: list = field(default_factory=list)     # per run: (n+1, len(classes)) cumulative ns per class
    classes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))   # class codes present
    run_blockmax: list = field(default_factory=list)  # per run: longest duration of each BLOCK events

    def __len__(self) -> int:
        return len(self.start_ns)

    def cum(self, i: int) -> np.ndarray:
        """(n+1, len(classes)) cumulative ns per class of run ``i`` (made once, on first use)."""
        got = self.run_cum[i]
        if got is None:
            _, lo, hi = self.runs[i]
            dur = self.end_ns[lo:hi] - self.start_ns[lo:hi]
            got = np.zeros((hi - lo + 1, len(self.classes)), np.int64)
            if len(self.classes) == 1:
                np.cumsum(dur, out=got[1:, 0])
            else:
                cl = self.cls[lo:hi]
                for j, c in enumerate(self.classes.tolist()):
                    np.cumsum(np.where(cl == c, dur, 0), out=got[1:, j])
            self.run_cum[i] = got
        return got

    def blockmax(self, i: int) -> np.ndarray:
        """The longest duration in each :data:`BLOCK` consecutive events of run ``i`` (made once)."""
        got = self.run_blockmax[i]
        if got is None:
            _, lo, hi = self.runs[i]
            n = hi - lo
            dur = np.zeros(-(-n // BLOCK) * BLOCK, np.int64)
            np.subtract(self.end_ns[lo:hi], self.start_ns[lo:hi], out=dur[:n])
            got = self.run_blockmax[i] = dur.reshape(-1, BLOCK).max(axis=1) if n else dur
        return got

    def wide(self, i: int, a: int, b: int, min_ns: float) -> np.ndarray:
        """Indices (from ``a``, ascending) of the events ``a``..``b`` of run ``i`` lasting at least
        ``min_ns``: only the blocks whose longest event does are looked at."""
        _, lo, _ = self.runs[i]
        bm = self.blockmax(i)
        b0, b1 = a // BLOCK, (b - 1) // BLOCK + 1
        hot = np.flatnonzero(bm[b0:b1] >= min_ns) + b0
        if len(hot) * BLOCK * 4 > b - a:                  # most blocks hold one: look at every event
            return np.flatnonzero((self.end_ns[lo + a:lo + b] - self.start_ns[lo + a:lo + b]) >= min_ns)
        idx = (hot[:, None] * BLOCK + np.arange(BLOCK)).ravel()
        idx = idx[(idx >= a) & (idx < b)]
        keep = (self.end_ns[lo + idx] - self.start_ns[lo + idx]) >= min_ns
        return idx[keep] - a

    def prepare(self) -> None:
        """Make now what wide windows over its big runs read (per-class prefix sums, block maxima)."""
        for i, (_, lo, hi) in enumerate(self.runs):
            if hi - lo > WIDE_RUN:
                self.cum(i)
                self.blockmax(i)


@dataclass
class Lanes:
    """Every lane of one side plus the prepared range totals (see module docstring)."""
    lanes: list
    symbols: object                 # the profile's SymbolTable (labels); never the profile itself
    span: tuple | None              # (first, last) ns of device activity
    # every device kernel by start: for per-class totals of a range
    k_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    k_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    k_cls: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    k_maxend: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # disjoint sorted intervals: Computing, uncovered communication, its waiting part
    computing: tuple = ()
    uncovered: tuple = ()
    wait: tuple = ()
    kernel_class: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))  # per kernels row
    task_class: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))    # per comm_tasks row
    warnings: list = field(default_factory=list)

    def lane(self, name: str) -> Lane:
        for ln in self.lanes:
            if ln.name == name:
                return ln
        raise KeyError(name)


def side_lanes(profile, options=None) -> Lanes:
    """The lanes of ``profile``, built once (derived cache ``"timeline_lanes"``)."""
    return derived(profile, "timeline_lanes", lambda: build_lanes(profile))


# ------------------------------------------------------------------------------- classification

def kernel_classes(profile) -> np.ndarray:
    """Timeline class code (int8) of every kernels row, by the overview's categorisation."""
    from .overall import _categorise
    from .overall_gpu import GpuRows
    from .overall_steps import select
    k = profile.kernels
    n = len(k)
    kind = k["kind"].to_numpy()
    cls = np.full(n, OTHER, np.int8)
    cls[(kind == KIND_MEMCPY) | (kind == KIND_MEMSET)] = SDMA
    cls[kind == KIND_COMM] = COMM
    if not n:
        return cls
    sel = select(profile, None)
    gpu = GpuRows(profile, sel, False) if profile.meta.device != "NPU" else None
    if gpu is not None:
        cls[gpu.rows[gpu.nccl]] = COMM
        cls[gpu.rows[gpu.sdma]] = SDMA
    rows, codes, hide = _categorise(profile, sel, False, gpu)
    if not hide and len(rows):
        cls[rows] = _BUCKET_CLASS[codes]
    # NPU: tasks the overview counts as Lccl run collectives on AI vector cores
    lccl = kc.text_flags(profile.symbols, k["name"].to_numpy(), lambda s: s == "kernel_aivec")
    cls[lccl] = COMM
    return cls


# ------------------------------------------------------------------------------- building

def _lane(name, kind, source, start, end, cls, label, row, depth=None) -> Lane:
    """A lane of the given events (arrays, one per event), sorted by (depth, start)."""
    start = np.asarray(start, np.int64)
    n = len(start)
    order, depth = _order(start, depth)
    st = start[order]
    en = np.maximum(np.asarray(end, np.int64)[order], st)
    cl = np.asarray(cls, np.int8)[order] if np.ndim(cls) else np.full(n, cls, np.int8)
    return _runs(Lane(name, kind, source, st, en, cl, np.asarray(label, np.int32)[order],
                      np.asarray(row, np.int64)[order], depth))


def _table_lane(name, kind, source, rows, start_col, dur_col, cls, label_col, depth_col=None) -> Lane:
    """A lane of table ``rows``, each column gathered once, by the final order."""
    st0 = start_col[rows]
    order, depth = _order(st0, depth_col[rows] if depth_col is not None else None)
    idx = rows[order]
    st = st0[order]
    en = st + np.maximum(dur_col[idx], 0)
    cl = np.asarray(cls)[idx].astype(np.int8) if np.ndim(cls) else np.full(len(idx), cls, np.int8)
    return _runs(Lane(name, kind, source, st, en, cl, label_col[idx].astype(np.int32, copy=False),
                      idx.astype(np.int64, copy=False), depth))


def _order(start: np.ndarray, depth):
    """(order by (depth, start), depth in that order): two stable sorts, fast on a trace's nearly
    sorted starts and on small depth values."""
    n = len(start)
    order = np.argsort(start, kind="stable")
    if depth is None or not n:
        return order, np.zeros(n, np.int16)
    depth = np.asarray(depth)
    if depth.max() > 0:
        order = order[np.argsort(depth[order], kind="stable")]
    return order, np.maximum(depth[order], 0).astype(np.int16)


def _runs(ln: Lane) -> Lane:
    """The lane's depth runs and, per run, the running maximum of the ends; the cumulative ns per
    class (what the LOD sums wide windows with) is made on first use (``Lane.cum``)."""
    d = ln.depth
    n = len(d)
    cuts = np.flatnonzero(d[1:] != d[:-1]) + 1
    bounds = np.concatenate([[0], cuts, [n]]) if n else np.zeros(1, np.int64)
    ln.classes = np.flatnonzero(np.bincount(ln.cls, minlength=len(CLASSES))).astype(np.int8) if n \
        else np.zeros(0, np.int8)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        ln.runs.append((int(d[lo]), lo, hi))
        ln.run_maxend.append(np.maximum.accumulate(ln.end_ns[lo:hi]))
        ln.run_cum.append(None)
        ln.run_blockmax.append(None)
    return ln


def _valid(start, dur):
    return (np.asarray(start) >= 0) & (np.asarray(dur) >= 0)


def _host_directory(profile) -> list:
    """The host lanes a profile has, in their drawing order: [(name, pid, tid, n ops)], the main
    thread (most ops) first, as the trace viewers do (ties: the first seen first)."""
    return derived(profile, "timeline_host_dir", lambda: _build_host_directory(profile))


def _packable(pid, tid) -> bool:
    return bool(len(pid) and pid.min() >= 0 and pid.max() < 2 ** 31 and tid.min() >= -2 ** 31 and tid.max() < 2 ** 31)


def _pack(pid, tid) -> np.ndarray:
    """(pid, tid) as one int64 each (both fit: :func:`_packable`)."""
    return (np.asarray(pid, np.int64) << 32) | (np.asarray(tid, np.int64) & 0xFFFFFFFF)


def _build_host_directory(profile) -> list:
    import pandas as pd
    ops = profile.ops
    if not len(ops):
        return []
    s, d = ops["start_ns"].to_numpy(), ops["dur_ns"].to_numpy()
    ok = (s >= 0) & (d >= 0)
    every = bool(ok.all())
    pid, tid = ops["pid"].to_numpy(), ops["tid"].to_numpy()
    if not every:
        pid, tid = pid[ok], tid[ok]
    if not len(pid):
        return []
    if pid.min() == pid.max():
        key = tid
    elif _packable(pid, tid):
        key = _pack(pid, tid)
    else:
        key = pd.factorize(pid)[0].astype(np.int64) * (len(tid) + 1) + pd.factorize(tid)[0]
    heads = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))   # a trace's ops come in runs
    if len(heads) * RUN_COUNTING < len(key):         # per thread: count runs, not rows
        rcodes = pd.factorize(key[heads])[0]         # numbered in the order first seen
        counts = np.bincount(rcodes, weights=np.diff(np.append(heads, len(key)))).astype(np.int64)
        seen = np.maximum.accumulate(rcodes)
        first = heads[np.flatnonzero(np.concatenate([[True], seen[1:] > seen[:-1]]))]
    else:
        codes = pd.factorize(key)[0]
        counts = np.bincount(codes)
        seen = np.maximum.accumulate(codes)
        first = np.flatnonzero(np.concatenate([[True], seen[1:] > seen[:-1]]))   # first row of each, in code order
    bwd = profile.meta.bwd_tid
    out = []
    for g, r in enumerate(first.tolist()):
        p, t = int(pid[r]), int(tid[r])
        name = f"host {p}/{t}" + (" (backward)" if bwd is not None and t == int(bwd) else "")
        out.append((name, p, t, int(counts[g])))
    order = sorted(range(len(out)), key=lambda g: -out[g][3])
    return [out[g] for g in order]


def _lane_of(lanes: list, pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Per op (its ``pid``, ``tid``) the index of its lane in the directory ``lanes`` (-1 none)."""
    n = len(pid)
    if len(lanes) == 1:
        out = np.zeros(n, np.int64)
        out[(pid != lanes[0][1]) | (tid != lanes[0][2])] = -1
        return out
    dp = np.array([ln[1] for ln in lanes], np.int64)
    dt = np.array([ln[2] for ln in lanes], np.int64)
    if len(lanes) > 16 and _packable(np.concatenate([dp, pid]), np.concatenate([dt, tid])):
        dk, k = _pack(dp, dt), _pack(pid, tid)
        o = np.argsort(dk)
        pos = np.minimum(np.searchsorted(dk[o], k), len(o) - 1)
        return np.where(dk[o][pos] == k, o[pos], -1)
    out = np.full(n, -1, np.int64)
    one_pid = bool((dp == dp[0]).all())
    same_pid = pid == dp[0] if one_pid else None
    for i in range(len(lanes)):
        m = tid == dt[i]
        m &= same_pid if one_pid else (pid == dp[i])
        out[m] = i
    return out


def _host_lanes(profile, rows=None) -> list:
    """The host lanes (one per thread, in :func:`_host_directory` order) of all valid ops, or of
    the valid op ``rows`` given (a window's: every thread's lane is there, maybe empty)."""
    ops = profile.ops
    lanes = _host_directory(profile)
    if not lanes:
        return []
    s, d = ops["start_ns"].to_numpy(), ops["dur_ns"].to_numpy()
    if rows is None:
        rows = np.flatnonzero(_valid(s, d))
    names, depth = ops["name"].to_numpy(), ops["depth"].to_numpy()
    if len(lanes) == 1:
        parts = [rows]
    else:
        which = _lane_of(lanes, ops["pid"].to_numpy()[rows], ops["tid"].to_numpy()[rows])
        if len(lanes) <= 16:
            parts = [rows[which == i] for i in range(len(lanes))]
        else:
            o = np.argsort(which, kind="stable")
            cuts = np.searchsorted(which[o], np.arange(len(lanes) + 1))
            parts = [rows[o[cuts[i]:cuts[i + 1]]] for i in range(len(lanes))]
    return [_table_lane(ln[0], "host", "ops", sub, s, d, HOST, names, depth) for ln, sub in zip(lanes, parts)]


def _counted_waits(profile) -> np.ndarray:
    from .overall_npu import _counted_notify_waits
    ct = profile.comm_tasks
    return _counted_notify_waits(profile, np.arange(len(ct)))


def _comm_lanes(profile) -> list:
    co, ct, sym = profile.comm_ops, profile.comm_tasks, profile.symbols
    out = []
    cs, cd = co["start_ns"].to_numpy(), co["dur_ns"].to_numpy()
    cok = _valid(cs, cd)
    cgroup = co["group"].to_numpy()
    ts, td = ct["start_ns"].to_numpy(), ct["dur_ns"].to_numpy()
    tok = _valid(ts, td)
    tgroup, plane = ct["group"].to_numpy(), ct["plane"].to_numpy()
    counted = _counted_waits(profile) if len(ct) else np.zeros(0, bool)
    groups = sorted(set(np.unique(cgroup[cok]).tolist()) | set(np.unique(tgroup[tok]).tolist()))
    for g in groups:
        gname = sym.string(g) or "(no group)"
        rows = np.flatnonzero(cok & (cgroup == g))
        if len(rows):
            label = co["name"].to_numpy()[rows]
            lname = gname if any(ch.isalpha() for ch in gname) else f"group {gname}"
            out.append(_lane(lname, "communication", "comm_ops", cs[rows], cs[rows] + cd[rows], COMM,
                             label, rows))
        for p in np.unique(plane[tok & (tgroup == g)]).tolist():
            trows = np.flatnonzero(tok & (tgroup == g) & (plane == p))
            tcls = np.where(counted[trows], WAIT, TRANSMIT).astype(np.int8)
            out.append(_lane(f"{gname} plane {p}", "communication", "comm_tasks", ts[trows], ts[trows] + td[trows],
                             tcls, ct["name"].to_numpy()[trows], trows))
    return out


def _busy(profile, ks, kmax):
    """Disjoint intervals when the device runs anything (kernels on any stream: ``ks`` the valid
    ones' starts in order, ``kmax`` the running maximum of their ends; collectives): the kernels
    merged as they come, then the collectives."""
    co = profile.comm_ops
    cs, cd = co["start_ns"].to_numpy(), co["dur_ns"].to_numpy()
    cok = _valid(cs, cd)
    us, ue = _union_sorted(ks, kmax)
    if not cok.any():
        return us, ue
    cs, ce = cs[cok], (cs + cd)[cok]
    o = np.argsort(cs, kind="stable")
    cs, ce = cs[o], ce[o]
    at = np.searchsorted(us, cs, side="right")          # the collectives slotted in among the kernels' blocks
    s2, e2 = np.insert(us, at, cs), np.insert(ue, at, ce)
    return _union_sorted(s2, np.maximum.accumulate(e2))


def _union_sorted(s: np.ndarray, run_end: np.ndarray):
    """``intervals.union`` of intervals sorted by start, given the running maximum of their ends."""
    if not len(s):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    last = np.append(idx[1:] - 1, len(s) - 1)
    return s[idx], run_end[last]


def _free_lane(busy_s, busy_e) -> Lane:
    """The gaps between the disjoint sorted busy intervals: sorted already, no sort or gather."""
    gs, ge = busy_e[:-1], busy_s[1:]
    keep = ge > gs
    if not keep.all():
        gs, ge = gs[keep], ge[keep]
    n = len(gs)
    return _runs(Lane("device idle", "free", "", gs, ge, np.full(n, FREE, np.int8), np.zeros(n, np.int32),
                      np.full(n, -1, np.int64), np.zeros(n, np.int16)))


def _range_intervals(profile, cls):
    """(computing, uncovered, wait) disjoint intervals by the overview's rules: the profiler's own
    Overlap Analysis when it wrote one (and the device tasks are not a database's), else the union
    of compute kernels and, around it, the collectives (NCCL kernels / HCCL ops)."""
    k, co, ov = profile.kernels, profile.comm_ops, profile.overlap
    ks, ke = k["start_ns"].to_numpy(), k["start_ns"].to_numpy() + k["dur_ns"].to_numpy()
    kok = _valid(k["start_ns"].to_numpy(), k["dur_ns"].to_numpy())
    if len(ov) and not profile.meta.task_types_from_db:
        kind, s = ov["kind"].to_numpy(), ov["start_ns"].to_numpy()
        e = s + ov["dur_ns"].to_numpy()
        comp = union(s[kind == 0], e[kind == 0])
        unc = union(s[kind == 2], e[kind == 2])
    else:
        kind = k["kind"].to_numpy()
        if profile.meta.device == "NPU":         # the overview's: the detailed non-collective tasks
            detail = k["detail"].to_numpy()
            compute = kok & detail & (kind != KIND_COMM)
            if not compute.any():
                compute = kok & (kind == KIND_COMPUTE)
        else:                                    # GPU: kernels that are neither NCCL nor stream SDMA
            compute = kok & np.isin(cls, (MATMUL, CONV, FA, VECTOR, OTHER)) & (kind == KIND_COMPUTE)
        comp = union(ks[compute], ke[compute])
        if profile.meta.device == "NPU":
            cs, cd = co["start_ns"].to_numpy(), co["dur_ns"].to_numpy()
            cok = _valid(cs, cd)
            ms, me = cs[cok], (cs + cd)[cok]
        else:
            nccl = kok & (cls == COMM)
            ms, me = ks[nccl], ke[nccl]
        alls, alle = union(np.concatenate([comp[0], ms]), np.concatenate([comp[1], me]))
        unc = subtract(alls, alle, comp[0], comp[1], b_inside_a=True)
    ct = profile.comm_tasks
    if len(ct):
        counted = _counted_waits(profile)
        grp, plane = ct["group"].to_numpy(), ct["plane"].to_numpy()
        dur = ct["dur_ns"].to_numpy()
        pick = np.zeros(len(ct), bool)
        for g in np.unique(grp[counted]).tolist():          # per group the plane the overview counts:
            gm = counted & (grp == g)                       # the one with the least counted waiting
            planes = np.unique(plane[gm])
            sums = [int(dur[gm & (plane == p)].sum()) for p in planes.tolist()]
            pick |= gm & (plane == planes[int(np.argmin(sums))])
        ts = ct["start_ns"].to_numpy()[pick]
        te = ts + dur[pick]
        ws, we = union(ts, te)
        wait = intersect(ws, we, unc[0], unc[1])
    else:
        wait = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return comp, unc, wait


def side_base(profile) -> Lanes:
    """Everything of the lanes but the host threads and the range intervals (derived cache
    ``"timeline_base"``): the kernel classes, the device, communication and free lanes, the device
    span and the kernels by start.  Shared by :func:`side_lanes` and :func:`window_lanes`."""
    return derived(profile, "timeline_base", lambda: _build_base(profile))


def _build_base(profile) -> Lanes:
    import pandas as pd
    cls = side_kernel_classes(profile)
    k = profile.kernels
    s, d = k["start_ns"].to_numpy(), k["dur_ns"].to_numpy()
    ok = np.flatnonzero(_valid(s, d))
    order = ok[np.argsort(s[ok], kind="stable")]        # every valid kernel by (start, row): sorted once
    ks = s[order]
    ke = ks + d[order]
    # the device lanes: one per stream, in the order the streams are first seen
    stream = k["stream"].to_numpy()
    lanes = []
    if len(ok):
        sorted_stream = stream[order]
        names = k["name"].to_numpy()
        for st in pd.unique(stream[ok]).tolist():
            m = sorted_stream == st
            idx = order[m]
            st = int(st)
            lanes.append(_runs(Lane(f"stream {st}" if st >= 0 else "device (no stream)", "device", "kernels",
                                    ks[m], ke[m], cls[idx], names[idx].astype(np.int32, copy=False),
                                    idx.astype(np.int64, copy=False), np.zeros(len(idx), np.int16))))
    lanes += _comm_lanes(profile)
    kmax = np.maximum.accumulate(ke) if len(ke) else ke
    busy_s, busy_e = _busy(profile, ks, kmax)
    if len(busy_s):
        lanes.append(_free_lane(busy_s, busy_e))
    out = Lanes(lanes, profile.symbols, (int(busy_s[0]), int(busy_e[-1])) if len(busy_s) else None)
    out.k_start, out.k_end, out.k_cls = ks, ke, cls[order]
    out.k_maxend = kmax
    out.kernel_class = cls
    out.task_class = np.where(_counted_waits(profile), WAIT, TRANSMIT).astype(np.int8) if len(profile.comm_tasks) \
        else np.zeros(0, np.int8)
    dropped = int(len(k) - len(ok))
    if dropped:
        out.warnings.append(f"{dropped} kernels without a start time or with a negative duration are not drawn")
    return out


def _with_host(base: Lanes, host: list) -> Lanes:
    """``base`` with the host lanes ``host`` in front (the base's arrays and lanes shared, not copied)."""
    out = Lanes(host + base.lanes, base.symbols, base.span, base.k_start, base.k_end, base.k_cls, base.k_maxend,
                kernel_class=base.kernel_class, task_class=base.task_class, warnings=list(base.warnings))
    return out


def build_lanes(profile) -> Lanes:
    """Every lane of ``profile`` (see module docstring); call :func:`side_lanes` for the cached one."""
    base = side_base(profile)
    out = _with_host(base, _host_lanes(profile))
    out.computing, out.uncovered, out.wait = _range_intervals(profile, base.kernel_class)
    for ln in out.lanes:
        ln.prepare()
    return out


def window_lanes(profile, start_ns: int, end_ns: int) -> Lanes | None:
    """The lanes of ``profile`` as far as a window inside [start_ns, end_ns) sees them: each
    lane's depth runs hold only their events from the first one ending after ``start_ns`` to the
    last one starting before ``end_ns`` (what :mod:`timeline_lod` reads of a run for such a window,
    so its items are the full lanes' own): host ops per (thread, depth), kernels per stream, the
    device-idle gaps around the window; the communication lanes whole.  When :func:`side_base` is
    built already its lanes are used instead of cutting them.  What a first paint draws without
    sorting every host op and kernel; no range intervals, no kernels by start.  None when the ops
    have negative depths (their runs are not cut)."""
    ops = profile.ops
    lo, hi = int(start_ns), int(end_ns)
    base = _built(profile, "timeline_base") or _cut_base(profile, lo, hi)
    if not len(ops):
        return _with_host(base, [])
    s, d = ops["start_ns"].to_numpy(), ops["dur_ns"].to_numpy()
    depth = ops["depth"].to_numpy()
    if depth.min() < 0:
        return None
    lanes = _host_directory(profile)
    pid, tid = ops["pid"].to_numpy(), ops["tid"].to_numpy()
    rows = _cut_rows(s, d, lambda r: _lane_of(lanes, pid[r], tid[r]) * 65536 + depth[r], lo, hi)
    return _with_host(base, _host_lanes(profile, rows))


def _built(profile, name: str):
    from ..model.derived import DERIVED
    return DERIVED.peek(profile, name)


def _cut_rows(s: np.ndarray, d: np.ndarray, key_of, lo: int, hi: int) -> np.ndarray:
    """The valid rows (ascending) that a window inside [lo, hi) reads of each run, a run being the
    rows of one ``key_of(rows)`` (int64) value sorted by (start, row): from the run's first row
    ending after ``lo`` to its last starting before ``hi``."""
    ok = (s < hi) & (s >= 0) & (d >= 0)
    over = np.flatnonzero(ok & (s + d > lo))            # the rows the window overlaps
    if not len(over):
        return over
    k = np.asarray(key_of(over), np.int64)
    first = np.lexsort((over, s[over], k))               # by run, start, row
    kf = k[first]
    heads = first[np.concatenate([[True], kf[1:] != kf[:-1]])]
    hk, hrow = k[heads], over[heads]                     # per run (sorted by key): its first row
    hs = s[hrow]
    cand = np.flatnonzero(ok & (s >= hs.min()))
    ck = np.asarray(key_of(cand), np.int64)
    pos = np.minimum(np.searchsorted(hk, ck), len(hk) - 1)
    mine = hk[pos] == ck
    cand, pos = cand[mine], pos[mine]
    fs, fr, cs = hs[pos], hrow[pos], s[cand]
    return cand[(cs > fs) | ((cs == fs) & (cand >= fr))]


def _cut_base(profile, lo: int, hi: int) -> Lanes:
    """:func:`side_base`'s lanes as a window inside [lo, hi) reads them (see :func:`window_lanes`)."""
    import pandas as pd
    cls = side_kernel_classes(profile)
    k = profile.kernels
    s, d = k["start_ns"].to_numpy(), k["dur_ns"].to_numpy()
    valid = _valid(s, d)
    n_ok = int(valid.sum())
    stream = k["stream"].to_numpy()
    lanes = []
    if n_ok:
        rows = _cut_rows(s, d, lambda r: stream[r], lo, hi)
        names = k["name"].to_numpy()
        for st in pd.unique(stream[valid]).tolist():     # the streams in the order first seen
            st = int(st)
            lanes.append(_table_lane(f"stream {st}" if st >= 0 else "device (no stream)", "device", "kernels",
                                     rows[stream[rows] == st], s, d, cls, names))
    lanes += _comm_lanes(profile)
    co = profile.comm_ops
    cs, cd = co["start_ns"].to_numpy(), co["dur_ns"].to_numpy()
    cok = _valid(cs, cd)
    span = None
    if n_ok or cok.any():
        bs = np.concatenate([s[valid], cs[cok]])
        be = np.concatenate([(s + d)[valid], (cs + cd)[cok]])
        span = (int(bs.min()), int(be.max()))
        # the gaps around the window: those of the busy items from the last end before it to the
        # first start after it (the same gaps the whole capture's union has there)
        before = be < lo
        after = bs >= hi
        e0 = be[before].max() if before.any() else np.iinfo(np.int64).min
        s1 = bs[after].min() if after.any() else np.iinfo(np.int64).max
        near = (be >= e0) & (bs <= s1)
        us, ue = union(bs[near], be[near])
        gs, ge = ue[:-1], us[1:]
        keep = (ge > gs) & (ge > lo) & (gs < hi)
        gs, ge = gs[keep], ge[keep]
        n = len(gs)
        lanes.append(_runs(Lane("device idle", "free", "", gs, ge, np.full(n, FREE, np.int8), np.zeros(n, np.int32),
                                np.full(n, -1, np.int64), np.zeros(n, np.int16))))
    out = Lanes(lanes, profile.symbols, span)
    dropped = int(len(k) - n_ok)
    if dropped:
        out.warnings.append(f"{dropped} kernels without a start time or with a negative duration are not drawn")
    return out


def side_kernel_classes(profile) -> np.ndarray:
    """:func:`kernel_classes`, once per profile (derived cache ``"timeline_kernel_classes"``)."""
    return derived(profile, "timeline_kernel_classes", lambda: kernel_classes(profile))


def side_span(profile) -> tuple | None:
    """(first, last) ns of the device's activity (kernels, collectives): the lanes' ``span``."""
    base = _built(profile, "timeline_base")
    if base is not None:
        return base.span
    return derived(profile, "timeline_span", lambda: _span_of(profile))


def _span_of(profile):
    k, co = profile.kernels, profile.comm_ops
    parts = []
    for df in (k, co):
        s, d = df["start_ns"].to_numpy(), df["dur_ns"].to_numpy()
        ok = _valid(s, d)
        if ok.any():
            parts.append((int(s[ok].min()), int((s + d)[ok].max())))
    return (min(p[0] for p in parts), max(p[1] for p in parts)) if parts else None
