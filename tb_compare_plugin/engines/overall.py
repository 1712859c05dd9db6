"""Overall comparison: where each side's end-to-end time goes, baseline vs target.

Owns :func:`breakdown` (one side's time split: Computing with its kernel buckets, Lccl,
Uncovered Communication with its per-group Wait/Transmit, Free with its SDMA part, E2E)
and :func:`compare_overall` (both sides as the reference's OverallMetrics rows, in its
order and with its names, plus a drill-down of the top kernels behind every row).

Each side adds up: Computing + Lccl + Uncovered Communication + Free = E2E.
All sums are exact int64 ns; milliseconds appear only in :meth:`OverallResult.to_dict`.
Device specifics live in :mod:`overall_npu` / :mod:`overall_gpu`, the kernel buckets in
:mod:`kernel_classes`, step selection in :mod:`overall_steps`, the row layout in
:mod:`overall_rows` and the reference's console table in :mod:`..presenters.overall_screen`.
``reference_compat=True`` reproduces the reference's known errors (docs/deviations.md).
Pure functions of Profiles: no file reading, no HTTP.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import kernel_classes as kc
from . import overall_gpu, overall_npu
from .communication import collective_name
from .overall_rows import build_rows
from .memory_curve import peak_reserved_label, reserved_peak_component
from .per_step import decide
from .overall_steps import StepError, select

__all__ = ["breakdown", "compare_overall", "SideBreakdown", "OverallResult", "Metric", "StepError"]

TOP_KERNELS = 20

# metric key -> bucket codes it is made of
BUCKETS = {
    "fa_fwd_cube": (kc.FA_FWD_CUBE,), "fa_fwd_vec": (kc.FA_FWD_VEC,),
    "fa_bwd_cube": (kc.FA_BWD_CUBE,), "fa_bwd_vec": (kc.FA_BWD_VEC,),
    "conv_fwd_cube": (kc.CONV_FWD_CUBE,), "conv_fwd_vec": (kc.CONV_FWD_VEC,),
    "conv_bwd_cube": (kc.CONV_BWD_CUBE,), "conv_bwd_vec": (kc.CONV_BWD_VEC,),
    "mm_cube": (kc.MM_CUBE,), "mm_vec": (kc.MM_VEC,), "pa": (kc.PA,),
    "vec_trans": (kc.VEC_TRANS,), "vec_notrans": (kc.VEC_NOTRANS,), "cube": (kc.CUBE_OTHER,),
    "sdma_tm": (kc.SDMA_TM,),
    "fa_fwd": (kc.FA_FWD_CUBE, kc.FA_FWD_VEC), "fa_bwd": (kc.FA_BWD_CUBE, kc.FA_BWD_VEC),
    "conv_fwd": (kc.CONV_FWD_CUBE, kc.CONV_FWD_VEC), "conv_bwd": (kc.CONV_BWD_CUBE, kc.CONV_BWD_VEC),
    "mm": (kc.MM_CUBE, kc.MM_VEC), "vector": (kc.VEC_TRANS, kc.VEC_NOTRANS),
}
# the buckets the reference counts in the Computing row's Number (MC2 excluded)
COUNTED = tuple(c for c in range(1, kc.N_CODES) if c != kc.MC2)


@dataclass
class Metric:
    duration_ns: int = 0
    count: int | None = None
    kernels: list = field(default_factory=list)     # (name, total ns, count), longest first


@dataclass
class GroupMetrics:
    key: str
    label: str
    pg_name: str | None
    total: Metric
    wait: Metric
    transmit: Metric
    first_ns: int = 0                                   # start of its first collective
    collectives: frozenset = frozenset()                # canonical collective names (pairing)
    redundant: bool = False                             # GPU: the only, unnamed group (no row)


@dataclass
class SideBreakdown:
    device: str
    step: int | None
    steps_count: int
    metrics: dict = field(default_factory=dict)     # key -> Metric (see overall_rows.ROWS)
    mc2: dict = field(default_factory=dict)         # kernel name -> {"total": Metric, "computing": ns, ...}
    groups: list = field(default_factory=list)      # GroupMetrics, in time order
    overlaps: list = field(default_factory=list)    # (group a, group b, ns)
    hide_op_details: bool = False
    sdma_stream_count: int = 0
    steps_marked: bool = True                       # False: no step markers, steps_count is a stand-in 1
    memory_peak_gb: float | None = None
    memory_peak_component: str | None = None        # the component whose record holds memory_peak_gb
    bandwidth: dict = field(default_factory=dict)   # {"rdma_gbps", "sdma_gbps"} (NPU text/DB)
    notes: list = field(default_factory=list)

    def ns(self, key: str) -> int:
        m = self.metrics.get(key)
        return m.duration_ns if m else 0

    def check_sum(self) -> int:
        """E2E − (Computing + Lccl + Uncovered + Free): 0 by construction."""
        return self.ns("e2e") - (self.ns("computing") + self.ns("lccl") + self.ns("uncovered")
                                 + self.ns("free_time"))


@dataclass
class OverallResult:
    baseline: SideBreakdown
    target: SideBreakdown
    rows: list
    notes: list
    per_step: bool
    reference_compat: bool = False

    def to_dict(self) -> dict:
        side = lambda b: {"device": b.device, "step": b.step}  # noqa: E731
        return {
            "baseline": side(self.baseline), "target": side(self.target),
            "overall_metrics": self.rows,
            "notes": list(self.notes),
            "per_step": self.per_step,
            "steps_count": {"baseline": self.baseline.steps_count, "target": self.target.steps_count},
            "memory": {w: {"peak_reserved_gb": s.memory_peak_gb,
                           "peak_reserved_component": s.memory_peak_component,
                           "peak_reserved_label": None if s.memory_peak_gb is None else
                           peak_reserved_label(s.memory_peak_component)}
                       for w, s in (("baseline", self.baseline), ("target", self.target))},
            "bandwidth": {"baseline": dict(self.baseline.bandwidth), "target": dict(self.target.bandwidth)},
        }


# ------------------------------------------------------------------------------------- helpers

def _top_arrays(sym, ids: np.ndarray, cnt: np.ndarray, tot: np.ndarray, top: int) -> list:
    """Top ``top`` of per-name aggregates (``ids`` = symbol id of each slot)."""
    present = np.flatnonzero(cnt)
    if len(present) > top:
        present = present[np.argpartition(-tot[present], top - 1)[:top]]
    order = present[np.lexsort((ids[present], -tot[present]))]
    names = sym.strings(ids[order])
    # float64 sums of int ns are exact below 2**53 ns (104 days)
    return [(names[j], int(round(tot[i])), int(cnt[i])) for j, i in enumerate(order.tolist())]


def _top(sym, name_ids: np.ndarray, dur: np.ndarray, top: int) -> list:
    """The ``top`` names by total duration: [(name, total ns, count)], longest first (O(n))."""
    if not len(name_ids):
        return []
    ids = np.asarray(name_ids).astype(np.int64)
    cnt = np.bincount(ids)
    tot = np.bincount(ids, weights=np.asarray(dur, dtype=np.float64))
    return _top_arrays(sym, np.arange(len(cnt)), cnt, tot, top)


def _bucket_metrics(sym, codes: np.ndarray, names: np.ndarray, dur: np.ndarray, top: int) -> dict:
    """Metric per BUCKETS key plus "_all" (every categorised kernel), from one bincount."""
    uniq = kc.distinct_ids(names)
    u = max(len(uniq), 1)
    remap = np.zeros(int(uniq[-1]) + 1 if len(uniq) else 1, dtype=np.int64)
    remap[uniq] = np.arange(len(uniq))
    slot = codes.astype(np.int64) * u + remap[names]
    cnt = np.bincount(slot, minlength=kc.N_CODES * u).reshape(kc.N_CODES, u)
    tot = np.bincount(slot, weights=dur.astype(np.float64), minlength=kc.N_CODES * u).reshape(kc.N_CODES, u)
    ids = uniq if len(uniq) else np.zeros(1, np.int64)
    out = {}
    for key, cs in list(BUCKETS.items()) + [("_all", tuple(range(kc.N_CODES)))]:
        c, t = cnt[list(cs)].sum(axis=0), tot[list(cs)].sum(axis=0)
        out[key] = Metric(int(round(t.sum())), int(c.sum()), _top_arrays(sym, ids, c, t, top))
    return out


def _memory_gb(profile, sel, compat: bool = False) -> tuple[float | None, str | None]:
    """(Mem Usage: max reserved bytes of the selected records, GiB; the component it is of).
    ``compat``: without the components the loader added from a table the reference never reads (docs/deviations.md)."""
    mr = profile.mem_records
    if not len(mr):
        return None, None
    v = mr["reserved_bytes"].to_numpy()[sel.mem_records]
    dev = mr["device"].to_numpy()[sel.mem_records]
    keep = np.isfinite(v) & ((dev >= 0) if profile.meta.device == "GPU" else True)
    added = [profile.symbols.lookup(c) for c in profile.meta.mem_components_added] if compat else []
    if added:
        keep &= ~np.isin(mr["component"].to_numpy()[sel.mem_records], added)
    if not keep.any():
        return None, None
    rows = np.flatnonzero(sel.mem_records)[keep]               # the kept records' indices
    return float(v[keep].max()) / 1024 ** 3, reserved_peak_component(profile, rows)


def _bandwidth(profile, step: int | None, compat: bool) -> dict:
    bw = profile.meta.bandwidth or {}
    by_key = bw.get("by_key") or {}
    if not by_key or (compat and overall_npu.is_db(profile)):
        return {}                 # the reference reads no bandwidth from DB exports
    if step is not None and f"step{step}" in by_key:
        keys = [f"step{step}"]
    elif compat:
        keys = [k for k in by_key if any(v.get("time_ms") for v in by_key[k].values())][-1:] or list(by_key)[-1:]
    else:
        keys = list(by_key)
    out = {}
    for transport in ("RDMA", "SDMA"):
        size = sum(float((by_key[k].get(transport) or {}).get("size_mb") or 0) for k in keys)
        t = sum(float((by_key[k].get(transport) or {}).get("time_ms") or 0) for k in keys)
        out[f"{transport.lower()}_gbps"] = size / t if t > 0 else 0.0
    return out


def _cube_ops(profile, device: str, compat: bool):
    ops, sym = profile.ops, profile.symbols
    if device == "GPU":
        rows = overall_gpu.cube_op_rows(profile)
    else:
        rows = np.flatnonzero(kc.text_flags(sym, ops["cat"].to_numpy(), lambda s: s == "cpu_op"))
    kind = kc.cube_op_kind(sym, ops["name"].to_numpy()[rows], compat)
    rows, kind = rows[kind > 0], kind[kind > 0]
    start = ops["start_ns"].to_numpy()[rows]
    end = start + ops["dur_ns"].to_numpy()[rows]
    bwd = kc.is_backward_name(sym, ops["name"].to_numpy()[rows])
    bwd_tid = profile.meta.bwd_tid
    if bwd_tid is not None:
        bwd |= (kind == kc.OP_CONV) & (ops["tid"].to_numpy()[rows] == bwd_tid)
    bwd &= kind != kc.OP_MM
    return start, end, kind, bwd


def _categorise(profile, sel, compat: bool, gpu=None):
    """(kernel rows, bucket code per row, hide_op_details)."""
    k, sym = profile.kernels, profile.symbols
    device = "NPU" if profile.meta.device == "NPU" else "GPU"
    if device == "GPU":
        rows = overall_gpu.categorised_rows(gpu)
        cube = kc.gpu_is_cube(sym, k["name"].to_numpy()[rows], compat)
        flags, hide = {}, False
    else:
        rows, cube, hide = overall_npu.categorised_rows(profile, sel, compat)
        flags = kc.npu_name_flags(sym, k["name"].to_numpy()[rows], k["type"].to_numpy()[rows])
    if hide or not len(rows):
        return rows, np.zeros(len(rows), np.int8), hide
    s, e, kind, bwd = _cube_ops(profile, device, compat)
    codes = kc.categorise(device=device, flow_start=k["flow_start_ns"].to_numpy()[rows], is_cube=cube,
                          name_flags=flags, op_start=s, op_end=e, op_kind=kind, op_bwd=bwd)
    return rows, codes, hide


def _mc2(profile, sel, rows, dur, names, top) -> dict:
    k, sym = profile.kernels, profile.symbols
    if not len(rows):
        return {}
    start = k["start_ns"].to_numpy()[rows]
    pmu = lambda c: np.nan_to_num(k[c].to_numpy()[rows]) * 1000.0  # noqa: E731  µs -> ns
    comp = np.rint(np.maximum(pmu("aic_mac_time_us"), pmu("aic_mte2_time_us")) + pmu("aiv_time_us")).astype(np.int64)
    sel_rows = np.flatnonzero(sel.kernels)
    sqe = sel_rows[kc.text_flags(sym, k["name"].to_numpy()[sel_rows], lambda s: s == "c_core_sqe")]
    sqe_end = k["start_ns"].to_numpy()[sqe] + k["dur_ns"].to_numpy()[sqe]
    comm = kc.mc2_split(start, start + dur, sqe_end)
    out = {}
    for nid in np.unique(names).tolist():
        m = names == nid
        name = sym.string(nid)
        out[name] = {"total": Metric(int(dur[m].sum()), int(m.sum()), _top(sym, names[m], dur[m], top)),
                     "computing": int(comp[m].sum()), "communication": int(comm[m].sum())}
    return out


# ------------------------------------------------------------------------------------- breakdown

def breakdown(profile, step: int | None = None, reference_compat: bool = False,
              top: int = TOP_KERNELS) -> SideBreakdown:
    """One side's time split for the whole capture or one step (raises StepError).

    ``reference_compat`` with a step: an Ascend text export's figures span the whole capture,
    as the reference's do (it filters overall metrics by step only for DB exports, spec a.4)."""
    sel = select(profile, step)
    k, sym = profile.kernels, profile.symbols
    device = "NPU" if profile.meta.device == "NPU" else "GPU"
    step_note = None
    if reference_compat and step is not None:
        if device == "NPU" and not overall_npu.is_db(profile):
            sel = select(profile, None)
            step_note = (f"step {step} not applied: the reference does not filter an Ascend text export's "
                         "overall figures by step, so these span the whole capture.")
        elif device == "GPU":
            step_note = (f"step {step}: the reference refuses steps on GPU data, so it has no figure to "
                         "match; these are the step's.")
    sb = SideBreakdown(device=profile.meta.device, step=sel.step,
                       steps_count=sel.steps_count, steps_marked=sel.marked)
    if step_note:
        sb.notes.append(step_note)
    gpu = overall_gpu.GpuRows(profile, sel, reference_compat) if device == "GPU" else None
    rows, codes, hide = _categorise(profile, sel, reference_compat, gpu)
    sb.hide_op_details = hide
    if device == "GPU":
        dt = overall_gpu.device_times(profile, gpu, reference_compat, sel.next_start)
    else:
        dt = overall_npu.device_times(profile, sel, rows, reference_compat)
    sb.notes.extend(dt.notes)
    dur = k["dur_ns"].to_numpy()[rows]
    names = k["name"].to_numpy()[rows]
    per_code_n = np.bincount(codes, minlength=kc.N_CODES)
    M = sb.metrics
    bm = _bucket_metrics(sym, codes, names, dur, top)
    for key in BUCKETS:
        M[key] = bm[key]
    is_mc2 = codes == kc.MC2
    sb.mc2 = _mc2(profile, sel, rows[is_mc2], dur[is_mc2], names[is_mc2], top)
    mc2_ns = sum(v["total"].duration_ns for v in sb.mc2.values())
    counted_ns = int(dur.sum()) - int(dur[is_mc2].sum()) - int(dur[codes == kc.NONE].sum())
    M["computing"] = Metric(dt.computing_ns, int(per_code_n[list(COUNTED)].sum()), bm["_all"].kernels)
    buckets_ns = counted_ns + mc2_ns
    M["other"] = Metric(max(0, dt.computing_ns - buckets_ns), None)
    lk = dt.lccl_rows
    M["lccl"] = Metric(dt.lccl_ns, dt.lccl_count, _top(sym, k["name"].to_numpy()[lk], k["dur_ns"].to_numpy()[lk], top))
    if device == "GPU":
        cn, cd = k["name"].to_numpy()[dt.comm_rows], k["dur_ns"].to_numpy()[dt.comm_rows]
    else:
        co = profile.comm_ops
        ot = co["op_type"].to_numpy()[dt.comm_rows]
        cn = np.where(ot > 0, ot, co["name"].to_numpy()[dt.comm_rows])
        cd = co["dur_ns"].to_numpy()[dt.comm_rows]
    M["uncovered"] = Metric(dt.uncovered_ns, None, _top(sym, cn, cd, top))
    free_ns = dt.e2e_ns - dt.computing_ns - dt.lccl_ns - dt.uncovered_ns
    sk = dt.sdma_rows
    sdma_top = _top(sym, k["name"].to_numpy()[sk], k["dur_ns"].to_numpy()[sk], top)
    M["free_time"] = Metric(free_ns, None, sdma_top)
    M["sdma"] = Metric(dt.sdma_ns, None, sdma_top)
    sb.sdma_stream_count = len(sk)
    M["free"] = Metric(free_ns - dt.sdma_ns, None)
    M["e2e"] = Metric(dt.e2e_ns, None)
    co, ct = profile.comm_ops, profile.comm_tasks
    for g in dt.groups:
        ot = co["op_type"].to_numpy()[g.op_rows]
        gn = np.where(ot > 0, ot, co["name"].to_numpy()[g.op_rows])
        colls = {collective_name(x) for x in sym.strings(np.unique(gn))}
        if g.kernel_rows is not None:           # GPU: the group's NCCL kernels
            kn = k["name"].to_numpy()[g.kernel_rows]
            gtop = _top(sym, kn, k["dur_ns"].to_numpy()[g.kernel_rows], top)
            if len(g.op_rows) < len(g.kernel_rows):
                colls |= {collective_name(x) for x in sym.strings(np.unique(kn))}
        else:
            gtop = _top(sym, gn, co["dur_ns"].to_numpy()[g.op_rows], top)
        wtop = _top(sym, ct["name"].to_numpy()[g.wait_rows], ct["dur_ns"].to_numpy()[g.wait_rows], top)
        sb.groups.append(GroupMetrics(g.key, g.label, g.pg_name, Metric(g.uncovered_ns, None, gtop),
                                      Metric(g.wait_ns, None, wtop), Metric(g.transmit_ns, None, gtop),
                                      g.first_ns, frozenset(c for c in colls if c), g.redundant))
    sb.overlaps = list(dt.overlaps)
    sb.memory_peak_gb, sb.memory_peak_component = _memory_gb(profile, sel, reference_compat)
    if device == "NPU":
        sb.bandwidth = _bandwidth(profile, sel.step, reference_compat)
    return sb


