"""Overall comparison engine: unit tests on hand-made profiles, and the reference's
OverallMetrics figures on the real corpus (golden pairs i-v), row by row.

Default mode: every golden row equals ours (name, depth, order, durations within 10 ns,
Numbers) unless docs/deviations.md's machine-readable block names it, and then the rule it
names must hold (``RULES``: the expected figure computed the documented way).  With
``reference_compat=True`` every reference row must match (the CLI does the same in
tests/test_overall_reference_compat.py).  Interval algebra is checked against a pure-Python
oracle (tests/interval_oracle.py).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tb_compare_plugin.engines import kernel_classes as kc
from tb_compare_plugin.engines.overall import StepError, breakdown, compare_overall
from tb_compare_plugin.engines.overall_npu import _counted_notify_waits
from tb_compare_plugin.engines.overall_steps import select
from tb_compare_plugin.formats.registry import meta_for
from tb_compare_plugin.model import (KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, Profile, ProfileMeta, SymbolTable,
                                     make_table)

import interval_oracle as oracle
import overall_golden as og
from conftest import CORPUS, GOLDEN, needs_corpus

# ------------------------------------------------------------------------------------ helpers


def _reference_walk(flow, op_start, op_end, op_kind):
    """The reference's loop, literally: kernels by flow start (stable), forward-only pointer."""
    order = sorted(range(len(flow)), key=lambda i: flow[i] if flow[i] >= 0 else 0)
    ops = sorted(range(len(op_start)), key=lambda j: op_start[j])
    ptr, out = 0, [0] * len(flow)
    for i in order:
        f = flow[i]
        if f < 0:
            continue
        while ptr < len(ops):
            j = ops[ptr]
            if op_end[j] < f:
                ptr += 1
                continue
            if op_start[j] <= f:
                out[i] = int(op_kind[j])
            break
    return out


def test_vectorised_walk_equals_the_reference_pointer_walk():
    rng = np.random.default_rng(7)
    for _ in range(40):
        n_ops, n_k = int(rng.integers(0, 30)), int(rng.integers(1, 60))
        os_ = rng.integers(0, 1000, n_ops)
        oe = os_ + rng.integers(0, 200, n_ops)
        kind = rng.integers(1, 4, n_ops).astype(np.int8)
        flow = np.where(rng.random(n_k) < 0.2, -1, rng.integers(0, 1300, n_k))
        got = kc.categorise(device="GPU", flow_start=flow, is_cube=np.ones(n_k, bool), name_flags={},
                            op_start=os_, op_end=oe, op_kind=kind, op_bwd=np.zeros(n_ops, bool))
        want = _reference_walk(flow.tolist(), os_.tolist(), oe.tolist(), kind.tolist())
        code_of = {0: kc.CUBE_OTHER, kc.OP_FA: kc.FA_FWD_CUBE, kc.OP_CONV: kc.CONV_FWD_CUBE, kc.OP_MM: kc.MM_CUBE}
        assert got.tolist() == [code_of[w] for w in want]


def test_npu_special_kernels_and_type_fallback():
    sym = SymbolTable()
    names = ["PagedAttn_1", "aclnnInplaceCopy_TensorMove_0", "MatmulAllReduce", "Conv2DBackpropInput_3",
             "MatMul_1", "FlashAttentionScoreGrad_1", "Add_5", "Cast_2", "TransData_1"]
    types = ["PagedAttention", "TensorMove", "MatmulAllReduce", "Conv2DBackpropInput", "MatMulV2",
             "FlashAttentionScoreGrad", "Add", "Cast", "TransData"]
    flags = kc.npu_name_flags(sym, sym.intern_many(names), sym.intern_many(types))
    cube = np.array([0, 0, 0, 0, 0, 0, 1, 0, 0], bool)
    codes = kc.categorise(device="NPU", flow_start=np.full(9, -1), is_cube=cube, name_flags=flags,
                          op_start=np.zeros(0), op_end=np.zeros(0), op_kind=np.zeros(0, np.int8),
                          op_bwd=np.zeros(0, bool))
    assert codes.tolist() == [kc.PA, kc.SDMA_TM, kc.MC2, kc.CONV_BWD_CUBE, kc.MM_CUBE, kc.FA_BWD_CUBE,
                              kc.CUBE_OTHER, kc.VEC_TRANS, kc.VEC_TRANS]


