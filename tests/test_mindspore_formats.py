"""The ``mindspore-legacy`` format on the corpus's real MindSpore profiler folders: discovery,
figures checked against sums over the raw files, malformed copies, and a MindSpore run against an
Ascend PyTorch run and a GPU run through the CLI with --json and --xlsx."""
from __future__ import annotations

import collections
import csv
import json
import shutil

import pytest

from cli_inproc import run_cli
from conftest import CORPUS, needs_corpus

LEGACY = CORPUS / "npu/mindspore_legacy_run1/profiler"
MS2 = CORPUS / "npu/mindspore_msprof_2dev/profiler"
ASCEND_PT = CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"
GPU = CORPUS / "gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"

pytestmark = needs_corpus


@pytest.fixture(scope="module")
def legacy():
    from tb_compare_plugin.formats import registry
    return registry.load("mindspore-legacy", str(LEGACY / "step_trace_raw_1_detail_time.csv"))


def _raw_steps(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r["step_num"] != "-"]


def _raw_tasks(path):
    with open(path) as f:
        return [e for e in json.load(f) if "fullname" in (e.get("args") or {})]


def test_discovery_lists_both_runs():
    from tb_compare_plugin.discovery.walk import find_runs
    got = {}
    for r in find_runs(str(CORPUS / "npu")):
        for w in r.workers:
            if w.format.startswith("mindspore-"):
                got[(r.name, w.name)] = (w.format, w.device, w.framework, w.rank, len(w.steps), w.error)
    assert got[("mindspore_legacy_run1/profiler", "device_1")] == ("mindspore-legacy", "NPU", "MindSpore", 1, 322, None)
    assert got[("mindspore_msprof_2dev/profiler", "device_0")] == ("mindspore-legacy", "NPU", "MindSpore", 0, 20, None)
    assert got[("mindspore_msprof_2dev/profiler", "device_10")][:4] == ("mindspore-legacy", "NPU", "MindSpore", 10)


def test_named_folder_is_recognised():
    from tb_compare_plugin.discovery.classify import classify_named
    for p in (LEGACY, LEGACY.parent, LEGACY / "timeline_display_1.json"):
        spec = classify_named(str(p))
        assert spec is not None and spec.format == "mindspore-legacy" and spec.rank == 1, p


def test_steps_equal_step_trace_raw(legacy):
    raw = {int(r["step_num"]): r for r in _raw_steps(LEGACY / "step_trace_raw_1_detail_time.csv")}
    assert len(raw) == 322                      # plus MindInsight's closing "-" (mean) row
    steps = legacy.steps
    assert len(steps) and set(steps["step"]) <= set(raw)
    for s, a, b in zip(steps["step"], steps["start_ns"], steps["end_ns"]):
        r = raw[int(s)]
        assert a == int(r["start_point"]) * 10 and b == int(r["end_point"]) * 10
        assert b - a == int(r["total"]) * 10   # iteration time: ticks of 10 ns
    assert any("cover 15 of 322 iterations" in w for w in legacy.meta.warnings)


def test_kernels_equal_timeline(legacy):
    tasks = _raw_tasks(LEGACY / "timeline_display_1.json")
    k = legacy.kernels
    assert len(k) == len(tasks) == 2817
    names = legacy.names(k["name"])
    assert names[0] == "Default/AssignAdd-op414"
    assert any(n.startswith("Default/network-TrainStepWrap/") for n in names)
    want = collections.defaultdict(float)
    for e in tasks:
        want[e["args"]["type"]] += e["dur"]
    got = k.groupby(legacy.names(k["type"]))["dur_ns"].sum()
    for ty, us in want.items():
        assert abs(got[ty] / 1000 - us) <= 0.001 * max(1, len(tasks)), ty
    with open(LEGACY / "min_cycle_counter_1.txt") as f:
        base_ns = int(float(f.read())) * 10
    assert int(k["start_ns"].min()) == base_ns   # the first task starts at ts 0
    with open(LEGACY / "output_timeline_data_1.txt") as f:    # MindInsight's own print, in ms
        first_ms = float(f.read().splitlines()[1].split(",")[2])
    assert abs(base_ns / 1e6 - first_ms) < 1e-3
    assert set(k["stream"]) == {e["tid"] for e in tasks}
    inside = k[k["step"] >= 0]
    st = legacy.steps.set_index("step")
    assert (inside["start_ns"].values >= st.loc[inside["step"], "start_ns"].values).all()
    assert (inside["start_ns"].values < st.loc[inside["step"], "end_ns"].values).all()


