"""Ascend SQLite export loader: real corpus DBs vs their text twins, golden pair v, bad input."""
from __future__ import annotations

import collections
import csv
import json
import shutil
import sqlite3
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from tb_compare_plugin import loaders
from tb_compare_plugin.loaders import ascend_db
from tb_compare_plugin.loaders.errors import LoadError
from tb_compare_plugin.model import KIND_COMM, KIND_COMPUTE, OVERLAP_KINDS
from tb_compare_plugin.model.intervals import total_length

from conftest import CORPUS, GOLDEN, needs_corpus

NPU = CORPUS / "npu"
WORKERS = [(lvl, r) for lvl in (0, 1) for r in (0, 1)]


def db_root(level: int, rank: int) -> Path:
    return NPU / f"alexnet_ddp_2rank_db_level{level}" / f"rank{rank}_ascend_pt"


def db_file(level: int, rank: int) -> Path:
    return db_root(level, rank) / "ASCEND_PROFILER_OUTPUT" / f"ascend_pytorch_profiler_{rank}.db"


@lru_cache(maxsize=None)
def loaded(level: int, rank: int):
    return ascend_db.load(str(db_root(level, rank)))


@lru_cache(maxsize=None)
def text_counts(level: int, rank: int) -> dict:
    """Counts read straight from the text export of the same job (a different capture, same step)."""
    out = NPU / f"alexnet_ddp_2rank_level{level}" / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    ev = json.loads((out / "trace_view.json").read_text())
    pname = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
    tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    xs = [e for e in ev if e.get("ph") == "X"]
    hccl = [e for e in xs if pname.get(e["pid"]) == "HCCL"]
    with open(out / "kernel_details.csv", newline="") as f:
        kd = list(csv.DictReader(f))
    with open(out / "operator_memory.csv", newline="") as f:
        om = list(csv.DictReader(f))
    with open(out / "memory_record.csv", newline="") as f:
        mr = [r for r in csv.DictReader(f) if r["Component"] != "APP"]
    cats = collections.Counter(e.get("cat") for e in xs if pname.get(e["pid"]) == "Python")
    return {
        "cpu_op": cats["cpu_op"], "enqueue": cats["enqueue"], "dequeue": cats["dequeue"],
        "python_function": cats["python_function"],
        "modules": sum(e["name"].startswith("nn.Module:") for e in xs if e.get("cat") == "python_function"),
        "hardware": sum(pname.get(e["pid"]) == "Ascend Hardware" for e in xs),
        "overlap": sum(pname.get(e["pid"]) == "Overlap Analysis" for e in xs),
        "comm_ops": sum("Communication" in tname.get((e["pid"], e["tid"]), "") for e in hccl),
        "plane_tasks": collections.Counter(e["name"] for e in hccl if "Plane" in tname.get((e["pid"], e["tid"]), "")),
        "fwdbwd": sum(e.get("cat") == "fwdbwd" and e["ph"] == "f" for e in ev),
        "detail_cores": collections.Counter(r["Accelerator Core"] for r in kd if r["Accelerator Core"] != "HCCL"),
        "op_memory": len(om), "cann_memory": sum(r["Name"].startswith("cann::") for r in om),
        "op_memory_kb": sum(float(r["Size(KB)"]) for r in om),
        "memory_record": len(mr),
        "aiv_vec_us": sum(float(r["aiv_vec_time(us)"]) for r in kd
                          if r.get("aiv_vec_time(us)") not in (None, "", "N/A")),
    }


def strings(p, col: str, table: str = "kernels") -> np.ndarray:
    return p.symbols.as_array()[p.tables[table][col].to_numpy()]


# --------------------------------------------------------------------------- real corpus
@needs_corpus
@pytest.mark.parametrize("level,rank", WORKERS)
def test_all_four_db_workers_load(level, rank):
    p = loaded(level, rank)
    m = p.meta
    assert (m.format, m.device, m.framework, m.rank) == ("ascend-db", "NPU", "PyTorch", rank)
    assert m.profiler_level == f"Level{level}" and m.device_name == "Ascend910B"
    assert m.config["experimental_config"]["_export_type"] == "db"
    assert str(db_file(level, rank)) in m.files
    assert m.has_pmu is (level == 1)
    assert p.step_ids() == [50] and m.compute_stream == 2
    assert p.has() == {"kernels": True, "communication": True, "memory": True, "modules": True}
    k = p.kernels
    assert (k["dur_ns"] >= 0).all() and k["step"].isin([50, -1]).all()
    assert int(k["detail"].sum()) == 187


