"""Loader for Ascend PyTorch / MindSpore SQLite exports (``ascend_pytorch_profiler*.db`` & co).

Owns: locating the ``.db`` of a worker, a cheap :func:`peek` for discovery, and :func:`load`,
which turns the export's tables into the columnar :class:`Profile` with the same meaning the
text loader gives ``trace_view.json`` + CSVs.  Facts about the format this relies on (checked
on the corpus): every name column is an id into ``STRING_IDS``; times are int ns
(``PYTORCH_API.startNs`` is TEXT); ``TASK.taskType`` / PMU names are ``STRING_IDS`` ids; PMU
times are ns; ``PYTORCH_API.connectionId`` points at ``CONNECTION_IDS.id`` whose
``connectionId`` equals ``TASK``/``COMMUNICATION_OP.connectionId``; a TASK with no subtask
context that encloses subtasks of the same (stream, task, connection) is a container (HCCL or
MIX wrapper) the text export never shows, so it is dropped.  The database is opened read-only
and immutable: nothing is ever written beside it.
"""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd

from ..model import (Profile, ProfileMeta, SymbolTable, make_table, KIND_COMPUTE, KIND_MEMCPY,
                     KIND_COMM, KIND_OTHER, OVERLAP_KINDS)
from ..model.intervals import nest
from .errors import LoadError

DB_PREFIXES = ("ascend_pytorch_profiler", "ascend_mindspore_profiler", "msmonitor")
REQUIRED = {"TASK": ("startNs", "endNs"), "STRING_IDS": ("id", "value")}
NO_CONTEXT = (-1, 4294967295)
API_TYPE_IDS = {"op": 50001, "queue": 50002, "trace": 50003}   # when ENUM_API_TYPE is absent
COMPUTE_TASK_TYPES = {"KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV", "AI_CORE",
                      "AI_VECTOR_CORE", "AI_CPU", "KERNEL_AICPU", "MIX_AIC", "MIX_AIV", "FFTS_PLUS"}
# kernels PMU column <- TASK_PMU_INFO names (newer name first); values are ns in the DB
PMU_COLUMNS = {"aicore_time_us": ("aic_total_time", "aicore_time"), "mac_time_us": ("mac_time",),
               "aic_mac_time_us": ("aic_mac_time",), "aic_mte2_time_us": ("aic_mte2_time",),
               "aiv_time_us": ("aiv_total_time", "aiv_time"), "aiv_vec_time_us": ("aiv_vec_time",)}
# OP_MEMORY names lack the text export's "cann::" prefix; the CANN-side rows are exactly those
# named in NPU_OP_MEM.  False keeps the DB names (what the reference sees in DB mode).
MARK_CANN_MEMORY = False


# ----------------------------------------------------------------------------- file access
def find_db(root: str) -> Path:
    """The export .db for ``root`` (the .db itself, a *_ascend_pt/_ms folder or its output folder)."""
    p = Path(root)
    if p.is_file():
        return p
    if not p.is_dir():
        raise LoadError(root, "path does not exist")
    out = p / "ASCEND_PROFILER_OUTPUT" if (p / "ASCEND_PROFILER_OUTPUT").is_dir() else p
    for prefix in DB_PREFIXES:
        found = sorted(f for f in out.glob(prefix + "*.db") if f.is_file())
        if found:
            return found[0]
    raise LoadError(root, f"no {'*.db, '.join(DB_PREFIXES)}*.db file in {out}")


