"""Communication groups across platforms: GPU NCCL process groups per group in the overall
breakdown, and the pairing of groups the two sides name differently (GPU ``default_pg: 0`` vs
Ascend ``Group 0 Communication``) in the overall and communication engines."""
from __future__ import annotations

import numpy as np
import pytest

from tb_compare_plugin.engines.communication import compare_communication
from tb_compare_plugin.presenters.reference_rows import communication_compare_rows
from tb_compare_plugin.engines.overall import GroupMetrics, Metric, SideBreakdown, breakdown, compare_overall
from tb_compare_plugin.engines.overall_rows import GroupSig, build_rows, pair_leftover_groups
from tb_compare_plugin.model import KIND_COMM, KIND_COMPUTE, Profile, ProfileMeta, SymbolTable, make_table

from conftest import SAMPLES
from test_engine_communication import _profile

MS = 1_000_000
ARROW = " ↔ "
_CACHE: dict = {}
NSTEPS = 6                      # samples/: 6 steps a side, the all-reduce jittered per step (expected.json)


def _fig(run: str, key: str = "total") -> dict:
    import json
    return json.loads((SAMPLES / "expected.json").read_text())["runs"][run]["figures"][key]


def _sample(run: str):
    from tb_compare_plugin.loaders import load
    spec = {"gpu": ("trace-json", SAMPLES / "baseline_gpu/worker0.pt.trace.json"),
            "npu": ("ascend-text", SAMPLES / "target_npu/rank0_ascend_pt"),
            "v2": ("ascend-text", SAMPLES / "target_npu_v2/rank0_ascend_pt")}[run]
    if run not in _CACHE:
        _CACHE[run] = load(spec[0], str(spec[1]))
    return _CACHE[run]


def _group_block(rows: list[dict]) -> list[dict]:
    """The rows between Uncovered Communication Time and Free Time."""
    names = [r["name"] for r in rows]
    return rows[names.index("Uncovered Communication Time") + 1:names.index("Free Time")]


# ------------------------------------------------------------------------------ samples

def test_gpu_breakdown_has_one_group_with_no_wait():
    gpu = _sample("gpu")
    b = breakdown(gpu)
    assert len(b.groups) == 1
    g = b.groups[0]
    assert (g.key, g.label, g.pg_name) == ("0", "default_pg: 0", "default_pg")
    comm = _fig("baseline_gpu")["communication_us"] * 1000
    assert (g.total.duration_ns, g.wait.duration_ns, g.transmit.duration_ns) == (comm, 0, comm)
    assert g.collectives == {"allreduce"}
    assert g.total.kernels[0][2] == NSTEPS and g.total.kernels[0][0].startswith("ncclDevKernel_AllReduce")
    assert breakdown(gpu, step=1).groups[0].total.duration_ns == _fig("baseline_gpu", "1")["communication_us"] * 1000
    assert breakdown(gpu, reference_compat=True).groups == []        # the reference has none


def test_overview_pairs_the_gpu_and_npu_groups():
    res = compare_overall(_sample("gpu"), _sample("npu"))
    block = _group_block(res.rows)
    assert [(r["name"], r["depth"]) for r in block] == [
        ("default_pg: 0" + ARROW + "Group 0 Communication", 1), ("Wait", 2), ("Transmit", 2)]
    grp, wait, transmit = block
    b, t = _fig("baseline_gpu"), _fig("target_npu")
    assert (grp["baseline"]["duration_ms"], grp["target"]["duration_ms"]) == (b["communication_ms"],
                                                                              t["communication_ms"])
    assert grp["diff_ms"] == pytest.approx(0.5 * NSTEPS)
    assert (wait["baseline"]["duration_ms"], wait["target"]["duration_ms"]) == (0.0, _fig("target_npu")["wait_ms"])
    assert (transmit["baseline"]["duration_ms"], transmit["target"]["duration_ms"]) == (b["transmit_ms"],
                                                                                        t["transmit_ms"])
    note = next(n for n in res.notes if "paired" in n)
    assert "'default_pg: 0'" in note and "'Group 0 Communication'" in note and "only unmatched" in note
    assert any("Wait 0" in n for n in res.notes)
    unc = next(r for r in res.rows if r["name"] == "Uncovered Communication Time")
    assert grp["baseline"]["duration_ms"] == unc["baseline"]["duration_ms"]