@needs_corpus
@pytest.mark.parametrize("level,rank", WORKERS)
def test_counts_match_text_export(level, rank):
    p, t = loaded(level, rank), text_counts(level, rank)
    cats = collections.Counter(strings(p, "cat", "ops"))
    assert (cats["cpu_op"], cats["enqueue"], cats["dequeue"]) == (t["cpu_op"], t["enqueue"], t["dequeue"])
    assert len(p.pyfuncs) == t["python_function"] and int(p.pyfuncs["is_module"].sum()) == t["modules"]
    assert len(p.kernels) == t["hardware"]             # TASK minus the 17 container rows
    assert len(p.comm_ops) == t["comm_ops"] and len(p.fwdbwd) == t["fwdbwd"]
    detail = p.kernels[p.kernels["detail"]]
    cores = collections.Counter(p.symbols.as_array()[detail["accel_core"].to_numpy()])
    assert cores == t["detail_cores"]
    app = p.mem_records["component"].to_numpy() == p.symbols.lookup("APP")
    assert len(p.mem_allocs) == t["op_memory"] and int((~app).sum()) == t["memory_record"]
    # APP (the whole process) is not in MEMORY_RECORD: the loader reads it from NPU_MEM, as the
    # text export's memory_record.csv has it (13-14 samples, one per 20 ms, in either capture)
    assert int(app.sum()) in (13, 14) and np.isnan(p.mem_records["allocated_bytes"].to_numpy()[app]).all()
    assert p.mem_allocs["bytes"].sum() / 1024 == pytest.approx(t["op_memory_kb"])
    if level == 1:   # the level0 text trace has no HCCL planes; the DB keeps its 296 tasks
        assert collections.Counter(strings(p, "name", "comm_tasks")) == t["plane_tasks"]
    else:
        assert len(p.comm_tasks) == 296


@needs_corpus
def test_counts_match_reference_internals():
    g = json.loads((GOLDEN / "i_npu_l1r0_vs_l1r1" / "internals.json").read_text())
    for rank, side in ((0, "baseline_side"), (1, "target_side")):
        c, p = g[side]["parsed_counts"], loaded(1, rank)
        ops = p.ops[strings(p, "cat", "ops") == "cpu_op"]
        assert len(ops) == c["torch_op_events"] and len(p.pyfuncs) == c["python_function_events"]
        assert int(p.pyfuncs["is_module"].sum()) == c["nn_module_events"]
        assert len(p.fwdbwd) == c["fwdbwd_flow_pairs"] and len(p.mem_allocs) == c["memory_records"]
        assert p.mem_allocs["bytes"].sum() / 1024 == c["memory_records_total_size_kb"]
        comm = c["communication"]["allreduce"]
        assert (strings(p, "op_type", "comm_ops") == "allreduce").sum() == comm["ops"]
        assert collections.Counter(strings(p, "name", "comm_tasks")) == comm["tasks"]


@needs_corpus
def test_overlap_sums_match_analysis_db():
    p = loaded(1, 0)     # the only export of the four that carries OVERLAP_ANALYSIS
    con = sqlite3.connect(f"file:{db_file(1, 0).parent / 'analysis.db'}?mode=ro&immutable=1", uri=True)
    row = con.execute("SELECT computing, communication, communication_not_overlapped, free, stage "
                      "FROM StepTraceTime").fetchone()
    con.close()
    ov = p.overlap
    sums = ov.groupby("kind")["dur_ns"].sum()
    for kind, us in zip(range(len(OVERLAP_KINDS)), row[:4]):
        assert int(sums[kind]) == round(us * 1000), OVERLAP_KINDS[kind]
    assert int((ov["start_ns"] + ov["dur_ns"]).max() - ov["start_ns"].min()) == round(row[4] * 1000)
    assert loaded(1, 1).overlap.empty and any("OVERLAP_ANALYSIS" in w for w in loaded(1, 1).meta.warnings)


