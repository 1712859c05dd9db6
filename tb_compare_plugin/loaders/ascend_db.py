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
from . import ascend_step_trace
from .errors import LoadError
from .regular import open_regular, read_text_regular

DB_PREFIXES = ("ascend_pytorch_profiler", "ascend_mindspore_profiler", "msmonitor")
REQUIRED = {"TASK": ("startNs", "endNs"), "STRING_IDS": ("id", "value")}
NO_CONTEXT = (-1, 4294967295)
API_TYPE_IDS = {"op": 50001, "queue": 50002, "trace": 50003}   # when ENUM_API_TYPE is absent
COMPUTE_TASK_TYPES = {"KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV", "AI_CORE",
                      "AI_VECTOR_CORE", "AI_CPU", "KERNEL_AICPU", "MIX_AIC", "MIX_AIV", "FFTS_PLUS"}
# kernels PMU column <- TASK_PMU_INFO names (newer name first); values are ns in the DB
PMU_COLUMNS = {"aicore_time_us": ("aic_total_time", "aicore_time"), "mac_time_us": ("mac_time",),
               "aic_mac_time_us": ("aic_mac_time",), "aic_mte2_time_us": ("aic_mte2_time",),
               "aiv_time_us": ("aiv_total_time", "aiv_time"), "aiv_vec_time_us": ("aiv_vec_time",),
               "aic_mac_ratio": ("aic_mac_ratio",), "aiv_vec_ratio": ("aiv_vec_ratio",)}
# OP_MEMORY names lack the text export's "cann::" prefix; the CANN-side rows are exactly those
# named in NPU_OP_MEM.  False keeps the DB names (what the reference sees in DB mode).
MARK_CANN_MEMORY = False
APP = "APP"        # memory component of the whole process (MEMORY_RECORD, else NPU_MEM type "app")


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
        with open_regular(path, "rb") as f:
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


# An integer column as SQLite stores it: integers as they are, reals in the int64 range truncated,
# text only when it is exactly an integer's digits (CAST alone turns 'abc' into 0, a plausible
# time); anything else (NULL, junk text, blobs, out-of-range reals) -> -1.
_INT_EXPR = ("CASE typeof(\"{c}\") WHEN 'integer' THEN \"{c}\" "
             "WHEN 'real' THEN CASE WHEN abs(\"{c}\") < 9.2e18 THEN CAST(\"{c}\" AS INTEGER) ELSE -1 END "
             "WHEN 'text' THEN CASE WHEN CAST(CAST(\"{c}\" AS INTEGER) AS TEXT) = \"{c}\" "
             "THEN CAST(\"{c}\" AS INTEGER) ELSE -1 END ELSE -1 END")
# A real column: numbers as they are, text only when it reads as a number, else NULL (-> NaN).
_REAL_EXPR = ("CASE typeof(\"{c}\") WHEN 'integer' THEN CAST(\"{c}\" AS REAL) WHEN 'real' THEN \"{c}\" "
              "WHEN 'text' THEN CASE WHEN trim(\"{c}\") GLOB '*[0-9]*' AND trim(\"{c}\") NOT GLOB '*[^0-9.eE+-]*' "
              "THEN CAST(trim(\"{c}\") AS REAL) END END")