def test_cube_op_kinds_and_wide_conv_mask():
    sym = SymbolTable()
    ids = sym.intern_many(["aten::mm", "npu_fusion_attention", "aten::conv2d", "CudnnConvolutionBackward",
                           "aten::add"])
    assert kc.cube_op_kind(sym, ids).tolist() == [kc.OP_MM, kc.OP_FA, kc.OP_CONV, kc.OP_CONV, 0]
    assert kc.cube_op_kind(sym, ids, compat=True).tolist() == [kc.OP_MM, kc.OP_FA, kc.OP_CONV, 0, 0]


def test_notify_wait_after_rdma_sends_is_transfer_not_wait():
    sym = SymbolTable()
    seq = ["RDMASend", "RDMASend", "Notify_Wait", "RDMASend", "Notify_Wait", "Memcpy", "Notify_Wait"]
    n = len(seq)
    p = Profile(sym, ProfileMeta(device="NPU"), {"comm_tasks": make_table(
        "comm_tasks", name=sym.intern_many(seq), group=np.full(n, sym.intern("g")), plane=np.zeros(n),
        start_ns=np.arange(n) * 10, dur_ns=np.full(n, 5))})
    assert _counted_notify_waits(p, np.arange(n)).tolist() == [False, False, False, False, False, False, True]


def _npu(sym=None, *, nw_plane_has_wait=True, fmt="ascend-text", step_end=9000):
    """A tiny NPU text profile: 2 kernels, 1 collective, Overlap Analysis, 2 HCCL planes."""
    sym = sym or SymbolTable()
    meta = meta_for(fmt, device="NPU", has_pmu=True, bwd_tid=9)
    kernels = make_table(
        "kernels", name=sym.intern_many(["Conv2D_1", "Add_1", "MEMCPY_ASYNC", "EVENT_WAIT"]),
        type=sym.intern_many(["Conv2D", "Add", "", ""]),
        task_type=sym.intern_many(["AI_CORE", "AI_VECTOR_CORE", "SDMA_SQE", "EVENT_WAIT_SQE"]),
        kind=np.array([KIND_COMPUTE, KIND_COMPUTE, KIND_MEMCPY, 4], np.int8), stream=[2, 2, 2, 2],
        start_ns=[1000, 3000, 6000, 7000], dur_ns=[1000, 500, 400, 10], flow_start_ns=[150, 250, -1, -1],
        detail=[True, True, False, False], step=[1, 1, -1, -1],
        aicore_time_us=[1.0, 0.0, np.nan, np.nan], aiv_vec_time_us=[0.0, 0.5, np.nan, np.nan])
    ops = make_table("ops", name=sym.intern_many(["aten::conv2d", "aten::add"]),
                     cat=sym.intern_many(["cpu_op", "cpu_op"]), start_ns=[100, 200], dur_ns=[90, 90], tid=[1, 1])
    overlap = make_table("overlap", kind=np.array([0, 0, 2, 3], np.int8), start_ns=[1000, 3000, 4000, 2000],
                         dur_ns=[1000, 500, 2000, 1000])
    g = sym.intern("Group 0 Communication")
    comm_ops = make_table("comm_ops", name=sym.intern_many(["hcom_allReduce__1_0_1"]), group=[g],
                          op_type=[sym.intern("allreduce")], start_ns=[3500], dur_ns=[3000])
    first = "Notify_Wait" if nw_plane_has_wait else "Memcpy"
    comm_tasks = make_table("comm_tasks", name=sym.intern_many([first, "Notify_Wait", "Memcpy"]),
                            group=[g, g, g], plane=[0, 1, 1], start_ns=[4000, 4100, 5000], dur_ns=[100, 600, 200])
    steps = make_table("steps", step=[1], start_ns=[0], end_ns=[step_end])
    return Profile(sym, meta, {"kernels": kernels, "ops": ops, "overlap": overlap, "comm_ops": comm_ops,
                               "comm_tasks": comm_tasks, "steps": steps})


def test_npu_breakdown_parts_add_up_and_wait_uses_a_plane_with_notify_wait():
    b = breakdown(_npu(nw_plane_has_wait=False))
    assert b.ns("computing") == 1500 and b.ns("uncovered") == 2000 and b.ns("e2e") == 5000
    assert b.check_sum() == 0 and b.ns("free_time") == 1500
    assert b.metrics["conv_fwd_cube"].count == 1 and b.metrics["vec_notrans"].count == 1
    assert b.ns("sdma") == 400 and b.ns("free") == 1100          # memcpy on the compute+wait stream
    g = b.groups[0]
    assert (g.total.duration_ns, g.wait.duration_ns, g.transmit.duration_ns) == (2000, 600, 1400)
    c = breakdown(_npu(nw_plane_has_wait=False), reference_compat=True)
    assert c.groups[0].wait.duration_ns == 0 and c.ns("sdma") == 0   # the reference's choices
    assert breakdown(_npu(nw_plane_has_wait=True)).groups[0].wait.duration_ns == 100


