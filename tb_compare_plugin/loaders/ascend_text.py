"""Loader for the Ascend PyTorch / MindSpore profiler *text* export.

Owns: locating the files of a ``*_ascend_pt`` / ``*_ascend_ms`` folder (or its
``ASCEND_PROFILER_OUTPUT``), decoding ``trace_view.json`` (a top-level JSON array)
into columns with typed msgspec Structs, and assembling the :class:`Profile`:
kernels ("Ascend Hardware" tasks joined with kernel_details.csv), host ops
(cpu_op / enqueue / dequeue), python functions, fwd→bwd flows, HCCL ops and tasks,
Overlap Analysis, steps and memory.  CSV/JSON side files are read by
:mod:`ascend_csv`.  Process roles come from ``process_name`` metadata (spec a.5).
"""
from __future__ import annotations

import gc
import glob
import os
import re
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from ..model import (KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_OTHER, OVERLAP_KINDS, Profile,
                     ProfileMeta, SymbolTable, make_table, timeconv)
from ..model.intervals import nest
from . import ascend_csv as sidefiles
from .errors import LoadError

OUT_DIR = "ASCEND_PROFILER_OUTPUT"
TRACE = "trace_view.json"
SIDE_FILES = ("kernel_details.csv", "operator_memory.csv", "memory_record.csv", "communication.json",
              "step_trace_time.csv")
COMPUTE_TASKS = frozenset({"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "FFTS_PLUS",
                           "KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV", "KERNEL_AICPU"})
MEMCPY_TASKS = frozenset({"SDMA_SQE", "PCIE_DMA_SQE"})
HOST_OP_CATS = ("cpu_op", "enqueue", "dequeue")


class _Args(msgspec.Struct, gc=False):
    """The ``args`` keys the loader reads (everything else is skipped by the decoder)."""
    name: Any = None
    sort_index: Any = None
    task_type: Any = msgspec.field(default=None, name="Task Type")
    task_id: Any = msgspec.field(default=None, name="Task Id")
    stream_id: Any = msgspec.field(default=None, name="Stream Id")
    phys_stream_id: Any = msgspec.field(default=None, name="Physic Stream Id")
    connection_id: Any = None
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    input_type: Any = msgspec.field(default=None, name="Input type")
    call_stack: Any = msgspec.field(default=None, name="Call stack")
    seq: Any = msgspec.field(default=None, name="Sequence number")
    py_id: Any = msgspec.field(default=None, name="Python id")
    py_parent: Any = msgspec.field(default=None, name="Python parent id")
    correlation_id: Any = None
    hccl_task_type: Any = msgspec.field(default=None, name="task type")
    transport: Any = msgspec.field(default=None, name="transport type")
    size: Any = msgspec.field(default=None, name="size(Byte)")
    src_rank: Any = msgspec.field(default=None, name="src rank")
    dst_rank: Any = msgspec.field(default=None, name="dst rank")


class _Ev(msgspec.Struct, gc=False):
    ph: Any = None
    name: Any = None
    cat: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    id: Any = None
    args: _Args | None = None


_DECODER = msgspec.json.Decoder(list[_Ev])
_NOARGS = _Args()


# --------------------------------------------------------------------------------------------- files

def _locate(root: str) -> tuple[str, list[str], bool]:
    """(output dir, dirs to search for profiler_info/metadata, trace_only)."""
    root = os.path.abspath(root)
    if os.path.isfile(root):
        return os.path.dirname(root), [], True
    if os.path.isdir(os.path.join(root, OUT_DIR)):
        return os.path.join(root, OUT_DIR), [root], False
    if os.path.basename(os.path.normpath(root)) == OUT_DIR:
        return root, [root, os.path.dirname(os.path.normpath(root))], False
    return root, [root], False


def _info_file(dirs: list[str]) -> str | None:
    for d in dirs:
        found = sorted(glob.glob(os.path.join(d, "profiler_info*.json")))
        if found:
            return found[0]
    return None


def _metadata_file(dirs: list[str]) -> str | None:
    for d in dirs:
        p = os.path.join(d, "profiler_metadata.json")
        if os.path.isfile(p):
            return p
    return None


def _rank_from_name(path: str | None) -> int | None:
    m = re.search(r"profiler_info_(\d+)\.json$", path or "")
    return int(m.group(1)) if m else None


def _level_of(info: object) -> str | None:
    if isinstance(info, dict):
        lvl = ((info.get("config") or {}).get("experimental_config") or {}).get("_profiler_level")
        return str(lvl) if lvl else None
    return None


