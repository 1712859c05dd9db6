"""The timeline engines on samples/ (baseline_gpu vs target_npu) and the biggest corpus GPU trace:
lanes per format, classes = the overview's, a step's range totals = that step's Overview figures,
the planted 2x-slower fc1 matmul and its counterpart, and the LOD item budget."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import CORPUS, SAMPLES
from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.engines.overall import breakdown
from tb_compare_plugin.engines.timeline_lanes import CLASSES, side_lanes
from tb_compare_plugin.engines import timeline_lod
from tb_compare_plugin.engines.timeline_lod import window_items
from tb_compare_plugin.engines.timeline_range import range_totals, step_window
from tb_compare_plugin.loaders import load
from tb_compare_plugin.service.errors import BadParameter
from tb_compare_plugin.service.timeline import Query, item_answer, parse_align, parse_id, range_answer, \
    timeline_answer

BIG_GPU = CORPUS / "gpu" / "hta_trace_diff" / "control" / "control.pt.trace.json.gz"
NSTEPS = 6


@pytest.fixture(scope="module")
def cmp():
    if not (SAMPLES / "expected.json").is_file():
        pytest.skip("samples/ is missing")
    b = load("trace-json", str(SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"))
    t = load("ascend-text", str(SAMPLES / "target_npu" / "rank0_ascend_pt"))
    return Comparison(b, t)


@pytest.fixture(scope="module")
def planted():
    p = json.loads((SAMPLES / "expected.json").read_text())["planted"]
    return {x["id"]: x for x in p}


def _items(answer, side, kind=None):
    for ln in answer[side]["lanes"]:
        if kind is None or ln["kind"] == kind:
            yield from ln["items"]


def test_lanes_per_format(cmp):
    for prof, comm_lanes in ((cmp.base, {"group 0"}), (cmp.target, {"Group 0 Communication",
                                                                      "Group 0 Communication plane 1",
                                                                      "Group 0 Communication plane 2"})):
        lanes = side_lanes(prof)
        assert side_lanes(prof) is lanes                            # built once per profile
        kinds = {ln.kind for ln in lanes.lanes}
        assert kinds == {"host", "device", "communication", "free"}
        assert {ln.name for ln in lanes.lanes if ln.kind == "communication"} == comm_lanes
        n_ops = sum(len(ln) for ln in lanes.lanes if ln.kind == "host")
        n_k = sum(len(ln) for ln in lanes.lanes if ln.kind == "device")
        assert n_ops == len(prof.ops) and n_k == len(prof.kernels)
        for ln in lanes.lanes:
            for depth, lo, hi in ln.runs:
                assert (np.diff(ln.start_ns[lo:hi]) >= 0).all() and (ln.depth[lo:hi] == depth).all()
    # the target's comm tasks: the counted Notify_Wait are "wait", the rest "transmit"
    tl = side_lanes(cmp.target)
    assert {CLASSES[c] for c in tl.task_class} == {"wait", "transmit"}


@pytest.mark.parametrize("step", range(1, NSTEPS + 1))
def test_step_range_equals_overview(cmp, step):
    """A range exactly over one step gives that step's Overview figures (exact here, ±1% required)."""
    for prof in (cmp.base, cmp.target):
        lo, hi = step_window(prof, step)
        got = range_totals(prof, side_lanes(prof), lo, hi)
        m = {k: v.duration_ns / 1e6 for k, v in breakdown(prof, step).metrics.items()}
        want = {"matmul": m["mm"] + m["cube"], "vector": m["vector"], "conv": m["conv_fwd"] + m["conv_bwd"],
                "flash_attention": m["fa_fwd"] + m["fa_bwd"] + m["pa"], "computing": m["computing"],
                "communication": m["uncovered"], "free": m["free_time"], "range": m["e2e"], "sdma": m["sdma"]}
        for k, v in want.items():
            assert got[k] == pytest.approx(v, rel=0.01, abs=1e-6), (prof.meta.device, step, k)
        assert got["computing"] + got["communication"] + got["free"] == pytest.approx(got["range"])