def test_rows_order_omission_and_ratios():
    res = compare_overall(_npu(), _npu())
    d = res.to_dict()
    assert set(d) == {"baseline", "target", "overall_metrics", "notes", "per_step", "steps_count", "memory",
                      "bandwidth"}
    names = [r["name"] for r in d["overall_metrics"]]
    assert names == ["Computing Time", "Conv (Forward)", "Conv (Forward) (Cube)", "Vector", "Vector (No Trans)",
                     "Uncovered Communication Time", "Group 0 Communication", "Wait", "Transmit", "Free Time",
                     "SDMA", "Free", "E2E Time"]
    row = d["overall_metrics"][0]
    assert row["baseline"] == {"duration_ms": 0.0015, "count": 2} and row["ratio"] == 1.0 and row["diff_ms"] == 0
    assert row["kernels"]["baseline"][0] == {"name": "Conv2D_1", "duration_ms": 0.001, "count": 1}
    assert [r["depth"] for r in d["overall_metrics"]][:3] == [0, 1, 2]


def test_top_level_rows_always_present_and_ratio_none_when_baseline_zero():
    empty = Profile(SymbolTable(), meta_for("ascend-text", device="NPU"))
    d = compare_overall(empty, _npu()).to_dict()
    top = [r for r in d["overall_metrics"] if r["depth"] == 0]
    assert [r["name"] for r in top] == ["Computing Time", "Uncovered Communication Time", "Free Time", "E2E Time"]
    assert all(r["ratio"] is None for r in top)
    assert any("no device activity" in n for n in d["notes"])




def test_compat_steps_as_the_reference_applies_them():
    """The reference filters overall figures by step for DB exports only (spec a.4)."""
    keys = ("computing", "uncovered", "e2e", "free_time")
    figures = lambda b: [b.ns(x) for x in keys]  # noqa: E731
    text = _npu(step_end=2500)
    assert figures(breakdown(text, 1)) != figures(breakdown(text))               # ours: the step's
    compat = breakdown(text, 1, reference_compat=True)
    assert figures(compat) == figures(breakdown(text, reference_compat=True))   # the whole capture
    assert any("step 1 not applied" in n for n in compat.notes)
    db = _npu(step_end=2500, fmt="ascend-db")
    assert figures(breakdown(db, 1, reference_compat=True)) != figures(breakdown(db, reference_compat=True))
    with pytest.raises(StepError):
        breakdown(text, 7, reference_compat=True)                                  # still validated
    res = compare_overall(text, text, base_step=1, reference_compat=True)
    assert any(n.startswith("baseline: step 1 not applied") for n in res.notes)

def test_compat_rows_leave_out_lccl():
    from tb_compare_plugin.engines.overall import Metric, SideBreakdown
    from tb_compare_plugin.engines.overall_rows import build_rows
    sb = SideBreakdown(device="NPU", step=None, steps_count=1, metrics={
        "computing": Metric(10, 1), "lccl": Metric(5, 2), "uncovered": Metric(0), "free_time": Metric(0),
        "e2e": Metric(15)})
    assert "Lccl" in [r["name"] for r in build_rows(sb, sb)]
    assert [r["name"] for r in build_rows(sb, sb, compat=True)] == ["Computing Time", "Uncovered Communication Time",
                                                                    "Free Time", "E2E Time"]

def _gpu(steps=2):
    """Kineto-like: per step a gemm kernel, an elementwise kernel, an NCCL kernel, a memcpy."""
    sym = SymbolTable()
    rows = []
    for s in range(steps):
        base = s * 100_000
        rows += [("volta_sgemm_128x64", KIND_COMPUTE, 7, base + 1000, 2000, base + 500, s),
                 ("elementwise_kernel", KIND_COMPUTE, 7, base + 4000, 1000, base + 3500, s),
                 ("ncclKernel_AllReduce", KIND_COMM, 20, base + 4500, 3000, base + 3600, s),
                 ("Memcpy HtoD (Pageable -> Device)", KIND_MEMCPY, 7, base + 9000, 500, base + 8000, s)]
    name, kind, stream, start, dur, flow, step = map(np.array, zip(*rows))
    kernels = make_table("kernels", name=sym.intern_many(list(name)), kind=kind.astype(np.int8), stream=stream,
                         task_type=sym.intern_many(["kernel", "kernel", "kernel", "gpu_memcpy"] * steps),
                         start_ns=start, dur_ns=dur, flow_start_ns=flow, step=step)
    ops = make_table("ops", name=sym.intern_many(["aten::mm"] * steps), cat=sym.intern_many(["cpu_op"] * steps),
                     start_ns=[s * 100_000 + 400 for s in range(steps)], dur_ns=[200] * steps, tid=[1] * steps)
    st = make_table("steps", step=list(range(steps)), start_ns=[s * 100_000 for s in range(steps)],
                    end_ns=[s * 100_000 + 9000 for s in range(steps)])
    return Profile(sym, ProfileMeta(device="GPU", compute_stream=7), {"kernels": kernels, "ops": ops, "steps": st})