@needs_corpus
def test_golden_v_figures_from_tables():
    g = json.loads((GOLDEN / "v_npu_db_l1r0_vs_l1r1" / "golden.json").read_text())
    rows = {r[0]: r for r in g["sheets"]["OverallMetrics"]["rows"]}
    not_compute = {"KERNEL_AICORE", "KERNEL_AIVEC", "FFTS_PLUS", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV",
                   "PROFILING_ENABLE", "PROFILING_DISABLE"}
    for rank, col in ((0, 1), (1, 4)):
        p = loaded(1, rank)
        k, co = p.kernels, p.comm_ops
        comp = k[k["detail"]]
        cs, ce = comp["start_ns"].to_numpy(), (comp["start_ns"] + comp["dur_ns"]).to_numpy()
        ms, me = co["start_ns"].to_numpy(), (co["start_ns"] + co["dur_ns"]).to_numpy()
        computing = total_length(cs, ce)
        busy = total_length(np.r_[cs, ms], np.r_[ce, me])
        other = k[~np.isin(strings(p, "task_type"), list(not_compute))]
        lo = min(cs.min(), ms.min(), other["start_ns"].min())
        hi = max(ce.max(), me.max(), (other["start_ns"] + other["dur_ns"]).max())
        assert computing / 1e6 == pytest.approx(rows["Computing Time"][col], abs=1e-9)
        assert (busy - computing) / 1e6 == pytest.approx(rows["Uncovered Communication Time"][col], abs=1e-6)
        assert (hi - lo) / 1e6 == pytest.approx(rows["E2E Time"][col], abs=1e-9)
        # Mem Usage: the reference's 1.49G lacks the APP series (NPU_MEM); ours has it (docs/deviations.md)
        assert g["screen_table"]["rows"][rank][7] == "1.49G"
        comp = p.mem_records["component"].to_numpy()
        not_app = p.mem_records["reserved_bytes"].to_numpy()[comp != p.symbols.lookup("APP")]
        assert f'{np.nanmax(not_app) / 2 ** 30:.2f}G' == "1.49G"
        assert f'{p.mem_records["reserved_bytes"].max() / 2 ** 30:.2f}G' == "2.06G"


@needs_corpus
def test_pmu_in_microseconds_and_cube_split():
    p, t = loaded(1, 0), text_counts(1, 0)
    d = p.kernels[p.kernels["detail"]]
    assert d["aiv_vec_time_us"].notna().sum() == 185            # the 2 DSA tasks have no PMU
    assert d["aiv_vec_time_us"].sum() == pytest.approx(t["aiv_vec_us"], rel=0.05)   # other capture
    assert (d["aiv_time_us"].fillna(0) <= d["dur_ns"] / 1000 * 1.05 + 1).all()
    cube = d[d["aicore_time_us"] > 0]
    assert set(strings(p, "accel_core")[cube.index]) <= {"AI_CORE", "MIX_AIV"}
    assert d["mac_time_us"].isna().all()      # newer exports only have aic_mac_time, like the CSV
    assert not loaded(0, 0).meta.has_pmu and loaded(0, 0).kernels["aicore_time_us"].isna().all()