class _Db:
    """Thin read helper: table/column inventory and NULL-safe SELECTs into DataFrames."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = _connect(path)
        try:
            names = [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
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
                expr = _REAL_EXPR.format(c=name) if present else "NULL"
            elif kind == "s":
                expr = f'"{name}"' if present else "NULL"
            else:
                expr = _INT_EXPR.format(c=name) if present else "-1"
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
        self.missing = 0        # references to ids STRING_IDS does not hold (read as no text)

    def text(self, ref) -> np.ndarray:
        ref = np.asarray(ref, dtype=np.int64)
        out = np.full(len(ref), None, dtype=object)
        if len(self.ids) and len(ref):
            pos = np.minimum(np.searchsorted(self.ids, ref), len(self.ids) - 1)
            ok = self.ids[pos] == ref
            out[ok] = self.vals[pos[ok]]
            self.missing += int(((ref > 0) & ~ok).sum())
        elif len(ref):
            self.missing += int((ref > 0).sum())
        return out

    def sym(self, ref) -> np.ndarray:
        return self.symbols.intern_many(self.text(ref))

    def ids_of(self, names) -> dict[str, int]:
        hit = pd.Series(self.vals, dtype=object).isin(list(names)).to_numpy(bool)
        return {str(v): int(i) for i, v in zip(self.ids[hit], self.vals[hit])}


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


# ----------------------------------------------------------------------------- tables
def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray, fill=-1) -> np.ndarray:
    """values[k] for each query key k (first occurrence), ``fill`` when absent."""
    idx = pd.Index(keys)
    if not idx.is_unique:
        first = ~idx.duplicated()
        idx, values = idx[first], values[first]
    pos = idx.get_indexer(query)
    out = np.where(pos >= 0, values[np.maximum(pos, 0)] if len(values) else fill, fill)
    return out


def _letter_share(texts: np.ndarray) -> float:
    vals = [v for v in pd.unique(pd.Series(texts, dtype=object).dropna()) if v]
    return sum(bool(re.search(r"[A-Za-z]", v)) for v in vals) / len(vals) if vals else 0.0


def _comm_type(name: str) -> str:
    """'hcom_allReduce_' / 'hcom_allReduce__586_0_1' -> 'allreduce' (text-export naming)."""
    parts = name.lower().split("_")
    return parts[1] if parts[0] == "hcom" and len(parts) > 1 else parts[0]


class _Reader:
    """Builds every table of one export; one instance per load."""

    def __init__(self, db: _Db, path: Path, root: str, framework: str, progress) -> None:
        self.db, self.path = db, path
        self.symbols = SymbolTable()
        self.s = _Strings(db, self.symbols)
        fmt = "mindspore-db" if framework == "MindSpore" else "ascend-db"
        self.meta = ProfileMeta(device="NPU", framework=framework, format=fmt, path=str(root),
                                files=[str(path)])
        self.progress = progress or (lambda _f: None)
        self.t: dict[str, pd.DataFrame] = {}
        self.launch_cid = np.zeros(0, np.int64)     # CANN connection id -> ops row
        self.launch_row = np.zeros(0, np.int64)
        self.op_start = np.zeros(0, np.int64)

    def run(self) -> Profile:
        task = self.db.select("TASK", {
            "start": "startNs", "end": "endNs", "dev": "deviceId", "cid": "connectionId",
            "g": "globalTaskId", "type": "taskType", "ctx": "contextId", "stream": "streamId",
            "task": "taskId"})
        n_task = 0 if task is None else len(task)
        self.task = self._timed(task, "TASK")
        self._steps()
        self.progress(0.05)
        self._api()
        self.progress(0.4)
        self._kernels()
        if n_task and not len(self.t["kernels"]):
            raise LoadError(str(self.path), f"TASK holds {n_task:,} device task row(s) but none could be loaded "
                                            f"({'; '.join(self.meta.warnings) or 'none is readable'})")
        if not n_task and not len(self.t.get("ops", ())):
            raise LoadError(str(self.path), "no events: the TASK and PYTORCH_API tables are empty")
        self.progress(0.65)
        self._comm()
        self.progress(0.8)
        self._memory()
        self._overlap()
        self._meta()
        if self.s.missing:
            self.meta.warnings.append(f"STRING_IDS: {self.s.missing:,} reference(s) to a string id it does not hold "
                                      "(names, types, shapes ...) were read as no text")
        self.progress(1.0)
        return Profile(self.symbols, self.meta, self.t)

    def _timed(self, df: pd.DataFrame | None, table: str, cols: tuple = ("start", "end"),
                what: str = "startNs/endNs") -> pd.DataFrame | None:
        """Rows whose times (``cols``) are readable (the others are skipped, with a warning); a
        row ending before it starts gets a zero duration (warned too)."""
        if df is None or not len(df):
            return df
        bad = np.zeros(len(df), bool)
        for c in cols:
            bad |= (df[c] < 0).to_numpy()
        if bad.any():
            self.meta.warnings.append(f"{table}: {int(bad.sum()):,} row(s) without a readable {what} "
                                      "were skipped")
            df = df[~bad].reset_index(drop=True)
        if "end" not in cols:
            return df
        neg = (df["end"] < df["start"]).to_numpy()
        if neg.any():
            self.meta.warnings.append(f"{table}: {int(neg.sum()):,} row(s) ending before they start were given "
                                      "a zero duration")
            df = df.assign(end=np.where(neg, df["start"], df["end"]))
        return df

    # -- steps
    def _steps(self) -> None:
        df = self._timed(self.db.select("STEP_TIME", {"step": "id", "start": "startNs", "end": "endNs"}),
                         "STEP_TIME")
        df = df.sort_values("start", kind="stable") if df is not None else None
        self.steps = df
        if df is not None:
            self.t["steps"] = make_table("steps", step=df["step"], start_ns=df["start"], end_ns=df["end"])

    def _step_of(self, ts: np.ndarray) -> np.ndarray:
        if self.steps is None or not len(self.steps):
            return np.full(len(ts), -1, np.int64)
        st, en = self.steps["start"].to_numpy(np.int64), self.steps["end"].to_numpy(np.int64)
        i = np.maximum(np.searchsorted(st, ts, side="right") - 1, 0)
        ok = (ts >= st[i]) & (ts <= en[i])
        return np.where(ok, self.steps["step"].to_numpy(np.int64)[i], -1)

    # -- PYTORCH_API: ops, pyfuncs, fwdbwd, launch map
    def _api(self) -> None:
        api = self.db.select("PYTORCH_API", {
            "start": "startNs", "end": "endNs", "gtid": "globalTid", "link": "connectionId",
            "name": "name", "seq": "sequenceNumber", "fwd": "fwdThreadId", "shapes": "inputShapes",
            "dtypes": "inputDtypes", "chain": "callchainId", "type": "type"})
        api = self._timed(api, "PYTORCH_API")
        if api is None or not len(api):
            return
        types = {v: k for k, v in _enum(self.db, "ENUM_API_TYPE").items()} or API_TYPE_IDS
        typ = api["type"].to_numpy(np.int64)
        unknown = int((~np.isin(typ, list(types.values()))).sum())
        if unknown:
            self.meta.warnings.append(f"PYTORCH_API: {unknown:,} row(s) with a type that is not in ENUM_API_TYPE "
                                      "(not op/queue/trace/...) were skipped")
        start, end = api["start"].to_numpy(np.int64), api["end"].to_numpy(np.int64)
        gtid = api["gtid"].to_numpy(np.int64)
        pid, tid = gtid >> 32, gtid & 0xFFFFFFFF
        is_op = typ == types.get("op", -2)
        sel = np.flatnonzero(is_op | (typ == types.get("queue", -2)))
        op_kind = is_op[sel]
        names = self.s.text(api["name"].to_numpy()[sel])
        cat = np.where(op_kind, "cpu_op", np.where(
            pd.Series(names, dtype=object).fillna("").str.startswith("Enqueue").to_numpy(bool),
            "enqueue", "dequeue"))
        s_start, s_end, s_tid = start[sel], end[sel], tid[sel]
        self.op_start = s_start
        corr, fwdbwd, bwd_tid = self._connections(api["link"].to_numpy(np.int64)[sel], op_kind, s_start, s_tid)
        if bwd_tid is None:     # no fwd->bwd flows: autograd nodes carry their forward thread id
            fwd = api["fwd"].to_numpy(np.int64)[sel]
            cand = s_tid[op_kind & (fwd > 0)]
            bwd_tid = int(pd.Series(cand).mode().iat[0]) if len(cand) else None
        self.meta.bwd_tid = bwd_tid
        shapes = self.s.text(api["shapes"].to_numpy()[sel])
        dtypes = self.s.text(api["dtypes"].to_numpy()[sel])
        if _letter_share(shapes) > 0.5 and _letter_share(dtypes) < 0.5:
            shapes, dtypes = dtypes, shapes     # torch_npu writes the two columns swapped
            self.meta.warnings.append("PYTORCH_API inputShapes/inputDtypes hold each other's data; swapped back")
        parent, depth = nest(s_start, s_end, s_tid)
        self.t["ops"] = make_table(
            "ops", name=self.symbols.intern_many(names), cat=self.symbols.intern_many(cat),
            start_ns=s_start, dur_ns=s_end - s_start, pid=pid[sel], tid=s_tid, parent=parent,
            depth=depth, is_backward=(s_tid == bwd_tid) if bwd_tid is not None else None,
            input_shapes=self.symbols.intern_many(shapes), input_types=self.symbols.intern_many(dtypes),
            call_stack=self._call_stacks(api["chain"].to_numpy(np.int64)[sel]), corr=corr,
            seq=api["seq"].to_numpy(np.int64)[sel])
        if fwdbwd is not None:
            self.t["fwdbwd"] = make_table("fwdbwd", start_ns=s_start[fwdbwd[0]], start_pid=pid[sel][fwdbwd[0]],
                                          start_tid=s_tid[fwdbwd[0]], end_ns=s_start[fwdbwd[1]],
                                          end_pid=pid[sel][fwdbwd[1]], end_tid=s_tid[fwdbwd[1]])
        tr = np.flatnonzero(typ == types.get("trace", -2))
        if len(tr):
            pnames = self.s.text(api["name"].to_numpy()[tr])
            p_parent, p_depth = nest(start[tr], end[tr], tid[tr])
            self.t["pyfuncs"] = make_table(
                "pyfuncs", name=self.symbols.intern_many(pnames), start_ns=start[tr], dur_ns=end[tr] - start[tr],
                pid=pid[tr], tid=tid[tr], parent=p_parent, depth=p_depth,
                is_module=pd.Series(pnames, dtype=object).fillna("").str.startswith("nn.Module:").to_numpy(bool))

    def _connections(self, link, op_kind, start, tid):
        """ops.corr, fwd->bwd row pairs and bwd tid from CONNECTION_IDS; sets the launch map."""
        n = len(link)
        corr = np.full(n, -1, np.int64)
        ci = self.db.select("CONNECTION_IDS", {"id": "id", "cid": "connectionId"})
        if ci is None or not len(ci):
            return corr, None, None
        ci = ci.drop_duplicates()          # a repeated row must not break the "exactly two ops" rule
        pairs = pd.DataFrame({"row": np.arange(n), "id": link}).merge(ci, on="id")
        dev = [self.task["cid"].to_numpy(np.int64)]
        co = self.db.select("COMMUNICATION_OP", {"cid": "connectionId"})
        if co is not None:
            dev.append(co["cid"].to_numpy(np.int64))
        pairs["dev"] = np.isin(pairs["cid"].to_numpy(), np.concatenate(dev))
        pairs["op"] = op_kind[pairs["row"].to_numpy()]
        tagged = pairs[pairs["dev"] | ~pairs["op"]].groupby("row")["cid"].min()   # launch or queue id
        corr[tagged.index.to_numpy()] = tagged.to_numpy()
        launch = pairs[pairs["dev"] & pairs["op"]].drop_duplicates("cid")
        self.launch_cid, self.launch_row = launch["cid"].to_numpy(np.int64), launch["row"].to_numpy(np.int64)
        # fwd->bwd: a non-device connection id shared by exactly two torch ops (as the reference)
        fb = pairs[~pairs["dev"] & pairs["op"]]
        fb = fb[fb.groupby("cid")["row"].transform("size") == 2].copy()
        if not len(fb):
            return corr, None, None
        fb["start"] = start[fb["row"].to_numpy()]
        g = fb.sort_values(["cid", "start"], kind="stable").groupby("cid")["row"]
        s_rows, e_rows = g.first().to_numpy(), g.last().to_numpy()
        o = np.argsort(start[s_rows], kind="stable")
        s_rows, e_rows = s_rows[o], e_rows[o]
        bwd_tid = int(tid[e_rows[np.argmax(start[e_rows])]])   # the last flow end, as the reference
        return corr, (s_rows, e_rows), bwd_tid

    def _call_stacks(self, chain: np.ndarray) -> np.ndarray | None:
        cc = self.db.select("PYTORCH_CALLCHAINS", {"id": "id", "stack": "stack", "depth": "stackDepth"})
        if cc is None or not len(cc) or not (chain >= 0).any():
            return None
        cc = cc[cc["id"].isin(np.unique(chain[chain >= 0]))].sort_values(["id", "depth"], kind="stable")
        cc["frame"] = pd.Series(self.s.text(cc["stack"].to_numpy()), index=cc.index, dtype=object).fillna("")
        joined = cc.groupby("id", sort=True)["frame"].agg(lambda f: ";\n".join(x for x in f if x))
        syms = self.symbols.intern_many(joined.to_numpy(object))
        return _lookup(joined.index.to_numpy(np.int64), syms, chain, 0).astype(np.int32)

    # -- TASK (+ COMPUTE_TASK_INFO, TASK_PMU_INFO) -> kernels
    def _containers(self, tk: pd.DataFrame) -> np.ndarray:
        """TASK rows without a subtask context that enclose subtasks of the same launch."""
        key = ["dev", "stream", "task", "cid"]
        has_ctx = ~tk["ctx"].isin(NO_CONTEXT)
        par = tk.loc[~has_ctx, key + ["start", "end"]].reset_index()
        m = tk.loc[has_ctx, key + ["start", "end"]].merge(par, on=key, suffixes=("", "_p"))
        m = m[(m["start"] >= m["start_p"]) & (m["end"] <= m["end_p"])]
        out = np.zeros(len(tk), bool)
        out[np.unique(m["index"].to_numpy())] = True
        return out

    def _kernels(self) -> None:
        drop = self._containers(self.task)
        tk = self.task[~drop].reset_index(drop=True)
        if drop.any():
            self.meta.warnings.append(f"{int(drop.sum())} TASK container rows (HCCL/MIX wrappers of "
                                      "subtasks) left out of kernels, as in the text export")
        g, start = tk["g"].to_numpy(np.int64), tk["start"].to_numpy(np.int64)
        tt = self.s.text(tk["type"].to_numpy())
        cti = self.db.select("COMPUTE_TASK_INFO", {"g": "globalTaskId", "name": "name", "op": "opType",
                                                   "core": "taskType", "sh": "inputShapes",
                                                   "dt": "inputDataTypes", "fmt": "inputFormats"})
        cols: dict = {}
        pos = np.full(len(tk), -1)
        if cti is not None and len(cti):
            cti = cti.drop_duplicates("g")
            pos = pd.Index(cti["g"]).get_indexer(g)
        detail = pos >= 0
        p = np.maximum(pos, 0)

        def det(col):
            return np.where(detail, cti[col].to_numpy(np.int64)[p], -1) if detail.any() else np.full(len(tk), -1)
        names = np.where(detail, self.s.text(det("name")), tt)
        for out, col in (("type", "op"), ("accel_core", "core"), ("input_shapes", "sh"),
                         ("input_dtypes", "dt"), ("input_formats", "fmt")):
            cols[out] = self.s.sym(det(col))
        cols.update(self._pmu(g))
        self.meta.has_pmu = any(np.isfinite(v).any() for v in cols.values() if v.dtype.kind == "f")
        ctask = self.db.select("COMMUNICATION_TASK_INFO", {"g": "globalTaskId"})
        is_comm = np.isin(g, ctask["g"].to_numpy(np.int64)) if ctask is not None else np.zeros(len(tk), bool)
        up = pd.Series(tt, dtype=object).fillna("").str.upper()
        kind = np.full(len(tk), KIND_OTHER, np.int8)
        kind[up.str.contains("SDMA|MEMCPY|DMA").to_numpy(bool)] = KIND_MEMCPY
        kind[up.isin(COMPUTE_TASK_TYPES).to_numpy(bool) | detail] = KIND_COMPUTE
        kind[is_comm] = KIND_COMM
        cid = tk["cid"].to_numpy(np.int64)
        launch = np.where(is_comm, -1, _lookup(self.launch_cid, self.launch_row, cid))
        flow = np.where(launch >= 0, self.op_start[np.maximum(launch, 0)] if len(self.op_start) else -1, -1)
        self.t["kernels"] = make_table(
            "kernels", name=self.symbols.intern_many(names), task_type=self.symbols.intern_many(tt), kind=kind,
            stream=tk["stream"], device=tk["dev"], start_ns=start, dur_ns=tk["end"].to_numpy(np.int64) - start,
            step=self._step_of(start), task_id=tk["task"], corr=cid, launch_op=launch, flow_start_ns=flow,
            detail=detail, **cols)
        comp = tk["stream"][kind == KIND_COMPUTE]
        self.meta.compute_stream = int(comp.mode().iat[0]) if len(comp) else None

    def _pmu(self, g: np.ndarray) -> dict[str, np.ndarray]:
        if not self.db.has("TASK_PMU_INFO"):
            return {}
        ids = self.s.ids_of({n for names in PMU_COLUMNS.values() for n in names})
        if not ids:
            return {}
        pm = self.db.select("TASK_PMU_INFO", {"g": "globalTaskId", "name": "name", "v": "value:f"},
                            f"WHERE name IN ({','.join(str(i) for i in ids.values())})")
        out = {}
        for col, names in PMU_COLUMNS.items():
            for nm in names:
                sub = pm[pm["name"] == ids.get(nm, -2)]
                if len(sub):
                    scale = 1.0 if col.endswith("_ratio") else 1000.0       # times are ns, ratios 0..1
                    out[col] = _lookup(sub["g"].to_numpy(np.int64), sub["v"].to_numpy(np.float64) / scale,
                                       g, np.nan)
                    break
        return out

    # -- communication
    def _comm(self) -> None:
        co = self.db.select("COMMUNICATION_OP", {"name": "opName", "start": "startNs", "end": "endNs",
                                                 "cid": "connectionId", "grp": "groupName", "opid": "opId",
                                                 "type": "opType", "wait": "waitNs"})
        co = self._timed(co, "COMMUNICATION_OP")
        if co is not None and len(co):
            names = self.s.text(co["name"].to_numpy())
            raw = pd.Series(self.s.text(co["type"].to_numpy()), dtype=object).fillna(pd.Series(names, dtype=object))
            op_type = raw.fillna("").map(lambda v: _comm_type(v) if v else "").to_numpy(object)
            start = co["start"].to_numpy(np.int64)
            self.t["comm_ops"] = make_table(
                "comm_ops", name=self.symbols.intern_many(names), op_type=self.symbols.intern_many(op_type),
                group=self.s.sym(co["grp"]), start_ns=start, dur_ns=co["end"].to_numpy(np.int64) - start,
                op_id=co["opid"], launch_op=_lookup(self.launch_cid, self.launch_row, co["cid"].to_numpy(np.int64)),
                wait_ns=co["wait"])
        ct = self.db.select("COMMUNICATION_TASK_INFO", {
            "g": "globalTaskId", "tt": "taskType", "plane": "planeId", "grp": "groupName", "opid": "opId",
            "size": "size", "tr": "transportType", "src": "srcRank", "dst": "dstRank"})
        if ct is None or not len(ct):
            return
        pos = pd.Index(self.task["g"]).get_indexer(ct["g"])
        ct, pos = ct[pos >= 0], pos[pos >= 0]          # untimed tasks cannot be placed
        start = self.task["start"].to_numpy(np.int64)[pos]
        transport = pd.Series(ct["tr"].to_numpy()).map(_enum(self.db, "ENUM_HCCL_TRANSPORT_TYPE"))
        op_ids = self.t["comm_ops"]["op_id"].to_numpy() if "comm_ops" in self.t else np.zeros(0, np.int64)
        self.t["comm_tasks"] = make_table(
            "comm_tasks", name=self.s.sym(ct["tt"]), group=self.s.sym(ct["grp"]), plane=ct["plane"],
            start_ns=start, dur_ns=self.task["end"].to_numpy(np.int64)[pos] - start,
            comm_op=_lookup(op_ids, np.arange(len(op_ids)), ct["opid"].to_numpy(np.int64)),
            task_type=self.s.sym(self.task["type"].to_numpy()[pos]),
            transport=self.symbols.intern_many(transport.to_numpy(object)), bytes=ct["size"],
            src_rank=ct["src"], dst_rank=ct["dst"])

    # -- memory, overlap
    def _memory(self) -> None:
        om = self._timed(self.db.select("OP_MEMORY", {"name": "name", "size": "size", "a": "allocationTime",
                                                      "r": "releaseTime", "dev": "deviceId"}),
                         "OP_MEMORY", ("a",), "allocationTime")
        if om is not None and len(om):
            names = self.s.text(om["name"].to_numpy())
            cann = self.db.select("NPU_OP_MEM", {"name": "operatorName"}) if MARK_CANN_MEMORY else None
            if cann is not None:
                mark = np.isin(om["name"].to_numpy(), cann["name"].to_numpy())
                names = np.where(mark, "cann::" + pd.Series(names, dtype=object).fillna(""), names)
            self.t["mem_allocs"] = make_table(
                "mem_allocs", name=self.symbols.intern_many(names), bytes=om["size"], alloc_ns=om["a"],
                release_ns=np.where(om["r"] > 0, om["r"], -1), device=om["dev"])
        mr = self._timed(self.db.select("MEMORY_RECORD", {
            "comp": "component", "ts": "timestamp", "a": "totalAllocated:f", "r": "totalReserved:f",
            "v": "totalActive:f", "dev": "deviceId"}), "MEMORY_RECORD", ("ts",), "timestamp")
        parts = []
        if mr is not None and len(mr):
            nan = int(mr[["a", "r", "v"]].isna().to_numpy().sum())
            if nan:
                self.meta.warnings.append(f"MEMORY_RECORD: {nan:,} totalAllocated/totalReserved/totalActive value(s) "
                                          "that are not numbers were read as unknown")
            parts.append(pd.DataFrame({"ts": mr["ts"], "comp": self.s.sym(mr["comp"]), "dev": mr["dev"],
                                       "a": mr["a"], "r": mr["r"], "v": mr["v"]}))
        if APP not in set(self.symbols.string(int(c)) for c in (parts[0]["comp"].unique() if parts else ())):
            app = self._app_memory()
            if app is not None:
                parts.append(app)
                self.meta.mem_components_added.append(APP)
        if parts:
            df = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
            self.t["mem_records"] = make_table(
                "mem_records", ts_ns=df["ts"], component=df["comp"].to_numpy(np.int32), device=df["dev"],
                allocated_bytes=df["a"], reserved_bytes=df["r"], active_bytes=df["v"])

    def _app_memory(self) -> pd.DataFrame | None:
        """The APP component (the whole process's device memory) from NPU_MEM rows of type
        ``app``, as the text export's memory_record.csv has it: reserved = ddr + hbm bytes (the
        text export's ``memory(KB)``, which msprof sums the same way), no allocated or active
        value.  Exports whose MEMORY_RECORD has no APP rows keep that series only here."""
        if not self.db.rows("NPU_MEM"):
            return None
        types = {v: k for k, v in self.s.ids_of(["app", "APP"]).items()}
        if not types:
            return None
        ids = ",".join(str(int(i)) for i in types)
        nm = self._timed(self.db.select("NPU_MEM", {"ts": "timestampNs", "ddr": "ddr:f", "hbm": "hbm:f",
                                                   "dev": "deviceId"}, f"WHERE type IN ({ids})"),
                         "NPU_MEM", ("ts",), "timestampNs")
        if nm is None or not len(nm):
            return None
        total = nm["ddr"].fillna(0) + nm["hbm"].fillna(0)
        total = total.where(nm["ddr"].notna() | nm["hbm"].notna())
        nan = np.full(len(nm), np.nan)
        return pd.DataFrame({"ts": nm["ts"], "comp": np.full(len(nm), self.symbols.intern(APP), np.int32),
                             "dev": nm["dev"], "a": nan, "r": total.to_numpy(float), "v": nan})

    def _overlap(self) -> None:
        ov = self.db.select("OVERLAP_ANALYSIS", {"start": "startNs", "end": "endNs", "type": "type"})
        if ov is None:
            self.meta.warnings.append("no OVERLAP_ANALYSIS table in this export: overlap intervals are empty")
            return
        ov = self._timed(ov, "OVERLAP_ANALYSIS")
        known = ((ov["type"] >= 0) & (ov["type"] < len(OVERLAP_KINDS))).to_numpy()   # 0..3 = OVERLAP_KINDS
        if not known.all():
            self.meta.warnings.append(f"OVERLAP_ANALYSIS: {int((~known).sum()):,} row(s) of an unknown type "
                                      "were skipped")
        ov = ov[known]
        self.t["overlap"] = make_table("overlap", kind=ov["type"], start_ns=ov["start"],
                                       dur_ns=ov["end"].to_numpy(np.int64) - ov["start"].to_numpy(np.int64))

    # -- meta
    def _meta(self) -> None:
        m = self.meta
        m.rank = _db_rank(self.db, self.path)
        info = self.db.select("NPU_INFO", {"name": "name:s"})
        if info is not None and len(info) and info["name"].iat[0]:
            m.device_name = str(info["name"].iat[0])
        out = self.path.parent
        prof = out.parent if out.name == "ASCEND_PROFILER_OUTPUT" else out
        for f in sorted(prof.glob("profiler_info*.json"))[:1]:
            data = self._json(f)
            if isinstance(data, dict):          # any part may be mis-typed: keep only what fits
                m.config = data.get("config") if isinstance(data.get("config"), dict) else {}
                exp = m.config.get("experimental_config")
                exp = exp if isinstance(exp, dict) else {}
                level = exp.get("_profiler_level") or exp.get("profiler_level")
                m.profiler_level = str(level) if level else None
                rid = data.get("rank_id")
                if m.rank is None and type(rid) is int and rid >= 0:
                    m.rank = rid
                elif type(rid) is int and rid >= 0 and rid != m.rank:
                    m.warnings.append(f"{f.name} says rank {rid} but {self.path.name} holds rank {m.rank}: the "
                                      "folder mixes files of different captures; the database is read")
        self._neighbours(out)
        meta_json = self._json(prof / "profiler_metadata.json")
        if isinstance(meta_json, dict) and isinstance(meta_json.get("parallel_group_info"), dict):
            m.pg_names = {str(k): str(v["group_name"]) for k, v in meta_json["parallel_group_info"].items()
                          if isinstance(v, dict) and v.get("group_name")}
        self._bandwidth(out / "analysis.db")
        if (out / "analysis.db").is_file():
            st = ascend_step_trace.from_analysis_db(str(out / "analysis.db"), m)
            if st is not None:
                self.t["step_trace"] = st

    def _neighbours(self, out: Path) -> None:
        """Warn when the output folder holds other exports this load ignores (mixed captures)."""
        others = sorted(f.name for prefix in DB_PREFIXES for f in out.glob(prefix + "*.db")
                        if f.is_file() and f.name != self.path.name)
        if (out / "trace_view.json").is_file():
            others.append("trace_view.json (a text export)")
        if others:
            self.meta.warnings.append(f"{out.name} also holds {', '.join(others)}; only {self.path.name} is read")

    def _json(self, f: Path):
        if not f.is_file():
            return None
        try:
            data = json.loads(read_text_regular(f))
        except (OSError, ValueError) as e:
            self.meta.warnings.append(f"{f}: unreadable JSON ({e}); ignored")
            return None
        self.meta.files.append(str(f))
        return data

    def _bandwidth(self, f: Path) -> None:
        """analysis.db CommAnalyzerBandwidth -> {"by_key": {step: {transport: {size_mb, time_ms}}}, "last_key"}."""
        if not f.is_file():
            return
        try:
            adb = _Db(f)
        except LoadError as e:
            self.meta.warnings.append(f"{e}; bandwidth skipped")
            return
        try:
            bw = adb.select("CommAnalyzerBandwidth", {
                "op": "hccl_op_name:s", "tr": "transport_type:s", "size": "transit_size:f",
                "time": "transit_time:f", "step": "step:s", "type": "type:s"})
        except (sqlite3.Error, pd.errors.DatabaseError) as e:
            self.meta.warnings.append(f"{f}: cannot read CommAnalyzerBandwidth ({e}); bandwidth skipped")
            bw = None
        finally:
            adb.close()
        self.meta.files.append(str(f))
        if bw is None or not len(bw):
            return
        bw = bw[bw["type"].isna() | (bw["type"] == "collective")]
        bw = bw.drop_duplicates(["step", "op", "tr"])     # size/time repeat on every packet-size row
        by_key: dict = {}
        for (step, tr), grp in bw.groupby(["step", "tr"], sort=False):
            by_key.setdefault(str(step), {})[str(tr)] = {"size_mb": float(grp["size"].sum()),
                                                         "time_ms": float(grp["time"].sum())}
        for v in by_key.values():
            for tr in ("RDMA", "SDMA"):
                v.setdefault(tr, {"size_mb": 0.0, "time_ms": 0.0})
        if by_key:
            self.meta.bandwidth = {"by_key": by_key, "last_key": list(by_key)[-1]}


# ----------------------------------------------------------------------------- load
def load(root: str, framework: str = "PyTorch", progress=None) -> Profile:
    path = find_db(root)
    if path.name.startswith("ascend_mindspore_profiler"):
        framework = "MindSpore"
    db = _Db(path)
    wal = path.with_name(path.name + "-wal")
    wal_note = (f"{wal.name} holds {wal.stat().st_size} bytes not yet checkpointed into the database; "
                "they are ignored (the export is read as an immutable, read-only file)"
                if wal.is_file() and wal.stat().st_size > 0 else "")
    try:
        for table, cols in REQUIRED.items():
            if not db.has(table):
                raise LoadError(str(path), f"not a profiler export: missing table {table}"
                                + (f" ({wal_note})" if wal_note else ""))
            missing = [c for c in cols if c not in db.cols[table]]
            if missing:
                raise LoadError(str(path), f"table {table} lacks column(s) {', '.join(missing)}")
        reader = _Reader(db, path, root, framework, progress)
        if wal_note:
            reader.meta.warnings.append(wal_note)
        return reader.run()
    except (sqlite3.Error, pd.errors.DatabaseError) as e:
        raise LoadError(str(path), f"cannot read SQLite database: {e}") from None
    finally:
        db.close()