def test_gpu_breakdown_steps_and_per_step():
    whole = breakdown(_gpu())
    assert whole.ns("computing") == 6000 and whole.ns("uncovered") == 2 * 2500 and whole.check_sum() == 0
    assert whole.metrics["mm_cube"].count == 2 and whole.metrics["vec_notrans"].count == 2
    assert whole.ns("sdma") == 1000
    one = breakdown(_gpu(), step=1)
    assert one.ns("e2e") == 8500 and one.ns("computing") == 3000 and one.check_sum() == 0
    with pytest.raises(StepError, match="valid steps: 0, 1"):
        breakdown(_gpu(), step=5)
    res = compare_overall(_gpu(2), _gpu(1))
    assert res.per_step and "per step" in res.notes[0]
    comp = res.to_dict()["overall_metrics"][0]
    assert comp["baseline"]["duration_ms"] == comp["target"]["duration_ms"] == 0.003
    raw = compare_overall(_gpu(2), _gpu(1), per_step=False)
    assert not raw.per_step and raw.rows[0]["baseline"]["duration_ms"] == 0.006


def test_gpu_compat_reproduces_the_one_microsecond_ticks():
    rng = np.random.default_rng(3)
    n = 200
    start = rng.integers(0, 2_000_000, n)            # ns, fractional µs
    dur = rng.integers(100, 30_000, n)
    nccl = rng.random(n) < 0.3
    sym = SymbolTable()
    names = np.where(nccl, sym.intern("ncclKernel_x"), sym.intern("k"))
    kernels = make_table("kernels", name=names, kind=np.where(nccl, KIND_COMM, KIND_COMPUTE).astype(np.int8),
                         task_type=np.full(n, sym.intern("kernel")), stream=np.where(nccl, 20, 7),
                         start_ns=start, dur_ns=dur)
    p = Profile(sym, ProfileMeta(device="GPU", compute_stream=7), {"kernels": kernels})
    ticks: dict[int, int] = {}
    for s, d, c in zip(start.tolist(), dur.tolist(), nccl.tolist()):
        for t in range(int(s / 1000 + 1), int((s + d) / 1000 + 1)):
            ticks[t] = ticks.get(t, 0) + (1 if c else -100)
    b = breakdown(p, reference_compat=True)
    assert b.ns("computing") == 1000 * sum(v < 0 for v in ticks.values())
    assert b.ns("uncovered") == 1000 * sum(v > 0 for v in ticks.values())
    exact = breakdown(p)
    assert exact.check_sum() == 0 and abs(exact.ns("computing") - b.ns("computing")) < 1000 * n


def test_step_selection_takes_untagged_device_rows_inside_the_device_window():
    p = _npu()
    sel = select(p, 1)
    assert sel.kernels.tolist() == [True, True, True, True] and sel.window == (0, 9000)
    assert select(p, None).steps_count == 1


# ------------------------------------------------------------------------------------ golden

PAIRS = {
    "i": ("i_npu_l1r0_vs_l1r1", ("ascend-text", "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"),
          ("ascend-text", "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt")),
    "ii": ("ii_npu_l0r0_vs_l1r0", ("ascend-text", "npu/alexnet_ddp_2rank_level0/rank0_ascend_pt"),
           ("ascend-text", "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt")),
    "iii": ("iii_gpu_resnet50_vs_npu_l1r0",
            ("trace-json", "gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"),
            ("ascend-text", "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt")),
    "iv": ("iv_gpu_hta_control_vs_test", ("trace-json", "gpu/hta_trace_diff/control/control.pt.trace.json.gz"),
           ("trace-json", "gpu/hta_trace_diff/test/test.pt.trace.json.gz")),
    "v": ("v_npu_db_l1r0_vs_l1r1", ("ascend-db", "npu/alexnet_ddp_2rank_db_level1/rank0_ascend_pt"),
          ("ascend-db", "npu/alexnet_ddp_2rank_db_level1/rank1_ascend_pt")),
}
@pytest.fixture(scope="session")
def profiles():
    from tb_compare_plugin.loaders import load
    cache: dict = {}

    def get(spec):
        if spec not in cache:
            cache[spec] = load(spec[0], str(CORPUS / spec[1]))
        return cache[spec]
    return get