@needs_corpus
def test_links_between_tables():
    p = loaded(1, 0)
    k, ops, sym = p.kernels, p.ops, p.symbols.as_array()
    d = k[k["detail"]]
    assert (d["launch_op"] >= 0).all() and (d["kind"] == KIND_COMPUTE).all()
    lo = d["launch_op"].to_numpy()
    assert (d["flow_start_ns"].to_numpy() == ops["start_ns"].to_numpy()[lo]).all()
    assert (d["flow_start_ns"] <= d["start_ns"]).all()
    assert (k.loc[k["kind"] == KIND_COMM, "launch_op"] == -1).all()
    assert set(sym[ops["name"].to_numpy()[p.comm_ops["launch_op"].to_numpy()]]) == {"HcclAllreduce"}
    ct = p.comm_tasks
    assert (ct["comm_op"] >= 0).all()
    op_start = p.comm_ops["start_ns"].to_numpy()[ct["comm_op"]]
    op_end = op_start + p.comm_ops["dur_ns"].to_numpy()[ct["comm_op"]]
    assert ((ct["start_ns"] >= op_start) & (ct["start_ns"] <= op_end)).all()
    assert set(ct["plane"]) == set(range(8)) and set(strings(p, "transport", "comm_tasks")) <= {"SDMA", "LOCAL"}
    # queue pairs share their connection id, like the text correlation_id
    cats = strings(p, "cat", "ops")
    assert sorted(ops["corr"][cats == "enqueue"]) == sorted(ops["corr"][cats == "dequeue"])
    # backward: fwd->bwd flows end on one thread, which is the autograd thread of the ops
    assert set(p.fwdbwd["end_tid"]) == {p.meta.bwd_tid} and p.meta.bwd_tid not in set(p.fwdbwd["start_tid"])
    assert int(ops.loc[cats == "cpu_op", "is_backward"].sum()) == 544
    assert (ops["parent"] < len(ops)).all() and (p.pyfuncs["depth"] >= 0).all()


@needs_corpus
def test_shapes_types_and_call_stacks():
    p = loaded(1, 0)
    ops, sym = p.ops, p.symbols.as_array()
    names = sym[ops["name"].to_numpy()]
    i = int(np.flatnonzero(names == "aten::set_")[0])
    assert sym[ops["input_shapes"].iat[i]] == "0;\r\n;\r\n;\r\n;\r\n"          # text "Input Dims"
    assert sym[ops["input_types"].iat[i]].startswith("float;\r\nNone")       # text "Input type"
    stack = sym[ops["call_stack"].iat[i]].split(";\n")
    assert stack[0].endswith("torch/_utils.py(181): _rebuild_tensor")    # as the text "Call stack"
    assert stack[-1] == "<string>(1): <module>" and len(stack) == 15
    assert (ops["call_stack"] > 0).sum() == 316


@needs_corpus
def test_bandwidth_from_analysis_db():
    bw = loaded(1, 0).meta.bandwidth
    assert bw["last_key"] == "step50"
    sdma = bw["by_key"]["step50"]["SDMA"]
    assert sdma["size_mb"] == pytest.approx(427.596096) and sdma["time_ms"] == pytest.approx(28.57005090625)
    assert bw["by_key"]["step50"]["RDMA"] == {"size_mb": 0.0, "time_ms": 0.0}
    assert loaded(0, 0).meta.bandwidth == {}        # level0 analysis.db has no CommAnalyzerBandwidth


@needs_corpus
def test_path_forms_and_dispatch():
    base = loaded(1, 1).summary()["counts"]
    for root in (db_root(1, 1) / "ASCEND_PROFILER_OUTPUT", db_file(1, 1)):
        assert ascend_db.load(str(root)).summary()["counts"] == base
    assert loaders.load("ascend-db", str(db_root(1, 1))).summary()["counts"] == base
    ms = loaders.load("mindspore-db", str(db_root(1, 1))).meta
    assert (ms.framework, ms.format) == ("MindSpore", "mindspore-db")


@needs_corpus
@pytest.mark.parametrize("level,rank", WORKERS)
def test_peek(level, rank):
    info = ascend_db.peek(str(db_file(level, rank)))
    assert info == {"rank": rank, "steps": [50], "error": None,
                    "has": {"kernels": True, "communication": True, "memory": True, "modules": True}}


@needs_corpus
def test_corpus_files_untouched():
    """Nothing written or created beside the DBs.  (-wal/-shm files left by someone else's plain
    ``mode=ro`` open of the WAL-mode level1/rank0 DB are tolerated, but we must never add any.)"""
    dirs = [db_file(lvl, r).parent for lvl, r in WORKERS]

    def snapshot():
        return {f: (f.stat().st_mtime_ns, f.stat().st_size) for d in dirs for f in d.iterdir()
                if not f.name.endswith(("-wal", "-shm"))}, {f for d in dirs for f in d.iterdir()}
    files_before, names_before = snapshot()
    for lvl, r in WORKERS:
        ascend_db.load(str(db_root(lvl, r)))
        ascend_db.peek(str(db_file(lvl, r)))
    files_after, names_after = snapshot()
    assert files_after == files_before and names_after == names_before