def side_breakdown(profile, step: int | None = None, reference_compat: bool = False,
                   top: int = TOP_KERNELS) -> SideBreakdown:
    """``breakdown(...)``, built once per (profile, arguments) in the derived-data cache
    (``model.derived``): a per-side reduction (``engines.side_work``) the CLI computes where
    the side was parsed.  Callers must not change the result."""
    from ..model.derived import derived
    return derived(profile, f"breakdown:{step}:{bool(reference_compat)}:{int(top)}",
                   lambda: breakdown(profile, step, reference_compat, top))


def compare_overall(base, target, base_step: int | None = None, target_step: int | None = None,
                    per_step: bool | None = None, reference_compat: bool = False,
                    top: int = TOP_KERNELS) -> OverallResult:
    """Both sides' breakdowns as OverallMetrics rows (see module docstring and docs/api.md).

    ``per_step``: None = divide each side by the number of steps it covers (1 when a step
    was chosen) when the two numbers differ, or raw figures in ``reference_compat`` mode (the
    reference never divides); True = always divide; False = raw figures.
    """
    b = side_breakdown(base, base_step, reference_compat, top)
    t = side_breakdown(target, target_step, reference_compat, top)
    notes: list[str] = []
    asked = per_step if not (per_step is None and reference_compat) else False
    scale = decide(b.steps_count, b.steps_marked, t.steps_count, t.steps_marked, per_step, reference_compat)
    differ = b.steps_count != t.steps_count
    unmarked = [who for who, s in (("baseline", b), ("target", t)) if not s.steps_marked]
    per_step = scale.per_step
    if asked is None:                           # a side without step markers is never divided
        if differ and unmarked:
            notes.append(f"Raw figures: the {' and the '.join(unmarked)} has no step markers (no ProfilerStep# / "
                         "STEP_TIME), so the number of steps it covers is unknown; neither side is divided.")
        elif per_step:
            notes.append(f"The two sides cover different numbers of steps (baseline {b.steps_count}, target "
                         f"{t.steps_count}): every figure is per step (each side divided by its step count; "
                         "counts become averages).")
    elif per_step:
        notes.append(f"Figures are per step: baseline divided by {b.steps_count}, target by {t.steps_count}."
                     if not unmarked else
                     "Figures are per step where a side has step markers: " + ", ".join(
                         f"{who} " + (f"divided by {s.steps_count}" if s.steps_marked else
                                      "not divided (no step markers)")
                         for who, s in (("baseline", b), ("target", t))) + ".")
    elif differ:
        notes.append(f"Raw figures: the two sides cover different numbers of steps "
                     f"(baseline {b.steps_count}, target {t.steps_count}).")
    for who, s in (("baseline", b), ("target", t)):
        if s.hide_op_details:
            notes.append(f"The {who} has no PMU data in kernel_details.csv (e.g. profiler Level0): no "
                         "Cube/Vector breakdown, all its computing shows as Other.")
        if not s.ns("e2e"):
            notes.append(f"The {who} has no device activity in the selected range.")
        notes.extend(f"{who}: {n}" for n in s.notes)
    if reference_compat:
        notes.append("Reference-compatible mode: the overall figures are msprof-analyze compare's, its known "
                     "errors included (docs/deviations.md).")
    scale_b, scale_t = 1.0 / scale.base_div, 1.0 / scale.target_div
    rows = build_rows(b, t, scale_b, scale_t, compat=reference_compat, notes=notes)
    gpu_groups = [w for w, s, o in (("baseline", b, t), ("target", t, b))
                  if s.device == "GPU" and o.device != "GPU" and any(not g.redundant for g in s.groups)]
    if gpu_groups and not reference_compat:
        notes.append(f"The {' and '.join(gpu_groups)} is a GPU trace: NCCL has no task data, so its "
                     "communication groups show Wait 0 and Transmit = the group's uncovered time.")
    return OverallResult(b, t, rows, notes, bool(per_step), reference_compat)