def _close(a, b):
    return abs(a - b) <= max(1e-3, 1e-3 * abs(b))


def _count(v):
    return "/" if v is None else v


def _golden_rows(pair):
    g = json.loads((GOLDEN / PAIRS[pair][0] / "golden.json").read_text())
    return g["sheets"]["OverallMetrics"]["rows"]


def _check(pair, ours, golden_rows, absent_ok):
    pending = {}
    for r in ours:
        pending.setdefault(r["name"], []).append(r)
    seen_order = []
    for g in golden_rows:
        name = g[0].strip("\t")
        mine = pending.get(name) or []
        if name in absent_ok:
            assert not mine, f"{pair}: {name} should be absent"
            continue
        assert mine, f"{pair}: reference row {name!r} missing"
        r = mine.pop(0)
        seen_order.append(r["name"])
        want = (g[1], g[3], g[4], g[6])
        got = (r["baseline"]["duration_ms"], _count(r["baseline"]["count"]),
               r["target"]["duration_ms"], _count(r["target"]["count"]))
        assert _close(got[0], want[0]) and _close(got[2], want[2]), f"{pair} {name}: {got} != {want}"
        assert got[1] == _count(want[1]) and got[3] == _count(want[3]), f"{pair} {name}: {got} != {want}"
        assert abs(r["diff_ms"] - (got[2] - got[0])) < 1e-9
    ours_order = [r["name"] for r in ours if r["name"] in set(seen_order)]
    assert ours_order == seen_order, f"{pair}: row order differs"
    return {n: rs for n, rs in pending.items() if rs}


def _sum(rows: dict, name: str, side: str, ref: bool = False) -> float:
    """Σ over the rows named ``name`` (a group's Wait / Transmit repeat per group); 0 if none."""
    return sum(float(r[side]["ms"] if ref else r[side]["duration_ms"]) for r in rows.get(name, []))


def _n(rows: dict, name: str, side: str, ref: bool = False) -> int:
    r = rows.get(name)
    if not r:
        return 0
    return r[0][side]["number"] if ref else (r[0][side]["count"] or 0)


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= og.DURATION_NS


def _ns_ms(x) -> float:
    return int(x) / 1e6


def _sdma_oracle(p) -> tuple[float, float]:
    """(our SDMA, the reference's SDMA) of one profile in ms, the documented way, in plain Python."""
    k = p.kernels
    names = [x.lower() for x in p.symbols.strings(k["name"].to_numpy())]
    types = p.symbols.strings(k["task_type"].to_numpy())
    streams, kinds, durs = (k[c].to_numpy().tolist() for c in ("stream", "kind", "dur_ns"))
    if p.meta.device == "GPU":
        on = [st == p.meta.compute_stream and any(w in n for w in ("htod", "dtod", "dtoh", "memset (device)"))
              for n, st in zip(names, streams)]
        ours = sum(d for d, x in zip(durs, on) if x)
        ref = sum(d for d, x, t in zip(durs, on, types) if x and t.lower() == "gpu_memcpy")
        return _ns_ms(ours), _ns_ms(ref)
    compute = {st for st, kd in zip(streams, kinds) if kd == KIND_COMPUTE}
    waits = {st for st, t in zip(streams, types) if t in ("EVENT_WAIT_SQE", "EVENT_WAIT")}
    chosen = (compute & waits) or compute
    ours = sum(d for d, st, t in zip(durs, streams, types)
               if st in chosen and t in ("SDMA_SQE", "PCIE_DMA_SQE", "MEMCPY_ASYNC"))
    return _ns_ms(ours), 0.0           # the reference finds no stream (text) or no task type (DB)


def _span_oracle(p) -> tuple[float, float]:
    """GPU E2E in ms: (every device event, the reference's kernel/gpu_memcpy events on streams ≠ 0)."""
    k = p.kernels
    types = [t.lower() for t in p.symbols.strings(k["task_type"].to_numpy())]
    start, dur, stream = (k[c].to_numpy().tolist() for c in ("start_ns", "dur_ns", "stream"))
    ev = list(zip(start, dur, types, stream))

    def span(xs):
        return _ns_ms(max(s + d for s, d, *_ in xs) - min(s for s, *_ in xs)) if xs else 0.0
    return span(ev), span([e for e in ev if e[2] in ("kernel", "gpu_memcpy") and e[3] != 0])