# --------------------------------------------------------------------------- bad input
def _expect(path: Path, root: Path, words: str):
    with pytest.raises(LoadError) as e:
        ascend_db.load(str(root))
    assert str(path) in str(e.value) and words in str(e.value)
    info = ascend_db.peek(str(path))
    return info


def test_not_sqlite_and_empty(tmp_path):
    out = tmp_path / "x_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    bad = out / "ascend_pytorch_profiler_0.db"
    bad.write_text("this is not a database\n")
    _expect(bad, tmp_path / "x_ascend_pt", "not an SQLite database")
    info = _expect(bad, bad, "not an SQLite database")
    assert str(bad) in info["error"] and info["rank"] == 0
    bad.write_bytes(b"")
    _expect(bad, bad, "empty")
    with pytest.raises(LoadError, match="no ascend_pytorch_profiler"):
        ascend_db.load(str(tmp_path))
    with pytest.raises(LoadError, match="does not exist"):
        ascend_db.load(str(tmp_path / "missing"))
    assert not [f for f in out.iterdir() if f.name != bad.name]


@pytest.fixture
def db_copy(tmp_path):
    if not db_file(1, 0).is_file():
        pytest.skip(f"real profiler corpus not found at {CORPUS}")
    dst = tmp_path / "ascend_pytorch_profiler_0.db"
    shutil.copyfile(db_file(1, 0), dst)
    return dst


def _edit(path: Path, *sql: str) -> None:
    con = sqlite3.connect(path)
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


@pytest.mark.parametrize("table", ["TASK", "STRING_IDS"])
def test_missing_required_table(db_copy, table):
    _edit(db_copy, f"DROP TABLE {table}")
    info = _expect(db_copy, db_copy, f"missing table {table}")
    assert info["error"] is None or table in info["error"]


def test_missing_required_column(db_copy):
    _edit(db_copy, "DROP INDEX IF EXISTS TaskIndex", "ALTER TABLE TASK DROP COLUMN startNs")
    _expect(db_copy, db_copy, "TASK lacks column(s) startNs")


def test_optional_tables_and_columns_missing(db_copy):
    _edit(db_copy, "DROP TABLE OP_MEMORY", "DROP TABLE COMMUNICATION_OP", "DROP TABLE TASK_PMU_INFO",
          "DROP TABLE PYTORCH_CALLCHAINS", "ALTER TABLE TASK DROP COLUMN contextId",
          "ALTER TABLE PYTORCH_API DROP COLUMN sequenceNumber")
    p = ascend_db.load(str(db_copy))
    assert p.mem_allocs.empty and p.comm_ops.empty and len(p.mem_records) == 990 + 14   # + APP from NPU_MEM
    assert (p.comm_tasks["comm_op"] == -1).all() and len(p.comm_tasks) == 296
    assert len(p.kernels) == 552              # without contextId the containers cannot be told apart
    assert not p.meta.has_pmu and (p.ops["call_stack"] == 0).all() and (p.ops["seq"] == -1).all()
    info = ascend_db.peek(str(db_copy))
    assert info["has"]["communication"] is False and info["has"]["memory"] is True