def _copy(tmp_path, names=("step_trace_raw_1_detail_time.csv", "timeline_display_1.json",
                            "min_cycle_counter_1.txt")):
    d = tmp_path / "profiler"
    d.mkdir()
    for n in names:
        shutil.copy(LEGACY / n, d / n)
    return d


def _load(path):
    from tb_compare_plugin.formats import registry
    return registry.load("mindspore-legacy", str(path))


def test_truncated_timeline_names_the_file(tmp_path):
    from tb_compare_plugin.loaders.errors import LoadError
    d = _copy(tmp_path)
    t = d / "timeline_display_1.json"
    t.write_bytes(t.read_bytes()[:5000])
    with pytest.raises(LoadError, match="timeline_display_1.json.*truncated"):
        _load(d / "step_trace_raw_1_detail_time.csv")


def test_step_trace_missing_column(tmp_path):
    from tb_compare_plugin.loaders.errors import LoadError
    d = _copy(tmp_path)
    p = d / "step_trace_raw_1_detail_time.csv"
    lines = p.read_text().splitlines()
    p.write_text("\n".join([lines[0].replace("end_point", "endpoint", 1)] + lines[1:]) + "\n")
    with pytest.raises(LoadError, match="step_trace_raw_1_detail_time.csv.*missing column.*end_point"):
        _load(p)
    from tb_compare_plugin.discovery.classify import classify_named
    spec = classify_named(str(p))
    assert spec.error and "end_point" in spec.error


def test_truncated_step_trace_and_empty_timeline_warn(tmp_path):
    d = _copy(tmp_path)
    p = d / "step_trace_raw_1_detail_time.csv"
    text = p.read_text().splitlines()
    p.write_text("\n".join(text[:11] + [text[11][:40]]) + "\n")     # 10 rows + a cut one
    (d / "timeline_display_1.json").write_text("[]")
    prof = _load(p)
    assert len(prof.steps) == 10 and len(prof.kernels) == 0
    w = "\n".join(prof.meta.warnings)
    assert "step_trace_raw_1_detail_time.csv: 1 row(s) dropped" in w
    assert "timeline_display_1.json: no device task events" in w


def test_no_timeline_still_has_steps(tmp_path):
    d = _copy(tmp_path, ("step_trace_raw_1_detail_time.csv",))
    prof = _load(d / "step_trace_raw_1_detail_time.csv")
    assert len(prof.steps) == 322 and len(prof.kernels) == 0
    assert any("no timeline_display_1.json" in w for w in prof.meta.warnings)


@pytest.mark.parametrize("other, ms_first", [(ASCEND_PT, True), (GPU, False)], ids=["ascend-pt", "gpu"])
def test_cli_pairs_json_and_xlsx(tmp_path, other, ms_first):
    pair = (LEGACY, other) if ms_first else (other, LEGACY)
    out, xlsx = tmp_path / "o.json", tmp_path / "o.xlsx"
    r = run_cli(*pair, "--json", out, "--xlsx", xlsx, "--no-progress", "--quiet", "--enable-profiling-compare",
                "--enable-operator-compare", "--enable-kernel-compare", "--enable-steps-compare",
                "--enable-communication-compare", "--enable-memory-compare", "--enable-api-compare")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    doc = json.loads(out.read_text())
    side = "baseline" if ms_first else "target"
    assert doc[side]["format"] == "mindspore-legacy"
    assert doc["steps_count"][side] == 15
    steps = doc["steps"][side]["steps"]
    assert steps[0]["step"] == 1 and abs(steps[0]["duration_ms"] - 284.27118) < 1e-6
    assert xlsx.stat().st_size > 0


# ------------------------------------------------------------------------------ mindspore-msprof

MSPROF_DEVS = sorted(MS2.glob("PROF_*/device_*"))


@pytest.fixture(scope="module")
def msprof():
    from tb_compare_plugin.formats import registry
    return {int(d.name.split("_")[1]): registry.load("mindspore-msprof", str(d)) for d in MSPROF_DEVS}


def _slice_events(dev_dir, kind):
    out = []
    for p in sorted((dev_dir / "timeline").glob(f"{kind}_*.json"), key=lambda p: int(p.stem.rsplit("_", 1)[1])):
        out += [e for e in json.loads(p.read_text()) if e.get("ph") == "X"]
    return out