def test_wait_of_a_step_is_the_planted_wait(cmp, planted):
    got = range_answer(cmp, Query(step=2))
    assert got["target"]["wait"] == pytest.approx(planted[3]["wait_per_step_us"] / 1000, rel=0.01)
    assert got["baseline"]["wait"] == 0.0
    assert got["target"]["communication"] - got["baseline"]["communication"] == pytest.approx(
        planted[3]["per_step_us"] / 1000, rel=0.01)


def test_planted_matmul_longer_at_the_same_place_and_its_counterpart(cmp, planted):
    extra_ms = planted[1]["per_step_us"] / 1000                    # 400 us: 400 -> 800
    for step in (2, 5):
        ans = timeline_answer(cmp, Query(step=step, px=4000))
        t_mm = [it for it in _items(ans, "target", "device") if it[2] == "matmul" and it[4]]
        slow = [it for it in t_mm if abs(it[1] - 2 * extra_ms) < 0.02]      # kernels jitter by a few us
        assert len(slow) == 1, slow
        slow = slow[0]
        det = item_answer(cmp, "target", slow[4], step)
        cp = det["counterpart"]
        assert cp is not None and cp["side"] == "baseline" and cp["id"].startswith("k") and cp["exact"]
        assert det["cls"] == "matmul" and det["step"] == step
        assert slow[1] - cp["dur_ms"] == pytest.approx(extra_ms)        # exactly +400 us: 2x longer
        assert slow[1] / cp["dur_ms"] == pytest.approx(2.0, rel=0.05)
        assert abs(slow[0] - cp["start_ms"]) < 0.2                     # at the same place in the step
        b_items = {it[4]: it for it in _items(ans, "baseline", "device") if it[4]}
        assert cp["id"] in b_items and b_items[cp["id"]][2] == "matmul"
        back = item_answer(cmp, "baseline", cp["id"], step)["counterpart"]
        assert back["id"] == slow[4]
        # its Kernel view row: the NPU row names the kernel's type (the end of its name) and input shapes
        link = det["links"]
        assert link["view"] == "kernel" and link["kernel"] == "MatMulV2" and slow[3].endswith("_MatMulV2")
        assert link["key"] == f'MatMulV2 {link["shapes"]}' and link["shapes"].replace('"', "") == det["shapes"].replace('"', "")


def test_align_on_an_item(cmp):
    ans = timeline_answer(cmp, Query(step=2, px=4000))
    it = next(it for it in _items(ans, "target", "device") if it[2] == "matmul" and abs(it[1] - 0.8) < 0.02)
    al = timeline_answer(cmp, Query(step=2, px=4000, align=f"target:{it[4]}", start_ms=-1, end_ms=2))
    t_it = next(x for x in _items(al, "target", "device") if x[4] == it[4])
    assert t_it[0] == 0.0
    cp = item_answer(cmp, "target", it[4], align=f"target:{it[4]}")["counterpart"]
    assert cp["start_ms"] == 0.0


@pytest.mark.parametrize("many", [False, True])
def test_summary_blocks_keep_the_class_mix(cmp, many, monkeypatch):
    """Both ways of making blocks (looking at each event; prefix sums per bin for many events)."""
    if many:
        monkeypatch.setattr(timeline_lod, "FAST_MIN", 0)
    prof = cmp.target
    lanes = side_lanes(prof)
    lo, hi = lanes.span
    out = window_items(lanes, lo, lo, hi + 1, 50)
    stream = next(ln for ln in out if ln["name"] == "stream 2")
    blocks = [it for it in stream["items"] if it[4] is None]
    assert blocks and all(it[5]["n"] >= 2 and it[5]["mix"] for it in blocks)
    total = sum(it[1] for it in stream["items"] if it[4]) + sum(sum(it[5]["mix"].values()) for it in blocks)
    k = prof.kernels
    want = k["dur_ns"].to_numpy()[k["stream"].to_numpy() == 2].sum() / 1e6
    assert total == pytest.approx(want, rel=1e-6)
    for it in blocks:                                   # a block's class is its mix's largest
        assert it[2] == max(it[5]["mix"], key=it[5]["mix"].get)


