"""MindSpore profiles in the pair views: the scope tree as the module tree (device time per scope
= the sum of its kernels), MindSpore op types paired with PyTorch GPU operators through the alias
table, and the Steps view's phases equal to the profiler's step trace (FP start / BP end).  The
corpus's real MindSpore folders; parses shared per module."""
from __future__ import annotations

import collections
import csv
import glob

import pytest

from conftest import CORPUS, needs_corpus

LEGACY = CORPUS / "npu/mindspore_legacy_run1/profiler"
MS2 = CORPUS / "npu/mindspore_msprof_2dev/profiler"
GPU = CORPUS / "gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"

pytestmark = needs_corpus


@pytest.fixture(scope="module")
def legacy():
    from tb_compare_plugin.formats import registry
    return registry.load("mindspore-legacy", str(LEGACY / "step_trace_raw_1_detail_time.csv"))


@pytest.fixture(scope="module")
def msprof0():
    from tb_compare_plugin.formats import registry
    dev = sorted(glob.glob(str(MS2 / "PROF_*/device_0")))[0]
    return registry.load("mindspore-msprof", dev)


@pytest.fixture(scope="module")
def gpu():
    from tb_compare_plugin.discovery.classify import classify_named
    from tb_compare_plugin.formats import registry
    spec = classify_named(str(GPU))
    return registry.load(spec.format, str(GPU))


def test_scope_tree_is_the_module_tree(legacy):
    from tb_compare_plugin.engines.module import build_modules, has_modules
    from tb_compare_plugin.engines.scope_tree import op_view
    assert not legacy.has()["modules"] and len(legacy.ops) == 0
    assert has_modules(legacy)                   # from the kernels' scope paths
    side = build_modules(op_view(legacy))
    got = collections.defaultdict(int)
    for path, total in zip(side.raw_path, side.total_ns.tolist()):
        got[path] += total
    want = collections.defaultdict(int)
    for name, dur in zip(legacy.names(legacy.kernels["name"]), legacy.kernels["dur_ns"].tolist()):
        parts = name.split("/")[:-1]
        for d in range(1, len(parts) + 1):
            want["/" + "/".join(parts[:d])] += dur
    assert "/Default/network-TrainStepWrap/optimizer_d-Adam" in want
    assert dict(got) == dict(want)


def test_module_view_pairs_mindspore_with_pytorch(legacy, gpu):
    from tb_compare_plugin.comparison import Comparison
    stats = Comparison(legacy, gpu).modules().stats      # this GPU trace has no nn.Module events
    paths = set(stats["path"].dropna())
    assert any(p.startswith("/Default/network-TrainStepWrap") for p in paths)
    assert stats["b_total_compute_ms"].sum() > 0


def test_operator_view_pairs_conv2d_and_matmul(msprof0, gpu):
    from tb_compare_plugin.comparison import Comparison
    pairs = Comparison(msprof0, gpu).operators().pairs
    both = pairs[pairs["b_name"].notna() & pairs["t_name"].notna()]
    got = set(zip(both["b_name"], both["t_name"]))
    assert ("Conv2D", "aten::conv2d") in got
    assert any(b == "MatMul" and t in ("aten::linear", "aten::addmm", "aten::mm", "aten::matmul") for b, t in got)


def test_aliases_only_across_frameworks_or_devices(legacy, gpu):
    from tb_compare_plugin.engines.name_map import NameMapper
    m = NameMapper.for_profiles(legacy, gpu)
    assert m.key("Conv2D") == m.key("aten::conv2d") and m.key("MatMul") == m.key("aten::linear")
    assert NameMapper.for_profiles(gpu, gpu).key("aten::conv2d") == "aten::conv2d"