# --------------------------------------------------------------------------- synthetic DB (no corpus)
def _synthetic(path: Path) -> None:
    t0 = 1736410576404465403                      # 19 digits: must survive exactly
    con = sqlite3.connect(path)
    con.executescript(f"""
        CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
        INSERT INTO STRING_IDS VALUES (0,'KERNEL_AIVEC'),(1,'Relu_1'),(2,'Relu'),(3,'AI_VECTOR_CORE'),
            (4,'EVENT_WAIT'),(5,'aten::relu'),(6,'nn.Module: Net_0'),(7,'main.py(3): f'),(8,'aiv_vec_time');
        CREATE TABLE ENUM_API_TYPE (id INTEGER PRIMARY KEY, name TEXT);
        INSERT INTO ENUM_API_TYPE VALUES (50001,'op'),(50002,'queue'),(50003,'trace');
        CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,
            globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER,
            streamId INTEGER, taskId INTEGER, modelId INTEGER);
        INSERT INTO TASK VALUES ({t0},{t0 + 1501},0,7,1,9,0,4294967295,2,11,0),
                                ({t0 + 9000},{t0 + 9100},0,8,2,9,4,4294967295,3,12,0);
        CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER, taskType INTEGER, opType INTEGER);
        INSERT INTO COMPUTE_TASK_INFO VALUES (1,1,3,2);
        CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC);
        INSERT INTO TASK_PMU_INFO VALUES (1,8,750.5);
        CREATE TABLE PYTORCH_API (startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER,
            name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER,
            inputShapes INTEGER, callchainId INTEGER, type INTEGER);
        INSERT INTO PYTORCH_API VALUES ('{t0 - 5000}','{t0 - 1000}',{(9 << 32) | 10},0,5,3,0,NULL,NULL,NULL,50001),
            ('{t0 - 9000}','{t0 + 20000}',{(9 << 32) | 10},NULL,6,NULL,NULL,NULL,NULL,NULL,50003),
            ('{t0 - 6000}','{t0}',{(9 << 32) | 10},NULL,7,NULL,NULL,NULL,NULL,NULL,50003);
        CREATE TABLE CONNECTION_IDS (id INTEGER, connectionId INTEGER);
        INSERT INTO CONNECTION_IDS VALUES (0,7);
        CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER);
        INSERT INTO STEP_TIME VALUES (3,{t0 - 10000},{t0 + 5000});
    """)
    con.commit()
    con.close()


def test_synthetic_minimal_export(tmp_path):
    out = tmp_path / "w_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    _synthetic(out / "ascend_pytorch_profiler_3.db")
    (out.parent / "profiler_info_3.json").write_text(json.dumps(
        {"config": {"experimental_config": {"_profiler_level": "Level1"}}, "rank_id": 3}))
    seen = []
    p = ascend_db.load(str(out.parent), progress=seen.append)
    t0 = 1736410576404465403
    k, sym = p.kernels, p.symbols.as_array()
    assert seen[-1] == 1.0 and p.meta.rank == 3 and p.meta.profiler_level == "Level1"
    assert k["start_ns"].tolist() == [t0, t0 + 9000] and k["dur_ns"].tolist() == [1501, 100]
    assert list(sym[k["name"]]) == ["Relu_1", "EVENT_WAIT"] and list(k["detail"]) == [True, False]
    assert list(k["kind"]) == [KIND_COMPUTE, 4] and list(k["step"]) == [3, -1]
    assert k["aiv_vec_time_us"].iat[0] == pytest.approx(0.7505) and np.isnan(k["aiv_vec_time_us"].iat[1])
    assert list(k["launch_op"]) == [0, -1] and k["flow_start_ns"].iat[0] == t0 - 5000
    assert p.ops["start_ns"].iat[0] == t0 - 5000 and p.ops["seq"].iat[0] == 3
    assert (p.ops["pid"].iat[0], p.ops["tid"].iat[0]) == (9, 10) and p.meta.bwd_tid is None
    pf = p.pyfuncs
    assert list(pf["is_module"]) == [True, False] and list(pf["parent"]) == [-1, 0]
    assert p.comm_ops.empty and p.overlap.empty and p.mem_allocs.empty and p.meta.has_pmu
    info = ascend_db.peek(str(out / "ascend_pytorch_profiler_3.db"))
    assert info["rank"] == 3 and info["steps"] == [3] and info["has"]["modules"] and not info["has"]["memory"]
    assert sorted(f.name for f in out.iterdir()) == ["ascend_pytorch_profiler_3.db"]


def test_uncheckpointed_wal_is_reported(tmp_path):
    db = tmp_path / "ascend_pytorch_profiler_0.db"
    _synthetic(db)
    (tmp_path / "ascend_pytorch_profiler_0.db-wal").write_bytes(b"\0" * 64)
    p = ascend_db.load(str(db))
    assert any("not yet checkpointed" in w for w in p.meta.warnings)