def _is_ms(root: str) -> bool:
    root = os.path.normpath(os.path.abspath(root))
    base = os.path.basename(root)
    if base == OUT_DIR:
        base = os.path.basename(os.path.dirname(root))
    return base.endswith("_ascend_ms")


def peek(root: str) -> dict:
    """Cheap discovery facts (no trace parse): rank, level, known files, what data exists."""
    out, dirs, trace_only = _locate(root)
    trace = root if trace_only else os.path.join(out, TRACE)
    info_path, meta_path = _info_file(dirs), _metadata_file(dirs)
    files = [p for p in [trace] + [os.path.join(out, f) for f in SIDE_FILES] if os.path.isfile(p)]
    files += [p for p in (info_path, meta_path) if p]
    info, error = None, None
    if info_path:
        try:
            info = sidefiles.read_json(info_path)
        except LoadError as exc:
            error = str(exc)
    rank = info.get("rank_id") if isinstance(info, dict) else None
    rank = int(rank) if isinstance(rank, (int, str)) and str(rank).lstrip("-").isdigit() else None
    if rank is None:
        rank = _rank_from_name(info_path)
    common = ((info or {}).get("config") or {}).get("common_config") or {} if isinstance(info, dict) else {}
    has_file = lambda f: os.path.isfile(os.path.join(out, f)) and not trace_only  # noqa: E731
    if not os.path.isfile(trace):
        error = f"{trace}: no {TRACE} (not an Ascend text export, or it was not parsed/exported)"
    return {
        "rank": rank,
        "profiler_level": _level_of(info),
        "files": files,
        "has": {"kernels": has_file("kernel_details.csv"),
                "communication": has_file("communication.json"),
                "memory": has_file("operator_memory.csv") or has_file("memory_record.csv"),
                "modules": bool(common.get("with_stack") or common.get("with_modules"))},
        "error": error,
    }


# --------------------------------------------------------------------------------------------- decoding

