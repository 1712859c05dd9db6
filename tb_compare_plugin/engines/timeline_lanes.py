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
communication / wait intervals by the overview's rules.  Pure: no files, no HTTP, no format ids.
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
    ln.classes = np.unique(ln.cls) if n else np.zeros(0, np.int8)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        ln.runs.append((int(d[lo]), lo, hi))
        ln.run_maxend.append(np.maximum.accumulate(ln.end_ns[lo:hi]))
        ln.run_cum.append(None)
    return ln


def _valid(start, dur):
    return (np.asarray(start) >= 0) & (np.asarray(dur) >= 0)


def _groups(a: np.ndarray, b: np.ndarray | None = None):
    """Rows grouped by equal (a, b): [((a, b), rows)], rows in their original order; one hashed
    ``pd.unique`` of a combined key and, for the few groups a trace has (threads, streams), one
    comparison pass each: never a row-wise sort."""
    import pandas as pd
    a = np.asarray(a, np.int64)
    if b is None:
        key = a
    else:
        b = np.asarray(b, np.int64)
        if len(a) and a.min() >= 0 and a.max() < 2 ** 31 and b.min() >= 0 and b.max() < 2 ** 32:
            key = (a << 32) | b
        else:
            key = pd.factorize(a)[0].astype(np.int64) * (len(b) + 1) + pd.factorize(b)[0]
    uniq = pd.unique(key)
    if len(uniq) <= 64:
        groups = [np.flatnonzero(key == u) for u in uniq.tolist()]
    else:
        order = np.argsort(key, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(key[order])) + 1)
    out = []
    for rows in groups:
        if len(rows):
            r0 = rows[0]
            out.append(((int(a[r0]),) if b is None else (int(a[r0]), int(b[r0])), rows))
    return out


def _host_lanes(profile) -> list:
    ops = profile.ops
    if not len(ops):
        return []
    s, d = ops["start_ns"].to_numpy(), ops["dur_ns"].to_numpy()
    ok = np.flatnonzero(_valid(s, d))
    pid, tid = ops["pid"].to_numpy(), ops["tid"].to_numpy()
    out = []
    bwd = profile.meta.bwd_tid
    names, depth = ops["name"].to_numpy(), ops["depth"].to_numpy()
    for (p, t), sub in _groups(pid[ok], tid[ok]):
        rows = ok[sub]
        name = f"host {int(p)}/{int(t)}" + (" (backward)" if bwd is not None and int(t) == int(bwd) else "")
        out.append(_table_lane(name, "host", "ops", rows, s, d, HOST, names, depth))
    # the main thread (most ops) first, as the trace viewers do
    out.sort(key=lambda ln: -len(ln))
    return out


def _device_lanes(profile, cls) -> list:
    k = profile.kernels
    if not len(k):
        return []
    s, d = k["start_ns"].to_numpy(), k["dur_ns"].to_numpy()
    ok = _valid(s, d)
    stream = k["stream"].to_numpy()
    out = []
    okr = np.flatnonzero(ok)
    for (st,), sub in _groups(stream[okr]):
        rows = okr[sub]
        st = int(st)
        name = f"stream {st}" if st >= 0 else "device (no stream)"
        out.append(_table_lane(name, "device", "kernels", rows, s, d, cls, k["name"].to_numpy()))
    return out


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


def _busy(profile):
    """Disjoint intervals when the device runs anything (kernels on any stream, collectives)."""
    k, co = profile.kernels, profile.comm_ops
    ks, kd = k["start_ns"].to_numpy(), k["dur_ns"].to_numpy()
    cs, cd = co["start_ns"].to_numpy(), co["dur_ns"].to_numpy()
    ok, cok = _valid(ks, kd), _valid(cs, cd)
    return union(np.concatenate([ks[ok], cs[cok]]), np.concatenate([(ks + kd)[ok], (cs + cd)[cok]]))


def _free_lane(busy_s, busy_e) -> Lane:
    gs, ge = busy_e[:-1], busy_s[1:]
    keep = ge > gs
    gs, ge = gs[keep], ge[keep]
    return _lane("device idle", "free", "", gs, ge, FREE, np.zeros(len(gs), np.int32), np.full(len(gs), -1))


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


def build_lanes(profile) -> Lanes:
    """Every lane of ``profile`` (see module docstring); call :func:`side_lanes` for the cached one."""
    cls = kernel_classes(profile)
    busy_s, busy_e = _busy(profile)
    lanes = _host_lanes(profile) + _device_lanes(profile, cls) + _comm_lanes(profile)
    if len(busy_s):
        lanes.append(_free_lane(busy_s, busy_e))
    k = profile.kernels
    s, d = k["start_ns"].to_numpy(), k["dur_ns"].to_numpy()
    ok = np.flatnonzero(_valid(s, d))
    order = ok[np.argsort(s[ok], kind="stable")]
    out = Lanes(lanes, profile.symbols, (int(busy_s[0]), int(busy_e[-1])) if len(busy_s) else None)
    out.k_start, out.k_end, out.k_cls = s[order], (s + d)[order], cls[order]
    out.k_maxend = np.maximum.accumulate(out.k_end) if len(order) else out.k_end
    out.kernel_class = cls
    out.computing, out.uncovered, out.wait = _range_intervals(profile, cls)
    out.task_class = np.where(_counted_waits(profile), WAIT, TRANSMIT).astype(np.int8) if len(profile.comm_tasks) \
        else np.zeros(0, np.int8)
    dropped = int(len(k) - len(ok))
    if dropped:
        out.warnings.append(f"{dropped} kernels without a start time or with a negative duration are not drawn")
    return out
