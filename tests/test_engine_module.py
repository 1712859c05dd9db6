"""Tests of the module comparison: a hand-made profile with forward, backward and optimizer
modules, then the real corpus against the reference's Module sheets (golden pairs i, ii, v).
Deliberate differences from the reference are in docs/deviations.md (operator and module section)."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from tb_compare_plugin.comparison import Options
from tb_compare_plugin.engines.module import build_modules, compare_modules, has_modules, use_module_sheets
from tb_compare_plugin.presenters.reference_rows import (MODULE_COMPARE_HEADERS as REFERENCE_HEADERS_ROWS,
                                                         MODULE_COMPARE_STATISTIC_HEADERS as REFERENCE_HEADERS_STATS,
                                                         module_compare_rows, module_compare_statistic_rows)
from tb_compare_plugin.engines.optree import OpTree
from tb_compare_plugin.model import KIND_COMM
from test_engine_operator import make_profile


def _model(scale=1.0, linear="Linear", relu=True):
    pyfuncs = [("train.py(10): main", 0, 2000), ("nn.Module: Net_0", 5, 495),
               (f"nn.Module: {linear}_0", 10, 90), ("torch/_tensor.py(400): backward", 600, 300)]
    if relu:
        pyfuncs.append(("nn.Module: ReLU_0", 110, 40))
    ops = [("aten::linear", 20, 70, 1, None, None, None, "model.py(5): forward"),
           ("cudaLaunchKernel", 30, 2, 1),
           ("aten::relu", 120, 20, 1), ("cudaLaunchKernel", 125, 2, 1),
           ("aten::flatten", 200, 10, 1),
           ("AddmmBackward0", 700, 50, 2), ("aten::mm", 710, 30, 2), ("cudaLaunchKernel", 715, 2, 2),
           ("Optimizer.step#SGD.step", 950, 40, 1), ("aten::add_", 955, 5, 1), ("cudaLaunchKernel", 956, 2, 1)]
    ks = [("gemm", 1, 40, 10 * scale), ("relu_k", 3, 130, 2 * scale), ("mm_k", 7, 720, 8 * scale),
          ("add_k", 10, 960, 1 * scale)]
    return make_profile(ops, ks, pyfuncs=pyfuncs, fwdbwd=[(50, 700, 2)], bwd_tid=2)


def test_module_forests_and_device_time():
    p = _model()
    side = build_modules(p)
    paths = side.raw_path
    assert paths[:side.n_fwd] == ["/nn.Module: Net_0", "/nn.Module: Net_0/nn.Module: Linear_0",
                                  "/nn.Module: Net_0/nn.Module: ReLU_0", "/Optimizer.step#SGD.step"]
    assert paths[side.n_fwd:] == ["/[ BACKWARD ]/nn.Module: Net_0/nn.Module: Linear_0"]
    assert side.self_ns.tolist() == [0, 10_000, 2_000, 1_000, 8_000]
    assert side.total_ns.tolist() == [12_000, 10_000, 2_000, 1_000, 8_000]
    assert side.call_stack[0] == "train.py(10): main"
    assert side.call_stack[4] == "train.py(10): main;\ntorch/_tensor.py(400): backward"
    names = p.symbols.as_array()
    assert [names[side.tree.name[k]] for k in side.top_ops[0]] == ["aten::flatten"]
    assert [names[side.tree.name[k]] for k in side.top_ops[4]] == ["aten::mm"]   # the bwd op itself starts at the edge


def test_compare_modules_rows_stats_and_reference_rows():
    base, target = _model(), _model(scale=2.0, relu=False)
    assert has_modules(base) and use_module_sheets(base, target)
    assert not use_module_sheets(base, target, disable_module=True)
    r = compare_modules(base, target)
    rows = r.rows
    mods = rows[rows["kind"] == "module"]
    assert mods["path"].tolist() == ["/Net_0", "/Net_0/Linear_0", "/Net_0/ReLU_0",
                                     "/[ BACKWARD ]/Net_0/Linear_0", "/Optimizer.step#SGD.step"]
    assert mods["status"].tolist() == ["both", "both", "baseline_only", "both", "both"]
    assert mods["depth"].tolist() == [1, 2, 2, 3, 1]
    assert mods["diff_total_us"].tolist() == [12.0, 10.0, -2.0, 8.0, 1.0]   # relu_k is Net_0 self time on the target
    lin = rows[(rows["kind"] == "op") & (rows["b_op_name"] == "aten::linear")].iloc[0]
    assert lin["diff_self_us"] == 10.0 and lin["b_call_stack"] == "model.py(5): forward"
    assert lin["b_kernel_details"] == "gemm [duration: 10.0]\n"
    ref = module_compare_rows(r)
    assert len(ref[0]) == len(REFERENCE_HEADERS_ROWS)
    assert ref[0][:5] == [1, "nn.Module: Net", 1, "/ Net_0", "TOTAL"]
    st = r.stats
    assert st[st["kind"] == "module"]["path"].tolist() == mods["path"].tolist()
    sref = module_compare_statistic_rows(r)
    assert len(sref[0]) == len(REFERENCE_HEADERS_STATS) and sref[0][4] == "[ TOTAL ]"
    add = st[(st["kind"] == "op") & (st["name"] == "aten::add_")].iloc[0]
    assert add["b_kernel_details"] == "add_k, [number: 1], [duration_ms: 0.001]\n"


def test_name_map_applies_to_module_paths():
    base, target = _model(), _model(linear="Dense")
    plain = compare_modules(base, target).rows
    assert "baseline_only" in set(plain["status"])
    mapped = compare_modules(base, target, Options(op_name_map=(("Linear", "Dense"),))).rows
    assert set(mapped[mapped["kind"] == "module"]["status"]) == {"both"}


def _ddp_model(gemm_us, nccl_us):
    """A module whose forward launches a matmul and an all-reduce (tensor-parallel style)."""
    pyfuncs = [("nn.Module: Net_0", 0, 500), ("nn.Module: Linear_0", 10, 200)]
    ops = [("aten::linear", 20, 50, 1), ("cudaLaunchKernel", 30, 2, 1),
           ("c10d::allreduce_", 80, 50, 1), ("cudaLaunchKernel", 90, 2, 1),
           ("aten::relu", 300, 20, 1), ("cudaLaunchKernel", 305, 2, 1)]
    ks = [("gemm", 1, 400, gemm_us), ("ncclDevKernel_AllReduce", 3, 500, nccl_us, KIND_COMM),
          ("relu_k", 5, 700, 2)]
    return make_profile(ops, ks, pyfuncs=pyfuncs)


def test_module_times_split_compute_and_comm():
    side = build_modules(_ddp_model(10, 100))
    assert side.self_ns.tolist() == [2_000, 110_000] and side.total_ns.tolist() == [112_000, 110_000]
    assert side.self_comm_ns.tolist() == [0, 100_000] and side.total_comm_ns.tolist() == [100_000, 100_000]
    base, target = _ddp_model(10, 100), _ddp_model(30, 400)
    r = compare_modules(base, target)
    mods = r.rows[r.rows["kind"] == "module"].set_index("path")
    assert mods.loc["/Net_0", ["diff_total_us", "diff_total_compute_us", "diff_total_comm_us"]].tolist() == \
        [320.0, 20.0, 300.0]
    lin = mods.loc["/Net_0/Linear_0"]
    assert lin[["b_self_compute_us", "t_self_compute_us", "diff_self_compute_us", "diff_compute_us"]].tolist() == \
        [10.0, 30.0, 20.0, 20.0]
    ops = r.rows[r.rows["kind"] == "op"].set_index("name")
    assert ops.loc["c10d::allreduce_", ["diff_self_comm_us", "diff_self_compute_us", "diff_compute_us"]].tolist() \
        == [300.0, 0.0, 0.0]
    assert np.isnan(ops.loc["c10d::allreduce_", "diff_total_compute_us"])
    st = r.stats.set_index(["kind", "name"])
    assert st.loc[("module", "Linear_0"), ["diff_total_compute_ms", "diff_total_comm_ms"]].tolist() == \
        pytest.approx([0.02, 0.3])
    assert st.loc[("op", "c10d::allreduce_"), ["b_self_comm_ms", "t_self_comm_ms", "diff_compute_ms"]].tolist() \
        == pytest.approx([0.1, 0.4, 0.0])
    assert st.loc[("op", "c10d::allreduce_"), "b_kernel_details"].startswith("ncclDevKernel_AllReduce, [number: 1]")
    rev = compare_modules(target, base)
    for a, b, col in ((r.rows, rev.rows, "diff_compute_us"), (r.stats, rev.stats, "diff_compute_ms"),
                      (r.stats, rev.stats, "diff_total_comm_ms")):
        assert sorted(np.round(a[col].dropna(), 6)) == sorted(np.round(-b[col].dropna(), 6))


# ------------------------------------------------------------------------------ real corpus

_CACHE: dict = {}
L1, L0, DB = ("npu/alexnet_ddp_2rank_level1", "npu/alexnet_ddp_2rank_level0", "npu/alexnet_ddp_2rank_db_level1")
PAIRS = {
    "i_npu_l1r0_vs_l1r1": (("ascend-text", f"{L1}/rank0_ascend_pt"), ("ascend-text", f"{L1}/rank1_ascend_pt")),
    "ii_npu_l0r0_vs_l1r0": (("ascend-text", f"{L0}/rank0_ascend_pt"), ("ascend-text", f"{L1}/rank0_ascend_pt")),
    "v_npu_db_l1r0_vs_l1r1": (("ascend-db", f"{DB}/rank0_ascend_pt"), ("ascend-db", f"{DB}/rank1_ascend_pt")),
}
# docs/deviations.md (operator and module section): in DB mode the reference keeps one kernel per operator, so the values
# of pair v differ; there only the rows' identity (module path, operator names) is compared.
VALUES_DEVIATE = {"v_npu_db_l1r0_vs_l1r1"}


def _load(corpus, fmt, rel):
    from tb_compare_plugin.loaders import load
    if (fmt, rel) not in _CACHE:
        _CACHE[(fmt, rel)] = load(fmt, str(corpus / rel))
    return _CACHE[(fmt, rel)]


def _close(ours, ref) -> bool:
    if ref == "INF":
        return isinstance(ours, float) and math.isinf(ours)
    if isinstance(ref, (int, float)) and not isinstance(ref, bool):
        return isinstance(ours, (int, float)) and abs(ours - ref) <= max(1e-3 * abs(ref), 0.0101)
    if isinstance(ref, str) and isinstance(ours, str):
        m = re.search(r"\.\.\.\[truncated, (\d+) chars\]$", ref)      # golden.json shortens long cells
        if m:
            return ours.startswith(ref[:m.start()]) and len(ours) == int(m.group(1))
    return (ours or None) == (ref or None)


@pytest.mark.parametrize("run", sorted(PAIRS))
def test_module_sheets_match_golden(corpus, golden, run):
    (bf, bp), (tf, tp) = PAIRS[run]
    base, target = _load(corpus, bf, bp), _load(corpus, tf, tp)
    assert use_module_sheets(base, target)
    res = compare_modules(base, target)
    g = json.loads((golden / run / "golden.json").read_text())["sheets"]
    sheets = {"ModuleCompare": (REFERENCE_HEADERS_ROWS, module_compare_rows(res), [3, 4, 8],
                                [6, 7, 10, 11, 12, 13, 14, 15, 16]),
              "ModuleCompareStatistic": (REFERENCE_HEADERS_STATS, module_compare_statistic_rows(res), [3, 4],
                                         [6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17])}
    for sheet, (headers, rows, keys, vals) in sheets.items():
        ref = g[sheet]
        assert headers == ref["headers"]
        assert len(rows) == ref["row_count"], sheet
        if run in VALUES_DEVIATE:
            vals = []
        for label in ("top10_by_diff_desc", "top10_by_abs_diff"):
            for item in ref[label]:
                r = item["row"]
                assert any(all((x[k] or None) == (r[k] or None) for k in keys)
                           and all(_close(x[j], r[j]) for j in vals) for x in rows), (sheet, label, r[3:5])


@pytest.mark.parametrize("run", sorted(PAIRS))
def test_module_swap_negates_and_credits_once(corpus, run):
    (bf, bp), (tf, tp) = PAIRS[run]
    base, target = _load(corpus, bf, bp), _load(corpus, tf, tp)
    fwd, rev = compare_modules(base, target), compare_modules(target, base)
    for a, b, col in ((fwd.rows, rev.rows, "diff_us"), (fwd.stats, rev.stats, "diff_ms"),
                      (fwd.rows, rev.rows, "diff_compute_us"), (fwd.stats, rev.stats, "diff_compute_ms")):
        assert len(a) == len(b)
        assert sorted(np.round(a[col], 6)) == sorted(np.round(-b[col], 6))
    for p in (base, target):
        side = build_modules(p)
        tree = OpTree(p)
        dev_total = int(tree.dev["dur_ns"].sum())
        nf = side.n_fwd
        roots_f = [m for m in range(nf) if side.parent[m] < 0]
        roots_b = [m for m in range(nf, len(side.start)) if side.parent[m] < 0]
        # every device event is credited at most once per forest, and totals add up
        for lo, hi, roots in ((0, nf, roots_f), (nf, len(side.start), roots_b)):
            assert side.self_ns[lo:hi].sum() <= dev_total
            assert side.total_ns[roots].sum() == side.self_ns[lo:hi].sum()
            assert side.total_comm_ns[roots].sum() == side.self_comm_ns[lo:hi].sum()
        assert (side.self_comm_ns <= side.self_ns).all() and (side.total_comm_ns <= side.total_ns).all()
        assert sum(len(v) for v in side.op_dev.values()) <= 2 * len(tree.dev)


def test_reference_columns_give_the_one_cell_rules():
    """The whole-column cell rules (``reference_columns``, ModuleCompare's rows) give the objects
    the one-cell rules give: both zeros, NaN, inf, halves that round either way."""
    from tb_compare_plugin.presenters import reference_columns as C
    from tb_compare_plugin.presenters.reference_rows import _none, _ref_ratio
    vals = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 2.675, 0.125, 0.135, -1.005, 1e-9, 123456.785,
            5e300, 3.0, -0.004]
    t = np.array([v for v in vals for _ in vals])
    b = np.array([w for _ in vals for w in vals])
    same = lambda a, e: len(a) == len(e) and all(type(x) is type(y) and repr(x) == repr(y) for x, y in zip(a, e))
    with np.errstate(invalid="ignore"):
        d = t - b
    assert same(C.rounded(d, 2).tolist(), [round(x - y, 2) for x, y in zip(t.tolist(), b.tolist())])
    assert same(C.ref_ratios(t, b).tolist(), [_ref_ratio(x, y) for x, y in zip(t.tolist(), b.tolist())])
    texts = ["a", "", None, float("nan"), "a", 0]
    assert same(C.nonempty(texts).tolist(), [_none(x) for x in texts])