def test_overview_reference_compat_keeps_the_reference_rows():
    res = compare_overall(_sample("gpu"), _sample("npu"), reference_compat=True)
    block = _group_block(res.rows)
    assert [r["name"] for r in block] == ["Group 0 Communication", "Wait", "Transmit"]
    assert block[0]["baseline"]["duration_ms"] == 0.0
    assert block[0]["target"]["duration_ms"] == _fig("target_npu")["communication_ms"]
    assert not any("paired" in n for n in res.notes)


def test_communication_pairs_the_gpu_and_npu_groups():
    res = compare_communication(_sample("gpu"), _sample("npu"))
    rows = res.to_list()
    assert [(r["name"], r["group"], r["aggregate"], r["status"]) for r in rows] == [
        ("allreduce", "default_pg: 0" + ARROW + "Group 0 Communication", False, "both")]
    r = rows[0]
    assert r["diff_ms"] == pytest.approx(0.5 * NSTEPS, rel=0.02)
    assert r["baseline"]["calls"] == r["target"]["calls"] == NSTEPS
    assert r["target"]["wait_ms"] == pytest.approx(0.4 * NSTEPS)      # the least-waiting plane, as the overview
    assert "wait_ms" not in r["baseline"]                         # NCCL: no task data
    assert len(res.notes) == 1 and "paired" in res.notes[0] and "aggregate" not in res.notes[0]
    ref = communication_compare_rows(res)                       # the reference layout stays per name
    assert [r[8] for r in ref if r[8] != "|"] == ["allreduce"] and ref[0][15] == pytest.approx(500.0 * NSTEPS)


def test_same_names_unchanged():
    npu, v2 = _sample("npu"), _sample("v2")
    res = compare_overall(npu, v2)
    block = _group_block(res.rows)
    assert [r["name"] for r in block] == ["Group 0 Communication", "Wait", "Transmit"]
    assert block[0]["diff_ms"] == pytest.approx(-0.3 * NSTEPS) and block[1]["diff_ms"] == pytest.approx(-0.3 * NSTEPS)
    assert block[2]["diff_ms"] == pytest.approx(0.0, abs=1e-9)
    assert not any("paired" in n for n in res.notes)
    comm = compare_communication(npu, v2)
    assert [(r["group"], r["status"]) for r in comm.to_list()] == [("Group 0 Communication", "both")]
    assert comm.to_list()[0]["diff_ms"] == pytest.approx(-0.3 * NSTEPS)
    assert comm.notes == []


def test_swap_negates_diffs():
    gpu, npu = _sample("gpu"), _sample("npu")
    a, b = compare_overall(gpu, npu), compare_overall(npu, gpu)
    assert [r["name"] for r in b.rows if ARROW in r["name"]] == ["Group 0 Communication" + ARROW + "default_pg: 0"]
    assert len(a.rows) == len(b.rows)
    for x, y in zip(a.rows, b.rows):
        assert y["diff_ms"] == pytest.approx(-x["diff_ms"], abs=1e-12)
        assert x["baseline"] == y["target"]
    ca, cb = compare_communication(gpu, npu).to_list(), compare_communication(npu, gpu).to_list()
    assert cb[0]["group"] == "Group 0 Communication" + ARROW + "default_pg: 0"
    assert cb[0]["diff_ms"] == -ca[0]["diff_ms"] and cb[0]["status"] == "both"


# ------------------------------------------------------------------------------ the pairing rule

def _sig(name, first, *colls):
    return GroupSig(name, first, frozenset(colls))


def test_rule_one_each_side():
    assert pair_leftover_groups([_sig("0", 5, "allreduce")], [_sig("G0", 9, "allreduce")], False, False)[0] == [
        (0, 0)]
    # nothing in common: not the same group
    assert pair_leftover_groups([_sig("0", 5, "allreduce")], [_sig("G0", 9, "broadcast")], False, False)[0] == []
    assert pair_leftover_groups([], [_sig("G0", 9, "broadcast")], False, False) == ([], None)