def test_steps_phases_equal_the_step_trace(legacy):
    from tb_compare_plugin.comparison import Comparison
    with open(LEGACY / "step_trace_raw_1_detail_time.csv", newline="") as f:
        raw = {int(r["step_num"]): r for r in csv.DictReader(f) if r["step_num"] != "-"}
    doc = Comparison(legacy, legacy).steps().to_dict()
    steps = doc["baseline"]["steps"]
    assert len(steps) == 15
    for s in steps:
        r, ph = raw[s["step"]], s["phases_ms"]
        for key, col in (("iteration_gap", "iteration_interval"), ("fwd_bwd", "fp_and_bp"), ("tail", "tail")):
            assert ph[key] == pytest.approx(int(r[col]) * 10 / 1e6, abs=1e-9), (s["step"], key)


def test_msprof_steps_phases_equal_the_step_trace(msprof0):
    import json
    from tb_compare_plugin.comparison import Comparison
    dev = sorted(glob.glob(str(MS2 / "PROF_*/device_0")))[0]
    raw = {}
    for p in sorted(glob.glob(dev + "/timeline/step_trace_*.json")):
        for e in json.load(open(p)):
            a = e.get("args") or {}
            if e.get("cat") == "Iteration Time":
                raw.setdefault(int(a["Iteration ID"]), (e["ts"], a["FP Start"], a["BP End"], a["Iteration End"]))
    doc = Comparison(msprof0, msprof0).steps().to_dict()
    steps = doc["baseline"]["steps"]
    assert len(steps) == len(raw) == 10
    for s in steps:
        ts, fp, bp, end = raw[s["step"]]
        ph = s["phases_ms"]
        assert ph["iteration_gap"] == pytest.approx((fp - ts) / 1e3, abs=2e-6)
        assert ph["fwd_bwd"] == pytest.approx((bp - fp) / 1e3, abs=2e-6)
        assert ph["tail"] == pytest.approx((end - bp) / 1e3, abs=2e-6)


@pytest.fixture(scope="module")
def ascend_pt():
    from tb_compare_plugin.discovery.classify import classify_named
    from tb_compare_plugin.formats import registry
    path = CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"
    spec = classify_named(str(path))
    return registry.load(spec.format, spec.path if hasattr(spec, "path") else str(path))


@pytest.mark.parametrize("ms_first", [True, False], ids=["ms-base", "ms-target"])
def test_every_view_on_mindspore_vs_ascend_pytorch(legacy, msprof0, ascend_pt, ms_first):
    from tb_compare_plugin.analyses import Unavailable, analyses
    from tb_compare_plugin.comparison import Comparison
    from tb_compare_plugin.presenters.views import view_page
    for ms in (legacy, msprof0):
        cmp = Comparison(ms, ascend_pt) if ms_first else Comparison(ascend_pt, ms)
        for a in analyses("route"):
            try:
                page = view_page(cmp, a.name)
            except Unavailable as e:
                assert str(e).strip(), a.name          # a view that cannot apply says why
                continue
            assert "rows" in page or "total" in page, a.name
            if a.name == "module":
                assert "scope tree" in page["note"] and "rarely match" in page["note"]
        ops = cmp.operators().pairs
        assert (ops["status"] == "both").any()       # MindSpore op types meet the aten ops


def test_one_step_of_the_scope_view(msprof0, gpu):
    """A step chosen on the MindSpore side: its operators and scopes are that iteration's kernels."""
    from tb_compare_plugin.comparison import Comparison
    from tb_compare_plugin.engines.options import Options
    step = int(msprof0.steps["step"].iloc[1])
    k = msprof0.kernels
    in_step = k[k["step"] == step]
    cmp = Comparison(msprof0, gpu, Options(base_step=step))
    pairs = cmp.operators().pairs
    assert int((pairs["b_name"].notna()).sum()) == len(in_step)
    tops = cmp.modules().stats
    assert tops["b_total_compute_ms"].notna().any()
    from tb_compare_plugin.engines.name_map import NameMapper
    m = NameMapper.for_profiles(msprof0, gpu)
    assert m.key("Conv2DBackpropFilterD") == m.key("autograd::engine::evaluate_function: ConvolutionBackward0")
