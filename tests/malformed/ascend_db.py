"""Malformed Ascend SQLite exports: garbage and truncated files, missing tables and columns,
values of the wrong type, another SQLite file, junk beside the export."""
from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from .common import DB, add_mut, out
from .tinydb import db_sql

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