def test_rule_two_each_side():
    b = [_sig("0", 0, "allreduce"), _sig("1", 10, "allreduce")]
    t = [_sig("Group 1 Communication", 50, "allreduce"), _sig("Group 0 Communication", 20, "allreduce")]
    pairs, why = pair_leftover_groups(b, t, False, False)
    assert pairs == [(0, 1), (1, 0)] and "order" in why               # by first appearance
    tie = [_sig("Group 1 Communication", 20, "allreduce"), _sig("Group 0 Communication", 20, "allreduce")]
    assert pair_leftover_groups(b, tie, False, False)[0] == []       # same start: order undefined
    other = [_sig("X", 0, "allreduce"), _sig("Y", 10, "broadcast")]
    assert pair_leftover_groups(b, other, False, False)[0] == []     # different collectives
    # distinct collective sets pair by set, whatever the order
    b2 = [_sig("tp", 0, "allgather", "reducescatter"), _sig("dp", 10, "allreduce")]
    t2 = [_sig("G1", 0, "allreduce"), _sig("G0", 30, "reducescatter", "allgather")]
    pairs, why = pair_leftover_groups(b2, t2, False, False)
    assert pairs == [(0, 1), (1, 0)] and "collective types" in why
    # unequal counts: nothing
    assert pair_leftover_groups(b, t[:1], False, False)[0] == []
    assert pair_leftover_groups(b + [_sig("2", 99, "allreduce")], t, False, False)[0] == []


def test_rule_same_platform():
    b, t = [_sig("g_b", 0, "allreduce")], [_sig("g_c", 0, "allreduce")]
    assert pair_leftover_groups(b, t, True, True)[0] == []           # names match elsewhere
    assert pair_leftover_groups(b, t, True, False)[0] == [(0, 0)]    # two naming schemes (text vs DB)


# ------------------------------------------------------------------------------ hand-made engines

def _two_groups(device, names, starts, durs, pg=None, colls=("hcom_allReduce__1", "hcom_allReduce__2")):
    return _profile([(colls[i], names[i], starts[i], durs[i]) for i in range(len(names))], device=device, pg=pg)


GPU_AR = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"


def test_communication_two_groups_pair_by_order_only_when_unambiguous():
    gpu = _two_groups("GPU", ["0", "1"], [0, 100], [10, 20], pg={"0": "default_pg", "1": "dp"},
                      colls=(GPU_AR, GPU_AR))
    npu = _two_groups("NPU", ["Group 3 Communication", "Group 7 Communication"], [5, 200], [15, 30])
    res = compare_communication(gpu, npu)
    rows = res.to_list()
    assert [(r["group"], r["status"], r["aggregate"]) for r in rows] == [
        ("default_pg: 0" + ARROW + "Group 3 Communication", "both", False),
        ("dp: 1" + ARROW + "Group 7 Communication", "both", False)]
    assert rows[0]["diff_ms"] == pytest.approx(0.005) and rows[1]["diff_ms"] == pytest.approx(0.01)
    assert "order of first appearance" in res.notes[0]
    # both NPU groups start together: ambiguous, so no pairing and the aggregate row comes back
    tie = _two_groups("NPU", ["Group 3 Communication", "Group 7 Communication"], [5, 5], [15, 30])
    res = compare_communication(gpu, tie)
    rows = res.to_list()
    assert rows[0]["aggregate"] and rows[0]["diff_ms"] == pytest.approx(0.015)
    assert [r["status"] for r in rows[1:]] == ["baseline_only"] * 2 + ["target_only"] * 2
    assert not any("paired" in n for n in res.notes)
    # three groups against two: no pairing either
    three = _profile([("hcom_allReduce__1", f"Group {i} Communication", 10 * i, 5) for i in range(3)])
    assert compare_communication(gpu, three).to_list()[0]["aggregate"]


def test_communication_same_platform_keeps_name_mismatches_apart():
    base = _profile([("hcom_allReduce__1", "g_a", 0, 10), ("hcom_allReduce__2", "g_b", 20, 30)])
    tgt = _profile([("hcom_allReduce__1", "g_a", 0, 15), ("hcom_allReduce__2", "g_c", 20, 30)])
    rows = compare_communication(base, tgt).to_list()
    assert [(r["group"], r["status"]) for r in rows] == [
        ("", "both"), ("g_a", "both"), ("g_b", "baseline_only"), ("g_c", "target_only")]


