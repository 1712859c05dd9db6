"""Tests of the communication comparison engine: hand-made profiles, then the real corpus
against the reference's CommunicationCompare sheets (golden pairs i, ii, iv, v)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tb_compare_plugin.engines.communication import collective_name, compare_communication
from tb_compare_plugin.presenters.reference_rows import (COMMUNICATION_COMPARE_HEADERS as REFERENCE_HEADERS,
                                                         communication_compare_rows)
from tb_compare_plugin.model import Profile, ProfileMeta, SymbolTable, make_table

US = 1000  # ns per µs


def _profile(ops, tasks=(), steps=(), device="NPU", link=True, pg=None):
    """ops: (name, group, start_us, dur_us[, wait_us, bytes, op_type]);
    tasks: (name, plane, start_us, dur_us[, bytes, src, dst, transport]) linked by time when link."""
    sym = SymbolTable()
    ops = [tuple(o) + (None,) * (7 - len(o)) for o in ops]
    om = make_table("comm_ops", len(ops),
                    name=sym.intern_many([o[0] for o in ops]),
                    group=sym.intern_many([o[1] for o in ops]),
                    op_type=sym.intern_many([o[6] for o in ops]),
                    start_ns=[o[2] * US for o in ops], dur_ns=[o[3] * US for o in ops],
                    wait_ns=[-1 if o[4] is None else o[4] * US for o in ops],
                    bytes=[-1 if o[5] is None else o[5] for o in ops])
    tasks = [tuple(t) + (None,) * (8 - len(t)) for t in tasks]
    start = np.array([t[2] * US for t in tasks], dtype=np.int64)
    comm_op = np.full(len(tasks), -1, dtype=np.int64)
    if link and len(tasks):
        s = om["start_ns"].to_numpy()
        e = s + om["dur_ns"].to_numpy()
        for i, ts in enumerate(start):
            hit = np.flatnonzero((s <= ts) & (ts <= e))
            comm_op[i] = hit[0] if len(hit) else -1
    grp = [ops[int(k)][1] if k >= 0 else ops[0][1] for k in comm_op] if ops else [""] * len(tasks)
    tm = make_table("comm_tasks", len(tasks), name=sym.intern_many([t[0] for t in tasks]),
                    group=sym.intern_many(grp), plane=[t[1] for t in tasks], start_ns=start,
                    dur_ns=[t[3] * US for t in tasks], comm_op=comm_op,
                    bytes=[-1 if t[4] is None else t[4] for t in tasks],
                    src_rank=[-1 if t[5] is None else t[5] for t in tasks],
                    dst_rank=[-1 if t[6] is None else t[6] for t in tasks],
                    transport=sym.intern_many([t[7] for t in tasks]))
    st = make_table("steps", len(steps), step=[s[0] for s in steps], start_ns=[s[1] * US for s in steps],
                    end_ns=[s[2] * US for s in steps])
    meta = ProfileMeta(device=device, pg_names=pg or {})
    return Profile(symbols=sym, meta=meta, tables={"comm_ops": om, "comm_tasks": tm, "steps": st})


G0 = "Group 0 Communication"
BASE = _profile(
    [("hcom_allReduce__1_0_1", G0, 0, 100), ("hcom_allReduce__1_1_1", G0, 200, 50),
     ("hcom_broadcast__1_2_1", G0, 300, 10)],
    [("Memcpy", 1, 0, 10, 1000, 0, 1, "SDMA"), ("Notify_Wait", 2, 5, 60), ("Notify_Wait", 3, 40, 40),
     ("Memcpy", 1, 200, 20, 3000, 0, 1, "SDMA"), ("Notify_Wait", 2, 210, 5),
     ("Memcpy", 1, 300, 5, 500, 0, 0, "SDMA")],
    steps=[(7, 0, 400)])
TARGET = _profile(
    [("hcom_allReduce__2_0_1", G0, 1000, 80), ("hcom_allReduce__2_1_1", G0, 1100, 40)],
    [("Notify_Wait", 2, 1000, 30), ("Memcpy", 1, 1030, 10, 1000, 0, 1, "SDMA"),
     ("Memcpy", 1, 1100, 20, 3000, 0, 1, "SDMA")])


# ------------------------------------------------------------------------------ unit tests

@pytest.mark.parametrize("raw,want", [
    ("hcom_allReduce__586_0_1", "allreduce"), ("hcom_allReduce_", "allreduce"),
    ("hcom_broadcast__2_1_1", "broadcast"), ("allreduce", "allreduce"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "allreduce"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "sendrecv"),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "reducescatter"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "broadcast"),
    ("nccl:all_reduce", "allreduce"), ("nccl:_all_gather_base", "allgather"), ("all_to_all", "alltoall"),
    ("", ""),
])
def test_collective_name(raw, want):
    assert collective_name(raw) == want


def test_rows_stats_and_tasks():
    res = compare_communication(BASE, TARGET)
    rows = res.to_list()
    assert [(r["name"], r["group"], r["status"]) for r in rows] == [
        ("allreduce", G0, "both"), ("broadcast", G0, "baseline_only")]
    ar = rows[0]
    assert ar["baseline"]["calls"] == 2 and ar["baseline"]["total_ms"] == pytest.approx(0.15)
    assert ar["baseline"]["max_ms"] == pytest.approx(0.1) and ar["baseline"]["min_ms"] == pytest.approx(0.05)
    assert ar["target"]["avg_ms"] == pytest.approx(0.06)
    assert ar["diff_ms"] == pytest.approx(-0.03) and ar["ratio"] == pytest.approx(0.8)
    # wait = the least-waiting plane's Notify_Wait time inside the op (the overview's rule):
    # planes wait [5,65) and [40,80) -> min(60, 40) = 40 µs, + 5 µs in the second op
    assert ar["baseline"]["wait_ms"] == pytest.approx(0.045)
    assert ar["baseline"]["transit_ms"] == pytest.approx(0.105)
    # bytes moved between ranks / link busy time (the local Memcpy of broadcast excluded)
    assert ar["baseline"]["bytes"] == 4000
    assert ar["baseline"]["bandwidth_gbps"] == pytest.approx(4000 / 30000)
    bc = rows[1]
    assert "bytes" not in bc["baseline"] and bc["target"] == {
        "calls": 0, "total_ms": 0.0, "avg_ms": None, "max_ms": None, "min_ms": None}
    assert bc["ratio"] == 0.0
    assert [t["name"] for t in ar["tasks"]] == ["Memcpy", "Notify_Wait"]
    nw = ar["tasks"][1]
    assert nw["baseline"]["calls"] == 3 and nw["target"]["calls"] == 1
    assert nw["diff_ms"] == pytest.approx((30 - 105) / 1000)
    json.dumps(rows, allow_nan=False)       # JSON-safe


def test_reference_rows_layout():
    res = compare_communication(BASE, TARGET)
    assert len(REFERENCE_HEADERS) == 17
    rows = communication_compare_rows(res)
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    assert all(len(r) == 17 for r in rows)
    assert rows[0][1:8] == ["allreduce", None, 2, 150.0, 75.0, 100.0, 50.0]
    assert rows[0][8:15] == ["allreduce", None, 2, 120.0, 60.0, 80.0, 40.0]
    assert rows[0][15:] == [-30.0, 0.8]
    # tasks paired by name although the target lists them in another order
    assert rows[1][1:3] == ["|", "Memcpy"] and rows[1][8:10] == ["|", "Memcpy"]
    assert rows[1][3:5] == [2, 30.0] and rows[1][10:12] == [2, 30.0] and rows[1][15:] == [None, None]
    assert rows[2][2] == rows[2][9] == "Notify_Wait"
    # baseline-only name: the missing side is blank except Total = 0, ratio 0
    assert rows[3][8:15] == [None, None, None, 0, None, None, None]
    assert rows[3][15:] == [-10.0, 0.0]
    assert rows[4][1:3] == ["|", "Memcpy"] and rows[4][8:15] == [None, None, None, 0, None, None, None]


def test_target_only_ratio_is_inf_in_sheet_and_none_in_json():
    res = compare_communication(TARGET, BASE)
    bc = [r for r in res.to_list() if r["name"] == "broadcast"][0]
    assert bc["status"] == "target_only" and bc["ratio"] is None
    ref = [r for r in communication_compare_rows(res) if r[8] == "broadcast"][0]
    assert ref[1:8] == [None, None, None, 0, None, None, None] and math.isinf(ref[16])


def test_swap_negates_every_diff():
    a, b = compare_communication(BASE, TARGET), compare_communication(TARGET, BASE)
    da = {(r["name"], r["group"]): r for r in a.to_list()}
    db = {(r["name"], r["group"]): r for r in b.to_list()}
    assert da.keys() == db.keys()
    for k in da:
        assert db[k]["diff_ms"] == -da[k]["diff_ms"]
        assert da[k]["baseline"] == db[k]["target"]
        ta = {t["name"]: t["diff_ms"] for t in da[k]["tasks"]}
        tb = {t["name"]: t["diff_ms"] for t in db[k]["tasks"]}
        assert tb == {n: -v for n, v in ta.items()}


def test_groups_differ_gives_aggregate_then_group_rows():
    base = _profile([("hcom_allReduce__1", "g_a", 0, 10), ("hcom_allReduce__2", "g_b", 20, 30)])
    tgt = _profile([("hcom_allReduce__1", "g_a", 0, 15)])
    res = compare_communication(base, tgt)
    rows = res.to_list()
    assert [(r["group"], r["aggregate"], r["status"]) for r in rows] == [
        ("", True, "both"), ("g_a", False, "both"), ("g_b", False, "baseline_only")]
    assert rows[0]["baseline"]["total_ms"] == pytest.approx(0.04)
    assert rows[0]["diff_ms"] == pytest.approx(-0.025)
    assert res.notes and "g_b" in res.notes[0]
    assert len(communication_compare_rows(res)) == 1          # the reference sheet is per name only
    # the same groups on both sides: no aggregate row
    same = compare_communication(base, base).to_list()
    assert [r["aggregate"] for r in same] == [False, False]


def test_pg_name_labels_the_group():
    p = _profile([("hcom_allReduce__1", G0, 0, 10)], pg={G0: "dp"})
    assert compare_communication(p, p).to_list()[0]["group"] == "dp: " + G0


def test_step_filter_and_invalid_step():
    res = compare_communication(BASE, TARGET, base_step=7)
    assert res.to_list() == compare_communication(BASE, TARGET).to_list()
    two = _profile([("hcom_allReduce__1", G0, 0, 10), ("hcom_allReduce__2", G0, 100, 30)],
                   [("Memcpy", 1, 1, 2), ("Memcpy", 1, 101, 5)], steps=[(1, 0, 50), (2, 50, 200)])
    r2 = compare_communication(two, two, base_step=2).to_list()[0]
    assert r2["baseline"]["calls"] == 1 and r2["baseline"]["total_ms"] == pytest.approx(0.03)
    assert r2["tasks"][0]["baseline"]["total_ms"] == pytest.approx(0.005)
    assert r2["target"]["calls"] == 2
    with pytest.raises(ValueError, match=r"Invalid step id: 9 .*valid steps: 1, 2"):
        compare_communication(two, two, target_step=9)
    with pytest.raises(ValueError, match="no steps"):
        compare_communication(TARGET, TARGET, base_step=1)


def test_unlinked_tasks_are_linked_by_time():
    linked = compare_communication(BASE, TARGET).to_list()
    b2 = _profile([("hcom_allReduce__1_0_1", G0, 0, 100), ("hcom_allReduce__1_1_1", G0, 200, 50),
                   ("hcom_broadcast__1_2_1", G0, 300, 10)],
                  [("Memcpy", 1, 0, 10, 1000, 0, 1, "SDMA"), ("Notify_Wait", 2, 5, 60),
                   ("Notify_Wait", 3, 40, 40), ("Memcpy", 1, 200, 20, 3000, 0, 1, "SDMA"),
                   ("Notify_Wait", 2, 210, 5), ("Memcpy", 1, 300, 5, 500, 0, 0, "SDMA"),
                   ("Memcpy", 1, 150, 5)],            # between ops: dropped, like the reference
                  link=False)
    assert compare_communication(b2, TARGET).to_list() == linked


def test_rdma_notify_waits_count_as_transfer():
    tasks = [("RDMASend", 1, 0, 1), ("RDMASend", 1, 1, 1), ("Notify_Wait", 1, 2, 10),   # transfer
             ("Notify_Wait", 2, 0, 4)]                                                    # waiting
    p = _profile([("hcom_send__1", G0, 0, 20)], tasks)
    assert compare_communication(p, p).to_list()[0]["baseline"]["wait_ms"] == pytest.approx(0.004)


def test_ops_without_tasks_use_loader_wait_and_op_bytes():
    p = _profile([("hcom_allReduce__1", "g", 0, 10, 4, 2000, "hcom_allReduce_"),
                  ("hcom_allReduce__2", "g", 20, 30, 0, 6000, "hcom_allReduce_")])
    s = compare_communication(p, p).to_list()[0]["baseline"]
    assert s["wait_ms"] == pytest.approx(0.004) and s["transit_ms"] == pytest.approx(0.036)
    assert s["bytes"] == 8000 and s["bandwidth_gbps"] == pytest.approx(8000 / 40000)


def test_gpu_kernels_one_row_per_collective():
    p = _profile([("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "", 0, 10),
                  ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "", 20, 5),
                  ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "", 30, 7)], device="GPU")
    rows = compare_communication(p, p).to_list()
    assert [(r["name"], r["group"], r["baseline"]["calls"]) for r in rows] == [
        ("allreduce", "", 2), ("sendrecv", "", 1)]
    assert all(r["tasks"] == [] for r in rows)


def test_empty_profiles():
    e = _profile([])
    res = compare_communication(e, e)
    assert res.to_list() == [] and communication_compare_rows(res) == []


# ------------------------------------------------------------------------------ real corpus

NPU_L1 = "npu/alexnet_ddp_2rank_level1"
NPU_DB = "npu/alexnet_ddp_2rank_db_level1"
_CACHE: dict = {}


def _load(corpus, fmt: str, rel: str):
    from tb_compare_plugin.loaders import load
    path = corpus / rel
    if path.is_dir() and fmt == "trace-json":
        path = sorted(path.glob("*.json*"))[0]
    key = (fmt, str(path))
    if key not in _CACHE:
        _CACHE[key] = load(fmt, str(path))
    return _CACHE[key]


def _golden_sheet(golden, run: str) -> tuple[list, list[list]]:
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.load_workbook(golden / run / "reference.xlsx", read_only=True)
    rows = [list(r) for r in wb["CommunicationCompare"].iter_rows(min_row=3, values_only=True)]
    wb.close()
    return rows[0], [r for r in rows[1:] if any(v is not None for v in r)]


def _close(ours, ref, rel=1e-3, abs_=1e-6) -> bool:
    if isinstance(ref, str) and ref == "INF":
        return isinstance(ours, float) and math.isinf(ours)
    if isinstance(ref, (int, float)) and not isinstance(ref, bool):
        return isinstance(ours, (int, float)) and math.isclose(ours, ref, rel_tol=rel, abs_tol=abs_)
    return ours == ref


def _assert_same_sheet(ours: list[list], ref: list[list]):
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        assert len(o) == len(r)
        bad = [(i, o[i], r[i]) for i in range(len(r))
               if not _close(o[i], r[i], abs_=0.011 if i == 15 else 1e-6)]
        assert not bad, f"row {o[0]}: (column, ours, reference) {bad}"


@pytest.mark.parametrize("run,fmt,base,target", [
    ("i_npu_l1r0_vs_l1r1", "ascend-text", f"{NPU_L1}/rank0_ascend_pt", f"{NPU_L1}/rank1_ascend_pt"),
    ("ii_npu_l0r0_vs_l1r0", "ascend-text", "npu/alexnet_ddp_2rank_level0/rank0_ascend_pt",
     f"{NPU_L1}/rank0_ascend_pt"),
    ("v_npu_db_l1r0_vs_l1r1", "ascend-db", f"{NPU_DB}/rank0_ascend_pt", f"{NPU_DB}/rank1_ascend_pt"),
])
def test_reference_sheet_matches_golden(corpus, golden, run, fmt, base, target):
    """Both sides list their tasks in the same order here, so pairing by name == by position."""
    res = compare_communication(_load(corpus, fmt, base), _load(corpus, fmt, target))
    headers, ref = _golden_sheet(golden, run)
    assert REFERENCE_HEADERS == headers
    _assert_same_sheet(communication_compare_rows(res), ref)


def test_parsed_counts_match_internals(corpus, golden):
    internals = json.loads((golden / "i_npu_l1r0_vs_l1r1" / "internals.json").read_text())
    res = compare_communication(_load(corpus, "ascend-text", f"{NPU_L1}/rank0_ascend_pt"),
                                _load(corpus, "ascend-text", f"{NPU_L1}/rank1_ascend_pt"))
    rows = {r["name"]: r for r in res.to_list()}
    for side in ("baseline", "target"):
        want = internals[f"{side}_side"]["parsed_counts"]["communication"]
        assert set(rows) == set(want)
        for name, w in want.items():
            got = rows[name][side]
            assert got["calls"] == w["ops"]
            assert got["total_ms"] * 1000 == pytest.approx(w["op_total_us"], rel=1e-6)
            assert {t["name"]: t[side]["calls"] for t in rows[name]["tasks"]} == w["tasks"]
    # allreduce on l1r0: 4 calls, 105991.88 µs
    assert rows["allreduce"]["baseline"]["calls"] == 4
    assert rows["allreduce"]["baseline"]["total_ms"] == pytest.approx(105.99188, rel=1e-6)


def test_npu_bytes_and_bandwidth_match_communication_json(corpus):
    """Inter-rank transfer bytes / link busy time == the profiler's own SDMA figure
    (communication.json, Total Op Info: 427.596 MB / 27.3157 ms = 15.654 GB/s)."""
    p = _load(corpus, "ascend-text", f"{NPU_L1}/rank0_ascend_pt")
    s = compare_communication(p, p).to_list()[0]["baseline"]
    assert s["bytes"] == 427596096
    assert s["bandwidth_gbps"] == pytest.approx(427.596 / 27.3157, rel=1e-3)
    assert 0 <= s["wait_ms"] <= s["total_ms"]
    assert s["wait_ms"] + s["transit_ms"] == pytest.approx(s["total_ms"])


def test_gpu_collectives_split_sum_to_reference_ncclkernel(corpus, golden):
    base = _load(corpus, "trace-json", "gpu/hta_trace_diff/control")
    tgt = _load(corpus, "trace-json", "gpu/hta_trace_diff/test")
    res = compare_communication(base, tgt)
    _, ref = _golden_sheet(golden, "iv_gpu_hta_control_vs_test")
    assert [r[1] for r in ref] == ["ncclkernel"]
    rows = communication_compare_rows(res)
    assert sorted(r[1] for r in rows) == ["allreduce", "sendrecv"]
    for col in (3, 4, 10, 11):                        # calls and total, both sides
        assert sum(r[col] for r in rows) == pytest.approx(ref[0][col], rel=1e-9)
    assert sum(r[15] for r in rows) == pytest.approx(ref[0][15], abs=0.02)
    assert max(r[6] for r in rows) == ref[0][6] and min(r[7] for r in rows) == ref[0][7]


def test_gpu_nccl_groups_and_sizes(corpus):
    p = _load(corpus, "trace-json", "gpu/hta_nccl")
    rows = compare_communication(p, p).to_list()
    assert sorted(r["name"] for r in rows) == ["allreduce", "broadcast"]
    ar = [r for r in rows if r["name"] == "allreduce"][0]
    assert ar["baseline"]["calls"] == 15 and ar["baseline"]["total_ms"] == pytest.approx(46.762159)
    assert ar["diff_ms"] == 0 and ar["ratio"] == 1.0


@pytest.mark.parametrize("fmt,root", [("ascend-text", NPU_L1), ("ascend-db", NPU_DB)])
def test_corpus_step_filter_and_swap(corpus, fmt, root):
    b = _load(corpus, fmt, f"{root}/rank0_ascend_pt")
    t = _load(corpus, fmt, f"{root}/rank1_ascend_pt")
    assert b.step_ids() == [50]
    whole = compare_communication(b, t)
    assert compare_communication(b, t, base_step=50, target_step=50).to_list() == whole.to_list()
    with pytest.raises(ValueError, match="valid steps: 50"):
        compare_communication(b, t, base_step=51, target_step=50)
    swapped = compare_communication(t, b).to_list()
    for r, s in zip(whole.to_list(), swapped):
        assert s["diff_ms"] == -r["diff_ms"]
        assert [x["diff_ms"] for x in s["tasks"]] == [-x["diff_ms"] for x in r["tasks"]]