def _rule_stream_sdma(side, prof, O, R, rows):
    ours, ref = _sdma_oracle(prof)
    assert _near(_sum(O, "SDMA", side), ours), (side, _sum(O, "SDMA", side), ours)
    assert _near(_sum(R, "SDMA", side, True), ref), (side, _sum(R, "SDMA", side, True), ref)


def _rule_free_follows_sdma(side, prof, O, R, rows):
    d = lambda name: _sum(O, name, side) - _sum(R, name, side, True)  # noqa: E731
    assert _near(d("Free"), d("Free Time") - d("SDMA")), (side, d("Free"), d("Free Time"), d("SDMA"))


def _rule_wait_plane(side, prof, O, R, rows):
    assert _sum(R, "Wait", side, True) == 0
    assert _near(_sum(O, "Wait", side) + _sum(O, "Transmit", side), _sum(R, "Transmit", side, True))


_CONV_ROWS = ("Conv (Backward)", "Conv (Backward) (Cube)", "Conv (Backward) (Vector)", "Cube", "Vector",
              "Vector (Trans)", "Vector (No Trans)")


def _rule_conv_bwd_mask(side, prof, O, R, rows):
    if prof.meta.device != "GPU":
        for name in _CONV_ROWS:
            assert _near(_sum(O, name, side), _sum(R, name, side, True)), (side, name)
            assert _n(O, name, side) == _n(R, name, side, True), (side, name)
        return
    assert _sum(R, "Conv (Backward)", side, True) == 0 and _n(R, "Conv (Backward)", side, True) == 0
    for part, source in (("Conv (Backward) (Cube)", "Cube"), ("Conv (Backward) (Vector)", "Vector (No Trans)")):
        assert _near(_sum(O, part, side) + _sum(O, source, side), _sum(R, source, side, True)), (side, part)
        assert _n(O, part, side) + _n(O, source, side) == _n(R, source, side, True), (side, part)
    assert _n(O, "Conv (Backward)", side) > 0
    for total, parts in (("Conv (Backward)", ("Conv (Backward) (Cube)", "Conv (Backward) (Vector)")),
                         ("Vector", ("Vector (Trans)", "Vector (No Trans)"))):
        assert _near(_sum(O, total, side), sum(_sum(O, x, side) for x in parts)), (side, total)
        assert _n(O, total, side) == sum(_n(O, x, side) for x in parts), (side, total)


def _rule_gpu_memory_span(side, prof, O, R, rows):
    if prof.meta.device != "GPU":
        for name in ("E2E Time", "Free Time"):
            assert _near(_sum(O, name, side), _sum(R, name, side, True)), (side, name)
        return
    ours, ref = _span_oracle(prof)
    assert _near(_sum(O, "E2E Time", side), ours) and _near(_sum(R, "E2E Time", side, True), ref), (side, ours, ref)
    assert _near(_sum(O, "Free Time", side) - _sum(R, "Free Time", side, True), ours - ref)


def _rule_float_noise(side, prof, O, R, rows):
    for name in rows:
        assert name not in O and abs(_sum(R, name, side, True)) < 1e-9, (side, name)


# the rows each rule can explain (None: the rows it is named with)
RULE_ROWS = {"stream_sdma": {"SDMA"}, "free_follows_sdma": {"Free"}, "wait_plane": {"Wait", "Transmit"},
             "conv_bwd_mask": set(_CONV_ROWS), "gpu_memory_span": {"E2E Time", "Free Time"}, "float_noise": None}
RULES = {"stream_sdma": _rule_stream_sdma, "free_follows_sdma": _rule_free_follows_sdma,
         "wait_plane": _rule_wait_plane, "conv_bwd_mask": _rule_conv_bwd_mask,
         "gpu_memory_span": _rule_gpu_memory_span, "float_noise": _rule_float_noise}