@pytest.mark.parametrize("many", [False, True])
@pytest.mark.parametrize("px", [1, 10, 200, 3000])
def test_item_budget_on_samples(cmp, px, many, monkeypatch):
    if many:
        monkeypatch.setattr(timeline_lod, "FAST_MIN", 0)
    for prof in (cmp.base, cmp.target):
        lanes = side_lanes(prof)
        lo, hi = lanes.span
        for a, b in ((lo - 10 ** 9, hi + 10 ** 9), (lo, hi), (lo + (hi - lo) // 3, lo + (hi - lo) // 3 + 5000)):
            n = sum(len(ln["items"]) for ln in window_items(lanes, lo, a, b, px))
            assert n <= 4 * px


def test_item_budget_on_the_biggest_corpus_gpu_trace():
    if not BIG_GPU.is_file():
        pytest.skip(f"corpus trace not found at {BIG_GPU}")
    prof = load("trace-json", str(BIG_GPU))
    lanes = side_lanes(prof)
    assert sum(len(ln) for ln in lanes.lanes) > 4 * 200 * 10
    lo, hi = lanes.span
    host = [ln for ln in lanes.lanes if ln.kind == "host"]
    lo = min([lo] + [int(ln.start_ns.min()) for ln in host if len(ln)])
    hi = max([hi] + [int(ln.end_ns.max()) for ln in host if len(ln)])
    out = window_items(lanes, lo, lo, hi, 200)
    n = sum(len(ln["items"]) for ln in out)
    assert 0 < n <= 800
    assert all(ln["items"] for ln in out if ln["kind"] in ("device", "host"))   # every lane still drawn


def test_bad_parameters(cmp):
    with pytest.raises(BadParameter) as e:
        timeline_answer(cmp, Query(step=99))
    assert e.value.parameter == "step" and e.value.choices == list(range(1, NSTEPS + 1))
    with pytest.raises(BadParameter) as e:
        timeline_answer(cmp, Query(step=2, start_ms=5, end_ms=1))
    assert e.value.parameter == "end_ms"
    for bad in ("x12", "k", "k-1", ""):
        with pytest.raises(BadParameter):
            parse_id(bad)
    for bad in ("left:k1", "target", "target:z1"):
        with pytest.raises(BadParameter) as e:
            parse_align(bad)
        assert e.value.parameter == "align"
    with pytest.raises(BadParameter) as e:
        item_answer(cmp, "target", "k999999")
    assert e.value.parameter == "id"
    with pytest.raises(BadParameter) as e:
        item_answer(cmp, "middle", "k1")
    assert e.value.parameter == "side"


@pytest.mark.parametrize("pair", [("msprof_tf/baseline", "msprof_tf/target"), ("graph_mode/base", "graph_mode/target"),
                                  ("mindspore/baseline", "mindspore/target"), ("target_npu", "target_npu_v2")])
def test_other_formats_step_range_equals_overview(pair):
    """msprof CANN, graph mode (Ascend text), MindSpore and Ascend vs Ascend: every common step's
    range equals its Overview figures, and every answer is well formed."""
    from tb_compare_plugin.discovery import classify_path
    profs = []
    for rel in pair:
        w = classify_path(str(SAMPLES / rel))[0]
        profs.append(load(w.format, w.root))
    c = Comparison(*profs)
    steps = sorted(set(profs[0].step_ids()) & set(profs[1].step_ids()))
    assert steps
    for step in steps:
        got = range_answer(c, Query(step=step))
        for side, prof in (("baseline", profs[0]), ("target", profs[1])):
            m = {k: v.duration_ns / 1e6 for k, v in breakdown(prof, step).metrics.items()}
            for key, want in (("computing", m["computing"]), ("communication", m["uncovered"]),
                              ("free", m["free_time"]), ("range", m["e2e"]), ("matmul", m["mm"] + m["cube"]),
                              ("vector", m["vector"])):
                assert got[side][key] == pytest.approx(want, rel=0.01, abs=1e-6), (pair, step, side, key)
    ans = timeline_answer(c, Query(step=steps[0], px=300))
    for side in ("baseline", "target"):
        assert 0 < ans[side]["items"] <= 1200
        ids = [it[4] for ln in ans[side]["lanes"] for it in ln["items"] if it[4]][:5]
        for i in ids:
            det = item_answer(c, side, i, steps[0])
            assert det["id"] == i and det["name"]


def test_find_opens_the_timeline_at_a_table_row(cmp):
    """A Kernel / Operator row (its name) opens the timeline at that item in the step, with its counterpart."""
    from tb_compare_plugin.service.timeline import find_answer
    ans = timeline_answer(cmp, Query(step=2, px=4000))
    slow = next(it for it in _items(ans, "target", "device") if it[2] == "matmul" and abs(it[1] - 0.8) < 0.02)
    found = find_answer(cmp, "target", "kernel", slow[3], 2)
    assert found["step"] == 2 and found["name"] == slow[3] and found["counterpart"] is not None
    nth = 0
    while found["id"] != slow[4]:                      # the same name runs several times a step
        nth += 1
        found = find_answer(cmp, "target", "kernel", slow[3], 2, nth)
        assert nth < 50
    assert found["start_ms"] == slow[0]
    op = find_answer(cmp, "baseline", "op", "aten::addmm", 3)
    assert op["id"].startswith("o") and op["step"] == 3 and op["counterpart"]["side"] == "target"
    assert find_answer(cmp, "baseline", "op", "no such op")["id"] is None
    with pytest.raises(BadParameter) as e:
        find_answer(cmp, "baseline", "module", "x")
    assert e.value.parameter == "kind"


CORPUS_WORKERS = ["npu/alexnet_ddp_2rank_db_level1", "npu/alexnet_ddp_2rank_level1", "npu/mindspore_legacy_run1",
                  "gpu/hta_2rank", "gpu/hta_nccl", "gpu/tracelens_mi300", "gpu/hta_cpu_only"]


@pytest.mark.parametrize("rel", CORPUS_WORKERS)
def test_corpus_first_step_range_equals_overview(rel):
    """Real exports (Ascend DB and text, MindSpore, Kineto with NCCL, AMD, CPU only): the first step's
    range gives the overview's figures, and a whole-capture window keeps the budget."""
    from tb_compare_plugin.discovery import classify_path
    if not (CORPUS / rel).exists():
        pytest.skip(f"corpus worker {rel} not found")
    w = classify_path(str(CORPUS / rel))[0]
    prof = load(w.format, w.root)
    lanes = side_lanes(prof)
    span = lanes.span or prof.time_span_ns()
    assert sum(len(ln["items"]) for ln in window_items(lanes, span[0], span[0], span[1], 300)) <= 1200
    if not prof.step_ids() or lanes.span is None:
        return
    step = prof.step_ids()[0]
    lo, hi = step_window(prof, step)
    got = range_totals(prof, lanes, lo, hi)
    m = {k: v.duration_ns / 1e6 for k, v in breakdown(prof, step).metrics.items()}
    for key, want in (("computing", m["computing"]), ("communication", m["uncovered"]), ("range", m["e2e"]),
                      ("matmul", m["mm"] + m["cube"]), ("vector", m["vector"])):
        assert got[key] == pytest.approx(want, rel=0.01, abs=1e-6), (rel, key)
