"""samples/'s MindSpore pair (``samples/mindspore/{baseline,target}/rank0_<ts>_ascend_ms``, written by
samples/gen/mindspore.py in MindSpore 2.x's text layout; figures in samples/mindspore_expected.json):
discovery, the loaded figures against plain sums over the raw files, the planted slower MatMul as the
top row of the Kernel and Operator views at its planted size in the engine, the routes and the CLI's
workbook, the module page's scope-tree note, and the MindSpore target against the PyTorch GPU baseline
(the reference's scenario three) through every view and the workbook, each view saying why a side is
empty where it is.  The corpus holds no MindSpore 2.x text export: the layout is the documented one."""
from __future__ import annotations

import csv
import json

import openpyxl
import pytest

from cli_inproc import run_cli
from conftest import SAMPLES
from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.discovery.paths import classify_path
from tb_compare_plugin.engines.kernel import compare_kernels
from tb_compare_plugin.formats import registry

EXP = json.loads((SAMPLES / "mindspore_expected.json").read_text())
PLANT = EXP["planted"]
(BASE_DIR,) = (SAMPLES / "mindspore" / "baseline").glob("rank0_*_ascend_ms")
(TARGET_DIR,) = (SAMPLES / "mindspore" / "target").glob("rank0_*_ascend_ms")
BASE, TARGET = f"mindspore/baseline/{BASE_DIR.name}", f"mindspore/target/{TARGET_DIR.name}"
GPU = "baseline_gpu/worker0"
ALL = ("--enable-profiling-compare", "--enable-operator-compare", "--enable-memory-compare",
       "--enable-communication-compare", "--enable-api-compare", "--enable-kernel-compare",
       "--enable-steps-compare")