@needs_corpus
@pytest.mark.parametrize("pair", list(PAIRS))
def test_golden_rows_default_are_the_reference_or_documented_deviations(pair, golden, profiles):
    """Our default figures, row by row, against the reference's: a row equals the reference's
    (name, depth, order, durations within 10 ns, Numbers) unless docs/deviations.md's
    machine-readable block names it; a named row must really differ, and the rule named with
    it must hold (computed the documented way from the reference's rows and the profile)."""
    _, b, t = PAIRS[pair]
    dev = og.deviations()["default"][pair]
    assert set(dev.values()) <= set(RULES), f"{pair}: unknown rules {set(dev.values()) - set(RULES)}"
    for name, rule in dev.items():
        assert RULE_ROWS[rule] is None or name in RULE_ROWS[rule], f"{pair}: rule {rule} does not explain {name!r}"
    res = compare_overall(profiles(b), profiles(t), per_step=False)
    ours = res.to_dict()["overall_metrics"]
    ref_rows = og.golden_rows(pair)
    O, R = og.by_name(ours), og.by_name(ref_rows)
    left = og.by_name(ours)
    deviating, order = set(), []
    for ref in ref_rows:
        mine = left.get(ref["name"]) or []
        if not mine:
            assert ref["name"] in dev, f"{pair}: reference row {ref['name']!r} missing and not documented"
            deviating.add(ref["name"])
            continue
        row = mine.pop(0)
        order.append(row["name"])
        assert row["depth"] == ref["depth"], (pair, ref["name"])
        if og.differs(row, ref):
            assert ref["name"] in dev, f"{pair}: {ref['name']!r} differs and is not documented: {row} vs {ref}"
            deviating.add(ref["name"])
    for name, rs in left.items():
        if rs:
            assert name in dev, f"{pair}: row {name!r} is not the reference's and is not documented"
            deviating.add(name)
    assert [r["name"] for r in ours if r["name"] in set(order)] == order, f"{pair}: row order differs"
    assert deviating == set(dev), f"{pair}: documented rows that do not deviate: {set(dev) - deviating}"
    for rule in sorted(set(dev.values())):
        rows = sorted(n for n, r in dev.items() if r == rule)
        for side, prof in (("baseline", profiles(b)), ("target", profiles(t))):
            RULES[rule](side, prof, O, R, rows)
    for side in (res.baseline, res.target):
        assert side.check_sum() == 0


@needs_corpus
@pytest.mark.parametrize("pair", list(PAIRS))
def test_golden_rows_reference_compat(pair, golden, profiles):
    _, b, t = PAIRS[pair]
    res = compare_overall(profiles(b), profiles(t), per_step=False, reference_compat=True)
    absent = set(og.deviations()["compat"].get(pair, {}))
    left = _check(pair, res.to_dict()["overall_metrics"], _golden_rows(pair), absent)
    assert not left, f"{pair}: rows the reference does not have: {sorted(left)}"


_INTERNAL_MS = {"conv_time_fwd_cube": "conv_fwd_cube", "conv_time_fwd_vector": "conv_fwd_vec",
                "conv_time_bwd_cube": "conv_bwd_cube", "conv_time_bwd_vector": "conv_bwd_vec",
                "fa_time_fwd_cube": "fa_fwd_cube", "fa_time_bwd_cube": "fa_bwd_cube",
                "matmul_time_cube": "mm_cube", "matmul_time_vector": "mm_vec", "page_attention_time": "pa",
                "vector_time_trans": "vec_trans", "vector_time_notrans": "vec_notrans",
                "sdma_time_tensor_move": "sdma_tm", "other_cube_time": "cube"}
_INTERNAL_S = {"compute_time": "computing", "communication_not_overlapped": "uncovered", "e2e_time": "e2e",
               "scheduling_time": "free_time", "lccl_time": "lccl"}


@needs_corpus
@pytest.mark.parametrize("pair", ["i", "ii", "iii", "iv"])
def test_internals(pair, golden, profiles):
    """Per-side unrounded ProfilingInfo fields of the reference (compat mode reproduces all)."""
    path = GOLDEN / PAIRS[pair][0] / "internals.json"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    internals = json.loads(path.read_text())
    for side, spec in (("baseline_side", PAIRS[pair][1]), ("target_side", PAIRS[pair][2])):
        ref = internals[side]["overall_metrics_internal"]
        sb = breakdown(profiles(spec), reference_compat=True)
        for f, key in _INTERNAL_MS.items():
            assert _close(sb.ns(key) / 1e6, ref[f]), (pair, side, f)
            assert sb.metrics[key].count == ref[f.replace("_time", "_num")], (pair, side, f)
        for f, key in _INTERNAL_S.items():
            assert _close(sb.ns(key) / 1e6, ref[f] * 1e3), (pair, side, f)
        assert _close(sb.ns("sdma") / 1e6, ref["sdma_time_stream"])
        assert sb.hide_op_details == ref["hide_op_details"]
        for gname, wt in ref["communication_group_time"].items():
            g = next(x for x in sb.groups if x.key == gname)
            assert _close(g.wait.duration_ns / 1e6, wt["wait"] / 1e3)
            assert _close(g.transmit.duration_ns / 1e6, wt["transmit"] / 1e3)
        assert _close(sb.memory_peak_gb or 0.0, ref["memory_used"])
        if ref["sdma_bandwidth"]:
            assert _close(sb.bandwidth["sdma_gbps"], ref["sdma_bandwidth"])


