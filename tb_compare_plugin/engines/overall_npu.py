"""NPU time metrics of the overall breakdown (spec b.2 text export, b.4 SQLite export).

Owns, for one Ascend profile: Computing / Uncovered Communication / E2E (from the Overlap
Analysis intervals for text exports; from the union of compute tasks and collectives for
DB exports, E2E widened by the other device tasks as the reference does), Lccl, the stream
SDMA time, the per-communication-group Wait / Transmit split and the pairwise overlap of
groups inside uncovered communication, plus which kernels the categorisation walks.
Intervals are exact int64 ns unions/intersections (model.intervals), never sweeps that
assume sorted disjoint input.

Differences from the reference (docs/deviations.md, "Overall" sections), each switchable
back with ``compat=True``:

* stream SDMA: streams come from the task's stream as the loader normalised it
  (``Physic Stream Id`` in current exports; the reference reads only ``Stream Id`` and
  gets 0), and DB task-type spellings (EVENT_WAIT, MEMCPY_ASYNC) are recognised;
* Wait: the plane is chosen among planes that carry counted Notify_Wait tasks (a plane
  without any no longer wins with 0), which is what the reference's own DB path does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..model import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY
from ..model.intervals import intersect, overlap_length, subtract, union
from .kernel_classes import text_flags

E2E_EXCLUDED_TYPES = frozenset({"KERNEL_AICORE", "KERNEL_AIVEC", "FFTS_PLUS", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV",
                                "PROFILING_ENABLE", "PROFILING_DISABLE"})
WAIT_TYPES = frozenset({"EVENT_WAIT_SQE", "EVENT_WAIT"})
REF_COMPUTE_TYPES = frozenset({"AI_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "AI_VECTOR_CORE", "FFTS_PLUS"})
REF_SDMA_TYPES = frozenset({"SDMA_SQE", "PCIE_DMA_SQE"})
DB_CUBE_TYPES = frozenset({"KERNEL_AICORE", "KERNEL_MIX_AIC"})
NOTIFY_WAIT, RDMA_SEND = "notify_wait", "rdmasend"
_OV_COMPUTING, _OV_NOT_OVERLAPPED = 0, 2


@dataclass
class GroupTimes:
    key: str                      # the group as the profile names it
    label: str                    # row label: "<pg>: <group>" or the group
    pg_name: str | None
    uncovered_ns: int             # the group's collectives inside uncovered communication
    wait_ns: int
    op_rows: np.ndarray           # rows of comm_ops
    wait_rows: np.ndarray         # rows of comm_tasks (the counted Notify_Wait of the chosen plane)
    first_ns: int = 0             # start of the group's first collective (or task)
    kernel_rows: np.ndarray | None = None   # GPU: the group's NCCL kernels (rows of kernels)
    redundant: bool = False       # GPU: the side's only group, unnamed (its row = the Uncovered row)

    @property
    def transmit_ns(self) -> int:
        return self.uncovered_ns - self.wait_ns


@dataclass
class DeviceTimes:
    """Device-level (non-categorised) figures of one side, int ns."""
    computing_ns: int = 0
    uncovered_ns: int = 0
    e2e_ns: int = 0
    lccl_ns: int = 0
    lccl_count: int = 0
    lccl_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sdma_ns: int = 0
    sdma_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # collectives outside Lccl: rows of comm_ops (NPU) / of kernels, the NCCL kernels (GPU)
    comm_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    groups: list = field(default_factory=list)
    overlaps: list = field(default_factory=list)      # (label a, label b, ns)
    notes: list = field(default_factory=list)


def _arr(df, col, rows):
    return df[col].to_numpy()[rows]


def _pg_of(pg_names: dict, group: str) -> str | None:
    if not pg_names or not group:
        return None
    if group in pg_names:
        return pg_names[group] or None
    m = re.fullmatch(r"Group (\S+) Communication", group)
    if m and m.group(1) in pg_names:
        return pg_names[m.group(1)] or None
    return None


def is_db(profile) -> bool:
    """Device tasks come from a profiler database (the reference's DB path), a fact the format
    descriptor records; engines never ask the format id."""
    return bool(profile.meta.task_types_from_db)


# ------------------------------------------------------------------------------------ categorised

def categorised_rows(profile, sel, compat: bool) -> tuple[np.ndarray, np.ndarray, bool]:
    """(kernel rows the categorisation walks, their cube flag, hide_op_details)."""
    k = profile.kernels
    sym = profile.symbols
    detail = k["detail"].to_numpy() & sel.kernels
    if not profile.meta.has_pmu and not is_db(profile):
        return np.zeros(0, np.int64), np.zeros(0, bool), True
    pmu = {c: k[c].to_numpy() for c in ("aiv_vec_time_us", "mac_time_us", "aic_mac_time_us", "aicore_time_us")}
    if is_db(profile):
        rows = np.flatnonzero(detail & (k["kind"].to_numpy() != KIND_COMM))
        has = np.isfinite(pmu["aicore_time_us"][rows]) | np.isfinite(pmu["aic_mac_time_us"][rows])
        by_pmu = (np.nan_to_num(pmu["aicore_time_us"][rows]) > 0) | (np.nan_to_num(pmu["aic_mac_time_us"][rows]) > 0)
        if has.any():
            cube = by_pmu
        else:
            cube = text_flags(sym, k["task_type"].to_numpy()[rows], lambda s: s.upper() in DB_CUBE_TYPES)
        return rows, cube, False
    valid = np.isfinite(pmu["aiv_vec_time_us"]) | np.isfinite(pmu["mac_time_us"])
    if not compat:
        valid |= np.isfinite(pmu["aic_mac_time_us"])
    rows = np.flatnonzero(detail & valid)
    cube = (np.nan_to_num(pmu["mac_time_us"][rows]) > 0) | (np.nan_to_num(pmu["aicore_time_us"][rows]) > 0)
    if not compat:
        cube |= np.nan_to_num(pmu["aic_mac_time_us"][rows]) > 0
    return rows, cube, False


# ------------------------------------------------------------------------------------ device times

def _overlap_based(profile, sel, dt: DeviceTimes):
    ov = profile.overlap
    rows = np.flatnonzero(sel.overlap)
    kind = _arr(ov, "kind", rows)
    s = _arr(ov, "start_ns", rows)
    d = _arr(ov, "dur_ns", rows)
    dt.computing_ns = int(d[kind == _OV_COMPUTING].sum())
    dt.uncovered_ns = int(d[kind == _OV_NOT_OVERLAPPED].sum())
    dt.e2e_ns = int((s + d).max() - s.min()) if len(rows) else 0
    no = kind == _OV_NOT_OVERLAPPED
    return union(s[no], s[no] + d[no])


def _union_based(profile, sel, dt: DeviceTimes, compute_rows: np.ndarray):
    k, co = profile.kernels, profile.comm_ops
    s0 = _arr(k, "start_ns", compute_rows)
    cs, ce = union(s0, s0 + _arr(k, "dur_ns", compute_rows))
    crow = np.flatnonzero(sel.comm_ops)
    ms = _arr(co, "start_ns", crow)
    me = ms + _arr(co, "dur_ns", crow)
    dt.computing_ns = int((ce - cs).sum())
    as_, ae = union(np.concatenate([cs, ms]), np.concatenate([ce, me]))
    dt.uncovered_ns = int((ae - as_).sum()) - dt.computing_ns
    if len(as_):
        lo, hi = int(as_[0]), int(ae[-1])
        if is_db(profile):
            # the reference widens E2E by every other device task (memcpy, event, HCCL tasks...)
            krows = np.flatnonzero(sel.kernels)
            other = ~text_flags(profile.symbols, _arr(k, "task_type", krows),
                                lambda x: x.upper() in E2E_EXCLUDED_TYPES)
            if other.any():
                os_ = _arr(k, "start_ns", krows)[other]
                oe = os_ + _arr(k, "dur_ns", krows)[other]
                lo, hi = min(lo, int(os_.min())), max(hi, int(oe.max()))
        dt.e2e_ns = hi - lo
    return subtract(as_, ae, cs, ce, b_inside_a=True)


def _sdma_stream(profile, sel, compat: bool) -> np.ndarray:
    k = profile.kernels
    rows = np.flatnonzero(sel.kernels)
    if not len(rows):
        return rows
    stream = _arr(k, "stream", rows)
    tt = _arr(k, "task_type", rows)
    kind = _arr(k, "kind", rows)
    sym = profile.symbols
    if compat:
        if is_db(profile) or not profile.meta.config.get("stream_id_field") == "Stream Id":
            # the reference reads args "Stream Id" (text) / SQE task-type spellings (DB): none here
            return np.zeros(0, np.int64)
        known = stream > 0
        waitf = text_flags(sym, tt, lambda s: s.upper() in WAIT_TYPES - {"EVENT_WAIT"}) & known
        compf = text_flags(sym, tt, lambda s: s.upper() in REF_COMPUTE_TYPES) & known
        sdmaf = text_flags(sym, tt, lambda s: s.upper() in REF_SDMA_TYPES) & known
    else:
        known = stream >= 0
        waitf = text_flags(sym, tt, lambda s: s.upper() in WAIT_TYPES) & known
        compf = (kind == KIND_COMPUTE) & known
        sdmaf = (kind == KIND_MEMCPY) & known
    wait_streams, comp_streams = np.unique(stream[waitf]), np.unique(stream[compf])
    use = np.intersect1d(wait_streams, comp_streams) if len(wait_streams) else comp_streams
    return rows[sdmaf & np.isin(stream, use)]


def _counted_notify_waits(profile, rows: np.ndarray) -> np.ndarray:
    """Bool per row of ``rows`` (comm_tasks): a Notify_Wait that counts as waiting.

    Per (group, plane) in time order; a Notify_Wait right after RDMASend, RDMASend, or after
    RDMASend, RDMASend, Notify_Wait, RDMASend is RDMA transfer time, not waiting.
    """
    ct = profile.comm_tasks
    n = len(rows)
    if not n:
        return np.zeros(0, bool)
    names = _arr(ct, "name", rows)
    code = np.zeros(n, np.int8)
    code[text_flags(profile.symbols, names, lambda s: s == RDMA_SEND)] = 1
    code[text_flags(profile.symbols, names, lambda s: s == NOTIFY_WAIT)] = 2
    grp, plane, start = _arr(ct, "group", rows), _arr(ct, "plane", rows), _arr(ct, "start_ns", rows)
    order = np.lexsort((start, plane, grp))
    c = code[order]
    seg = np.ones(n, bool)
    seg[1:] = (grp[order][1:] != grp[order][:-1]) | (plane[order][1:] != plane[order][:-1])
    seg_id = np.cumsum(seg)

    def prev(j):
        p = np.zeros(n, np.int8)
        if j < n:
            p[j:] = c[:-j]
            same = np.zeros(n, bool)
            same[j:] = seg_id[j:] == seg_id[:-j]
            p[~same] = 0
        return p
    p1, p2, p3, p4 = prev(1), prev(2), prev(3), prev(4)
    rdma = ((p2 == 1) & (p1 == 1)) | ((p4 == 1) & (p3 == 1) & (p2 == 2) & (p1 == 1))
    counted_sorted = (c == 2) & ~rdma
    out = np.zeros(n, bool)
    out[order] = counted_sorted
    return out


def _groups(profile, sel, no_s, no_e, compat: bool, dt: DeviceTimes) -> None:
    co, ct, sym = profile.comm_ops, profile.comm_tasks, profile.symbols
    orow = np.flatnonzero(sel.comm_ops)
    trow = np.flatnonzero(sel.comm_tasks)
    og, os_ = _arr(co, "group", orow), _arr(co, "start_ns", orow)
    oe = os_ + _arr(co, "dur_ns", orow)
    tg, tp, ts = _arr(ct, "group", trow), _arr(ct, "plane", trow), _arr(ct, "start_ns", trow)
    te = ts + _arr(ct, "dur_ns", trow)
    counted = _counted_notify_waits(profile, trow)
    firsts: dict[int, int] = {}                  # group -> its first op or task start
    g_all, s_all = np.concatenate([og, tg]), np.concatenate([os_, ts])
    if len(g_all):
        uniq, inv = np.unique(g_all, return_inverse=True)
        first = np.full(len(uniq), s_all.max(), s_all.dtype)
        np.minimum.at(first, inv.reshape(-1), s_all)
        firsts = dict(zip(uniq.tolist(), first.tolist()))
    order = sorted(firsts, key=lambda g: (firsts[g], g))
    text_compat = compat and not is_db(profile)
    clipped = {}
    for g in order:
        key = sym.string(g)
        pg = _pg_of(profile.meta.pg_names, key)
        label = f"{pg}: {key}" if pg else (key or "(no group)")
        om = og == g
        unc = overlap_length(os_[om], oe[om], no_s, no_e)
        tm = tg == g
        planes = np.unique(tp[tm]) if text_compat else np.unique(tp[tm & counted])
        best, best_sum = None, None
        for p in planes.tolist():
            pm = tm & (tp == p) & counted
            s = int((te[pm] - ts[pm]).sum())
            if best_sum is None or s < best_sum:
                best, best_sum = p, s
        wrows = np.flatnonzero(tm & (tp == best) & counted) if best is not None else np.zeros(0, np.int64)
        wait = overlap_length(ts[wrows], te[wrows], no_s, no_e) if len(wrows) else 0
        dt.groups.append(GroupTimes(key, label, pg, int(unc), int(wait), orow[om], trow[wrows], int(firsts[g])))
        clipped[g] = intersect(os_[om], oe[om], no_s, no_e)
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            ns = overlap_length(clipped[a][0], clipped[a][1], clipped[b][0], clipped[b][1])
            if ns:
                la = _pg_of(profile.meta.pg_names, sym.string(a)) or sym.string(a)
                lb = _pg_of(profile.meta.pg_names, sym.string(b)) or sym.string(b)
                dt.overlaps.append((la, lb, int(ns)))


def device_times(profile, sel, compute_rows: np.ndarray, compat: bool) -> DeviceTimes:
    """All non-categorised NPU figures for the selected rows."""
    dt = DeviceTimes()
    k, co = profile.kernels, profile.comm_ops
    if not is_db(profile) and sel.overlap.any():
        no_s, no_e = _overlap_based(profile, sel, dt)
    else:
        if not is_db(profile):
            dt.notes.append("no Overlap Analysis data: computing and communication come from the union "
                            "of the device tasks")
        crow = np.flatnonzero(sel.kernels & k["detail"].to_numpy() & (k["kind"].to_numpy() != KIND_COMM)
                              & (k["start_ns"].to_numpy() >= 0))
        if not is_db(profile) and not len(crow):
            crow = np.flatnonzero(sel.kernels & (k["kind"].to_numpy() == KIND_COMPUTE))
        no_s, no_e = _union_based(profile, sel, dt, crow)
    krows = np.flatnonzero(sel.kernels)
    lccl_k = krows[text_flags(profile.symbols, _arr(k, "name", krows), lambda s: s == "kernel_aivec")]
    dt.lccl_rows = lccl_k
    dt.lccl_ns = int(_arr(k, "dur_ns", lccl_k).sum())
    crows = np.flatnonzero(sel.comm_ops)
    lccl_c = crows[text_flags(profile.symbols, _arr(co, "name", crows), lambda s: s == "kernel_aivec")]
    dt.lccl_ns += int(_arr(co, "dur_ns", lccl_c).sum())
    dt.comm_rows = crows[~np.isin(crows, lccl_c)]
    dt.lccl_count = len(lccl_k) + len(lccl_c)
    dt.sdma_rows = _sdma_stream(profile, sel, compat)
    dt.sdma_ns = int(_arr(k, "dur_ns", dt.sdma_rows).sum())
    _groups(profile, sel, no_s, no_e, compat, dt)
    return dt