def test_msprof_discovery():
    from tb_compare_plugin.discovery.walk import find_runs
    runs = find_runs(str(MS2.parent))
    ws = {w.name: w for r in runs for w in r.workers}
    for d in MSPROF_DEVS:                       # each PROF_* folder: a run of its one device
        (r,) = [r for r in runs if r.name == f"profiler/{d.parent.name}"]
        assert [w.name for w in r.workers] == [f"msprof_{d.name}"]
    assert sorted(w.rank for r in runs if r.name == "profiler" for w in r.workers) == [0, 10]
    for dev in (0, 1):
        w = ws[f"msprof_device_{dev}"]
        assert (w.format, w.device, w.framework, w.rank, w.error) == ("mindspore-msprof", "NPU", "MindSpore", dev, None)
        assert dict(w.has)["communication"] is True
    from tb_compare_plugin.discovery.classify import classify_named
    assert classify_named(str(MSPROF_DEVS[0])).format == "mindspore-msprof"
    assert classify_named(str(MSPROF_DEVS[0].parent)).format == "mindspore-msprof"


def test_msprof_figures_equal_the_slices(msprof):
    for d in MSPROF_DEVS:
        prof = msprof[int(d.name.split("_")[1])]
        assert prof.meta.warnings == []
        its = {e["args"]["Iteration ID"]: e for e in _slice_events(d, "step_trace") if e.get("cat") == "Iteration Time"}
        assert sorted(its) == list(range(1, 11)) == list(prof.steps["step"])
        for s, a, b in zip(prof.steps["step"], prof.steps["start_ns"], prof.steps["end_ns"]):
            e = its[int(s)]
            assert abs((b - a) - e["args"]["Iteration Time(ns)"]) <= 1       # µs x 1000 = the file's ns
            assert abs(b / 1000 - e["args"]["Iteration End"]) < 0.01
        tasks = [e for e in _slice_events(d, "task_time") if "Task Type" in e.get("args", {})]
        k = prof.kernels
        assert len(k) == len(tasks)
        assert prof.names(k["name"]) == [e["name"] for e in tasks]             # slices merged in order
        want = collections.Counter()
        for e in tasks:
            want[e["args"]["Task Type"]] += e["dur"]
        got = k.groupby(prof.names(k["task_type"]))["dur_ns"].sum()
        for tt, us in want.items():
            assert abs(got[tt] / 1000 - us) < 0.01 * len(tasks), tt
        conv = [n for n, t in zip(prof.names(k["name"]), prof.names(k["type"])) if t == "Conv2D"]
        assert conv and all(n.startswith("Default/network-WithLossCell/_backbone-AlexNet/") for n in conv)
        assert (k["step"] >= 0).all()
        hccl = _slice_events(d, "hccl")
        assert len(prof.comm_ops) == sum(e["tid"] == 70000 for e in hccl) == 10
        assert len(prof.comm_tasks) == len(hccl) - 10


def _copy_dev(tmp_path):
    dst = tmp_path / "PROF_x" / "device_0"
    shutil.copytree(MSPROF_DEVS[0], dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_msprof_truncated_and_empty_slices(tmp_path):
    from tb_compare_plugin.loaders.errors import LoadError
    dst = _copy_dev(tmp_path)
    tl = dst / "timeline"
    (tl / "hccl_0_2_3.json").write_text("[]")
    prof = _load_msprof(dst)
    assert any("hccl_0_2_3.json: empty slice" in w for w in prof.meta.warnings)
    p = tl / "task_time_0_2_5.json"
    p.write_bytes(p.read_bytes()[:3000])
    with pytest.raises(LoadError, match="task_time_0_2_5.json.*truncated"):
        _load_msprof(dst)
    for p in tl.glob("task_time_*"):
        p.unlink()
    with pytest.raises(LoadError, match="no task_time"):
        _load_msprof(dst)


def _load_msprof(path):
    from tb_compare_plugin.formats import registry
    return registry.load("mindspore-msprof", str(path))


@pytest.mark.parametrize("other", [GPU, ASCEND_PT], ids=["gpu", "ascend-pt"])
def test_msprof_against_gpu_and_ascend_cli(tmp_path, other):
    out, xlsx = tmp_path / "o.json", tmp_path / "o.xlsx"
    r = run_cli(other, MSPROF_DEVS[0], "--json", out, "--xlsx", xlsx, "--no-progress", "--quiet",
                "--enable-profiling-compare", "--enable-operator-compare", "--enable-kernel-compare",
                "--enable-steps-compare", "--enable-communication-compare", "--enable-memory-compare",
                "--enable-api-compare")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["target"]["format"] == "mindspore-msprof" and doc["steps_count"]["target"] == 10
    assert xlsx.stat().st_size > 0
