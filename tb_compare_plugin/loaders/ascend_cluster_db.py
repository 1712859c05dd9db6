"""Reader of an Ascend database export's per-rank summary tables, for cluster analyses.

From ``analysis.db`` (beside the profiler's ``ascend_pytorch_profiler_N.db``): ``StepTraceTime``
(the text export's step_trace_time.csv, µs), ``CommAnalyzerTime`` (communication.json's
Communication Time Info, ms), ``CommAnalyzerMatrix`` (communication_matrix.json, MB / ms) and
``CommAnalyzerBandwidth``.  From the profiler database: ``STEP_TIME`` (step windows, ns) and,
when ``analysis.db`` is absent, ``COMMUNICATION_OP`` (each collective's window, ns).
Both databases are opened read-only and immutable.  Returns plain columns (ns, bytes) and
warnings naming the file for anything missing or unreadable.
"""
from __future__ import annotations

import math
import os
import re
import sqlite3
from pathlib import Path

from .ascend_db import _connect
from .ascend_comm_json import COLLECTIVE_COLUMNS, LINK_COLUMNS, NETWORK_TRANSPORTS, report_bad
from .ascend_comm_json import scaled_amount as _f
from .step_trace_csv import COLUMNS as STEP_COLUMNS

_STEP = re.compile(r"^(?:step)?(\d+)$", re.I)


def _step(v) -> int:
    m = _STEP.match(str(v).strip()) if v is not None else None
    return int(m.group(1)) if m else -1


def _tables(con) -> dict:
    out = {}
    for (name,) in con.execute("select name from sqlite_master where type='table'"):
        out[name] = [r[1] for r in con.execute(f'pragma table_info("{name}")')]
    return out


def analysis_db_of(db: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(db)), "analysis.db")


def read_step_times(db: str) -> tuple[dict, list]:
    """``{step: (start_ns, end_ns)}`` from the profiler database's STEP_TIME table."""
    warnings: list = []
    con = _connect(Path(db))
    try:
        if "STEP_TIME" not in _tables(con):
            return {}, [f"{db}: no STEP_TIME table (no step times)"]
        out = {}
        for sid, start, end in con.execute("select id, startNs, endNs from STEP_TIME"):
            try:
                out[int(sid)] = (int(start), int(end))
            except (TypeError, ValueError):
                warnings.append(f"{db}: STEP_TIME row {sid!r} has no usable times; dropped")
        return out, warnings
    finally:
        con.close()


def read_step_trace_table(path: str, warnings: list) -> dict:
    """analysis.db's StepTraceTime as step_trace_csv columns (ns), read by the step engine's
    reader (loaders/ascend_step_trace.from_analysis_db: one parser of that table)."""
    from types import SimpleNamespace
    from .ascend_step_trace import from_analysis_db
    sink = SimpleNamespace(warnings=warnings, files=[])
    table = from_analysis_db(path, sink)
    if table is None:
        warnings.append(f"{path}: no StepTraceTime table (no per-step breakdown)")
        return {"step": [], **{c: [] for c in STEP_COLUMNS.values()}}
    return {"step": table["step"].tolist(),
            **{c: table[f"{c}_ns"].tolist() for c in STEP_COLUMNS.values()}}


