"""A tiny but complete Ascend PyTorch profiler SQLite export, built by the tests (``samples/``
has none), and ``db_sql``, the mutation that runs SQL statements on a case's copy."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

from .common import DB, out

_TEMPLATES: dict[int, bytes] = {}


def make_tiny_db(path: Path, rank: int = 0) -> None:
    """A small but complete Ascend PyTorch profiler export (schema as in the corpus) at ``path``.
    Built once per rank and process (SQLite's commits made each build ~0.25 s, paid by ~55 cases),
    then its bytes are written afresh for every caller: each case still gets its own file."""
    if rank not in _TEMPLATES:
        import tempfile
        with tempfile.TemporaryDirectory(prefix="tinydb-") as d:
            tmp = Path(d) / "tiny.db"
            _build_tiny_db(tmp, rank)
            _TEMPLATES[rank] = tmp.read_bytes()
    Path(path).write_bytes(_TEMPLATES[rank])


def _build_tiny_db(path: Path, rank: int) -> None:
    strings = ["KERNEL_AICORE", "KERNEL_AIVEC", "MEMCPY_ASYNC", "aclnnMm_MatMulCommon_MatMulV2",
               "aclnnAdd_AddAiCore_Add", "MatMulV2", "Add", "AI_CORE", "AI_VECTOR_CORE", "FORMAT_ND",
               "FLOAT;FLOAT", "4,4;4,4", "aten::mm", "aten::add", "ProfilerStep#1", "Enqueue", "Dequeue",
               "hcom_allReduce__1_0_1", "allReduce", "10.0.0.1%enp_60000_0_1", "Notify_Wait", "Memcpy",
               "aic_total_time", "aiv_vec_time", "PTA", "nn.Module: Linear_0", "train.py(1): <module>",
               "NOTIFY_WAIT_SQE", "SDMA_SQE"]
    sid = {s: i + 1 for i, s in enumerate(strings)}
    c = sqlite3.connect(path)
    x = c.executescript
    x("""
    CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
    CREATE TABLE ENUM_API_TYPE (id INTEGER PRIMARY KEY, name TEXT);
    CREATE TABLE ENUM_HCCL_TRANSPORT_TYPE (id INTEGER PRIMARY KEY, name TEXT);
    CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,
        globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER,
        taskId INTEGER, modelId INTEGER, depth INTEGER);
    CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER,
        mixBlockDim INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER,
        inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER, outputShapes INTEGER,
        attrInfo INTEGER, waitNs INTEGER);
    CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC);
    CREATE TABLE PYTORCH_API (startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER,
        name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER,
        inputShapes INTEGER, callchainId INTEGER, type INTEGER, depth INTEGER);
    CREATE TABLE CONNECTION_IDS (id INTEGER, connectionId INTEGER);
    CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER);
    CREATE TABLE COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER,
        groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, dataType INTEGER,
        algType INTEGER, count NUMERIC, opType INTEGER, waitNs INTEGER);
    CREATE TABLE COMMUNICATION_TASK_INFO (name INTEGER, globalTaskId INTEGER, taskType INTEGER,
        planeId INTEGER, groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER,
        dstRank INTEGER, transportType INTEGER, size INTEGER, dataType INTEGER, linkType INTEGER,
        opId INTEGER);
    CREATE TABLE OP_MEMORY (name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER,
        activeReleaseTime INTEGER, duration INTEGER, activeDuration INTEGER, allocationTotalAllocated INTEGER,
        allocationTotalReserved INTEGER, allocationTotalActive INTEGER, releaseTotalAllocated INTEGER,
        releaseTotalReserved INTEGER, releaseTotalActive INTEGER, streamPtr INTEGER, deviceId INTEGER);
    CREATE TABLE MEMORY_RECORD (component INTEGER, timestamp INTEGER, totalAllocated INTEGER,
        totalReserved INTEGER, totalActive INTEGER, streamPtr INTEGER, deviceId INTEGER);
    CREATE TABLE OVERLAP_ANALYSIS (id INTEGER PRIMARY KEY AUTOINCREMENT, deviceId integer,
        startNs integer, endNs integer, type integer);
    CREATE TABLE RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER);
    CREATE TABLE NPU_INFO (id INTEGER, name TEXT);
    """)
    c.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(i, s) for s, i in sid.items()])
    c.executemany("INSERT INTO ENUM_API_TYPE VALUES (?, ?)",
                  [(50001, "op"), (50002, "queue"), (50003, "trace")])
    c.execute("INSERT INTO ENUM_HCCL_TRANSPORT_TYPE VALUES (0, 'SDMA')")
    t0 = 1_736_410_576_000_000_000
    gtid = (1234 << 32) | 1234
    api, tasks, cti, pmu, conn = [], [], [], [], []
    api.append((str(t0), str(t0 + 2_000_000), gtid, None, sid["ProfilerStep#1"], -1, 0, None, None, None,
                50001, 0))
    api.append((str(t0 + 10), str(t0 + 1_999_990), gtid, None, sid["nn.Module: Linear_0"], -1, 0, None, None,
                None, 50003, 1))
    for i in range(8):
        mm = i % 2 == 0
        s = t0 + 1000 + i * 200_000
        api.append((str(s), str(s + 50_000), gtid, i + 1, sid["aten::mm" if mm else "aten::add"], i, 0,
                    sid["FLOAT;FLOAT"], sid["4,4;4,4"], None, 50001, 1))
        conn.append((i + 1, 100 + i))
        ks = s + 80_000
        tasks.append((ks, ks + 30_000 + 5_000 * i, 0, 100 + i, i, 1, sid["KERNEL_AICORE" if mm else "KERNEL_AIVEC"],
                      4294967295, 2, 10 + i, 4294967295, 0))
        cti.append((sid["aclnnMm_MatMulCommon_MatMulV2" if mm else "aclnnAdd_AddAiCore_Add"], i, 8, 0,
                    sid["AI_CORE" if mm else "AI_VECTOR_CORE"], sid["MatMulV2" if mm else "Add"], sid["FORMAT_ND"],
                    sid["FLOAT;FLOAT"], sid["4,4;4,4"], sid["FORMAT_ND"], sid["FLOAT;FLOAT"], sid["4,4;4,4"], 0, 0))
        pmu.append((i, sid["aic_total_time" if mm else "aiv_vec_time"], 20_000.0))
    tasks.append((t0 + 1_700_000, t0 + 1_710_000, 0, 200, 8, 1, sid["MEMCPY_ASYNC"], 4294967295, 2, 30, 4294967295, 0))
    # one all-reduce with two HCCL tasks on stream 5
    c.execute("INSERT INTO COMMUNICATION_OP VALUES (?,?,?,?,?,?,0,0,4,0,16,?,?)",
              (sid["hcom_allReduce__1_0_1"], t0 + 1_750_000, t0 + 1_900_000, 300, sid["10.0.0.1%enp_60000_0_1"],
               1, sid["allReduce"], 40_000))
    api.append((str(t0 + 1_740_000), str(t0 + 1_745_000), gtid, 9, sid["aten::add"], 9, 0, None, None, None,
                50001, 1))
    conn.append((9, 300))
    for j, (nm, tt, s, e) in enumerate((("Notify_Wait", "NOTIFY_WAIT_SQE", 1_750_000, 1_800_000),
                                        ("Memcpy", "SDMA_SQE", 1_800_000, 1_890_000))):
        g = 20 + j
        tasks.append((t0 + s, t0 + e, 0, 300, g, 1, sid[tt], 4294967295, 5, 40 + j, 4294967295, 0))
        c.execute("INSERT INTO COMMUNICATION_TASK_INFO VALUES (?,?,?,0,?,0,0,0,1,0,64,0,0,1)",
                  (sid[nm], g, sid[nm], sid["10.0.0.1%enp_60000_0_1"]))
    c.executemany("INSERT INTO PYTORCH_API VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", api)
    c.executemany("INSERT INTO CONNECTION_IDS VALUES (?,?)", conn)
    c.executemany("INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", tasks)
    c.executemany("INSERT INTO COMPUTE_TASK_INFO VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", cti)
    c.executemany("INSERT INTO TASK_PMU_INFO VALUES (?,?,?)", pmu)
    c.execute("INSERT INTO STEP_TIME VALUES (1, ?, ?)", (t0, t0 + 2_000_000))
    for i in range(6):
        a = t0 + 2000 + i * 200_000
        c.execute("INSERT INTO OP_MEMORY VALUES (?,?,?,?,NULL,NULL,NULL,0,0,0,NULL,NULL,NULL,1,0)",
                  (sid["aten::mm"], 4096 * (i + 1), a, a + 100_000 if i % 2 else None))
        c.execute("INSERT INTO MEMORY_RECORD VALUES (?,?,?,?,?,1,0)",
                  (sid["PTA"], a, 1_000_000 + 4096 * i, 2_000_000, 1_000_000))
    ov = [(0, t0 + 81_000 + i * 200_000, t0 + 111_000 + i * 200_000, 0) for i in range(8)]
    ov += [(0, t0 + 1_750_000, t0 + 1_890_000, 2), (0, t0 + 1_890_000, t0 + 1_950_000, 3)]
    c.executemany("INSERT INTO OVERLAP_ANALYSIS (deviceId, startNs, endNs, type) VALUES (?,?,?,?)", ov)
    c.execute("INSERT INTO RANK_DEVICE_MAP VALUES (?, 0)", (rank,))
    c.execute("INSERT INTO NPU_INFO VALUES (0, 'Ascend910B')")
    c.commit()
    c.close()


def db_sql(*statements: str, which: Callable[[Path], Path] = lambda d: out(d) / DB):
    def mutate(dst: Path) -> None:
        c = sqlite3.connect(which(dst))
        for s in statements:
            try:
                c.execute(s)
            except sqlite3.OperationalError as e:   # corpus exports lack some optional tables
                if "no such table" not in str(e):
                    raise
        c.commit()
        c.execute("VACUUM")
        c.close()
    return mutate
