"""Ascend text-export loader (trace_view.json + CSVs) on the real NPU corpus, plus bad inputs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tb_compare_plugin.loaders import LoadError, load as dispatch_load
from tb_compare_plugin.loaders import ascend_csv, ascend_text
from tb_compare_plugin.model import KIND_COMPUTE, KIND_MEMCPY, OVERLAP_KINDS

NPU = "npu"
L0R0 = "alexnet_ddp_2rank_level0/rank0_ascend_pt"
L0R1 = "alexnet_ddp_2rank_level0/rank1_ascend_pt"
L1R0 = "alexnet_ddp_2rank_level1/rank0_ascend_pt"
L1R1 = "alexnet_ddp_2rank_level1/rank1_ascend_pt"
ADVISOR = "mstt_advisor_sample/ASCEND_PROFILER_OUTPUT"
WORKERS = [L0R0, L0R1, L1R0, L1R1, ADVISOR]
# golden run -> (baseline worker, target worker), as in golden/README.md
GOLDEN_RUNS = {"i_npu_l1r0_vs_l1r1": (L1R0, L1R1), "ii_npu_l0r0_vs_l1r0": (L0R0, L1R0)}

_cache: dict = {}


def _worker(corpus: Path, rel: str) -> Path:
    p = corpus / NPU / rel
    if not p.exists():
        pytest.skip(f"corpus worker {p} not present")
    return p


def _load(corpus: Path, rel: str):
    if rel not in _cache:
        _cache[rel] = ascend_text.load(str(_worker(corpus, rel)))
    return _cache[rel]


def _copy_worker(corpus: Path, rel: str, dest: Path) -> Path:
    shutil.copytree(_worker(corpus, rel), dest)
    for f in dest.rglob("*"):
        f.chmod(0o644 if f.is_file() else 0o755)
    dest.chmod(0o755)
    return dest


# --------------------------------------------------------------------------------------- corpus

@pytest.mark.parametrize("rel", WORKERS)
def test_every_corpus_worker_loads(corpus, rel):
    p = _load(corpus, rel)
    assert p.meta.device == "NPU" and p.meta.format == "ascend-text" and p.meta.framework == "PyTorch"
    assert len(p.kernels) and len(p.ops) and len(p.overlap) and len(p.steps)
    assert p.meta.files[0].endswith("trace_view.json")
    assert (p.kernels["start_ns"] > 1_600_000_000_000_000_000).all()
    assert (p.ops["dur_ns"] >= 0).all()


@pytest.mark.parametrize("run", sorted(GOLDEN_RUNS))
@pytest.mark.parametrize("side", ["baseline_side", "target_side"])
def test_counts_match_reference(corpus, golden, run, side):
    ref = json.loads((golden / run / "internals.json").read_text())[side]["parsed_counts"]
    p = _load(corpus, GOLDEN_RUNS[run][0 if side == "baseline_side" else 1])
    ops, sym = p.ops, p.symbols
    cpu = ops[ops["cat"] == sym.lookup("cpu_op")]
    assert len(cpu) == ref["torch_op_events"]
    assert len(p.pyfuncs) == ref["python_function_events"]
    assert int(p.pyfuncs["is_module"].sum()) == ref["nn_module_events"]
    assert len(p.fwdbwd) == ref["fwdbwd_flow_pairs"]
    assert p.meta.bwd_tid == ref["bwd_tid"]
    # memory: every operator_memory.csv row (the reference would drop cann:: rows with no
    # containing Dequeue, but in the corpus each of the 57 has one, so nothing is dropped)
    assert len(p.mem_allocs) == ref["memory_records"]
    assert p.mem_allocs["bytes"].sum() / 1024 == pytest.approx(ref["memory_records_total_size_kb"], abs=1e-6)
    # launch links: the reference's 210 includes the 4 HCCL ops attached to their torch op
    k, co = p.kernels, p.comm_ops
    linked = int((k["launch_op"] >= 0).sum()) + int((co["launch_op"] >= 0).sum())
    assert linked == ref["kernels_linked_to_launch_points"]
    points = set(k.loc[k["launch_op"] >= 0, "flow_start_ns"]) | set(ops["start_ns"].to_numpy()[co["launch_op"]])
    assert len(points) == ref["kernel_dict_launch_points"]
    detail = k[k["detail"] & (k["type"] != 0)]
    assert len(detail.groupby(["type", "input_shapes"])) == ref["kernel_details_type_shape_groups"]
    # communication: ops per collective and their tasks per name
    for op_type, want in ref["communication"].items():
        mine = co[co["op_type"] == sym.lookup(op_type)]
        assert len(mine) == want["ops"]
        assert mine["dur_ns"].sum() / 1000 == pytest.approx(want["op_total_us"], abs=0.01)
        of_type = np.flatnonzero(co["op_type"] == sym.lookup(op_type))
        tasks = p.comm_tasks[np.isin(p.comm_tasks["comm_op"], of_type)]
        names = p.names(tasks["name"])
        assert {n: names.count(n) for n in set(names)} == want["tasks"]


def test_exact_nanoseconds(corpus):
    p = _load(corpus, L1R0)
    # first trace event: "ts": "1736408883688177.930" (aten::empty)
    first = p.ops.iloc[0]
    assert int(first["start_ns"]) == 1736408883688177930
    assert p.symbols.string(first["name"]) == "aten::empty"
    # kernel_details.csv row 1: Start Time(us) "1736408883704643.212\t", Duration 53.741
    k = p.kernels[p.kernels["start_ns"] == 1736408883704643212]
    assert len(k) == 1 and bool(k["detail"].iloc[0])
    assert p.symbols.string(k["name"].iloc[0]) == "trans_TransData_0"
    assert int(k["dur_ns"].iloc[0]) in (53741, 53742)
    assert p.symbols.string(k["type"].iloc[0]) == "TransData"
    assert p.symbols.string(k["accel_core"].iloc[0]) == "AI_VECTOR_CORE"
    assert int(k["step"].iloc[0]) == 50
    assert k["aiv_vec_time_us"].iloc[0] == pytest.approx(9.406)


def test_overlap_sums_equal_step_trace_time(corpus):
    p = _load(corpus, L1R0)
    ov = p.overlap
    by_kind = {OVERLAP_KINDS[i]: int(ov.loc[ov["kind"] == i, "dur_ns"].sum()) for i in range(len(OVERLAP_KINDS))}
    assert by_kind["Computing"] == 8873756
    assert by_kind["Communication(Not Overlapped)"] == 101963203
    import pandas as pd
    st = pd.read_csv(_worker(corpus, L1R0) / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv")
    assert by_kind["Computing"] / 1000 == pytest.approx(st["Computing"].iloc[0], abs=1e-6)
    assert by_kind["Free"] / 1000 == pytest.approx(st["Free"].iloc[0], abs=1e-6)


def test_kernels_join_and_pmu(corpus):
    p1, p0 = _load(corpus, L1R0), _load(corpus, L0R0)
    k1 = p1.kernels
    assert int(k1["detail"].sum()) == 191              # every kernel_details.csv row is present once
    csv_only = k1[k1["detail"] & (k1["task_type"] == 0)]
    assert sorted(p1.names(csv_only["name"])) == [f"hcom_allReduce__586_{i}_1" for i in range(4)]
    assert p1.meta.has_pmu and not p0.meta.has_pmu
    d = k1[k1["detail"] & (k1["task_type"] != 0)]
    assert d.loc[d["kind"] == KIND_COMPUTE, "aic_mac_time_us"].notna().all()
    assert k1["mac_time_us"].isna().all()             # the export renamed it aic_mac_time(us)
    assert p0.kernels[["aicore_time_us", "aiv_vec_time_us", "aic_mac_time_us"]].isna().all().all()
    tt = dict(zip(p1.names(k1["task_type"]), k1["kind"]))
    assert tt["AI_CORE"] == KIND_COMPUTE and tt["MIX_AIV"] == KIND_COMPUTE and tt["SDMA_SQE"] == KIND_MEMCPY
    # corpus streams come from "Physic Stream Id" (no "Stream Id" arg)
    assert set(k1.loc[k1["task_type"] != 0, "stream"]) == {0, 2, 3, 4}


def test_launch_links_point_at_innermost_op(corpus):
    p = _load(corpus, L1R0)
    k = p.kernels[p.kernels["launch_op"] >= 0]
    ops = p.ops
    lo = ops.iloc[k["launch_op"].to_numpy()]
    assert (lo["start_ns"].to_numpy() == k["flow_start_ns"].to_numpy()).all()
    assert (lo["cat"] == p.symbols.lookup("cpu_op")).all()
    assert not k["launch_op"].duplicated().all()          # one op may launch several kernels
    # no deeper cpu_op starts at the same (tid, ts)
    cpu = ops[ops["cat"] == p.symbols.lookup("cpu_op")]
    deepest = cpu.groupby(["tid", "start_ns"])["depth"].max()
    got = lo.set_index(["tid", "start_ns"])["depth"]
    assert (got == deepest.reindex(got.index)).all()


def test_communication_structure(corpus):
    p = _load(corpus, L1R0)
    co, ct = p.comm_ops, p.comm_tasks
    assert set(p.names(co["group"])) == {"Group 0 Communication"}
    assert set(p.names(co["op_type"])) == {"allreduce"}
    assert set(ct["plane"]) == set(range(1, 9))
    assert (ct["comm_op"] >= 0).all()
    op = co.iloc[ct["comm_op"].to_numpy()]
    assert (ct["start_ns"].to_numpy() >= op["start_ns"].to_numpy()).all()
    assert (ct["start_ns"].to_numpy() <= (op["start_ns"] + op["dur_ns"]).to_numpy()).all()
    assert set(p.names(ct["transport"])) <= {"SDMA", "RDMA", "LOCAL", ""}
    assert p.meta.bandwidth["last_key"] == "step50"
    hccs = p.meta.bandwidth["by_key"]["step50"]["HCCS"]
    assert hccs["size_mb"] == pytest.approx(427.596096) and hccs["time_ms"] == pytest.approx(27.315705875)


def test_steps_meta_and_memory(corpus):
    p = _load(corpus, L1R0)
    st = p.steps
    assert st["step"].tolist() == [50]
    ps = p.ops[p.ops["name"] == p.symbols.lookup("ProfilerStep#50")].iloc[0]
    assert int(st["start_ns"].iloc[0]) == int(ps["start_ns"])
    assert p.meta.rank == 0 and p.meta.profiler_level == "Level1"
    assert p.meta.config["common_config"]["with_stack"] is True
    assert (p.mem_allocs["op"] >= 0).all()
    mr = p.mem_records
    assert len(mr) == 1004 and mr["reserved_bytes"].max() == pytest.approx(2113.7 * 1024 * 1024, rel=1e-3)
    assert mr["allocated_bytes"].isna().any()             # empty cells stay NaN
    assert set(mr["device"]) == {0}
    assert (p.ops["is_backward"] == (p.ops["tid"] == p.meta.bwd_tid)).all()


def test_advisor_sample_bare_output_dir(corpus):
    p = _load(corpus, ADVISOR)
    assert p.meta.rank is None and p.meta.profiler_level is None and not p.meta.has_pmu
    assert len(p.pyfuncs) == 0 and len(p.mem_allocs) == 0
    # its kernel_details.csv comes from another capture: nothing joins, both kept, and it says so
    assert int(p.kernels["detail"].sum()) == 591
    assert any("no row matches" in w for w in p.meta.warnings)


def test_output_dir_root_finds_info_in_parent(corpus):
    p = ascend_text.load(str(_worker(corpus, L1R0) / "ASCEND_PROFILER_OUTPUT"))
    assert p.meta.rank == 0 and p.meta.profiler_level == "Level1"


def test_peek(corpus, tmp_path):
    info = ascend_text.peek(str(_worker(corpus, L1R0)))
    assert info["rank"] == 0 and info["profiler_level"] == "Level1" and info["error"] is None
    assert info["has"] == {"kernels": True, "communication": True, "memory": True, "modules": True}
    assert any(f.endswith("trace_view.json") for f in info["files"])
    info0 = ascend_text.peek(str(_worker(corpus, L0R1)))
    assert info0["rank"] == 1 and info0["profiler_level"] == "Level0" and not info0["has"]["communication"]
    adv = ascend_text.peek(str(_worker(corpus, ADVISOR)))
    assert adv["rank"] is None and adv["has"]["kernels"] and not adv["has"]["memory"]
    (tmp_path / "empty_ascend_pt").mkdir()
    assert "trace_view.json" in ascend_text.peek(str(tmp_path / "empty_ascend_pt"))["error"]


def test_mindspore_folder_loads(corpus, tmp_path):
    root = _copy_worker(corpus, L1R0, tmp_path / "worker_ascend_ms")
    p = dispatch_load("mindspore-text", str(root))
    assert p.meta.framework == "MindSpore" and p.meta.format == "mindspore-text"
    assert len(p.kernels) == 539 and len(p.comm_ops) == 4
    # the folder name alone is enough
    assert ascend_text.load(str(root / "ASCEND_PROFILER_OUTPUT")).meta.framework == "MindSpore"


# --------------------------------------------------------------------------------------- bad input

def _broken(corpus, tmp_path) -> Path:
    return _copy_worker(corpus, L1R0, tmp_path / "bad_ascend_pt")


def _expect(root: Path, file_part: str, *words: str):
    with pytest.raises(LoadError) as ei:
        ascend_text.load(str(root))
    msg = str(ei.value)
    assert file_part in msg, msg
    for w in words:
        assert w.lower() in msg.lower(), msg


def test_truncated_trace(corpus, tmp_path):
    root = _broken(corpus, tmp_path)
    tv = root / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    tv.write_bytes(tv.read_bytes()[: 100_000])
    _expect(root, "trace_view.json", "truncated")


def test_empty_trace(corpus, tmp_path):
    root = _broken(corpus, tmp_path)
    (root / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_bytes(b"")
    _expect(root, "trace_view.json", "empty")


def test_trace_not_an_array_or_not_json(corpus, tmp_path):
    root = _broken(corpus, tmp_path)
    tv = root / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    tv.write_text('{"traceEvents": []}')
    _expect(root, "trace_view.json", "not a JSON array")
    tv.write_text("this is not json")
    _expect(root, "trace_view.json", "not valid JSON")
    tv.write_bytes(b'[{"ph": "X", "name": "\xff\xfe"}]')
    _expect(root, "trace_view.json", "UTF-8")


def test_kernel_details_without_start_time(corpus, tmp_path):
    root = _broken(corpus, tmp_path)
    kd = root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    kd.write_text(kd.read_text().replace("Start Time(us)", "Begin(us)", 1))
    _expect(root, "kernel_details.csv", "Start Time(us)", "missing")


def test_non_utf8_csv(corpus, tmp_path):
    root = _broken(corpus, tmp_path)
    om = root / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv"
    raw = om.read_bytes()
    om.write_bytes(raw[:500] + b"\xff\xfe\xfa" + raw[500:])
    _expect(root, "operator_memory.csv", "UTF-8")


def test_missing_optional_column_warns(corpus, tmp_path):
    root = _broken(corpus, tmp_path)
    mr = root / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    mr.write_text(mr.read_text().replace("Total Reserved(MB)", "Reserved", 1))
    p = ascend_text.load(str(root))
    assert any("memory_record.csv" in w and "Total Reserved(MB)" in w for w in p.meta.warnings)
    assert p.mem_records["reserved_bytes"].isna().all()


def test_folder_without_trace(tmp_path):
    root = tmp_path / "nothing_ascend_pt"
    (root / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    _expect(root, "trace_view.json", "no trace_view.json")


# --------------------------------------------------------------------------------------- helpers

def test_ts_conversion_paths():
    same = ["1736408883688177.930", "1736408883688178.001"]
    assert ascend_csv.ts_ns(same).tolist() == [1736408883688177930, 1736408883688178001]
    mixed = ["1736408883688177.930", "1736408883688177", "5.5", 12, 1.5, None, "junk"]
    assert ascend_csv.ts_ns(mixed).tolist() == [1736408883688177930, 1736408883688177000, 5500, 12000,
                                                   1500, -1, -1]


def test_ints_helper():
    assert ascend_csv.ints([1, None, "7", "N/A", 2.0]).tolist() == [1, -1, 7, -1, 2]
    odd = ascend_csv.ints([3, "Group A", "Group B", "Group A"]).tolist()
    assert odd[0] == 3 and odd[1] == odd[3] and odd[1] != odd[2] and min(odd[1:]) < -1
    assert ascend_csv.ints([2 ** 70, "99999999999999999999999", 7, 1e300]).tolist() == [-1, -1, 7, -1]


def test_empty_optional_csv_warns(corpus, tmp_path):
    root = _broken(corpus, tmp_path)
    (root / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv").write_bytes(b"")
    (root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_bytes(b"\r\n")
    p = ascend_text.load(str(root))
    assert len(p.mem_allocs) == 0 and not p.kernels["detail"].any()
    assert any("operator_memory.csv" in w and "empty" in w for w in p.meta.warnings)
    assert any("kernel_details.csv" in w and "empty" in w for w in p.meta.warnings)


# --------------------------------------------------------------------------------------- synthetic

def _synthetic(tmp_path: Path) -> Path:
    """A tiny hand-written export exercising the rules the corpus does not."""
    def m(pid, tid, what, **args):
        return {"ph": "M", "name": what, "pid": pid, "tid": tid, "args": args}
    ev = [
        m(1, 0, "process_name", name="Python"), m(9, 0, "process_name", name="Ascend Hardware"),
        m(7, 0, "process_name", name="HCCL"),
        m(7, 0, "thread_name", name="Group 0 Communication"), m(7, 0, "thread_sort_index", sort_index=0),
        m(7, 1, "thread_name", name="Plane 0"), m(7, 1, "thread_sort_index", sort_index=1),
        m(7, 5, "thread_name", name="Group 1 Communication"), m(7, 5, "thread_sort_index", sort_index=2),
        m(7, 6, "thread_name", name="Plane 0"), m(7, 6, "thread_sort_index", sort_index=3),
        {"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": "100.000", "dur": 50},
        {"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": "100.000", "dur": 10},
        {"ph": "C", "name": "counter", "pid": 3, "tid": 0, "ts": "100", "args": {"value": 1}},
        {"ph": "s", "cat": "async_npu", "id": 5, "pid": 1, "tid": 1, "ts": "100.000"},
        {"ph": "f", "cat": "async_npu", "id": 5, "pid": 9, "tid": 3, "ts": "120.500"},
        {"ph": "X", "name": "k1", "pid": 9, "tid": 3, "ts": "120.500", "dur": 2.0004,
         "args": {"Task Type": "AI_CORE", "Stream Id": 33, "Task Id": 4}},
        {"ph": "X", "name": "k2", "pid": 9, "tid": 3, "ts": "120.500", "dur": 1,
         "args": {"Task Type": "SDMA_SQE", "Physic Stream Id": 3}},
        {"ph": "X", "name": "hcom_broadcast_1", "pid": 7, "tid": 5, "ts": 200.0, "dur": 30},
        {"ph": "X", "name": "hcom_allGather__9_1", "pid": 7, "tid": 0, "ts": 200, "dur": 10},
        {"ph": "X", "name": "Notify_Wait", "pid": 7, "tid": 6, "ts": "215.000", "dur": 1,
         "args": {"task type": "Notify_Wait", "transport type": "RDMA", "size(Byte)": 8}},
        {"ph": "X", "name": "Memcpy", "pid": 7, "tid": 1, "ts": "205.000", "dur": 1},
        {"ph": "i", "name": "instant", "pid": 1, "tid": 1, "ts": "1.0"},
    ]
    out = tmp_path / "syn_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "trace_view.json").write_text(json.dumps(ev))
    (out / "kernel_details.csv").write_text(
        "Step ID,Name,Type,Start Time(us),Duration(us),aicore_time(us)\r\n"
        "7,k2,MemCopy,120.500\t,1.0,N/A\r\n7,k1,MatMul,120.500\t,2.0,1.5\r\n8,lonely,Add,300.000\t,4.0,\r\n")
    (tmp_path / "syn_ascend_pt" / "profiler_info.json").write_text('{"rank_id": -1, "config": {}}')
    (tmp_path / "syn_ascend_pt" / "profiler_metadata.json").write_text(
        json.dumps({"parallel_group_info": {"1": {"group_name": "dp", "group_rank": 0}}}))
    bw = {"RDMA": {"Transit Size(MB)": 4, "Transit Time(ms)": 2}, "HCCS": {"Transit Size(MB)": 1}}
    (out / "communication.json").write_text(json.dumps({
        "step1": {"collective": {"Total Op Info": {"Communication Bandwidth Info": bw}}},
        "step2": {"p2p": {}, "collective": {}}}))
    return tmp_path / "syn_ascend_pt"


def test_synthetic_rules(tmp_path):
    p = ascend_text.load(str(_synthetic(tmp_path)))
    k, sym = p.kernels, p.symbols
    names = p.names(k["name"])
    assert names == ["k1", "k2", "lonely"]
    assert k["stream"].tolist() == [33, 3, -1]                    # "Stream Id", else "Physic Stream Id"
    assert p.names(k["type"]) == ["MatMul", "MemCopy", "Add"]      # same ts: joined by name too
    assert k["dur_ns"].tolist() == [2000, 1000, 4000] and k["start_ns"].tolist()[2] == 300000
    assert k["kind"].tolist()[:2] == [KIND_COMPUTE, KIND_MEMCPY]
    assert k["aicore_time_us"].tolist()[0] == 1.5 and np.isnan(k["aicore_time_us"].tolist()[1])
    inner = int(p.ops.index[p.ops["name"] == sym.lookup("inner")][0])
    assert k["launch_op"].tolist() == [inner, -1, -1]              # innermost op at the flow start
    assert k["flow_start_ns"].tolist() == [100000, -1, -1]
    assert p.steps["step"].tolist() == [7, 8]                     # no ProfilerStep#: kernel Step ID
    co, ct = p.comm_ops, p.comm_tasks
    assert p.names(co["op_type"]) == ["broadcast", "allgather"]
    assert p.names(co["group"]) == ["Group 1 Communication", "Group 0 Communication"]
    assert p.names(ct["group"]) == ["Group 1 Communication", "Group 0 Communication"]
    assert ct["comm_op"].tolist() == [0, 1] and ct["bytes"].tolist() == [8, -1]
    assert co["start_ns"].tolist() == [200000, 200000]            # numeric ts accepted
    assert p.meta.rank is None                                     # rank_id -1: not distributed
    assert p.meta.pg_names == {"Group 1 Communication": "dp"}
    assert p.meta.bandwidth == {"by_key": {"step1": {"RDMA": {"size_mb": 4.0, "time_ms": 2.0},
                                                     "HCCS": {"size_mb": 1.0, "time_ms": 0.0}}},
                                "last_key": "step1"}
    assert len(p.overlap) == 0 and len(p.pyfuncs) == 0 and p.meta.bwd_tid is None


# --------------------------------------------------------------------------------------- streaming decode
# trace_view.json is decoded in ~1 MB chunks (ascend_trace); these tests pin that the tables do not
# depend on where the chunks are cut, on the order metadata arrives in, or on the rewrite itself.

SAMPLE_RUNS = ["target_npu/rank0_ascend_pt", "target_npu_v2/rank0_ascend_pt"]
EXPORTS = [("corpus", w) for w in WORKERS] + [("samples", s) for s in SAMPLE_RUNS]


def _export(kind: str, rel: str, corpus_root) -> Path:
    if kind == "samples":
        from conftest import SAMPLES
        return SAMPLES / rel
    return _worker(corpus_root(), rel)


@pytest.fixture
def corpus_root(request):
    return lambda: request.getfixturevalue("corpus")


def _snapshot(p) -> dict:
    meta = {k: v for k, v in p.meta.to_dict().items() if k not in ("path", "files")}
    return {"symbols": p.symbols.to_list(), "meta": meta,
            "tables": {t: {c: df[c].to_numpy() for c in df.columns} for t, df in p.tables.items()}}


def _assert_same(a: dict, b: dict) -> None:
    """Equal symbol tables and meta; every column of every table equal in dtype and bytes."""
    assert a["symbols"] == b["symbols"]
    assert a["meta"] == b["meta"]
    for t, cols in a["tables"].items():
        assert list(cols) == list(b["tables"][t]), t
        for c, x in cols.items():
            y = b["tables"][t][c]
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), f"{t}.{c} differs"


def _load_with(root: Path, monkeypatch, chunk_bytes: int, hints=None):
    from tb_compare_plugin.loaders import ascend_trace
    with monkeypatch.context() as m:
        m.setattr(ascend_trace, "CHUNK_BYTES", chunk_bytes)
        if hints is not None:
            m.setattr(ascend_trace, "_role_hints", hints)
        return ascend_text.load(str(root))


@pytest.mark.parametrize("kind,rel", EXPORTS)
def test_chunked_decode_equals_whole_file(kind, rel, corpus_root, monkeypatch):
    """_load_whole_file reference: one chunk holding the whole file vs 24 KB chunks (~100 cuts)."""
    root = _export(kind, rel, corpus_root)
    whole = _snapshot(_load_with(root, monkeypatch, 1 << 40))
    _assert_same(whole, _snapshot(_load_with(root, monkeypatch, 24 << 10)))


@pytest.mark.parametrize("kind,rel", [EXPORTS[2], EXPORTS[-1]])
def test_late_role_change_decodes_again(kind, rel, corpus_root, monkeypatch):
    """Wrong role hints (every process guessed to be "Ascend Hardware") make the chunks keep the
    wrong args; the loader must notice, decode again keeping every field, and give the same tables."""
    from tb_compare_plugin.loaders import ascend_trace
    root = _export(kind, rel, corpus_root)
    good = _snapshot(_load_with(root, monkeypatch, 64 << 10))
    real = ascend_trace._role_hints
    passes = []
    init = ascend_trace._Collector.__init__

    def spy(self, path, full, hints):
        passes.append(full)
        init(self, path, full, hints)
    monkeypatch.setattr(ascend_trace._Collector, "__init__", spy)
    bad = _snapshot(_load_with(root, monkeypatch, 64 << 10, hints=lambda p: {k: 1 for k in real(p)}))
    assert passes == [False, True]
    _assert_same(good, bad)


def test_role_hints_read_head_and_tail(tmp_path):
    from tb_compare_plugin.loaders import ascend_trace
    ev = [{"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "HCCL"}}]
    ev += [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": f"{i}.000", "dur": 1} for i in range(300)]
    ev += [{"name": "process_name", "pid": 9, "tid": 0, "args": {"name": "Ascend Hardware"}, "ph": "M"},
           {"ph": "M", "name": "process_name", "pid": "1", "tid": 0, "args": {"name": "Python"}}]
    tv = tmp_path / "trace_view.json"
    tv.write_text(json.dumps(ev))
    assert ascend_trace._role_hints(str(tv), head=400, tail=400) == {7: 2, 9: 1, 1: 0}
    assert ascend_trace._role_hints(str(tv), head=50, tail=50) == {}          # cut events: no guess


def test_streaming_errors_name_the_file(corpus, tmp_path, monkeypatch):
    from tb_compare_plugin.loaders import ascend_trace
    monkeypatch.setattr(ascend_trace, "CHUNK_BYTES", 32 << 10)
    root = _broken(corpus, tmp_path)
    tv = root / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    raw = tv.read_bytes()
    at = raw.index(b"}, {", 1_000_000) + 1                                   # a separator mid-file
    tv.write_bytes(raw[:at] + b"@" + raw[at + 1:])
    _expect(root, "trace_view.json", "not valid JSON", f"{at:,}")
    events = json.loads(raw)
    k = next(i for i, e in enumerate(events) if i > 5000 and e.get("ph") == "X")
    events[k]["args"] = [1, 2]                                               # a layout error deep in the file
    tv.write_text(json.dumps(events))
    _expect(root, "trace_view.json", "unexpected layout", f"$[{k}].args")


def test_csv_conversions_match_the_column_rules():
    """ns()/num() (vectorised, once per distinct cell) against the per-column rules they replace."""
    import pandas as pd
    from tb_compare_plugin.model import timeconv
    cells = ["1736408883704643.212\t", "5.5", "", "N/A", " 12 ", "1e3", "-5.000", "12.", "junk", "7.1234",
             "1736408883704643.212\t", "nan", "None", "\t3.000\t"]
    df = pd.DataFrame({"c": pd.Series(cells, dtype=str)})
    assert ascend_csv.ns(df, "c").tolist() == timeconv.us_str_column_to_ns(df["c"].to_numpy(dtype=object)).tolist()
    want = pd.to_numeric(df["c"].str.strip(), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    assert ascend_csv.num(df, "c").tobytes() == want.tobytes()
    devices = np.array(["NPU:3", None, "NPU: 12 ", "cpu"], dtype=object)
    assert ascend_csv.device_index(devices).tolist() == [3, -1, 12, -1]


# Digests of every table, the symbol table and meta (minus paths) as the whole-file loader produced
# them before the streaming rewrite (2026-11-22).  A deliberate change of the loader's output makes
# this fail: check the change, then print the new digests with `python tests/test_loader_ascend_text.py`.
PRE_STREAMING = {
    "corpus/alexnet_ddp_2rank_level0/rank0_ascend_pt":
        "ce37d72f76c2e2de ca61cb877bc015f6 6a8f2b7d46ee98f4 cd1a8577798ee993 22241082136939c0 b2f2843eb261a940 "
        "fc29ff5a809c4814 fe6ff9bdb05303af 12b8de2d52ea28f7 61079bdd48cbedd0 ebf945850ed9f132 f3cf9f553d9ac1f9",
    "corpus/alexnet_ddp_2rank_level0/rank1_ascend_pt":
        "3a5a8bd6e455f23b 9c9073c753123095 40a5dda1835d4450 cd1a8577798ee993 f5ab127b3ebbc35b 369a8abd56cbd51b "
        "1bea58cec38c01fe 78a13ac7db482067 aa0756324b89f4ed c140f1212b0e9766 e4f27eb2a457775c e2f3d49ea8e00d8e",
    "corpus/alexnet_ddp_2rank_level1/rank0_ascend_pt":
        "c08dd63a2a838614 0c6902fbfbb85d3e 8ce51c4627547a3f b2d7b35a61a58370 8ed6bd009f1e4ccc 19ce2996f348fc59 "
        "a81a44792886fbc3 c9a18763a2174a1e a3e6e8ad690145c2 85b1109016e63714 7f991d2538e73426 d6157f7f0b42a961",
    "corpus/alexnet_ddp_2rank_level1/rank1_ascend_pt":
        "556faf46e39a4b24 9a112e30688b4a1f 6a0fe377fde82d25 e5ac2c28bec84f47 17fd05cba045a09b 0304316a9f140c08 "
        "781ca5a470f9ee9c f499b79c4d14b82d c147a3360abef26a 84841a88b49e2533 e861f83a79313b66 ae6538c75e475c3a",
    "corpus/mstt_advisor_sample/ASCEND_PROFILER_OUTPUT":
        "4e5349426cbb6b44 f514e63d4e2edf2e 3761e4701a31beda cd1a8577798ee993 e3109c5cd6094e01 1053510b84dc86ce "
        "c4efe2818dd6c8ad ffa7a60cffe713fb b9ec363a253ae601 8d715bb6991d3349 d4d09ccb46cc948f 88b8dc089397b7cf",
    "samples/target_npu/rank0_ascend_pt":       # samples/ regenerated with 6 steps (issue 15)
        "e76d454439a05f1a b13e1110c2c92649 65eb0cdf3b278eb3 ee2ee476e1398ae6 aba57706dcf93ba6 18d91b9ec50cdbec "
        "7c176a25a1b496ff b336482628b17767 a0d2e6cb941dda46 758074af83ffbda0 5d90f35dd185510f 52139b5620f8e2ad",
    "samples/target_npu_v2/rank0_ascend_pt":
        "e76d454439a05f1a b13e1110c2c92649 bb0fcdd39ca0e7a5 18bcdd1ee4241b36 7905ca840d91a8ab fd75d34e42d70f8d "
        "13140d4b7145001e 520e759e8ccbe0b5 b3608d31c4ab9cb7 cf432f854a845715 a1a0473050c20d8a 45ffe75b074db21f",
}
_DIGEST_KEYS = ["symbols", "meta", "comm_ops", "comm_tasks", "fwdbwd", "kernels", "mem_allocs", "mem_records",
                "ops", "overlap", "pyfuncs", "steps"]


# columns added to the model after these digests were taken (issue 15: PMU ratios, GPU kernel args);
# the digests hold the columns that were there, which must not change
_NEWER_COLUMNS = {"kernels": ("aic_mac_ratio", "aiv_vec_ratio", "grid_x", "grid_y", "grid_z", "block_x", "block_y",
                              "block_z", "registers", "shared_mem", "blocks_per_sm", "occupancy_pct"),
                  "steps": ("fp_start_ns", "bp_end_ns")}     # issue 17: MindSpore/msprof FP start, BP end


def _digests(p) -> dict:
    import hashlib
    skip = ("path", "files") + p.meta.FORMAT_FACTS          # facts the format descriptor adds
    if not p.meta.mem_components_added:                     # a DB-only fact newer than these digests
        skip += ("mem_components_added",)
    skip += ("device_props",)                               # a GPU fact newer than these digests
    meta = {k: v for k, v in p.meta.to_dict().items() if k not in skip}
    out = {"symbols": hashlib.sha256(json.dumps(p.symbols.to_list()).encode()).hexdigest()[:16],
           "meta": hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode()).hexdigest()[:16]}
    for name in sorted(p.tables):
        h = hashlib.sha256()
        for c, s in p.tables[name].items():
            if c in _NEWER_COLUMNS.get(name, ()):
                continue
            a = s.to_numpy()
            h.update(f"{c}:{a.dtype}:".encode())
            h.update(a.tobytes())
        out[name] = h.hexdigest()[:16]
    return out


@pytest.mark.parametrize("kind,rel", EXPORTS)
def test_tables_match_the_pre_streaming_loader(kind, rel, corpus_root):
    p = _load(corpus_root(), rel) if kind == "corpus" else ascend_text.load(str(_export(kind, rel, corpus_root)))
    got = _digests(p)
    want = dict(zip(_DIGEST_KEYS, PRE_STREAMING[f"{kind}/{rel}"].split()))
    assert [k for k in _DIGEST_KEYS if got[k] != want[k]] == []


if __name__ == "__main__":          # print the digests of the current loader (see PRE_STREAMING)
    from conftest import CORPUS, SAMPLES
    for kind, rel in EXPORTS:
        path = (SAMPLES if kind == "samples" else CORPUS / NPU) / rel
        d = [_digests(ascend_text.load(str(path)))[k] for k in _DIGEST_KEYS]
        print(f'    "{kind}/{rel}":\n        "{" ".join(d[:6])} "\n        "{" ".join(d[6:])}",')