def read_analysis(path: str) -> tuple[dict, list]:
    """``{"steps": columns as step_trace_csv.read_step_trace, "collectives": ..., "links": ...}``
    from ``analysis.db``; a table that is absent gives empty columns and a warning."""
    warnings: list = []
    con = _connect(Path(path))
    try:
        tables = _tables(con)
        steps = read_step_trace_table(path, warnings)
        coll = {c: [] for c in COLLECTIVE_COLUMNS}
        if "CommAnalyzerTime" in tables:
            bytes_of: dict = {}
            if "CommAnalyzerBandwidth" in tables:
                seen = set()
                for op, group, step, tr, size in con.execute(
                        "select hccl_op_name, group_name, step, transport_type, transit_size "
                        "from CommAnalyzerBandwidth"):
                    key = (op, group, _step(step))
                    if tr in NETWORK_TRANSPORTS and (key, tr) not in seen:   # one row per package size
                        seen.add((key, tr))
                        try:
                            bytes_of[key] = bytes_of.get(key, 0.0) + float(size) * 1e6
                        except (TypeError, ValueError):
                            pass
            bad = {}
            for (op, group, start, elapse, transit, wait, sync, idle, step, kind) in con.execute(
                    "select hccl_op_name, group_name, start_timestamp, elapse_time, transit_time, "
                    "wait_time, synchronization_time, idle_time, step, type from CommAnalyzerTime"):
                if op == "Total Op Info":
                    continue
                s = _step(step)
                coll["step"].append(s)
                coll["name"].append(str(op))
                coll["op_type"].append(str(kind or ""))
                coll["group"].append(str(group or ""))
                coll["start_ns"].append(_f(start, 1e3, bad, "start_timestamp"))
                coll["elapse"].append(_f(elapse, 1e6, bad, "elapse_time"))
                coll["transmit"].append(_f(transit, 1e6, bad, "transit_time"))
                coll["wait"].append(_f(wait, 1e6, bad, "wait_time"))
                coll["synchronization"].append(_f(sync, 1e6, bad, "synchronization_time"))
                coll["idle"].append(_f(idle, 1e6, bad, "idle_time"))
                coll["bytes"].append(bytes_of.get((op, group, s), math.nan))
            report_bad(f"{path}: CommAnalyzerTime", bad, warnings)

        links = {c: [] for c in LINK_COLUMNS}
        if "CommAnalyzerMatrix" in tables:
            bad = {}
            dropped = 0
            for (op, group, src, dst, tr, size, t, step, op_name) in con.execute(
                    "select hccl_op_name, group_name, src_rank, dst_rank, transport_type, "
                    "transit_size, transit_time, step, op_name from CommAnalyzerMatrix"):
                try:
                    src, dst = int(src), int(dst)
                except (TypeError, ValueError):
                    dropped += 1
                    continue
                if op == "Total Op Info":
                    continue
                links["step"].append(_step(step))
                links["collective"].append(str(op))
                links["group"].append(str(group or ""))
                links["src_rank"].append(src)
                links["dst_rank"].append(dst)
                links["transport"].append(str(tr or ""))
                links["bytes"].append(_f(size, 1e6, bad, "transit_size"))
                links["time"].append(_f(t, 1e6, bad, "transit_time"))
                links["op_name"].append(str(op_name or ""))
            if dropped:
                warnings.append(f"{path}: CommAnalyzerMatrix: {dropped} row(s) without integer "
                                "src/dst ranks; dropped")
            report_bad(f"{path}: CommAnalyzerMatrix", bad, warnings)
        return {"steps": steps, "collectives": coll, "links": links}, warnings
    finally:
        con.close()


def read_communication_ops(db: str) -> tuple[dict, list]:
    """The collectives from the profiler database's COMMUNICATION_OP (name, group, window) when
    there is no ``analysis.db``: elapse only (wait/transmit are not in this table)."""
    warnings: list = []
    con = _connect(Path(db))
    coll = {c: [] for c in COLLECTIVE_COLUMNS}
    try:
        tables = _tables(con)
        if "COMMUNICATION_OP" not in tables:
            return coll, [f"{db}: no COMMUNICATION_OP table (no collectives)"]
        strings = dict(con.execute("select id, value from STRING_IDS")) if "STRING_IDS" in tables else {}
        for name, group, start, end, op_type in con.execute(
                "select opName, groupName, startNs, endNs, opType from COMMUNICATION_OP"):
            coll["step"].append(-1)
            coll["name"].append(str(strings.get(name, name)))
            coll["op_type"].append(str(strings.get(op_type, op_type)))
            coll["group"].append(str(strings.get(group, group)))
            try:
                coll["start_ns"].append(float(start))
                coll["elapse"].append(float(int(end) - int(start)))
            except (TypeError, ValueError):
                coll["start_ns"].append(math.nan)
                coll["elapse"].append(math.nan)
            for c in ("transmit", "wait", "synchronization", "idle", "bytes"):
                coll[c].append(math.nan)
        return coll, warnings
    except sqlite3.Error as e:
        return coll, [f"{db}: COMMUNICATION_OP unreadable: {e}"]
    finally:
        con.close()
