"""Malformed-input cases for tests/test_malformed.py.

Each :class:`Case` writes one broken (or merely odd) profile into an empty folder, derived from
a real file: the project's own ``samples/`` (always present) or the real corpus (cases marked
``corpus=True``, skipped when ``../shared/corpus`` is absent; large corpus files are truncated
copies, never many full ones).  ``culprits`` are the file/folder names one of which a LoadError
must name; ``source`` names the pristine profile the case was derived from, so the test can tell
rows the loader dropped (which need a warning) from rows the case itself removed (``removes``).
``owner`` marks cases that currently fail inside a module another helper owns (xfail).
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
import random
import re
import shutil
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from conftest import CORPUS, SAMPLES

GPU_SAMPLE = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
NPU_SAMPLE = SAMPLES / "target_npu" / "rank0_ascend_pt"
C_GPU = CORPUS / "gpu" / "hta_2rank" / "rank0.pt.trace.json.gz"
C_GPU_SMALL = CORPUS / "gpu" / "hta_amd_mi250" / "mi250.pt.trace.json.gz"
C_NPU_L1 = CORPUS / "npu" / "alexnet_ddp_2rank_level1" / "rank0_ascend_pt"
C_NPU_L0 = CORPUS / "npu" / "alexnet_ddp_2rank_level0" / "rank0_ascend_pt"
C_DB_L0 = CORPUS / "npu" / "alexnet_ddp_2rank_db_level0" / "rank0_ascend_pt"
C_DB_L1_R1 = CORPUS / "npu" / "alexnet_ddp_2rank_db_level1" / "rank1_ascend_pt"

TRACE = "w.pt.trace.json"               # every trace case writes this file (or TRACE + ".gz")
WORKER = "rank0_ascend_pt"
OUT = "ASCEND_PROFILER_OUTPUT"
DB = "ascend_pytorch_profiler_0.db"
# files of a text export the loaders read (corpus copies skip the big ones nobody reads)
TEXT_FILES = ("trace_view.json", "kernel_details.csv", "operator_memory.csv", "memory_record.csv",
              "communication.json", "step_trace_time.csv")
ASCEND_TEXT_OWNER = "loaders/ascend_text.py / ascend_trace.py (the helper rewriting the Ascend text decoder)"


@dataclass
class Case:
    id: str
    group: str                          # trace | ascend-text | ascend-csv | ascend-db | layout
    build: Callable[[Path], None]       # writes the case into an empty folder
    culprits: tuple                     # names a LoadError message must contain (one of)
    source: str | None = None           # pristine source key (SOURCES), for the dropped-rows check
    removes: frozenset = frozenset()    # tables the mutation itself shrinks
    corpus: bool = False
    owner: str | None = None            # known failure in another helper's module -> xfail
    needs_unreadable: bool = False      # relies on chmod 000 denying reads (not as root)


CASES: list[Case] = []


def add(id, group, build, culprits, **kw) -> None:
    CASES.append(Case(id, group, build, tuple(culprits), **kw))


# ------------------------------------------------------------------------------ raw material

@lru_cache(None)
def gpu_bytes() -> bytes:
    return GPU_SAMPLE.read_bytes()


@lru_cache(None)
def corpus_gpu_bytes() -> bytes:
    return gzip.decompress(C_GPU.read_bytes())


def write_trace(dst: Path, doc, name: str = TRACE, **dump) -> Path:
    p = dst / name
    p.write_text(json.dumps(doc, **dump))
    return p


def copy_npu(dst: Path, src: Path = NPU_SAMPLE, files=None) -> Path:
    """Copy a text-export worker folder (``files``: only these output files)."""
    w = dst / WORKER
    if files is None:
        shutil.copytree(src, w)
    else:
        (w / OUT).mkdir(parents=True)
        for f in src.iterdir():
            if f.is_file():
                shutil.copy(f, w / f.name)
        for n in files:
            if (src / OUT / n).is_file():
                shutil.copy(src / OUT / n, w / OUT / n)
    for p in w.rglob("*"):                       # corpus files are read-only
        p.chmod(0o755 if p.is_dir() else 0o644)
    w.chmod(0o755)
    return w


def out(dst: Path) -> Path:
    return dst / WORKER / OUT


def sub_every(events: list, pred, fn, every: int = 3) -> int:
    """Apply ``fn(event, k)`` to every ``every``-th event matching ``pred``; returns how many."""
    k = 0
    for e in events:
        if isinstance(e, dict) and pred(e):
            if k % every == 0:
                fn(e, k // every)
            k += 1
    return k


def wrong(v, k: int):
    """The k-th wrong-typed stand-in for ``v`` (cycles: list, object, bool, null, swapped, junk)."""
    if isinstance(v, bool):
        swapped = "true"
    elif isinstance(v, (int, float)):
        swapped = repr(v)                      # a number written as a string
    elif isinstance(v, str):
        swapped = 12345                        # a string written as a number
    else:
        swapped = "12345"
    return [[1, 2], {"x": [1]}, True, None, swapped, "not a number"][k % 6]


# ------------------------------------------------------------------------------ sources

def src_gpu(dst: Path) -> None:
    (dst / TRACE).write_bytes(gpu_bytes())


def src_npu(dst: Path) -> None:
    copy_npu(dst)


def src_tinydb(dst: Path) -> None:
    (dst / WORKER / OUT).mkdir(parents=True)
    make_tiny_db(dst / WORKER / OUT / DB)


def src_cgpu(dst: Path) -> None:
    (dst / TRACE).write_bytes(corpus_gpu_bytes())


def src_cnpu(dst: Path) -> None:
    copy_npu(dst, C_NPU_L1, TEXT_FILES)


def src_cdb(dst: Path) -> None:
    copy_npu(dst, C_DB_L0, [DB])


SOURCES = {"gpu": src_gpu, "npu": src_npu, "tinydb": src_tinydb, "cgpu": src_cgpu, "cnpu": src_cnpu,
           "cdb": src_cdb}
CORPUS_SOURCES = {"cgpu", "cnpu", "cdb"}


def derived(source: str, mutate: Callable[[Path], None]) -> Callable[[Path], None]:
    def build(dst: Path) -> None:
        SOURCES[source](dst)
        mutate(dst)
    return build


def add_mut(id, group, source, mutate, culprits, **kw) -> None:
    add(id, group, derived(source, mutate), culprits, source=source, corpus=source in CORPUS_SOURCES, **kw)


# ------------------------------------------------------------------------------ a tiny SQLite export

def make_tiny_db(path: Path, rank: int = 0) -> None:
    """A small but complete Ascend PyTorch profiler export (schema as in the corpus)."""
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


# ------------------------------------------------------------------------------ trace JSON cases

def truncation_offsets(data: bytes, n: int = 30) -> dict[str, int]:
    """n offsets spread over the file plus the awkward spots: after '[', in a string, in a number."""
    offs = {f"at{i:02d}": max(1, (len(data) * i) // n) for i in range(n)}
    lb = data.index(b"[", data.index(b'"traceEvents"'))
    offs["after_bracket"] = lb + 1
    m = re.search(rb'"name": "[A-Za-z]{4}', data[len(data) // 3:])
    offs["in_string"] = len(data) // 3 + m.start() + 12
    m = re.search(rb'"ts": \d{6}', data[len(data) // 2:])
    offs["in_number"] = len(data) // 2 + m.start() + 10
    m = re.search(rb'"ts": \d+\.\d', data[2 * len(data) // 3:])
    offs["in_fraction"] = 2 * len(data) // 3 + m.end() - 1
    offs["before_last_brace"] = len(data.rstrip()) - 1
    offs["in_key"] = data.index(b'"ph"', len(data) // 4) + 2
    return offs


def _truncate(data_fn, off: int, name: str = TRACE):
    def build(dst: Path) -> None:
        (dst / name).write_bytes(data_fn()[:off])
    return build


for key, off in truncation_offsets(gpu_bytes()).items():
    add(f"trace-truncate-{key}", "trace", _truncate(gpu_bytes, off), [TRACE], source="gpu")


def _corpus_truncations():
    # offsets as fractions: the corpus file is only read when the case runs
    for i, frac in enumerate((0.001, 0.05, 0.2, 0.37, 0.5, 0.77, 0.999)):
        add(f"corpus-trace-truncate-{i}", "trace",
            lambda dst, f=frac: (dst / TRACE).write_bytes(corpus_gpu_bytes()[:int(len(corpus_gpu_bytes()) * f)]),
            [TRACE], source="cgpu", corpus=True)
    for i, frac in enumerate((0.01, 0.3, 0.6, 0.95, 0.9999)):
        add(f"corpus-gzip-truncate-{i}", "trace",
            lambda dst, f=frac: (dst / (TRACE + ".gz")).write_bytes(
                (raw := C_GPU.read_bytes())[:int(len(raw) * f)]),
            [TRACE + ".gz"], source="cgpu", corpus=True)
    add("corpus-small-gzip-bitflip", "trace",
        lambda dst: (dst / (TRACE + ".gz")).write_bytes(_flip(C_GPU_SMALL.read_bytes(), 0.5)),
        [TRACE + ".gz"], corpus=True)


def _flip(data: bytes, frac: float) -> bytes:
    b = bytearray(data)
    i = int(len(b) * frac)
    b[i] ^= 0xFF
    return bytes(b)


_corpus_truncations()


def _doc_mut(fn, replace: bool = False):
    """Mutation of the parsed sample trace document, written back as JSON (``replace``: ``fn``
    returns the new document instead of editing it in place)."""
    def mutate(dst: Path) -> None:
        doc = json.loads((dst / TRACE).read_bytes())
        res = fn(doc)
        write_trace(dst, res if replace else doc)
    return mutate


def _is_x(e):
    return e.get("ph") == "X"


# rows recognised by their name: a null name (valid JSON, no warning due) removes them
NAMED_ROWS = frozenset({"steps", "comm_ops", "mem_records", "mem_allocs"})
# wrong JSON types in each top-level field and in each args.* field the loader reads
for fld in ("ph", "name", "cat", "ts", "dur", "pid", "tid", "args", "id"):
    def m(doc, fld=fld):
        sub_every(doc["traceEvents"], lambda e: fld in e, lambda e, k: e.__setitem__(fld, wrong(e[fld], k)))
    add_mut(f"trace-wrongtype-{fld}", "trace", "gpu", _doc_mut(m), [TRACE],
            removes=NAMED_ROWS if fld == "name" else frozenset())

ARGS_GROUPS = {    # args.* keys the loader reads, by what they feed
    "ids": ("External id", "external id", "correlation", "Sequence number"),
    "device": ("stream", "device", "bytes"),
    "shapes": ("Input Dims", "Input type", "Call stack"),
    "python": ("Python id", "Python parent id"),
    "memory": ("Device Id", "Bytes", "Addr", "Total Allocated", "Total Reserved"),
    "nccl": ("Process Group Name", "Process Group Ranks", "In msg nelems", "dtype", "Collective name"),
}
for group, keys in ARGS_GROUPS.items():
    def m(doc, keys=keys):
        for akey in keys:
            def f(e, k, akey=akey):
                e["args"][akey] = wrong(e["args"][akey], k)
            n = sub_every(doc["traceEvents"], lambda e: isinstance(e.get("args"), dict) and akey in e["args"], f, 2)
            if not n:                           # key absent from the sample: add it, wrongly typed
                sub_every(doc["traceEvents"], lambda e: isinstance(e.get("args"), dict),
                          lambda e, k, akey=akey: e["args"].__setitem__(akey, wrong(None, k)), 5)
    add_mut(f"trace-wrongtype-args-{group}", "trace", "gpu", _doc_mut(m), [TRACE])

# every event's field of one wrong type (the whole column unusable)
for fld, val in (("ts", None), ("ts", [1]), ("dur", "x"), ("pid", {"a": 1}), ("cat", 7), ("name", None)):
    def m(doc, fld=fld, val=val):
        for e in doc["traceEvents"]:
            if fld in e:
                e[fld] = val
    add_mut(f"trace-all-{fld}-{type(val).__name__}", "trace", "gpu", _doc_mut(m), [TRACE],
            removes=NAMED_ROWS if fld == "name" else frozenset())


def _strings(doc, keys):
    for e in doc["traceEvents"]:
        for k in keys:
            if isinstance(e.get(k), (int, float)):
                e[k] = repr(e[k])


add_mut("trace-ts-dur-as-strings", "trace", "gpu", _doc_mut(lambda d: _strings(d, ("ts", "dur"))), [TRACE])
add_mut("trace-ts-as-int-strings", "trace", "gpu", _doc_mut(
    lambda d: [e.__setitem__("ts", str(int(e["ts"]))) for e in d["traceEvents"] if "ts" in e]), [TRACE])

# NaN / Infinity: bare tokens are invalid JSON; NaN-ish strings are values a loader must skip
for tok in ("NaN", "Infinity", "-Infinity"):
    for fld in ("ts", "dur"):
        def m(dst, tok=tok, fld=fld):
            data = (dst / TRACE).read_bytes()
            pat = re.compile(rb'"%s": [0-9.]+' % fld.encode())
            hits = list(pat.finditer(data))
            h = hits[len(hits) // 2]
            (dst / TRACE).write_bytes(data[:h.start()] + b'"%s": %s' % (fld.encode(), tok.encode()) + data[h.end():])
        add_mut(f"trace-bare-{tok}-{fld}", "trace", "gpu", m, [TRACE])
for fld in ("ts", "dur"):
    def m(doc, fld=fld):
        vals = ["NaN", "nan", "inf", "-Infinity", "", " ", "1e400", "0x10", "1,5", "١٢٣"]
        sub_every(doc["traceEvents"], lambda e: fld in e, lambda e, k: e.__setitem__(fld, vals[k % len(vals)]), 4)
    add_mut(f"trace-nanish-strings-{fld}", "trace", "gpu", _doc_mut(m), [TRACE])

# negative / huge values
HUGE = {"neg_dur": ("dur", lambda v, k: -abs(v) - 1), "ts_1e300": ("ts", lambda v, k: 1e300),
        "ts_neg_1e300": ("ts", lambda v, k: -1e300), "ts_int_1e25": ("ts", lambda v, k: 10 ** 25),
        "ts_2p63": ("ts", lambda v, k: 2 ** 63), "dur_1e30": ("dur", lambda v, k: 1e30),
        "pid_2p64": ("pid", lambda v, k: 2 ** 64 + 5), "tid_neg": ("tid", lambda v, k: -7 - k),
        "ts_huge_string": ("ts", lambda v, k: "99999999999999999999999.5"),
        "ts_neg": ("ts", lambda v, k: -v)}
for key, (fld, fn) in HUGE.items():
    def m(doc, fld=fld, fn=fn):
        sub_every(doc["traceEvents"], lambda e: isinstance(e.get(fld), (int, float)) and _is_x(e),
                  lambda e, k: e.__setitem__(fld, fn(e[fld], k)), 5)
    add_mut(f"trace-huge-{key}", "trace", "gpu", _doc_mut(m), [TRACE])
for key, val in (("2p53", 2 ** 53 + 1), ("2p64", 2 ** 64 + 5), ("1e30", 10 ** 30), ("neg", -(2 ** 63) - 9)):
    def m(doc, val=val):
        for e in doc["traceEvents"]:
            a = e.get("args")
            if isinstance(a, dict):
                for k in ("External id", "correlation", "Python id", "Addr", "Sequence number"):
                    if k in a:
                        a[k] = val + (a[k] if isinstance(a[k], int) and a[k] > 0 else 0)
            if "id" in e:
                e["id"] = val + e["id"]
    add_mut(f"trace-ids-{key}", "trace", "gpu", _doc_mut(m), [TRACE])


# unbalanced / duplicated events
def _drop(pred):
    def f(doc):
        doc["traceEvents"] = [e for e in doc["traceEvents"] if not pred(e)]
    return f


add_mut("trace-flow-f-without-s", "trace", "gpu",
        _doc_mut(_drop(lambda e: e.get("ph") == "s" and e.get("cat") == "ac2g")), [TRACE])
add_mut("trace-flow-s-without-f", "trace", "gpu",
        _doc_mut(_drop(lambda e: e.get("ph") == "f" and e.get("cat") == "ac2g")), [TRACE])
add_mut("trace-fwdbwd-unbalanced", "trace", "gpu",
        _doc_mut(_drop(lambda e: e.get("cat") == "fwdbwd" and e.get("id", 0) % 2 == 0 and e.get("ph") == "s")),
        [TRACE], removes=frozenset({"fwdbwd"}))
add_mut("trace-flow-duplicate-ids", "trace", "gpu", _doc_mut(
    lambda d: [e.__setitem__("id", 1) for e in d["traceEvents"] if e.get("ph") in ("s", "f")]), [TRACE],
    removes=frozenset({"fwdbwd"}))
add_mut("trace-correlation-duplicates", "trace", "gpu", _doc_mut(
    lambda d: [e["args"].__setitem__("correlation", 1) for e in d["traceEvents"]
               if isinstance(e.get("args"), dict) and "correlation" in e["args"]]), [TRACE])
add_mut("trace-duplicated-kernels", "trace", "gpu", _doc_mut(
    lambda d: d.__setitem__("traceEvents", d["traceEvents"] + [e for e in d["traceEvents"]
                                                                if e.get("cat") == "kernel"])), [TRACE])
add_mut("trace-all-events-twice", "trace", "gpu", _doc_mut(
    lambda d: d.__setitem__("traceEvents", d["traceEvents"] * 2)), [TRACE])
add_mut("trace-kernel-before-launch", "trace", "gpu", _doc_mut(
    lambda d: sub_every(d["traceEvents"], lambda e: e.get("cat") == "kernel",
                        lambda e, k: e.__setitem__("ts", e["ts"] - 1e6), 2)), [TRACE])
add_mut("trace-end-before-start-steps", "trace", "gpu", _doc_mut(
    lambda d: [e.__setitem__("dur", -e["dur"]) for e in d["traceEvents"]
               if str(e.get("name", "")).startswith("ProfilerStep")]), [TRACE])
add_mut("trace-steps-same-number", "trace", "gpu", _doc_mut(
    lambda d: [e.__setitem__("name", "ProfilerStep#1") for e in d["traceEvents"]
               if str(e.get("name", "")).startswith("ProfilerStep")]), [TRACE])
add_mut("trace-memory-free-without-alloc", "trace", "gpu", _doc_mut(_drop(
    lambda e: e.get("name") == "[memory]" and isinstance(e.get("args"), dict) and e["args"].get("Bytes", 0) > 0)),
    [TRACE], removes=frozenset({"mem_records", "mem_allocs"}))
# an allocation whose free reports another size is dropped, as the reference does (spec, memory
# pairing); real traces have hundreds (kineto_resnet50), so no warning: see docs/robustness.md
add_mut("trace-memory-size-mismatch", "trace", "gpu", _doc_mut(lambda d: sub_every(
    d["traceEvents"], lambda e: e.get("name") == "[memory]" and isinstance(e.get("args"), dict),
    lambda e, k: e["args"].__setitem__("Bytes", e["args"].get("Bytes", 0) + 1), 2)), [TRACE],
    removes=frozenset({"mem_allocs"}))
add_mut("trace-duplicate-keys", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (dst / TRACE).read_bytes().replace(b'"ph": "X", ', b'"ph": "X", "ph": "i", ', 20)), [TRACE])
add_mut("trace-events-not-objects", "trace", "gpu", _doc_mut(lambda d: d.__setitem__(
    "traceEvents", [x for i, e in enumerate(d["traceEvents"])
                    for x in ((e, [1, 2], 3, "s", None, True) if i % 50 == 0 else (e,))])), [TRACE])
add_mut("trace-deep-nesting", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (dst / TRACE).read_bytes().replace(b'"args": {', b'"args": {"deep": ' + b"[" * 5000 + b"]" * 5000 + b", ", 1)),
    [TRACE])
add_mut("trace-long-name", "trace", "gpu", _doc_mut(lambda d: d["traceEvents"][5].__setitem__("name", "x" * 3_000_000)),
        [TRACE])

# the document itself
DOCS = {
    "no-traceEvents": {"schemaVersion": 1, "deviceProperties": []},
    "traceEvents-null": {"traceEvents": None},
    "traceEvents-object": {"traceEvents": {"0": {"ph": "X"}}},
    "traceEvents-string": {"traceEvents": "[]"},
    "traceEvents-empty": {"traceEvents": []},
    "top-string": "traceEvents",
    "top-number": 42,
    "top-null": None,
    "nested-only": {"data": {"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "cat": "cpu_op"}]}},
}
for key, doc in DOCS.items():
    add(f"trace-doc-{key}", "trace", lambda dst, doc=doc: write_trace(dst, doc), [TRACE])
add_mut("trace-list-form", "trace", "gpu", _doc_mut(lambda d: d["traceEvents"], replace=True), [TRACE])
add_mut("trace-list-form-of-nulls", "trace", "gpu", _doc_mut(lambda d: [None] * 50, replace=True), [TRACE])
add_mut("trace-two-traceEvents-keys", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (dst / TRACE).read_bytes().replace(b'"traceEvents": [', b'"traceEvents": [], "traceEvents": [', 1)), [TRACE])
add_mut("trace-trailing-garbage", "trace", "gpu",
        lambda dst: (dst / TRACE).write_bytes((dst / TRACE).read_bytes() + b"\n}{garbage"), [TRACE])
add_mut("trace-missing-comma", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (b := (dst / TRACE).read_bytes())[:len(b) // 2] + re.sub(rb"\}\s*,\s*\{", b"} {", b[len(b) // 2:], count=1)),
    [TRACE])

RAW = {"empty": b"", "whitespace": b" \n\t\r\n  ", "bom-only": b"\xef\xbb\xbf", "nul-bytes": b"\x00" * 64,
       "binary": random.Random(7).randbytes(4096), "utf16": '{"traceEvents": []}'.encode("utf-16"),
       "just-brace": b"{", "just-bracket": b"[", "closed-array": b"[]", "xml": b"<?xml version='1.0'?><trace/>"}
for key, data in RAW.items():
    add(f"trace-raw-{key}", "trace", lambda dst, data=data: (dst / TRACE).write_bytes(data), [TRACE])
add_mut("trace-bom-then-json", "trace", "gpu",
        lambda dst: (dst / TRACE).write_bytes(b"\xef\xbb\xbf" + (dst / TRACE).read_bytes()), [TRACE])


def _nonutf8(seed: int):
    def m(dst: Path) -> None:
        data = bytearray((dst / TRACE).read_bytes())
        rnd = random.Random(seed)
        for _ in range(3):
            data[rnd.randrange(len(data) // 10, len(data))] = rnd.choice([0xFF, 0xC3, 0x80, 0xFE])
        (dst / TRACE).write_bytes(bytes(data))
    return m


for seed in range(5):
    add_mut(f"trace-non-utf8-{seed}", "trace", "gpu", _nonutf8(seed), [TRACE])
add_mut("trace-latin1-name", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (dst / TRACE).read_bytes().replace(b'"name": "aten::', b'"name": "\xe9aten::', 3)), [TRACE])

# gzip: not gzip, truncated, garbage, empty, concatenated
GZ = TRACE + ".gz"


def _gz(fn):
    def build(dst: Path) -> None:
        (dst / GZ).write_bytes(fn(gpu_bytes()))
    return build


add("gzip-plain-json-named-gz", "trace", _gz(lambda d: d), [GZ], source="gpu")
add("gzip-random-bytes", "trace", _gz(lambda d: random.Random(3).randbytes(5000)), [GZ])
add("gzip-magic-then-garbage", "trace", _gz(lambda d: b"\x1f\x8b" + b"garbage" * 100), [GZ])
add("gzip-empty-member", "trace", _gz(lambda d: gzip.compress(b"")), [GZ])
add("gzip-whitespace", "trace", _gz(lambda d: gzip.compress(b"   \n")), [GZ])
add("gzip-trailing-garbage", "trace", _gz(lambda d: gzip.compress(d) + b"not gzip"), [GZ], source="gpu")
add("gzip-two-members", "trace", _gz(lambda d: gzip.compress(d[:1000]) + gzip.compress(d[1000:])), [GZ],
    source="gpu")
add("gzip-of-truncated-json", "trace", _gz(lambda d: gzip.compress(d[: len(d) // 2])), [GZ])
add("gzip-double-compressed", "trace", _gz(lambda d: gzip.compress(gzip.compress(d))), [GZ])
for i, frac in enumerate((0.0005, 0.1, 0.5, 0.9, 0.999)):
    add(f"gzip-truncated-{i}", "trace", _gz(lambda d, f=frac: (z := gzip.compress(d))[:max(1, int(len(z) * f))]),
        [GZ])
add("gzip-bitflip-middle", "trace", _gz(lambda d: _flip(gzip.compress(d), 0.5)), [GZ])
add("gzip-bad-crc", "trace", _gz(lambda d: (z := gzip.compress(d))[:-8] + b"\0\0\0\0" + z[-4:]), [GZ])


# ------------------------------------------------------------------------------ Ascend text export

TV = "trace_view.json"


def _tv_bytes(dst: Path) -> bytes:
    return (out(dst) / TV).read_bytes()


for i, frac in enumerate((0.0, 0.00001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999999)):
    add_mut(f"npu-trace-truncate-{i}", "ascend-text", "npu",
            lambda dst, f=frac: (out(dst) / TV).write_bytes((b := _tv_bytes(dst))[:int(len(b) * f)]),
            [TV])
for i, frac in enumerate((0.3, 0.6, 0.9)):
    add_mut(f"corpus-npu-trace-truncate-{i}", "ascend-text", "cnpu",
            lambda dst, f=frac: (out(dst) / TV).write_bytes((b := _tv_bytes(dst))[:int(len(b) * f)]), [TV])


def _tv_mut(fn, replace: bool = False):
    def m(dst: Path) -> None:
        events = json.loads(_tv_bytes(dst))
        res = fn(events)
        (out(dst) / TV).write_text(json.dumps(res if replace else events))
    return m


for fld in ("ph", "name", "cat", "ts", "dur", "pid", "tid", "args", "id"):
    def m(ev, fld=fld):
        sub_every(ev, lambda e: fld in e, lambda e, k: e.__setitem__(fld, wrong(e[fld], k)), 4)
    add_mut(f"npu-trace-wrongtype-{fld}", "ascend-text", "npu", _tv_mut(m), [TV])
for akey in ("Task Type", "Stream Id", "connection_id", "Input Dims", "Sequence number", "Python id"):
    def m(ev, akey=akey):
        sub_every(ev, lambda e: isinstance(e.get("args"), dict) and akey in e["args"],
                  lambda e, k: e["args"].__setitem__(akey, wrong(e["args"][akey], k)), 3)
    add_mut(f"npu-trace-wrongtype-args-{akey.replace(' ', '_')}", "ascend-text", "npu", _tv_mut(m), [TV])
add_mut("npu-trace-object-not-array", "ascend-text", "npu",
        _tv_mut(lambda ev: {"traceEvents": ev}, replace=True), [TV])
add_mut("npu-trace-nanish-ts", "ascend-text", "npu", _tv_mut(lambda ev: sub_every(
    ev, lambda e: "ts" in e, lambda e, k: e.__setitem__("ts", ["NaN", "", "inf", "1e400", "-5"][k % 5]), 7)), [TV])
add_mut("npu-trace-non-utf8", "ascend-text", "npu", lambda dst: (out(dst) / TV).write_bytes(
    (b := _tv_bytes(dst))[: len(b) // 2] + b"\xff\xfe" + b[len(b) // 2:]), [TV])
add_mut("npu-trace-empty", "ascend-text", "npu", lambda dst: (out(dst) / TV).write_bytes(b""), [TV])


# ------------------------------------------------------------------------------ Ascend CSVs

def csv_mut(name: str, fn, crlf: bool | None = None, bom: bool = False):
    """Rewrite ``name`` through ``fn(header, rows) -> (header, rows)`` (csv module, quoting kept)."""
    def m(dst: Path) -> None:
        p = out(dst) / name
        raw = p.read_bytes()
        text = raw.decode("utf-8-sig")
        eol = "\r\n" if (crlf if crlf is not None else "\r\n" in text) else "\n"
        rows = list(csv.reader(io.StringIO(text, newline="")))
        header, body = fn(rows[0], rows[1:])
        buf = io.StringIO()
        csv.writer(buf, lineterminator=eol).writerows([header] + body)
        p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + buf.getvalue().encode("utf-8"))
    return m


def drop_col(col):
    def fn(h, rows):
        i = h.index(col)
        return h[:i] + h[i + 1:], [r[:i] + r[i + 1:] for r in rows]
    return fn


def rename_col(col, new):
    return lambda h, rows: ([new if c == col else c for c in h], rows)


def bad_cells(col, every: int = 3):
    vals = ["abc", "", "N/A", "1e400", "-5", "99999999999999999999999", "nan", "inf", "1.2.3", "\t"]

    def fn(h, rows):
        i = h.index(col)
        for k, r in enumerate(rows[::every]):
            r[i] = vals[k % len(vals)]
        return h, rows
    return fn


def reverse_cols(h, rows):
    return h[::-1], [r[::-1] for r in rows]


KD, OM, MR = "kernel_details.csv", "operator_memory.csv", "memory_record.csv"
for f, col in ((KD, "Name"), (KD, "Start Time(us)"), (OM, "Name"), (OM, "Allocation Time(us)"),
               (MR, "Timestamp(us)")):
    add_mut(f"csv-missing-required-{f[:-4]}-{col}", "ascend-csv", "npu", csv_mut(f, drop_col(col)), [f])
for f, col in ((KD, "Duration(us)"), (KD, "Type"), (KD, "Step Id"), (KD, "aiv_vec_time(us)"),
               (OM, "Size(KB)"), (OM, "Release Time(us)"), (MR, "Total Reserved(MB)")):
    add_mut(f"csv-missing-optional-{f[:-4]}-{col}", "ascend-csv", "npu", csv_mut(f, drop_col(col)), [f])
add_mut("csv-renamed-start-time", "ascend-csv", "npu",
        csv_mut(KD, rename_col("Start Time(us)", "Start Time (us)")), [KD])
add_mut("csv-renamed-alias-step-id", "ascend-csv", "npu", csv_mut(KD, rename_col("Step Id", "Step ID")), [KD])
add_mut("csv-renamed-name-lowercase", "ascend-csv", "npu", csv_mut(OM, rename_col("Name", "name")), [OM])
for f in (KD, OM, MR):
    add_mut(f"csv-reordered-{f[:-4]}", "ascend-csv", "npu", csv_mut(f, reverse_cols), [f])
for f, col in ((KD, "Start Time(us)"), (KD, "Duration(us)"), (KD, "Step Id"), (KD, "Stream ID"),
               (KD, "aicore_time(us)"), (KD, "Name"), (OM, "Size(KB)"), (OM, "Allocation Time(us)"),
               (OM, "Release Time(us)"), (OM, "Device Type"), (MR, "Timestamp(us)"), (MR, "Total Allocated(MB)")):
    add_mut(f"csv-bad-cells-{f[:-4]}-{col}", "ascend-csv", "npu", csv_mut(f, bad_cells(col)), [f])


def _eol_mix(name):
    def m(dst: Path) -> None:
        p = out(dst) / name
        lines = p.read_bytes().replace(b"\r\n", b"\n").split(b"\n")
        p.write_bytes(b"".join(line + (b"\r\n" if i % 2 else b"\n") for i, line in enumerate(lines) if line))
    return m


for f in (KD, MR):
    add_mut(f"csv-crlf-lf-mix-{f[:-4]}", "ascend-csv", "npu", _eol_mix(f), [f])
    add_mut(f"csv-bom-{f[:-4]}", "ascend-csv", "npu", csv_mut(f, lambda h, r: (h, r), bom=True), [f])
    add_mut(f"csv-lf-only-{f[:-4]}", "ascend-csv", "npu", csv_mut(f, lambda h, r: (h, r), crlf=False), [f])
add_mut("csv-cr-only", "ascend-csv", "npu", lambda dst: (out(dst) / KD).write_bytes(
    (out(dst) / KD).read_bytes().replace(b"\r\n", b"\r")), [KD])

CSV_RAW = {"empty": b"", "whitespace": b"  \r\n\r\n", "header-only": None, "non-utf8": b"\x89PNG\xff\xfe\x00junk\n",
           "nul-bytes": b"\x00" * 200, "utf16": "Name,Start Time(us)\n".encode("utf-16"),
           "binary": random.Random(11).randbytes(3000)}
for f in (KD, OM, MR):
    for key, data in CSV_RAW.items():
        def m(dst, f=f, data=data):
            p = out(dst) / f
            p.write_bytes(p.read_bytes().splitlines(keepends=True)[0] if data is None else data)
        add_mut(f"csv-raw-{f[:-4]}-{key}", "ascend-csv", "npu", m, [f],
                removes=frozenset({"kernels", "mem_allocs", "mem_records"}))


def _ragged(extra: bool):
    def fn(h, rows):
        for r in rows[::4]:
            r.extend(["x", "y"]) if extra else r.pop()
        return h, rows
    return fn


add_mut("csv-ragged-extra-cells", "ascend-csv", "npu", csv_mut(KD, _ragged(True)), [KD])
add_mut("csv-ragged-missing-cells", "ascend-csv", "npu", csv_mut(KD, _ragged(False)), [KD])
add_mut("csv-unterminated-quote", "ascend-csv", "npu", lambda dst: (out(dst) / KD).write_bytes(
    (b := (out(dst) / KD).read_bytes())[: len(b) // 2] + b',"unterminated\r\n' + b[len(b) // 2:]), [KD])
add_mut("csv-duplicate-header", "ascend-csv", "npu", csv_mut(KD, lambda h, r: (
    h + ["Start Time(us)"], [x + ["1.0"] for x in r])), [KD])
add_mut("csv-non-utf8-cell", "ascend-csv", "npu", lambda dst: (out(dst) / OM).write_bytes(
    (out(dst) / OM).read_bytes().replace(b"aten::", b"\xffaten::", 1)), [OM])
add_mut("csv-step-trace-junk", "ascend-csv", "npu", lambda dst: (out(dst) / "step_trace_time.csv").write_bytes(
    b"Step,Computing\r\nabc,\xff\xfe\r\n-1,1\r\n99999999999999999999999,2\r\n"), ["step_trace_time.csv"])
add_mut("csv-huge-field", "ascend-csv", "npu", csv_mut(KD, lambda h, r: (
    h, [r[0][:h.index("Name")] + ["n" * 200_000] + r[0][h.index("Name") + 1:]] + r[1:])), [KD])

# small JSON side files (beside a text export and beside a SQLite export)
SIDE_JSON = (("communication.json", b"{not json"), ("communication.json", b"[1, 2, 3]"),
             ("communication.json", b'{"step1": {"collective": {"Total Op Info": []}}}'),
             ("communication.json", b""),
             ("../profiler_info_0.json", b"{broken"), ("../profiler_info_0.json", b'{"rank_id": "abc", "config": []}'),
             ("../profiler_info_0.json", b'{"config": {"experimental_config": "Level1"}}'),
             ("../profiler_info_0.json", b'{"rank_id": [0], "config": {"common_config": 7}}'),
             ("../profiler_metadata.json", b'{"parallel_group_info": [1, 2]}'),
             ("../profiler_metadata.json", b"\xff\xfe"),
             ("../profiler_metadata.json", b'{"parallel_group_info": {"0": {"group_name": ["x"]}}}'))
for src, group in (("npu", "ascend-text"), ("tinydb", "ascend-db")):
    for f, content in SIDE_JSON:
        if src == "tinydb" and f == "communication.json":
            continue                            # the SQLite loader does not read it
        base = os.path.basename(f)
        pre = f"sidefile-{'db-' if src == 'tinydb' else ''}{base}"
        n = sum(c.id.startswith(pre) for c in CASES)
        add_mut(f"{pre}-{n}", group, src, lambda dst, f=f, content=content: (out(dst) / f).write_bytes(content),
                [base])

# corpus text export, CSV variants (level0 CSVs with a level1 trace is under "layout")
add_mut("corpus-csv-bad-cells-kd-start", "ascend-csv", "cnpu", csv_mut(KD, bad_cells("Start Time(us)")), [KD])
add_mut("corpus-csv-missing-required-om", "ascend-csv", "cnpu", csv_mut(OM, drop_col("Allocation Time(us)")), [OM])
add_mut("corpus-csv-truncated-kd", "ascend-csv", "cnpu", lambda dst: (out(dst) / KD).write_bytes(
    (b := (out(dst) / KD).read_bytes())[: len(b) // 2 + 7]), [KD], removes=frozenset({"kernels"}))


# ------------------------------------------------------------------------------ Ascend SQLite export

def _db_path(dst: Path) -> Path:
    return out(dst) / DB


def _db_bytes(fn):
    return lambda dst: _db_path(dst).write_bytes(fn(_db_path(dst).read_bytes()))


DB_WRONG = {  # wrong column types / values, as SQLite happily stores them
    "task-start-text": "UPDATE TASK SET startNs = 'abc' WHERE rowid % 3 = 0",
    "task-end-null": "UPDATE TASK SET endNs = NULL WHERE rowid % 3 = 1",
    "task-start-real": "UPDATE TASK SET startNs = startNs + 0.5",
    "task-start-blob": "UPDATE TASK SET startNs = x'00ff' WHERE rowid % 4 = 0",
    "task-huge": "UPDATE TASK SET endNs = 1e300 WHERE rowid % 5 = 0",
    "task-end-before-start": "UPDATE TASK SET endNs = startNs - 1000 WHERE rowid % 3 = 0",
    "task-type-unknown-id": "UPDATE TASK SET taskType = 999999999",
    "string-value-int": "UPDATE STRING_IDS SET value = 123 WHERE id % 2 = 0",
    "string-value-null": "UPDATE STRING_IDS SET value = NULL WHERE id % 3 = 0",
    "api-start-junk": "UPDATE PYTORCH_API SET startNs = 'not a time' WHERE rowid % 3 = 0",
    "api-start-huge": "UPDATE PYTORCH_API SET startNs = '99999999999999999999999' WHERE rowid % 4 = 0",
    "api-type-text": "UPDATE PYTORCH_API SET type = 'op'",
    "api-gtid-null": "UPDATE PYTORCH_API SET globalTid = NULL",
    "step-text": "UPDATE STEP_TIME SET startNs = 'x', id = 'y'",
    "comm-name-missing-string": "UPDATE COMMUNICATION_OP SET opName = 987654321, opType = NULL",
    "overlap-type-junk": "UPDATE OVERLAP_ANALYSIS SET type = 'Free'",
    "memrec-text": "UPDATE MEMORY_RECORD SET totalAllocated = 'lots', timestamp = NULL WHERE rowid % 2 = 0",
    "opmem-size-neg": "UPDATE OP_MEMORY SET size = -size, releaseTime = 'never'",
    "pmu-value-text": "UPDATE TASK_PMU_INFO SET value = 'fast'",
    "rank-text": "UPDATE RANK_DEVICE_MAP SET rankId = 'zero'",
    "conn-dup": "INSERT INTO CONNECTION_IDS SELECT * FROM CONNECTION_IDS",
}
DB_DROPS = ("PYTORCH_API", "COMPUTE_TASK_INFO", "COMMUNICATION_OP", "OVERLAP_ANALYSIS", "STEP_TIME",
            "CONNECTION_IDS", "ENUM_API_TYPE", "TASK_PMU_INFO", "OP_MEMORY", "COMMUNICATION_TASK_INFO")
# the corpus export gets the cheap structural cases and a subset of the value cases
CORPUS_DB_WRONG = ("task-start-text", "task-end-null", "string-value-int", "api-start-junk", "api-type-text",
                   "comm-name-missing-string", "memrec-text", "conn-dup")
CORPUS_DB_DROPS = ("PYTORCH_API", "COMPUTE_TASK_INFO", "STEP_TIME", "CONNECTION_IDS")

for src in ("tinydb", "cdb"):
    pre = "db" if src == "tinydb" else "corpus-db"
    add_mut(f"{pre}-random-bytes", "ascend-db", src,
            _db_bytes(lambda b: random.Random(5).randbytes(len(b))), [DB])
    add_mut(f"{pre}-zero-bytes", "ascend-db", src, _db_bytes(lambda b: b""), [DB])
    add_mut(f"{pre}-header-only", "ascend-db", src, _db_bytes(lambda b: b[:100]), [DB])
    for i, frac in enumerate((0.25, 0.5, 0.9)):
        add_mut(f"{pre}-truncated-{i}", "ascend-db", src, _db_bytes(lambda b, f=frac: b[:int(len(b) * f)]), [DB])
    add_mut(f"{pre}-page-garbled", "ascend-db", src,
            _db_bytes(lambda b: b[:len(b) // 2] + b"\xa5" * 4096 + b[len(b) // 2 + 4096:]), [DB])
    add_mut(f"{pre}-missing-TASK", "ascend-db", src, db_sql("DROP TABLE TASK"), [DB])
    add_mut(f"{pre}-missing-STRING_IDS", "ascend-db", src, db_sql("DROP TABLE STRING_IDS"), [DB])
    add_mut(f"{pre}-missing-TASK-endNs", "ascend-db", src, db_sql("ALTER TABLE TASK DROP COLUMN endNs"), [DB])
    for t in (DB_DROPS if src == "tinydb" else CORPUS_DB_DROPS):
        add_mut(f"{pre}-missing-optional-{t}", "ascend-db", src, db_sql(f"DROP TABLE IF EXISTS {t}"), [DB],
                removes=frozenset({"ops", "kernels", "comm_ops", "comm_tasks", "overlap", "steps", "mem_allocs",
                                   "pyfuncs", "fwdbwd"}))
    for key, sql in DB_WRONG.items():
        if src == "cdb" and key not in CORPUS_DB_WRONG:
            continue
        add_mut(f"{pre}-wrongtype-{key}", "ascend-db", src, db_sql(sql), [DB])


def _other_sqlite(dst: Path) -> None:
    _db_path(dst).unlink()
    c = sqlite3.connect(_db_path(dst))
    c.executescript("CREATE TABLE t (a); INSERT INTO t VALUES (1);")
    c.commit()
    c.close()


add_mut("db-not-a-profiler-export", "ascend-db", "tinydb", _other_sqlite, [DB])
add_mut("db-tables-are-views", "ascend-db", "tinydb", db_sql(
    "ALTER TABLE TASK RENAME TO TASK_REAL", "CREATE VIEW TASK AS SELECT * FROM TASK_REAL"), [DB])
add_mut("db-analysis-db-junk", "ascend-db", "tinydb",
        lambda dst: (out(dst) / "analysis.db").write_bytes(b"not sqlite at all"), ["analysis.db"])
add_mut("db-wal-sidecar-junk", "ascend-db", "tinydb",
        lambda dst: (out(dst) / (DB + "-wal")).write_bytes(b"\x00" * 100), [DB])


# ------------------------------------------------------------------------------ layout / discovery

def _good_trace(dst: Path, name: str = TRACE) -> None:
    (dst / name).write_bytes(gpu_bytes())


def _folder_named_trace(dst: Path) -> None:
    (dst / "x.pt.trace.json").mkdir()
    (dst / "y.json.gz").mkdir()
    (dst / "z.pt.trace.json.gz").mkdir()
    (dst / "z.pt.trace.json.gz" / "inner.txt").write_text("not a trace")
    _good_trace(dst)


def _trace_inside_trace_named_folder(dst: Path) -> None:
    (dst / "r.pt.trace.json").mkdir()
    _good_trace(dst / "r.pt.trace.json")


def _symlink_loops(dst: Path) -> None:
    _good_trace(dst)
    sub = dst / "sub"
    sub.mkdir()
    os.symlink("..", sub / "up")                  # back to the run
    os.symlink(str(dst), sub / "abs_up")
    os.symlink("b", dst / "a")                    # a -> b -> a
    os.symlink("a", dst / "b")
    os.symlink("self.pt.trace.json", dst / "self.pt.trace.json")   # ELOOP trace file
    os.symlink("nowhere.pt.trace.json", dst / "dangling.pt.trace.json")


def _unreadable_file(dst: Path) -> None:
    _good_trace(dst)
    os.chmod(dst / TRACE, 0)


def _unreadable_dir(dst: Path) -> None:
    copy_npu(dst)
    os.chmod(out(dst), 0)


def _empty_worker(dst: Path) -> None:
    (dst / WORKER / OUT).mkdir(parents=True)


def _out_is_file(dst: Path) -> None:
    (dst / WORKER).mkdir()
    (dst / WORKER / OUT).write_text("not a folder")


def _trace_view_is_dir(dst: Path) -> None:
    copy_npu(dst)
    (out(dst) / TV).unlink()
    (out(dst) / TV).mkdir()


def _db_is_dir(dst: Path) -> None:
    (dst / WORKER / OUT / DB).mkdir(parents=True)


def _csv_is_dir(dst: Path) -> None:
    copy_npu(dst)
    (out(dst) / KD).unlink()
    (out(dst) / KD).mkdir()


def _no_trace_view(dst: Path) -> None:
    copy_npu(dst)
    (out(dst) / TV).unlink()


def _text_plus_other_rank_db(dst: Path) -> None:
    copy_npu(dst)
    make_tiny_db(out(dst) / "ascend_pytorch_profiler_1.db", rank=1)


def _corpus_text_plus_other_rank_db(dst: Path) -> None:
    copy_npu(dst, C_NPU_L1, TEXT_FILES)
    shutil.copy(C_DB_L1_R1 / OUT / "ascend_pytorch_profiler_1.db", out(dst))


def _level0_csv_level1_trace(dst: Path) -> None:
    """samples: the level-1 trace with a kernel_details.csv stripped of the PMU/shape columns."""
    copy_npu(dst)
    keep = ("Step Id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
            "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", "HF32 Eligible",
            "Context ID")

    def fn(h, rows):
        idx = [i for i, c in enumerate(h) if c in keep]
        return [h[i] for i in idx], [[r[i] for i in idx] for r in rows]
    csv_mut(KD, fn)(dst)


def _corpus_level0_csv_level1_trace(dst: Path) -> None:
    copy_npu(dst, C_NPU_L1, TEXT_FILES)
    for n in (KD, OM, MR):
        shutil.copy(C_NPU_L0 / OUT / n, out(dst) / n)
        (out(dst) / n).chmod(0o644)


def _other_run_csv(dst: Path) -> None:
    """kernel_details.csv of another capture: no start time matches the trace."""
    copy_npu(dst)
    csv_mut(KD, lambda h, rows: (h, [r[:h.index("Start Time(us)")] + ["1.000\t"] +
                                     r[h.index("Start Time(us)") + 1:] for r in rows]))(dst)


def _two_out_dirs(dst: Path) -> None:
    copy_npu(dst)
    shutil.copytree(out(dst), dst / WORKER / "ASCEND_PROFILER_OUTPUT_old")


def _bare_out_dir(dst: Path) -> None:
    copy_npu(dst)
    shutil.move(str(out(dst)), str(dst / OUT))
    shutil.rmtree(dst / WORKER)


def _trace_and_npu_in_one_run(dst: Path) -> None:
    _good_trace(dst)
    copy_npu(dst)
    (out(dst) / KD).write_bytes(b"")


def _gz_and_plain_same_name(dst: Path) -> None:
    _good_trace(dst)
    (dst / (TRACE + ".gz")).write_bytes(gzip.compress(gpu_bytes()[:5000]))


LAYOUT = [
    ("layout-folder-named-like-trace", _folder_named_trace, [TRACE], "gpu"),
    ("layout-trace-inside-trace-named-folder", _trace_inside_trace_named_folder, [TRACE], "gpu"),
    ("layout-symlink-loops", _symlink_loops, [TRACE, "self.pt.trace.json", "dangling.pt.trace.json"], "gpu"),
    ("layout-empty-worker", _empty_worker, [WORKER], None),
    ("layout-output-is-a-file", _out_is_file, [WORKER, OUT], None),
    ("layout-trace-view-is-a-folder", _trace_view_is_dir, [TV, WORKER], None),
    ("layout-db-is-a-folder", _db_is_dir, [DB, WORKER], None),
    ("layout-csv-is-a-folder", _csv_is_dir, [KD], None),
    ("layout-no-trace-view", _no_trace_view, [WORKER, TV], None),
    ("layout-text-plus-other-rank-db", _text_plus_other_rank_db, ["ascend_pytorch_profiler_1.db"], None),
    ("layout-level0-csv-level1-trace", _level0_csv_level1_trace, [KD], "npu"),
    ("layout-csv-from-other-capture", _other_run_csv, [KD], None),
    ("layout-two-output-dirs", _two_out_dirs, [WORKER], "npu"),
    ("layout-bare-output-dir", _bare_out_dir, [OUT, TV], None),
    ("layout-trace-and-npu-in-one-run", _trace_and_npu_in_one_run, [TRACE, KD], None),
    ("layout-gz-and-plain-same-name", _gz_and_plain_same_name, [TRACE, TRACE + ".gz"], None),
]
for cid, fn, culprits, source in LAYOUT:
    add(cid, "layout", fn, culprits, source=source)
add("layout-unreadable-file", "layout", _unreadable_file, [TRACE], needs_unreadable=True)
add("layout-unreadable-output-dir", "layout", _unreadable_dir, [WORKER, OUT], needs_unreadable=True)
add("corpus-layout-text-plus-other-rank-db", "layout", _corpus_text_plus_other_rank_db,
    ["ascend_pytorch_profiler_1.db"], corpus=True)
add("corpus-layout-level0-csv-level1-trace", "layout", _corpus_level0_csv_level1_trace, [KD], corpus=True)


def by_id() -> dict[str, Case]:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    return {c.id: c for c in CASES}