def rows(run, name):
    with open(run / "ASCEND_PROFILER_OUTPUT" / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def us_ns(s: str) -> int:
    whole, _, frac = s.strip().partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


@pytest.fixture(scope="module")
def profiles():
    return {"baseline": registry.load("mindspore-text", str(BASE_DIR)),
            "target": registry.load("mindspore-text", str(TARGET_DIR))}


def test_discovery_lists_both_with_device_framework_format_rank():
    got = {w.run: w for w in classify_path(str(SAMPLES)) if w.run.startswith("mindspore/")}
    assert set(got) == {"mindspore/baseline", "mindspore/target"}
    for run, d in (("mindspore/baseline", BASE_DIR), ("mindspore/target", TARGET_DIR)):
        w = got[run]
        assert (w.name, w.format, w.device, w.framework, w.rank, w.error) == \
            (d.name, "mindspore-text", "NPU", "MindSpore", 0, None)


def test_mindspore_layout():
    """MindSpore's own process names, no categories on its framework events, no python functions."""
    ev = json.loads((BASE_DIR / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    procs = {e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
    assert procs == {"MindSpore", "CANN", "Ascend Hardware", "Overlap Analysis"}
    assert not any(e.get("cat") == "python_function" for e in ev)
    assert any(e.get("cat") == "async_npu" and e["name"] == "mindspore_to_npu" for e in ev)
    head = next(csv.reader(open(BASE_DIR / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", encoding="utf-8")))
    assert head[:11] == ["Step ID", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State",
                         "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)"]
    info = json.loads((BASE_DIR / "profiler_info_0.json").read_text())
    assert info["profiler_parameters"]["profiler_level"] == "Level1"


def test_figures_equal_sums_over_the_raw_files(profiles):
    for side, d in (("baseline", BASE_DIR), ("target", TARGET_DIR)):
        p = profiles[side]
        kd = rows(d, "kernel_details.csv")
        k = p.kernels
        assert p.meta.framework == "MindSpore" and p.meta.profiler_level == "Level1" and not p.meta.warnings
        assert len(p.ops) == 0 and not p.has()["modules"]           # no host ops, no Python functions
        assert len(k) == len(kd) == EXP[side]["tasks"]
        assert p.names(k["name"]) == [r["Name"] for r in kd]          # scope paths kept whole
        assert int(k["dur_ns"].sum()) == sum(us_ns(r["Duration(us)"]) for r in kd)
        assert k["step"].tolist() == [int(r["Step ID"]) for r in kd]
        types = p.names(k["type"])
        for r in rows(d, "op_statistic.csv"):
            sel = [i for i, t in enumerate(types) if t == r["OP Type"]]
            assert (len(sel), int(k["dur_ns"].to_numpy()[sel].sum())) == (int(r["Count"]), us_ns(r["Total Time(us)"]))
        assert p.step_ids() == list(range(1, EXP[side]["steps"] + 1))
        st = p.tables["step_trace"]
        assert len(st) == EXP[side]["steps"]
        for got, want in zip(st["computing_ns"].tolist(), rows(d, "step_trace_time.csv")):
            assert got == us_ns(want["Computing"])


def test_planted_matmul_is_the_top_kernel_rows(profiles):
    df = compare_kernels(profiles["baseline"], profiles["target"]).sort_values("diff_us", ascending=False)
    top = df.head(len(PLANT["kernel_rows"]))
    assert set(top["kernel"]) == {PLANT["op_type"]}
    assert sorted(top["input_shape"]) == sorted(r["input_shapes"] for r in PLANT["kernel_rows"])
    for d in top["diff_us"]:
        assert d == pytest.approx(PLANT["kernel_rows"][0]["diff_us"], rel=0.02)
    assert (df.iloc[len(top):]["diff_us"].abs() < 1e-6).all()       # nothing else differs


def test_planted_matmul_is_the_top_operator_row(profiles):
    stats = Comparison(profiles["baseline"], profiles["target"]).operators().stats
    top = stats.sort_values("diff_ms", ascending=False).iloc[0]
    assert top["name"] == PLANT["operator_row"]["operator"]
    assert top["diff_ms"] * 1000 == pytest.approx(PLANT["operator_row"]["diff_us"], rel=0.02)
    assert top["t_count"] == PLANT["operator_row"]["calls"]


def _post(c, view, base, target):
    from test_plugin_routes import PREFIX
    r = c.post(PREFIX + "/compare/" + view, data=json.dumps({"baseline": base, "target": target}),
               content_type="application/json")
    return r.status_code, json.loads(r.get_data())


@pytest.fixture(scope="module")
def client():
    from test_plugin_routes import make_client
    return make_client(SAMPLES)


def test_routes_top_rows_and_scope_note(client):
    code, k = _post(client, "kernel", BASE, TARGET)
    assert code == 200 and k["rows"][0]["kernel"] == PLANT["op_type"]
    assert k["rows"][0]["diff_us"] == pytest.approx(PLANT["kernel_rows"][0]["diff_us"], rel=0.02)
    code, o = _post(client, "operator", BASE, TARGET)
    assert code == 200 and o["rows"][0]["name"] == PLANT["operator_row"]["operator"]
    assert o["rows"][0]["diff_ms"] * 1000 == pytest.approx(PLANT["operator_row"]["diff_us"], rel=0.02)
    code, m = _post(client, "module", BASE, TARGET)
    assert code == 200 and "scope tree" in m["note"]
    code, mem = _post(client, "memory", BASE, TARGET)            # MindSpore with profile_memory off
    assert code == 200 and not mem["rows"] and len(mem["notes"]) == 2
    assert all("no memory records" in n and "mindspore-text" in n for n in mem["notes"])
    listing = {w["id"]: w for r in json.loads(client.get("/data/plugin/profile_compare/runs").get_data())["runs"]
               for w in r["workers"]}
    assert (listing[BASE]["format"], listing[BASE]["framework"], listing[BASE]["device"], listing[BASE]["rank"]) == \
        ("mindspore-text", "MindSpore", "NPU", 0)


def test_mindspore_vs_gpu_every_view_says_why(client):
    """Scenario three: every route answers; the kernel view is refused with its reason; a view with
    nothing on the MindSpore side says so."""
    seen = {}
    for view in ("operator", "operator_pairs", "module", "memory", "memory_peak", "api", "kernel"):
        code, body = _post(client, view, GPU, TARGET)
        seen[view] = (code, body)
        assert code in (200, 404), (view, body)
    assert seen["kernel"][0] == 404 and "platform" in seen["kernel"][1]["error"]
    pairs = seen["operator_pairs"][1]["rows"]
    assert any(r.get("status") == "both" for r in pairs)              # MatMul ~ aten::linear etc.
    (why,) = [n for n in seen["operator"][1]["notes"] if "own framework's terms" in n]
    assert "(PyTorch, MindSpore)" in why and "per-instance view pairs" in why
    assert "scope tree" in seen["module"][1]["note"]
    for view in ("memory", "api"):
        notes = seen[view][1].get("notes") or []
        assert any(n.startswith("The target (MindSpore") for n in notes), (view, notes)
    for view in ("communication", "steps", "overall"):
        code, body = _post(client, view, GPU, TARGET)
        assert code == 200, (view, body)


def _cli(tmp_path, base, target, *extra):
    j, x = tmp_path / "out.json", tmp_path / "out.xlsx"
    r = run_cli(base, target, "--no-progress", "--no-cache", "--json", j, "--xlsx", x, "--steps", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(j.read_text()), openpyxl.load_workbook(x)


def _sheet_rows(ws, header_first: str):
    it = ws.iter_rows(values_only=True)
    for r in it:
        if r and r[0] == header_first:
            head = list(r)
            break
    return head, [r for r in it if r and r[0] is not None]


def test_cli_workbook_top_rows(tmp_path):
    d, wb = _cli(tmp_path, BASE_DIR, TARGET_DIR, *ALL)
    assert d["overall_metrics"][0]["diff_ms"] * 1000 == pytest.approx(PLANT["capture_us"], rel=0.02)
    head, body = _sheet_rows(wb["KernelCompare"], "Order Id")
    total = [i for i, h in enumerate(head) if h == "Total Duration(us)"]
    diffs = sorted(((r[total[1]] - r[total[0]], r[1]) for r in body), reverse=True)
    assert [k for _, k in diffs[:2]] == [PLANT["op_type"]] * 2
    assert diffs[0][0] == pytest.approx(PLANT["kernel_rows"][0]["diff_us"], rel=0.02)
    head, body = _sheet_rows(wb["Operators"], "Operator")
    col = head.index("Device Diff (ms)")
    top = max(body, key=lambda r: r[col])
    assert top[0] == PLANT["operator_row"]["operator"]
    assert top[col] * 1000 == pytest.approx(PLANT["operator_row"]["diff_us"], rel=0.02)


def test_cli_mindspore_vs_gpu_every_view_and_workbook(tmp_path):
    d, wb = _cli(tmp_path, SAMPLES / "baseline_gpu", TARGET_DIR, *ALL)
    assert d["target"]["format"] == "mindspore-text" if isinstance(d.get("target"), dict) and "format" in d["target"] \
        else True
    assert "KernelCompare" not in wb.sheetnames or wb["KernelCompare"].max_row >= 1
    assert d["steps"]["baseline"] and d["steps"]["target"]