def _decode(path: str) -> list[_Ev]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise LoadError(path, f"no {TRACE} here: the folder is not an Ascend text export "
                              "(or the profile was not parsed/exported)") from None
    except OSError as exc:
        raise LoadError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if not data.strip():
        raise LoadError(path, "the file is empty")
    try:
        return _DECODER.decode(data)
    except UnicodeDecodeError as exc:
        raise LoadError(path, f"not valid UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except msgspec.ValidationError as exc:
        msg = str(exc)
        if msg.startswith("Expected `array`"):
            raise LoadError(path, "the top level is not a JSON array of trace events "
                                  f"({msg.split(' - ')[0]})") from None
        raise LoadError(path, f"a trace event has an unexpected layout ({msg})") from None
    except msgspec.DecodeError as exc:
        msg = str(exc)
        if "truncated" in msg:
            raise LoadError(path, "the JSON ends early (the file looks truncated)") from None
        raise LoadError(path, f"not valid JSON ({msg})") from None


def _ints(values: list, default: int = -1) -> np.ndarray:
    """Python values -> int64; None/junk -> default, non-numeric strings -> stable negative ids."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        pass
    s = pd.Series(values, dtype=object)
    num = pd.to_numeric(s, errors="coerce")
    out = np.where(num.notna(), num.fillna(0), default).astype(np.int64)
    strs = s.map(lambda v: isinstance(v, str) and v.strip() != "" and v.strip().upper() != "N/A")
    odd = (num.isna() & strs).to_numpy()
    if odd.any():
        codes, _ = pd.factorize(s[odd])
        out[odd] = -(codes.astype(np.int64) + 2)
    return out


def _floats(values: list) -> np.ndarray:
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(np.float64)


def _ts_ns(values: list) -> np.ndarray:
    """Trace ``ts`` values -> exact int64 ns (-1 when unreadable).

    Fast path: every value a string of the same width with exactly 3 decimals, converted by
    digit arithmetic on a byte matrix; otherwise the exact per-value rules of timeconv.
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    first = values[0]
    if isinstance(first, str) and len(first) >= 5 and first[-4] == "." and len(first) <= 20:
        width = len(first)
        try:
            buf = ("\n".join(values) + "\n").encode("ascii")
        except (TypeError, UnicodeEncodeError):
            buf = b""
        if len(buf) == n * (width + 1):
            m = np.frombuffer(buf, dtype=np.uint8).reshape(n, width + 1)
            dot = width - 4
            if (m[:, dot] == 46).all() and (m[:, width] == 10).all():
                acc = np.zeros(n, dtype=np.int64)
                ok = True
                for c in range(width):
                    if c != dot:
                        col = m[:, c] - np.uint8(48)
                        if (col > 9).any():
                            ok = False
                            break
                        acc *= 10
                        acc += col
                if ok:
                    return acc
    return timeconv.us_values_to_ns(values)


def _dur_ns(values: list) -> np.ndarray:
    d = _floats(values) * 1000.0
    return np.where(np.isfinite(d), np.rint(d), 0).astype(np.int64)


def _intern(sym: SymbolTable, values) -> np.ndarray:
    try:
        return sym.intern_many(values)
    except TypeError:                      # unhashable values (lists) -> their text
        return sym.intern_many([v if v is None or isinstance(v, str) else str(v) for v in values])


def _group_ids(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    if len(pid) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.stack([pid, tid], axis=1), axis=0, return_inverse=True)[1].reshape(-1)


# --------------------------------------------------------------------------------------------- trace

class _Trace:
    """Columns decoded from trace_view.json, grouped by role (no per-event objects kept)."""

    def __init__(self, events: list[_Ev]) -> None:
        meta = [e for e in events if e.ph == "M"]
        self.proc: dict = {}
        self.thread_name: dict = {}
        self.thread_sort: dict = {}
        for e in meta:
            a = e.args if isinstance(e.args, _Args) else _NOARGS
            if e.name == "process_name":
                self.proc[e.pid] = a.name
            elif e.name == "thread_name":
                self.thread_name[(e.pid, e.tid)] = a.name
            elif e.name == "thread_sort_index":
                self.thread_sort[(e.pid, e.tid)] = a.sort_index
        role_of = {}
        for pid, pname in self.proc.items():
            role = {"Ascend Hardware": "hw", "HCCL": "hccl", "Communication": "hccl",
                    "Overlap Analysis": "ovl"}.get(pname)
            if role:
                role_of[pid] = role
        b: dict[str, list] = {k: [] for k in ("hw", "hccl", "ovl", "ops", "py", "npu_flow", "fwdbwd")}
        ops, py, npu_flow, fwdbwd = b["ops"], b["py"], b["npu_flow"], b["fwdbwd"]
        for e in events:
            ph = e.ph
            if ph == "X":
                r = role_of.get(e.pid)
                if r is not None:
                    b[r].append(e)
                else:
                    c = e.cat
                    if c == "cpu_op" or c == "enqueue" or c == "dequeue":
                        ops.append(e)
                    elif c == "python_function":
                        py.append(e)
            elif ph == "s" or ph == "f":
                c = e.cat
                if c == "async_npu":
                    npu_flow.append(e)
                elif c == "fwdbwd":
                    fwdbwd.append(e)
        self.b = {}
        self.bad_ts = 0
        for k, v in b.items():
            c = self._columns(k, v)
            ok = c["ts"] >= 0
            if not ok.all():
                self.bad_ts += int((~ok).sum())
                c = self._filter(c, ok)
            self.b[k] = c
        # metadata keyed by integer pid/tid, like the event columns
        conv = lambda k: tuple(int(_ints([x])[0]) for x in k)  # noqa: E731
        self.thread_name = {conv(k): v for k, v in self.thread_name.items()}
        self.thread_sort = {conv(k): v for k, v in self.thread_sort.items()}
        self.roles = {int(_ints([p])[0]): r for p, r in role_of.items()}

    @staticmethod
    def _columns(kind: str, evs: list[_Ev]) -> dict:
        c: dict = {"n": len(evs), "name": [e.name for e in evs], "pid": _ints([e.pid for e in evs]),
                   "tid": _ints([e.tid for e in evs]), "ts": _ts_ns([e.ts for e in evs])}
        if kind in ("npu_flow", "fwdbwd"):
            c["ph"] = [e.ph for e in evs]
            c["id"] = [e.id for e in evs]
            return c
        c["dur"] = _dur_ns([e.dur for e in evs])
        a = [e.args if isinstance(e.args, _Args) else _NOARGS for e in evs]
        fields = {"hw": ("task_type", "task_id", "stream_id", "phys_stream_id", "connection_id"),
                  "ops": ("input_dims", "input_type", "call_stack", "seq", "correlation_id"),
                  "py": ("py_id", "py_parent"),
                  "hccl": ("hccl_task_type", "transport", "size", "src_rank", "dst_rank"),
                  "ovl": ()}[kind]
        if kind == "ops":
            c["cat"] = [e.cat for e in evs]
        for f in fields:
            c[f] = [getattr(x, f) for x in a]
        return c

    @staticmethod
    def _filter(c: dict, keep: np.ndarray) -> dict:
        """Drop rows (events with an unreadable ts) from a column dict."""
        idx = np.flatnonzero(keep)
        out = {"n": len(idx)}
        for k, v in c.items():
            if k == "n" or v is None:
                continue
            out[k] = v[idx] if isinstance(v, np.ndarray) else [v[i] for i in idx.tolist()]
        return out


def parse_trace(path: str) -> _Trace:
    was = gc.isenabled()
    gc.disable()
    try:
        return _Trace(_decode(path))
    finally:
        if was:
            gc.enable()



# --------------------------------------------------------------------------------------------- tables

def _flow_pairs(c: dict) -> pd.DataFrame:
    """s/f events of one flow category paired by id (first s and first f of each id)."""
    ids = pd.Series(c["id"], dtype=object).map(lambda v: v if v is None else str(v))
    df = pd.DataFrame({"key": pd.factorize(ids)[0], "ph": pd.Series(c["ph"], dtype=object),
                       "ts": c["ts"], "pid": c["pid"], "tid": c["tid"], "row": np.arange(c["n"])})
    df = df[df["key"] >= 0]
    s = df[df["ph"] == "s"].drop_duplicates("key")
    f = df[df["ph"] == "f"].drop_duplicates("key")
    return s.merge(f, on="key", suffixes=("_s", "_f")).sort_values("row_s", kind="stable")


def _nest_rows(start, end, pid, tid, rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nest the chosen rows per (pid, tid); parent as row numbers of the full table."""
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int16)
    if len(rows):
        p, d = nest(start[rows], end[rows], _group_ids(pid[rows], tid[rows]))
        parent[rows] = np.where(p >= 0, rows[np.maximum(p, 0)], -1)
        depth[rows] = d
    return parent, depth


def _host_tables(tr: _Trace, sym: SymbolTable, meta: ProfileMeta) -> dict:
    fb = _flow_pairs(tr.b["fwdbwd"])
    fc = tr.b["fwdbwd"]
    f_tids = fc["tid"][np.array([p == "f" for p in fc["ph"]], dtype=bool)] if fc["n"] else []
    meta.bwd_tid = int(f_tids[-1]) if len(f_tids) else None
    out = {"fwdbwd": make_table("fwdbwd", start_ns=fb["ts_s"], start_pid=fb["pid_s"], start_tid=fb["tid_s"],
                                end_ns=fb["ts_f"], end_pid=fb["pid_f"], end_tid=fb["tid_f"])}
    c = tr.b["ops"]
    n = c["n"]
    start, end = c["ts"], c["ts"] + c["dur"]
    cpu = np.flatnonzero(np.array([x == "cpu_op" for x in c["cat"]], dtype=bool))
    parent, depth = _nest_rows(start, end, c["pid"], c["tid"], cpu, n)
    out["ops"] = make_table(
        "ops", n, name=_intern(sym, c["name"]), cat=_intern(sym, c["cat"]), start_ns=start, dur_ns=c["dur"],
        pid=c["pid"], tid=c["tid"], parent=parent, depth=depth,
        is_backward=(c["tid"] == meta.bwd_tid) if meta.bwd_tid is not None else None,
        input_shapes=_intern(sym, c["input_dims"]), input_types=_intern(sym, c["input_type"]),
        call_stack=_intern(sym, c["call_stack"]), corr=_ints(c["correlation_id"]), seq=_ints(c["seq"]))
    p = tr.b["py"]
    rows = np.arange(p["n"])
    pparent, pdepth = _nest_rows(p["ts"], p["ts"] + p["dur"], p["pid"], p["tid"], rows, p["n"])
    names = _intern(sym, p["name"])
    mod_ids = sym.ids_matching(lambda s: s.startswith("nn.Module:"))
    out["pyfuncs"] = make_table(
        "pyfuncs", p["n"], name=names, start_ns=p["ts"], dur_ns=p["dur"], pid=p["pid"], tid=p["tid"],
        py_id=_ints(p["py_id"]), py_parent=_ints(p["py_parent"]), parent=pparent, depth=pdepth,
        is_module=np.isin(names, mod_ids))
    return out


def _kind_of(task_types: list, accel: np.ndarray) -> np.ndarray:
    kind = np.array([KIND_COMPUTE if t in COMPUTE_TASKS else KIND_MEMCPY if t in MEMCPY_TASKS else KIND_OTHER
                     for t in task_types], dtype=np.int8)
    by_core = np.array([KIND_COMPUTE if a in COMPUTE_TASKS else KIND_COMM if a == "HCCL" else KIND_OTHER
                        for a in accel], dtype=np.int8)
    unknown = np.array([t is None or t == "Other" for t in task_types], dtype=bool)
    return np.where(unknown & (by_core != KIND_OTHER), by_core, kind).astype(np.int8)


def _kernels(tr: _Trace, sym: SymbolTable, meta: ProfileMeta, out_dir: str | None) -> tuple[pd.DataFrame, np.ndarray]:
    """Ascend Hardware tasks + kernel_details.csv rows.  Also returns the trace pid per row (-1 CSV-only)."""
    h = tr.b["hw"]
    nt = h["n"]
    sid, psid = _ints(h["stream_id"]), _ints(h["phys_stream_id"])
    stream = np.where(sid >= 0, sid, np.where(psid >= 0, psid, h["tid"]))
    kd_path = os.path.join(out_dir, "kernel_details.csv") if out_dir else None
    if kd_path and os.path.isfile(kd_path):
        kd, info = sidefiles.read_kernel_details(kd_path, meta.warnings)
        meta.files.append(kd_path)
        meta.has_pmu = info["has_pmu"]
    else:
        kd = None
    if kd is None or not len(kd["start_ns"]):
        match = np.full(nt, -1, dtype=np.int64)
        extra = np.zeros(0, dtype=np.int64)
        kd = kd or {}
    else:
        match = sidefiles.match_rows(h["name"], h["ts"], kd["name"], kd["start_ns"])
        used = np.zeros(len(kd["start_ns"]), dtype=bool)
        used[match[match >= 0]] = True
        extra = np.flatnonzero(~used)
        got = match >= 0
        csv_dur = kd["dur_us"][match[got]] * 1000.0
        off = np.abs(h["dur"][got] - np.where(np.isfinite(csv_dur), np.rint(csv_dur), h["dur"][got]))
        if (off > 1000).any():       # the CSV keeps 3 decimals; tolerate sub-µs rounding
            meta.warnings.append(f"kernel_details.csv: {int((off > 1000).sum())} joined row(s) whose "
                                 "Duration(us) differs from the trace by more than 1 µs (trace kept)")
    ne = len(extra)
    n = nt + ne
    sel = np.concatenate([match, extra])              # CSV row per output row, -1 none

    def csv_col(key: str, fill):
        if key not in kd:
            return np.full(n, fill, dtype=object if fill is None else type(fill))
        col = np.asarray(kd[key])
        res = np.full(n, fill, dtype=col.dtype if fill is not None else object)
        res[sel >= 0] = col[sel[sel >= 0]]
        return res

    accel = csv_col("accel_core", None)
    ttypes = list(h["task_type"]) + [None] * ne
    kind = _kind_of(ttypes, accel)
    kd_dur = csv_col("dur_us", np.nan)[nt:] * 1000.0
    task_id = _ints(h["task_id"])
    csv_tid = csv_col("task_id", -1)
    pmu = {k: csv_col(k, np.nan) for k in sidefiles.PMU_COLUMNS.values()}
    table = make_table(
        "kernels", n,
        name=np.concatenate([_intern(sym, h["name"]), _intern(sym, csv_col("name", None)[nt:])]),
        type=_intern(sym, csv_col("type", None)), task_type=_intern(sym, ttypes), accel_core=_intern(sym, accel),
        kind=kind,
        stream=np.concatenate([stream, csv_col("stream", -1)[nt:]]),
        start_ns=np.concatenate([h["ts"], csv_col("start_ns", -1)[nt:]]),
        dur_ns=np.concatenate([h["dur"], np.where(np.isfinite(kd_dur), np.rint(kd_dur), 0).astype(np.int64)]),
        step=csv_col("step", -1),
        task_id=np.where(np.concatenate([task_id, np.full(ne, -1)]) >= 0,
                         np.concatenate([task_id, np.full(ne, -1)]), csv_tid),
        corr=np.concatenate([_ints(h["connection_id"]), np.full(ne, -1)]),
        input_shapes=_intern(sym, csv_col("input_shapes", None)),
        input_dtypes=_intern(sym, csv_col("input_dtypes", None)),
        input_formats=_intern(sym, csv_col("input_formats", None)),
        detail=sel >= 0, **pmu)
    trace_key = np.stack([np.concatenate([h["pid"], np.full(ne, -1)]),
                          np.concatenate([h["tid"], np.full(ne, -1)])], axis=1)
    return table, trace_key


def _op_type(name: str) -> str:
    t = name.lower().split("_")
    return t[1] if t[0] == "hcom" and len(t) > 1 else t[0]


def _comm_tables(tr: _Trace, sym: SymbolTable) -> tuple[pd.DataFrame, pd.DataFrame, tuple]:
    c = tr.b["hccl"]
    n = c["n"]
    # thread -> (is group thread, group name, group key): planes belong to the nearest preceding
    # "Communication" thread in thread_sort_index order (spec a.5)
    info: dict = {}
    for pid in sorted({p for p, r in tr.roles.items() if r == "hccl"}):
        threads = {t for (p, t) in tr.thread_name if p == pid} | set(c["tid"][c["pid"] == pid].tolist())

        def order(t, pid=pid):
            s = tr.thread_sort.get((pid, t))
            return (s if isinstance(s, (int, float)) else t, t)
        cur = ("", -1)
        for t in sorted(threads, key=order):
            name = str(tr.thread_name.get((pid, t)) or "")
            if "Communication" in name:
                cur = (name, len(info))
                info[(pid, t)] = (True,) + cur
            else:
                info[(pid, t)] = (False,) + cur
    keys = list(zip(c["pid"].tolist(), c["tid"].tolist()))
    is_op = np.array([info.get(k, (False,))[0] for k in keys], dtype=bool)
    gname = [info.get(k, (False, "", -1))[1] for k in keys]
    gkey = np.array([info.get(k, (False, "", -1))[2] for k in keys], dtype=np.int64)
    gsym = _intern(sym, gname)
    names = _intern(sym, c["name"])
    o, t = np.flatnonzero(is_op), np.flatnonzero(~is_op)
    type_lut = {i: sym.intern(_op_type(sym.string(i))) for i in np.unique(names[o]).tolist()}
    comm_ops = make_table("comm_ops", len(o), name=names[o],
                          op_type=np.array([type_lut[i] for i in names[o].tolist()], dtype=np.int32),
                          group=gsym[o], start_ns=c["ts"][o], dur_ns=c["dur"][o])
    # task -> the op of the same group whose [start, end] holds the task start
    comm_op = np.full(len(t), -1, dtype=np.int64)
    ostart, oend, ogrp = c["ts"][o], c["ts"][o] + c["dur"][o], gkey[o]
    for g in np.unique(gkey[t]).tolist():
        if g < 0:
            continue
        orows = np.flatnonzero(ogrp == g)
        if not len(orows):
            continue
        orows = orows[np.argsort(ostart[orows], kind="stable")]
        trows = np.flatnonzero(gkey[t] == g)
        ts = c["ts"][t][trows]
        k = np.searchsorted(ostart[orows], ts, side="right") - 1
        ok = (k >= 0) & (ts <= oend[orows[np.maximum(k, 0)]])
        comm_op[trows[ok]] = orows[k[ok]]
    sub = lambda key: [c[key][i] for i in t.tolist()]  # noqa: E731
    comm_tasks = make_table("comm_tasks", len(t), name=names[t], group=gsym[t], plane=c["tid"][t],
                            start_ns=c["ts"][t], dur_ns=c["dur"][t], comm_op=comm_op,
                            task_type=_intern(sym, sub("hccl_task_type")), transport=_intern(sym, sub("transport")),
                            bytes=_ints(sub("size")), src_rank=_ints(sub("src_rank")), dst_rank=_ints(sub("dst_rank")))
    return comm_ops, comm_tasks, (c["pid"][o], c["tid"][o])


def _link(pairs: pd.DataFrame, ops: pd.DataFrame, cpu_cat: int, dev_pid, dev_tid, dev_start) -> tuple[np.ndarray, np.ndarray]:
    """async_npu flows -> (launch_op, flow_start_ns) per device row; each row linked once."""
    n = len(dev_start)
    launch, fstart = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    if not n or not len(pairs):
        return launch, fstart
    dev = pd.DataFrame({"pid_f": dev_pid, "tid_f": dev_tid, "ts_f": dev_start, "drow": np.arange(n)})
    dev = dev.drop_duplicates(["pid_f", "tid_f", "ts_f"])
    m = pairs.merge(dev, on=["pid_f", "tid_f", "ts_f"], how="inner").drop_duplicates("drow")
    cpu = ops.assign(orow=np.arange(len(ops)))
    cpu = cpu[cpu["cat"] == cpu_cat]
    cpu = cpu.sort_values("depth", ascending=False, kind="stable").drop_duplicates(["pid", "tid", "start_ns"])
    cpu = cpu.rename(columns={"pid": "pid_s", "tid": "tid_s", "start_ns": "ts_s"})[["pid_s", "tid_s", "ts_s", "orow"]]
    m = m.merge(cpu, on=["pid_s", "tid_s", "ts_s"], how="left")
    rows = m["drow"].to_numpy()
    fstart[rows] = m["ts_s"].to_numpy()
    launch[rows] = m["orow"].fillna(-1).to_numpy(dtype=np.int64)
    return launch, fstart


def _steps(ops: pd.DataFrame, kernels: pd.DataFrame, sym: SymbolTable) -> pd.DataFrame:
    pat = re.compile(r"ProfilerStep#(\d+)$")
    ids = sym.ids_matching(lambda s: pat.search(s) is not None)
    rows = ops[np.isin(ops["name"].to_numpy(), ids)]
    if len(rows):
        step = [int(pat.search(sym.string(i)).group(1)) for i in rows["name"].tolist()]
        return make_table("steps", len(rows), step=step, start_ns=rows["start_ns"],
                          end_ns=rows["start_ns"] + rows["dur_ns"])
    k = kernels[(kernels["step"] >= 0) & (kernels["start_ns"] >= 0)]
    if not len(k):
        return make_table("steps", 0)
    g = k.assign(end=k["start_ns"] + k["dur_ns"]).groupby("step", sort=True)
    return make_table("steps", g.ngroups, step=np.asarray(list(g.groups)), start_ns=g["start_ns"].min().to_numpy(),
                      end_ns=g["end"].max().to_numpy())


def _alloc_ops(ops: pd.DataFrame, sym: SymbolTable, names: np.ndarray, alloc_ns: np.ndarray) -> np.ndarray:
    """Innermost cpu_op of the main thread containing each allocation (cann:: rows: via their
    Dequeue -> Enqueue by correlation id, as the reference does; -1 when not found)."""
    cat = ops["cat"].to_numpy()
    cpu = ops[cat == sym.lookup("cpu_op")]
    if not len(cpu) or not len(alloc_ns):
        return np.full(len(alloc_ns), -1, dtype=np.int64)
    step_ids = sym.ids_matching(lambda s: s.startswith("ProfilerStep#"))
    steps = cpu[np.isin(cpu["name"].to_numpy(), step_ids)]
    main = (steps if len(steps) else cpu)["tid"].value_counts().index[0]
    t = alloc_ns.copy()
    deq, enq = ops[cat == sym.lookup("dequeue")], ops[cat == sym.lookup("enqueue")]
    cann = np.array([isinstance(x, str) and x.startswith("cann::") for x in names], dtype=bool)
    if cann.any() and len(deq) and len(enq):
        d = deq.sort_values("start_ns", kind="stable")
        k = np.searchsorted(d["start_ns"].to_numpy(), t[cann], side="right") - 1
        ok = (k >= 0) & (t[cann] <= (d["start_ns"] + d["dur_ns"]).to_numpy()[np.maximum(k, 0)])
        corr = np.where(ok, d["corr"].to_numpy()[np.maximum(k, 0)], -1)
        enq_at = enq.drop_duplicates("corr").set_index("corr")["start_ns"]
        t[cann] = pd.Series(corr).map(enq_at).fillna(-1).to_numpy(dtype=np.int64)
    mrows = np.flatnonzero((ops["tid"].to_numpy() == main) & (cat == sym.lookup("cpu_op")))
    pos_of = np.full(len(ops), -1, dtype=np.int64)
    pos_of[mrows] = np.arange(len(mrows))
    par = ops["parent"].to_numpy()[mrows]
    local = sidefiles.innermost_ops(ops["start_ns"].to_numpy()[mrows],
                                    (ops["start_ns"] + ops["dur_ns"]).to_numpy()[mrows],
                                    np.where(par >= 0, pos_of[np.maximum(par, 0)], -1), t)
    return np.where(local >= 0, mrows[np.maximum(local, 0)], -1)


def _memory(out_dir: str, sym: SymbolTable, meta: ProfileMeta, ops: pd.DataFrame) -> dict:
    tables = {}
    p = os.path.join(out_dir, "operator_memory.csv")
    if os.path.isfile(p):
        m = sidefiles.read_operator_memory(p, meta.warnings)
        meta.files.append(p)
        tables["mem_allocs"] = make_table(
            "mem_allocs", len(m["bytes"]), name=_intern(sym, m["name"]), bytes=m["bytes"], alloc_ns=m["alloc_ns"],
            release_ns=m["release_ns"], device=m["device"], op=_alloc_ops(ops, sym, m["name"], m["alloc_ns"]))
    p = os.path.join(out_dir, "memory_record.csv")
    if os.path.isfile(p):
        r = sidefiles.read_memory_record(p, meta.warnings)
        meta.files.append(p)
        tables["mem_records"] = make_table(
            "mem_records", len(r["ts_ns"]), ts_ns=r["ts_ns"], component=_intern(sym, r["component"]),
            device=r["device"], allocated_bytes=r["allocated_bytes"], reserved_bytes=r["reserved_bytes"],
            active_bytes=r["active_bytes"])
    return tables


def load(root: str, framework: str = "PyTorch", progress=None) -> Profile:
    """Parse an Ascend text export folder (``*_ascend_pt`` / ``*_ascend_ms``, its
    ASCEND_PROFILER_OUTPUT, or a bare trace_view.json) into a Profile."""
    tick = progress or (lambda _f: None)
    out_dir, dirs, trace_only = _locate(root)
    trace_path = os.path.abspath(root) if trace_only else os.path.join(out_dir, TRACE)
    if _is_ms(root):
        framework = "MindSpore"
    meta = ProfileMeta(device="NPU", framework=framework, path=os.path.abspath(root),
                       format="mindspore-text" if framework == "MindSpore" else "ascend-text")
    sym = SymbolTable()
    info_path, md_path = _info_file(dirs), _metadata_file(dirs)
    if info_path:
        info = sidefiles.read_json(info_path)
        meta.files.append(info_path)
        if isinstance(info, dict):
            meta.config = info.get("config") if isinstance(info.get("config"), dict) else {}
            meta.profiler_level = _level_of(info)
            rid = info.get("rank_id")
            meta.rank = int(rid) if isinstance(rid, int) else _rank_from_name(info_path)
            meta.device_name = info.get("device_name") or None
        else:
            meta.rank = _rank_from_name(info_path)
    if md_path:
        md = sidefiles.read_json(md_path)
        meta.files.append(md_path)
        meta.pg_names = sidefiles.pg_names(md)
        if isinstance(md, dict) and not meta.device_name:
            meta.device_name = md.get("device_name") or md.get("device_type") or None
    tick(0.05)
    tr = parse_trace(trace_path)
    meta.files.insert(0, trace_path)
    if tr.bad_ts:
        meta.warnings.append(f"{TRACE}: {tr.bad_ts} event(s) with an unreadable 'ts' were skipped")
    tick(0.6)
    tables = _host_tables(tr, sym, meta)
    kernels, kkey = _kernels(tr, sym, meta, None if trace_only else out_dir)
    comm_ops, comm_tasks, op_keys = _comm_tables(tr, sym)
    pairs = _flow_pairs(tr.b["npu_flow"])
    cpu_cat = sym.lookup("cpu_op")
    kl, kf = _link(pairs, tables["ops"], cpu_cat, kkey[:, 0], kkey[:, 1], kernels["start_ns"].to_numpy())
    kernels["launch_op"], kernels["flow_start_ns"] = kl, kf
    comm_ops["launch_op"] = _link(pairs, tables["ops"], cpu_cat, *op_keys, comm_ops["start_ns"].to_numpy())[0]
    o = tr.b["ovl"]
    kind = np.array([OVERLAP_KINDS.index(x) if x in OVERLAP_KINDS else -1 for x in o["name"]], dtype=np.int8)
    keep = kind >= 0
    tables["overlap"] = make_table("overlap", int(keep.sum()), kind=kind[keep], start_ns=o["ts"][keep],
                                   dur_ns=o["dur"][keep])
    tables.update(kernels=kernels, comm_ops=comm_ops, comm_tasks=comm_tasks)
    tables["steps"] = _steps(tables["ops"], kernels, sym)
    comp = kernels.loc[kernels["kind"] == KIND_COMPUTE, "stream"]
    meta.compute_stream = int(comp.value_counts().index[0]) if len(comp) else None
    tick(0.8)
    if not trace_only:
        tables.update(_memory(out_dir, sym, meta, tables["ops"]))
        p = os.path.join(out_dir, "communication.json")
        if os.path.isfile(p):
            meta.bandwidth = sidefiles.bandwidth_summary(sidefiles.read_json(p))
            meta.files.append(p)
    tick(1.0)
    return Profile(symbols=sym, meta=meta, tables=tables)
