"""The Ascend profiler's own per-step trace into the model's ``step_trace`` table.

Text export: ``ASCEND_PROFILER_OUTPUT/step_trace_time.csv`` (read by ``step_trace_csv``).
Database export: the ``StepTraceTime`` table of ``analysis.db`` beside the profiler database
(same columns, snake_cased, µs).  Both files are tiny (one row per step), so they are read while
parsing; every step-level analysis happens later and only when asked.

Values become ns floats; a cell that is empty, not a number, infinite or (for the database)
negative is NaN and a warning names the file, the column and the count.  A row whose step is
not an integer is dropped (warned).
"""
from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

import numpy as np

from ..model import make_table
from ..model.profile import STEP_TRACE_COLUMNS
from .regular import open_regular

CSV_NAME = "step_trace_time.csv"
DB_TABLE = "StepTraceTime"


def _table(cols: dict):
    return make_table("step_trace", len(cols["step"]), step=np.asarray(cols["step"], np.int64),
                      **{f"{c}_ns": np.asarray(cols[c], np.float64) for c in STEP_TRACE_COLUMNS})


def from_csv(path: str, meta):
    """``step_trace`` table of a step_trace_time.csv; warnings go to ``meta.warnings``."""
    from .step_trace_csv import read_step_trace
    try:
        cols, warnings = read_step_trace(path)
    except OSError as e:
        meta.warnings.append(f"{path}: unreadable ({e.strerror or e}); no per-step trace from the profiler")
        return None
    meta.warnings.extend(warnings)
    meta.files.append(path)
    return _table(cols)


def _step_id(v) -> int | None:
    s = str(v).strip().lower()
    s = s[4:] if s.startswith("step") else s
    try:
        return int(float(s))
    except ValueError:
        return None


def from_analysis_db(path: str, meta):
    """``step_trace`` table of analysis.db's StepTraceTime (None when the table is absent)."""
    try:
        with open_regular(path, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                meta.warnings.append(f"{path}: not an SQLite database; no per-step trace from the profiler")
                return None
        con = sqlite3.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro&immutable=1", uri=True)
    except (OSError, sqlite3.Error) as e:
        meta.warnings.append(f"{path}: cannot open ({e}); no per-step trace from the profiler")
        return None
    try:
        have = [r[1] for r in con.execute(f'pragma table_info("{DB_TABLE}")')]
        if not have:
            return None
        want = [c for c in STEP_TRACE_COLUMNS if c in have]
        missing = [c for c in STEP_TRACE_COLUMNS if c not in have]
        if missing:
            meta.warnings.append(f"{path}: {DB_TABLE} has no {', '.join(missing)} column (left empty)")
        sel = ", ".join(['"step"' if "step" in have else "NULL"] + [f'"{c}"' for c in want])
        rows = con.execute(f'SELECT {sel} FROM "{DB_TABLE}"').fetchall()
    except sqlite3.Error as e:
        meta.warnings.append(f"{path}: cannot read {DB_TABLE} ({e}); no per-step trace from the profiler")
        return None
    finally:
        con.close()
    cols: dict = {"step": [], **{c: [] for c in STEP_TRACE_COLUMNS}}
    bad: dict = {}
    dropped = 0
    for row in rows:
        sid = _step_id(row[0])
        if sid is None:
            if len(rows) > 1 or row[0] not in (None, ""):
                dropped += 1
                continue
            sid = -1                       # one row, no step: the run was not split into steps
        cols["step"].append(sid)
        vals = dict(zip(want, row[1:]))
        for c in STEP_TRACE_COLUMNS:
            v = vals.get(c)
            try:
                x = float(v) * 1000.0 if c in vals else math.nan
            except (TypeError, ValueError):
                x = math.nan
            if c in vals and (not math.isfinite(x) or (x < 0 and c != "preparing")):
                bad[c] = bad.get(c, 0) + 1
                x = math.nan
            cols[c].append(x)
    if dropped:
        meta.warnings.append(f"{path}: {DB_TABLE}: {dropped} row(s) dropped: step is not a number")
    for c, n in sorted(bad.items()):
        meta.warnings.append(f"{path}: {DB_TABLE}: {n} {c} value(s) missing, negative or not a number "
                             "(left empty)")
    meta.files.append(path)
    return _table(cols)


def find_csv(out_dir: str) -> str | None:
    p = os.path.join(out_dir, CSV_NAME)
    return p if os.path.isfile(p) else None