@needs_corpus
def test_corpus_steps_and_per_step(profiles):
    gpu = profiles(PAIRS["iii"][1])
    npu = profiles(PAIRS["iii"][2])
    res = compare_overall(gpu, npu)                    # 6 GPU steps vs 1 NPU step: per step
    assert res.per_step and res.to_dict()["steps_count"] == {"baseline": 6, "target": 1}
    assert abs(res.rows[0]["baseline"]["duration_ms"] - 591.532 / 6) < 1e-6
    parts = [breakdown(gpu, s) for s in gpu.step_ids()]
    assert sum(p.ns("computing") for p in parts) == breakdown(gpu).ns("computing")
    assert all(p.check_sum() == 0 for p in parts)
    assert breakdown(npu, 50).ns("e2e") == breakdown(npu).ns("e2e")
    db = profiles(PAIRS["v"][1])
    assert breakdown(db, 50).ns("computing") == breakdown(db).ns("computing")


@needs_corpus
@pytest.mark.parametrize("pair", list(PAIRS))
def test_screen_table_reference_compat(pair, golden, profiles):
    from tb_compare_plugin.presenters.overall_screen import screen_table
    _, b, t = PAIRS[pair]
    res = compare_overall(profiles(b), profiles(t), per_step=False, reference_compat=True)
    got = screen_table(res)
    want = json.loads((GOLDEN / PAIRS[pair][0] / "golden.json").read_text())["screen_table"]
    if "Other" in og.deviations()["compat"].get(pair, {}):      # 2.2e-16 ms of float noise shown as "0.000s"
        i = want["headers"].index("Other Time")
        want = {"headers": want["headers"][:i] + want["headers"][i + 1:],
                "rows": [r[:i] + r[i + 1:] for r in want["rows"]]}
    assert got["headers"] == want["headers"]
    assert [[c.strip() for c in r] for r in got["rows"]] == want["rows"]


# Intervals as drawn by hypothesis: small coordinates (many overlaps, touching ends, empty
# pieces) or ns-scale epoch timestamps (int64 arithmetic near 1.7e18).
_BASES = st.sampled_from([0, 1_736_408_883_688_177_930])
_PIECES = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 40)), max_size=25)


def _arrays(base, pieces):
    s = np.array([base + x for x, _ in pieces], np.int64)
    return s, s + np.array([d for _, d in pieces], np.int64)


def _pieces(s, e):
    got = list(zip(s.tolist(), e.tolist()))
    assert all(b > a for a, b in got), "an empty piece"
    assert all(got[i][1] <= got[i + 1][0] for i in range(len(got) - 1)), "pieces unsorted or overlapping"
    return got


@settings(max_examples=200, deadline=None)
@given(_BASES, _PIECES, _PIECES)
def test_subtract_and_intersect_match_the_slow_oracle(base, a, b):
    """What the NPU overall engine uses for uncovered communication and group overlaps,
    against pure-Python interval algebra (tests/interval_oracle.py)."""
    from tb_compare_plugin.engines.overall_npu import intersect, subtract
    a_s, a_e = _arrays(base, a)
    b_s, b_e = _arrays(base, b)
    la, lb = list(zip(a_s.tolist(), a_e.tolist())), list(zip(b_s.tolist(), b_e.tolist()))
    diff = _pieces(*subtract(a_s, a_e, b_s, b_e))
    assert oracle.union(diff) == oracle.subtract(la, lb)
    both = _pieces(*intersect(a_s, a_e, b_s, b_e))
    assert both == oracle.intersect(la, lb)              # non-touching pieces: exactly the oracle's
    assert oracle.length(both) + oracle.length(diff) == oracle.length(la)


@settings(max_examples=100, deadline=None)
@given(_BASES, _PIECES, _PIECES)
def test_union_and_overlap_length_match_the_slow_oracle(base, a, b):
    from tb_compare_plugin.model.intervals import overlap_length, total_length, union
    a_s, a_e = _arrays(base, a)
    b_s, b_e = _arrays(base, b)
    la, lb = list(zip(a_s.tolist(), a_e.tolist())), list(zip(b_s.tolist(), b_e.tolist()))
    us, ue = union(a_s, a_e)
    got = [(x, y) for x, y in zip(us.tolist(), ue.tolist()) if y > x]   # union keeps empty pieces alone
    assert got == oracle.union(la)
    assert total_length(a_s, a_e) == oracle.length(la)
    assert overlap_length(a_s, a_e, b_s, b_e) == oracle.length(oracle.intersect(la, lb))