def _connect(path: Path) -> sqlite3.Connection:
    """Open read-only + immutable (no -wal/-shm/journal files); reject non-SQLite files early."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise LoadError(str(path), f"cannot open file: {e.strerror or e}") from None
    if not head:
        raise LoadError(str(path), "file is empty, not an SQLite database")
    if head != b"SQLite format 3\x00":
        raise LoadError(str(path), "file is not an SQLite database")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
    try:
        return sqlite3.connect(uri, uri=True)
    except sqlite3.Error as e:
        raise LoadError(str(path), f"cannot open SQLite database: {e}") from None


class _Db:
    """Thin read helper: table/column inventory and NULL-safe SELECTs into DataFrames."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = _connect(path)
        try:
            names = [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            self.cols = {n: {r[1] for r in self.conn.execute(f'PRAGMA table_info("{n}")')} for n in names}
        except sqlite3.Error as e:
            self.conn.close()
            raise LoadError(str(path), f"cannot read SQLite database: {e}") from None

    def has(self, table: str) -> bool:
        return table in self.cols

    def rows(self, table: str) -> bool:
        return self.has(table) and self.conn.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone() is not None

    def select(self, table: str, spec: dict[str, str], where: str = "") -> pd.DataFrame | None:
        """``spec`` alias -> column (ints: NULL/missing -> -1; ``col:f`` float NaN; ``col:s`` text)."""
        if not self.has(table):
            return None
        parts = []
        for alias, col in spec.items():
            name, _, kind = col.partition(":")
            present = name in self.cols[table]
            if kind == "f":
                expr = f'CAST("{name}" AS REAL)' if present else "NULL"
            elif kind == "s":
                expr = f'"{name}"' if present else "NULL"
            else:
                expr = f'COALESCE(CAST("{name}" AS INTEGER), -1)' if present else "-1"
            parts.append(f'{expr} AS "{alias}"')
        return pd.read_sql_query(f'SELECT {", ".join(parts)} FROM "{table}" {where}', self.conn)

    def close(self) -> None:
        self.conn.close()


class _Strings:
    """STRING_IDS as sorted arrays; maps id vectors to text or to profile symbol ids."""

    def __init__(self, db: _Db, symbols: SymbolTable) -> None:
        df = db.select("STRING_IDS", {"id": "id", "value": "value:s"})
        o = np.argsort(df["id"].to_numpy(np.int64), kind="stable")
        self.ids = df["id"].to_numpy(np.int64)[o]
        self.vals = df["value"].to_numpy(object)[o]
        self.symbols = symbols

    def text(self, ref) -> np.ndarray:
        ref = np.asarray(ref, dtype=np.int64)
        out = np.full(len(ref), None, dtype=object)
        if len(self.ids) and len(ref):
            pos = np.minimum(np.searchsorted(self.ids, ref), len(self.ids) - 1)
            ok = self.ids[pos] == ref
            out[ok] = self.vals[pos[ok]]
        return out

    def sym(self, ref) -> np.ndarray:
        return self.symbols.intern_many(self.text(ref))

    def ids_of(self, names) -> dict[str, int]:
        want = set(names)
        return {str(v): int(i) for i, v in zip(self.ids, self.vals) if v in want}


def _enum(db: _Db, table: str) -> dict[int, str]:
    df = db.select(table, {"id": "id", "name": "name:s"})
    return {} if df is None else dict(zip(df["id"].tolist(), df["name"].astype(object).tolist()))


def _rank_from_name(path: Path) -> int | None:
    m = re.search(r"_(\d+)\.db$", path.name)
    return int(m.group(1)) if m else None


def _db_rank(db: _Db, path: Path) -> int | None:
    df = db.select("RANK_DEVICE_MAP", {"rank": "rankId"})
    if df is not None and len(df) and 0 <= int(df["rank"].iat[0]) < 2 ** 31 - 1:
        return int(df["rank"].iat[0])
    return _rank_from_name(path)


# ----------------------------------------------------------------------------- peek
def peek(db_path: str) -> dict:
    """Cheap look at one export for discovery; never raises (problems go to ``error``)."""
    path = Path(db_path)
    res = {"rank": _rank_from_name(path), "steps": [], "has": dict.fromkeys(
        ("kernels", "communication", "memory", "modules"), False), "error": None}
    db = None
    try:
        db = _Db(path)
        res["rank"] = _db_rank(db, path)
        steps = db.select("STEP_TIME", {"id": "id"})
        res["steps"] = [] if steps is None else sorted(int(s) for s in steps["id"].unique())
        res["has"] = {
            "kernels": db.rows("TASK") or db.rows("COMPUTE_TASK_INFO"),
            "communication": db.rows("COMMUNICATION_OP"),
            "memory": db.rows("OP_MEMORY") or db.rows("MEMORY_RECORD"),
            "modules": db.has("PYTORCH_API") and db.has("STRING_IDS") and db.conn.execute(
                "SELECT 1 FROM STRING_IDS WHERE value LIKE 'nn.Module:%' LIMIT 1").fetchone() is not None,
        }
    except LoadError as e:
        res["error"] = str(e)
    except (sqlite3.Error, pd.errors.DatabaseError) as e:
        res["error"] = f"{path}: cannot read SQLite database: {e}"
    finally:
        if db is not None:
            db.close()
    return res


# ----------------------------------------------------------------------------- load
def load(root: str, framework: str = "PyTorch", progress=None) -> Profile:
    path = find_db(root)
    if path.name.startswith("ascend_mindspore_profiler"):
        framework = "MindSpore"
    db = _Db(path)
    try:
        for table, cols in REQUIRED.items():
            if not db.has(table):
                raise LoadError(str(path), f"not a profiler export: missing table {table}")
            missing = [c for c in cols if c not in db.cols[table]]
            if missing:
                raise LoadError(str(path), f"table {table} lacks column(s) {', '.join(missing)}")
        return _Reader(db, path, root, framework, progress).run()
    except (sqlite3.Error, pd.errors.DatabaseError) as e:
        raise LoadError(str(path), f"cannot read SQLite database: {e}") from None
    finally:
        db.close()

