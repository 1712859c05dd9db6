"""The ``msprof-cann`` format (an msprof CANN export, ``PROF_*/mindstudio_profiler_output``) on the
generated samples ``samples/msprof_tf/baseline`` / ``msprof_tf/target``: discovery, figures equal to
plain csv sums over the raw files, the planted differences (Data Aug Bound, slower MatMulV2) as the
top rows of their views at their planted size, and an msprof vs Ascend PyTorch pair through every
view and the workbook.  The corpus holds no real msprof CANN export: the layout is the documented one.
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from cli_inproc import run_cli
from conftest import CORPUS, SAMPLES, needs_corpus
from tb_compare_plugin.discovery.paths import classify_path
from tb_compare_plugin.engines.kernel import compare_kernels
from tb_compare_plugin.engines.steps import compare_steps
from tb_compare_plugin.formats import registry
from tb_compare_plugin.loaders import load
from tb_compare_plugin.loaders.errors import LoadError
from tb_compare_plugin.model import KIND_COMM, KIND_COMPUTE

sys.path.insert(0, str(SAMPLES))
from gen import msprof_cann as gen  # noqa: E402

BASE, TARGET = SAMPLES / "msprof_tf" / "baseline", SAMPLES / "msprof_tf" / "target"
AUG_MEAN_US = gen.AUG_EXTRA_US * (gen.ITERATIONS - 1) / gen.ITERATIONS   # iteration 1 has no Data Aug Bound
MATMUL_ROW_US = gen.MATMUL_EXTRA_US * gen.ITERATIONS                     # per (MatMulV2, shapes) row
CORPUS_L1 = CORPUS / "npu" / "alexnet_ddp_2rank_level1" / "rank0_ascend_pt"


def out_dir(run: Path) -> Path:
    (p,) = run.glob("PROF_*/mindstudio_profiler_output")
    return p


def rows(run: Path, kind: str) -> list:
    out = []
    for p in sorted(out_dir(run).glob(f"{kind}_*.csv")):
        with open(p, newline="", encoding="utf-8") as f:
            out += list(csv.DictReader(f))
    return out


def us_ns(s: str) -> int:
    whole, _, frac = s.strip().partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


@pytest.fixture(scope="module")
def profiles():
    return {r.name: load("msprof-cann", str(out_dir(r))) for r in (BASE, TARGET)}


def test_discovery_lists_both_runs_with_device_framework_rank():
    for run in (BASE, TARGET):
        (w,) = classify_path(str(run))
        assert (w.format, w.device, w.framework, w.rank, w.name, w.error) == \
            ("msprof-cann", "NPU", "TensorFlow", 0, "msprof_device_0", None)
    names = {(w.run, w.format) for w in classify_path(str(SAMPLES))}
    assert {("msprof_tf/baseline", "msprof-cann"), ("msprof_tf/target", "msprof-cann")} <= names
    (w,) = classify_path(str(out_dir(TARGET)))          # the output folder itself, named by hand
    assert w.format == "msprof-cann" and w.error is None


def test_figures_equal_sums_over_the_raw_files(profiles):
    for run in (BASE, TARGET):
        p = profiles[run.name]
        raw = rows(run, "op_summary")
        k = p.tables["kernels"]
        assert len(k) == len(raw) and not p.meta.warnings and p.meta.framework == "TensorFlow"
        assert int(k["dur_ns"].sum()) == sum(us_ns(r["Task Duration(us)"]) for r in raw)
        assert sorted(k["start_ns"]) == sorted(us_ns(r["Task Start Time(us)"]) for r in raw)
        comm = sum(us_ns(r["Task Duration(us)"]) for r in raw if r["Task Type"] == "communication")
        assert int(k.loc[k["kind"] == KIND_COMM, "dur_ns"].sum()) == comm
        assert int(p.tables["comm_ops"]["dur_ns"].sum()) == comm
        assert (k.loc[k["kind"] != KIND_COMM, "kind"] == KIND_COMPUTE).all()
        # op_statistic agrees with op_summary per OP Type
        stat = {r["OP Type"]: (int(r["Count"]), us_ns(r["Total Time(us)"])) for r in rows(run, "op_statistic")}
        types = p.symbols.strings(k["type"].to_numpy())
        for t, (n, tot) in stat.items():
            sel = [i for i, x in enumerate(types) if x == t]
            assert (len(sel), int(k["dur_ns"].to_numpy()[sel].sum())) == (n, tot), t
        st = rows(run, "step_trace")
        steps = p.tables["steps"]
        assert steps["step"].tolist() == [int(r["Iteration ID"]) for r in st]
        assert steps["end_ns"].tolist() == [us_ns(r["Iteration End(us)"]) for r in st]
        assert (steps["end_ns"] - steps["start_ns"]).tolist() == [us_ns(r["Iteration Time(us)"]) for r in st]
        aug = p.tables["step_trace"]["preparing_ns"].tolist()
        assert aug[1:] == [us_ns(r["Data Aug Bound(us)"]) for r in st[1:]] and st[0]["Data Aug Bound(us)"] == "N/A"
        assert p.meta.has_pmu and k["aic_mac_ratio"].notna().any() and k["aiv_vec_ratio"].notna().any()
        # the timeline's CANN track: one op per API call, the totals api_statistic gives
        ops = p.tables["ops"]
        names = p.symbols.strings(ops["name"].to_numpy())
        for r in rows(run, "api_statistic"):
            sel = [i for i, x in enumerate(names) if x == f"{r['Level']}@{r['API Name']}"]
            assert (len(sel), int(ops["dur_ns"].to_numpy()[sel].sum())) == (int(r["Count"]), us_ns(r["Time(us)"]))
        assert (ops["parent"] >= 0).sum() == gen.ITERATIONS                 # rtKernelLaunch in aclmdlExecute


def test_slices_are_merged_in_order(profiles):
    names = sorted(p.name for p in out_dir(TARGET).glob("op_summary_*"))
    assert [n.split("_")[3] for n in names] == ["0", "1"]
    k = profiles[TARGET.name].tables["kernels"]
    assert k["start_ns"].is_monotonic_increasing and (k["step"] >= 1).all()


def test_planted_data_aug_bound_is_the_top_steps_row(profiles):
    sc = compare_steps(profiles[BASE.name], profiles[TARGET.name])
    top = sc.top_differences(1)[0]
    assert top.name == "phases.iteration_gap"
    assert top.diff_ms * 1000 == pytest.approx(AUG_MEAN_US, rel=0.02)


def test_planted_slower_matmul_is_the_top_kernel_row(profiles):
    df = compare_kernels(profiles[BASE.name], profiles[TARGET.name]).sort_values("diff_us", ascending=False)
    top = df.iloc[0]
    assert top["kernel"] == "MatMulV2" and top["diff_us"] == pytest.approx(MATMUL_ROW_US, rel=0.02)
    assert (df.iloc[2:]["diff_us"].abs() < 1e-6).all()


def _cli(tmp_path, base, target, *extra):
    j, x = tmp_path / "out.json", tmp_path / "out.xlsx"
    r = run_cli(base, target, "--no-progress", "--no-cache", "--json", j, "--xlsx", x, "--steps", *extra)
    assert r.returncode == 0, r.stderr
    assert x.stat().st_size > 0
    return json.loads(j.read_text())


ALL = ("--enable-profiling-compare", "--enable-operator-compare", "--enable-memory-compare",
       "--enable-communication-compare", "--enable-api-compare", "--enable-kernel-compare",
       "--enable-steps-compare")


def test_cli_json_planted_sizes(tmp_path):
    d = _cli(tmp_path, BASE, TARGET, "--enable-api-compare")
    assert d["steps"]["top_differences"][0] == "phases.iteration_gap"
    (m,) = [m for m in d["steps"]["metrics"] if m["name"] == "phases.iteration_gap"]
    assert m["diff_ms"] * 1000 == pytest.approx(AUG_MEAN_US, rel=0.02)
    assert d["baseline"]["format"] == "msprof-cann" if isinstance(d["baseline"], dict) and "format" in d["baseline"] \
        else True


@needs_corpus
def test_msprof_vs_ascend_pytorch_every_view_and_workbook(tmp_path):
    d = _cli(tmp_path, BASE, CORPUS_L1, *ALL)
    assert d["steps"]["baseline"] and d["steps"]["target"]


def test_raw_only_prof_folder_is_unsupported_with_a_message(tmp_path):
    prof = tmp_path / "run" / "PROF_000001_20260101000000000_RAWRAWRAWRAWRAWR"
    (prof / "device_0" / "data").mkdir(parents=True)
    (prof / "device_0" / "data" / "ts_track.data.0.slice_0").write_bytes(b"\0" * 16)
    (w,) = classify_path(str(tmp_path / "run"))
    assert w.format == "msprof-cann" and "raw msprof data only" in w.error and str(prof) in w.error


def test_missing_op_summary_is_a_load_error(tmp_path):
    out = tmp_path / "PROF_1" / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    with pytest.raises(LoadError, match="op_summary"):
        registry.load("msprof-cann", str(out))


def _route(c, view, base, target):
    from test_plugin_routes import PREFIX
    r = c.post(PREFIX + "/compare/" + view, data=json.dumps({"baseline": base, "target": target}),
               content_type="application/json")
    return r.status_code, json.loads(r.get_data())


def test_routes_planted_top_rows():
    """The routes the tab reads: Data Aug Bound the top step-level difference, MatMulV2 the top kernel rows."""
    from test_plugin_routes import make_client
    c = make_client(SAMPLES)
    b, t = "msprof_tf/baseline/msprof_device_0", "msprof_tf/target/msprof_device_0"
    code, st = _route(c, "steps", b, t)
    assert code == 200 and st["top_differences"][0] == "phases.iteration_gap"
    (m,) = [m for m in st["metrics"] if m["name"] == "phases.iteration_gap"]
    assert m["diff_ms"] * 1000 == pytest.approx(AUG_MEAN_US, rel=0.02)
    code, k = _route(c, "kernel", b, t)
    assert code == 200 and [r["kernel"] for r in k["rows"][:2]] == ["MatMulV2", "MatMulV2"]
    assert k["rows"][0]["diff_us"] == pytest.approx(MATMUL_ROW_US, rel=0.02)
    # msprof against Ascend PyTorch: the views the export cannot feed say why
    code, mem = _route(c, "memory", b, "target_npu/rank0_ascend_pt")
    assert code == 200 and any(n.startswith("The baseline (TensorFlow, NPU, msprof-cann) holds no memory")
                               for n in mem["notes"])
    code, mod = _route(c, "module", b, "target_npu/rank0_ascend_pt")
    assert code == 200 and any("nn.Module" in n for n in mod["notes"])


def test_cli_workbook_kernel_top_rows(tmp_path):
    import openpyxl
    _cli(tmp_path, BASE, TARGET, "--enable-kernel-compare")
    ws = openpyxl.load_workbook(tmp_path / "out.xlsx")["KernelCompare"]
    it = ws.iter_rows(values_only=True)
    head = next(r for r in it if r and r[0] == "Order Id")
    total = [i for i, h in enumerate(head) if h == "Total Duration(us)"]
    diffs = sorted(((r[total[1]] - r[total[0]], r[1]) for r in it if r and r[0] is not None), reverse=True)
    assert [k for _, k in diffs[:2]] == ["MatMulV2", "MatMulV2"]
    assert diffs[0][0] == pytest.approx(MATMUL_ROW_US, rel=0.02)