def _gpu_with_groups():
    """Compute [0, 100) and [300, 400) µs; group "0" kernels [50, 150) and [500, 600); group "1"
    kernel [120, 320) µs (overlapping group "0" over [120, 150))."""
    sym = SymbolTable()
    k = [("gemm", KIND_COMPUTE, 7, 0, 100), ("gemm", KIND_COMPUTE, 7, 300, 100),
         ("ncclKernel_AllReduce", KIND_COMM, 20, 50, 100), ("ncclKernel_AllGather", KIND_COMM, 21, 120, 200),
         ("ncclKernel_AllReduce", KIND_COMM, 20, 500, 100)]
    name, kind, stream, start, dur = map(list, zip(*k))
    kernels = make_table("kernels", name=sym.intern_many(name), kind=np.array(kind, np.int8), stream=stream,
                         task_type=sym.intern_many(["kernel"] * 5), start_ns=[s * 1000 for s in start],
                         dur_ns=[d * 1000 for d in dur])
    comm = make_table("comm_ops", kernel=[2, 3, 4], group=sym.intern_many(["0", "1", "0"]),
                      name=kernels["name"].to_numpy()[[2, 3, 4]], op_type=sym.intern_many(["allreduce", "allgather",
                                                                                           "allreduce"]),
                      start_ns=[50_000, 120_000, 500_000], dur_ns=[100_000, 200_000, 100_000])
    meta = ProfileMeta(device="GPU", compute_stream=7, pg_names={"0": "default_pg"})
    return Profile(sym, meta, {"kernels": kernels, "comm_ops": comm})


def test_gpu_groups_exact_uncovered_and_overlap():
    b = breakdown(_gpu_with_groups())
    assert b.ns("uncovered") == (150 - 100 + 300 - 150 + 100) * 1000 and b.check_sum() == 0
    g0, g1 = b.groups
    assert (g0.label, g0.total.duration_ns, g0.wait.duration_ns) == ("default_pg: 0", 150_000, 0)
    assert (g1.label, g1.total.duration_ns, g1.transmit.duration_ns) == ("1", 180_000, 180_000)
    assert g0.collectives == {"allreduce"} and g1.collectives == {"allgather"}
    assert b.overlaps == [("default_pg", "1", 30_000)]
    rows = compare_overall(_gpu_with_groups(), _gpu_with_groups()).rows
    names = [r["name"] for r in _group_block(rows)]
    assert names == ["default_pg: Communication", "Transmit", "1", "Transmit", "Uncovered Communication Overlapped",
                     "default_pg & 1"]


def test_gpu_unnamed_only_group_shows_no_rows():
    p = _gpu_with_groups()
    co = p.comm_ops.copy()
    co["group"] = 0
    p.tables["comm_ops"] = co
    b = breakdown(p)
    assert len(b.groups) == 1 and b.groups[0].redundant and b.groups[0].label == "(no group)"
    assert _group_block(compare_overall(p, p).rows) == []            # it would repeat Uncovered


def _side(device, groups):
    sb = SideBreakdown(device=device, step=None, steps_count=1)
    for key, first, ns, wait, colls in groups:
        sb.groups.append(GroupMetrics(key, key, None, Metric(ns), Metric(wait), Metric(ns - wait), first,
                                      frozenset(colls)))
    return sb


def test_overview_rows_two_groups_each_side():
    gpu = _side("GPU", [("0", 0, 3 * MS, 0, {"allreduce"}), ("1", 10, 1 * MS, 0, {"allreduce"})])
    npu = _side("NPU", [("Group 9 Communication", 7, 4 * MS, MS, {"allreduce"}),
                        ("Group 2 Communication", 99, 2 * MS, 0, {"allreduce"})])
    notes: list = []
    rows = [r for r in build_rows(gpu, npu, notes=notes) if r["depth"] == 1 and "Communication" in r["name"]]
    assert [(r["name"], r["diff_ms"]) for r in rows] == [("0" + ARROW + "Group 9 Communication", 1.0),
                                                         ("1" + ARROW + "Group 2 Communication", 1.0)]
    assert len(notes) == 1 and "order" in notes[0]
    # in reference-compatible mode nothing is paired across names
    compat = [r["name"] for r in build_rows(gpu, npu, compat=True) if r["depth"] == 1]
    assert compat == ["0", "1", "Group 9 Communication", "Group 2 Communication"]
    # ambiguous (one NPU group carries another collective): left apart
    npu.groups[1].collectives = frozenset({"broadcast"})
    names = [r["name"] for r in build_rows(gpu, npu) if r["depth"] == 1]
    assert not any(ARROW in n for n in names)
