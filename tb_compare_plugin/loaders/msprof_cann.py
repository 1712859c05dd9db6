"""Parse an msprof CANN text export (``PROF_XXX/mindstudio_profiler_output/``: TensorFlow on
Ascend, offline/ACL inference) into a Profile.

Files (names ``<kind>[_slice_<N>]_<timestamp>.csv``; a long run is cut into ``_slice_0``,
``_slice_1``, ... files, merged here in slice order; of several exports of one kind and slice the
newest timestamp is read, the others warned about):

* ``op_summary_*``: one row per device task, µs (``Task Start Time(us)``, ``Task Duration(us)``,
  ``Task Wait Time(us)``) -> ``kernels``: Op Name -> name, OP Type -> type, Task Type -> task_type
  and accel_core (AI_CORE / AI_VECTOR_CORE / AI_CPU / MIX_AIC / MIX_AIV: compute; communication:
  collective, also a ``comm_ops`` row), Stream ID, Task ID, Input Shapes / Data Types / Formats,
  and the PMU columns kernel_details.csv shares (aicore_time(us), aic_mac_time(us), aic_mac_ratio,
  aic_mte2_time(us), aiv_time(us), aiv_vec_time(us), aiv_vec_ratio).
* ``step_trace_*``: one row per iteration, µs: Iteration ID, FP Start, BP End, Iteration End,
  Iteration Time, FP to BP Time, Iteration Refresh, Data Aug Bound -> ``steps`` (an iteration runs
  from the previous Iteration End, or from its FP Start for the first, to its Iteration End; so the
  step's iteration gap is its Data Aug Bound) and ``step_trace.preparing_ns`` = Data Aug Bound.
* ``msprof_*.json`` (the timeline, Chrome-trace, ``ts`` µs as text or number): the ``X`` events of
  the process named ``CANN`` (``AscendCL@<api>``, ``Runtime@<api>``, ``Node@<op>``, ... on the
  host threads) -> ``ops`` (cat ``runtime``, nested by time per thread), so the API view compares
  the CANN APIs; the device tasks it also holds are op_summary's and are not read from it.
* ``op_statistic_*``, ``api_statistic_*``, ``task_time_*``, ``fusion_op_*``: summaries of the same
  tasks, or host data the model has no table for (op_statistic: its Count and Total Time are
  checked against op_summary, a mismatch warned).

Problems are warnings naming the file, count and reason; an unreadable op_summary raises LoadError.
"""
from __future__ import annotations

import os
import re
from itertools import compress
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from ..model import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_OTHER, Profile, ProfileMeta, SymbolTable, make_table
from ..model.intervals import nest
from ..gcpause import gc_paused
from . import jsonstream
from .ascend_columns import ts_ns
from .ascend_csv import PMU_COLUMNS, num, ns, read_csv, text
from .errors import LoadError

OUTPUT_DIR = "mindstudio_profiler_output"
KINDS = ("op_summary", "op_statistic", "step_trace", "task_time", "api_statistic", "fusion_op", "msprof")
FILE_RE = re.compile(r"^(" + "|".join(KINDS) + r")(?:_(\d+))*?(?:_slice_(\d+))?_(\d+)\.(csv|json)$")
DEVICE_RE = re.compile(r"^device_(\d+)$")
COMPUTE_PREFIXES = ("AI_", "MIX_")
CHUNK_BYTES = 1 << 20                  # timeline decode chunk (read at call time: tests shrink it)


def output_files(out_dir: str) -> dict:
    """(kind, ext) -> [path, ...] in slice order (the newest export of each slice); and
    ``"_dropped"`` -> older exports of a slice that is present twice."""
    try:
        names = sorted(os.listdir(out_dir))
    except OSError:
        return {}
    best: dict = {}
    dropped: list = []
    for n in names:
        m = FILE_RE.match(n)
        if not m or (m.group(1) == "msprof" and n.startswith("msprof_tx")):
            continue
        key = (m.group(1), m.group(5), int(m.group(3) or 0))
        ts = int(m.group(4))
        if key in best:
            old = best[key]
            if ts > old[0]:
                dropped.append(old[1])
                best[key] = (ts, n)
            else:
                dropped.append(n)
        else:
            best[key] = (ts, n)
    out: dict = {"_dropped": [os.path.join(out_dir, n) for n in dropped]}
    for (kind, ext, sl), (_, n) in sorted(best.items()):
        out.setdefault((kind, ext), []).append(os.path.join(out_dir, n))
    return out


def kind_of(task_type) -> int:
    t = str(task_type or "").upper()
    if t.startswith(COMPUTE_PREFIXES):
        return KIND_COMPUTE
    if t.startswith(("COMMUNICATION", "HCCL", "NOTIFY", "REDUCE")):
        return KIND_COMM
    if t.startswith("MEMCPY"):
        return KIND_MEMCPY
    return KIND_OTHER


def _read_op_summary(paths: list, warnings: list) -> dict:
    parts = []
    for p in paths:
        df = read_csv(p, ["Op Name", "Task Start Time(us)", "Task Duration(us)"],
                      ["OP Type", "Task Type", "Stream ID", "Task ID", "Device_id", "Task Wait Time(us)",
                       "Input Shapes", "Input Data Types", "Input Formats", *PMU_COLUMNS], warnings,
                      aliases={"Stream ID": ("Stream Id",), "Task ID": ("Task Id",)}, warn_missing=False,
                      floats=["Task Duration(us)", "Stream ID", "Task ID", "Device_id", "Task Wait Time(us)",
                              *PMU_COLUMNS])
        if df is None:
            continue
        for col in ("OP Type", "Task Type"):
            if col not in df.columns:
                warnings.append(f"{os.path.basename(p)}: column {col!r} is missing")
        if not len(df):
            warnings.append(f"{os.path.basename(p)}: empty slice (a header and no rows)")
            continue
        cols = {"name": text(df, "Op Name"), "type": text(df, "OP Type"), "task_type": text(df, "Task Type"),
                "start_ns": ns(df, "Task Start Time(us)"), "dur_us": num(df, "Task Duration(us)"),
                "stream": num(df, "Stream ID"), "task_id": num(df, "Task ID"), "device": num(df, "Device_id"),
                "input_shapes": text(df, "Input Shapes"), "input_dtypes": text(df, "Input Data Types"),
                "input_formats": text(df, "Input Formats")}
        for c, k in PMU_COLUMNS.items():
            cols[k] = num(df, c)
        bad = (cols["start_ns"] < 0) | ~np.isfinite(cols["dur_us"]) | (cols["dur_us"] < 0)
        if bad.any():
            warnings.append(f"{os.path.basename(p)}: {int(bad.sum())} row(s) dropped (no readable "
                            "'Task Start Time(us)' or 'Task Duration(us)')")
            cols = {k: v[~bad] for k, v in cols.items()}
        parts.append(cols)
    if not parts:
        return {}
    return {k: np.concatenate([c[k] for c in parts]) for k in parts[0]}


def _read_step_trace(paths: list, warnings: list) -> dict:
    want = ["Iteration ID", "FP Start(us)", "BP End(us)", "Iteration End(us)", "Iteration Time(us)",
            "FP to BP Time(us)", "Iteration Refresh(us)", "Data Aug Bound(us)"]
    it: dict = {}
    for p in paths:
        df = read_csv(p, ["Iteration ID", "Iteration End(us)"], want[1:], warnings)
        if df is None:
            continue
        if not len(df):
            warnings.append(f"{os.path.basename(p)}: empty slice (a header and no rows)")
            continue
        ids = num(df, "Iteration ID")
        end = ns(df, "Iteration End(us)")
        fp = ns(df, "FP Start(us)")
        it_ns = np.round(num(df, "Iteration Time(us)") * 1000)
        aug = num(df, "Data Aug Bound(us)") * 1000
        ok = np.isfinite(ids) & (np.abs(ids) < 2.0 ** 62) & (end >= 0)
        bad = int(len(df) - ok.sum())
        iid = ids[ok].astype(np.int64)                # int() of each: truncated toward zero
        uid, first = np.unique(iid, return_index=True)  # a repeated id: its first row, as before
        sel = np.flatnonzero(ok)[first]
        for i, f, e, t, a in zip(uid.tolist(), fp[sel].tolist(), end[sel].tolist(), it_ns[sel].tolist(),
                                 aug[sel].tolist()):
            it.setdefault(i, (f, e, t, a))
        if bad:
            warnings.append(f"{os.path.basename(p)}: {bad} row(s) dropped (no readable 'Iteration ID' "
                            "or 'Iteration End(us)')")
    return it


def load(out_dir: str, progress=None, framework: str = "unknown") -> Profile:
    """Parse ``PROF_XXX/mindstudio_profiler_output`` (or the ``PROF_XXX`` folder holding it)."""
    out_dir = os.path.abspath(out_dir)
    if os.path.basename(out_dir) != OUTPUT_DIR and os.path.isdir(os.path.join(out_dir, OUTPUT_DIR)):
        out_dir = os.path.join(out_dir, OUTPUT_DIR)
    files = output_files(out_dir)
    ops_files = files.get(("op_summary", "csv"), [])
    if not ops_files:
        raise LoadError(out_dir, "no op_summary_*.csv (no device tasks; export with msprof --export=on)")
    warnings: list = [f"{p}: an older export of the same file; not read" for p in files["_dropped"]]
    read: list = []
    sym = SymbolTable()
    k = _read_op_summary(ops_files, warnings)
    read += ops_files
    if progress is not None:
        progress(0.7)
    n = len(k.get("name", ()))
    if not n:
        warnings.append(f"{out_dir}: op_summary has no task rows")
    st_files = files.get(("step_trace", "csv"), [])
    read += st_files
    it = _read_step_trace(st_files, warnings)
    if not st_files:
        warnings.append(f"{out_dir}: no step_trace_*.csv (offline inference or single-operator run); "
                        "the whole capture is one step")
    ids = sorted(it)
    start, end, aug = [], [], []
    prev_end = None
    for i in ids:
        fp, e, _, a = it[i]
        s = prev_end if prev_end is not None else (fp if fp >= 0 else e - int(round(it[i][2])))
        start.append(s)
        end.append(e)
        aug.append(a)
        prev_end = e
    steps = make_table("steps", len(ids), step=np.array(ids, np.int64), start_ns=np.array(start, np.int64),
                       end_ns=np.array(end, np.int64))
    step_trace = make_table("step_trace", len(ids), step=np.array(ids, np.int64),
                            preparing_ns=np.array(aug, np.float64))
    if n:
        task_type = k["task_type"]
        codes, uniq = pd.factorize(task_type, use_na_sentinel=True)     # None -> -1
        kinds = np.append(np.array([kind_of(t) for t in uniq], np.int8), np.int8(KIND_OTHER))[codes]
        start_ns = k["start_ns"]
        dur_ns = np.round(k["dur_us"] * 1000).astype(np.int64)
        order = np.argsort(start_ns, kind="stable")
        step_of = np.full(n, -1, np.int64)
        if ids:
            s0, s1 = steps["start_ns"].to_numpy(), steps["end_ns"].to_numpy()
            pos = np.searchsorted(s0, start_ns, side="right") - 1
            idx = np.clip(pos, 0, None)
            inside = (pos >= 0) & (start_ns < s1[idx])
            step_of[inside] = np.array(ids, np.int64)[idx[inside]]
            if int((~inside).sum()):
                warnings.append(f"{out_dir}: {int((~inside).sum())} of {n} task(s) outside every iteration "
                                "of step_trace (step -1)")
        kt = dict(name=sym.intern_many(k["name"]), type=sym.intern_many(k["type"]),
                  task_type=sym.intern_many(task_type), accel_core=sym.intern_many(task_type), kind=kinds,
                  stream=np.where(np.isfinite(k["stream"]), k["stream"], -1).astype(np.int64),
                  task_id=np.where(np.isfinite(k["task_id"]), k["task_id"], -1).astype(np.int64),
                  device=np.where(np.isfinite(k["device"]), k["device"], -1).astype(np.int64),
                  start_ns=start_ns, dur_ns=dur_ns, step=step_of, detail=np.ones(n, bool),
                  input_shapes=sym.intern_many(k["input_shapes"]), input_dtypes=sym.intern_many(k["input_dtypes"]),
                  input_formats=sym.intern_many(k["input_formats"]),
                  **{c: k[c] for c in PMU_COLUMNS.values()})
        kt = {c: np.asarray(v)[order] for c, v in kt.items()}
        kernels = make_table("kernels", n, **kt)
    else:
        kernels = make_table("kernels", 0)
    comm = kernels[kernels["kind"] == KIND_COMM]
    comm_ops = make_table("comm_ops", len(comm), name=comm["name"].to_numpy(), op_type=comm["type"].to_numpy(),
                          group=sym.intern_many(["HCCL"] * len(comm)), start_ns=comm["start_ns"].to_numpy(),
                          dur_ns=comm["dur_ns"].to_numpy(), op_id=np.arange(len(comm), dtype=np.int64),
                          kernel=np.flatnonzero((kernels["kind"] == KIND_COMM).to_numpy()).astype(np.int64))
    _check_op_statistic(files.get(("op_statistic", "csv"), []), kernels, sym, warnings, read)
    for kind in ("api_statistic", "task_time", "fusion_op"):
        for p in files.get((kind, "csv"), []):
            if os.path.getsize(p) == 0:
                warnings.append(f"{os.path.basename(p)}: the file is empty; ignored")
    tables = {"kernels": kernels, "steps": steps, "step_trace": step_trace, "comm_ops": comm_ops}
    tl = files.get(("msprof", "json"), [])
    if tl:
        tables["ops"] = _timeline_ops(tl, sym, warnings)
        read += tl
    dev = _device(out_dir, kernels)
    comp = kernels.loc[kernels["kind"] == KIND_COMPUTE, "stream"]
    has_pmu = bool(n) and any(np.isfinite(kernels[c].to_numpy()).any()
                              for c in ("aic_mac_time_us", "aiv_vec_time_us", "mac_time_us"))
    meta = ProfileMeta(device="NPU", framework=framework, format="msprof-cann", rank=dev, path=out_dir,
                       files=read, device_name="Ascend", warnings=warnings, has_pmu=has_pmu,
                       compute_stream=int(comp.value_counts().idxmax()) if len(comp) else None)
    if progress is not None:
        progress(1.0)
    return Profile(sym, meta, tables)


def _device(out_dir: str, kernels) -> int | None:
    d = kernels["device"].to_numpy() if len(kernels) else np.array([], np.int64)
    d = d[d >= 0]
    if len(d):
        return int(np.bincount(d).argmax())
    return device_from_folders(os.path.dirname(out_dir))


def device_from_folders(prof_dir: str) -> int | None:
    try:
        devs = sorted(int(m.group(1)) for m in map(DEVICE_RE.match, os.listdir(prof_dir)) if m)
    except OSError:
        return None
    return devs[0] if devs else None


def _check_op_statistic(paths: list, kernels, sym, warnings: list, read: list) -> None:
    """op_statistic's per-type Count and Total Time should be op_summary's; say so when not."""
    for p in paths:
        df = read_csv(p, ["OP Type", "Count", "Total Time(us)"], ["Core Type"], warnings, warn_missing=False)
        read.append(p)
        if df is None:
            continue
        if not len(kernels):
            continue
        g = kernels.groupby("type", sort=False)["dur_ns"].agg(["size", "sum"])
        sums = {t: (int(c), s / 1000.0) for t, c, s in zip(sym.strings(g.index.to_numpy()), g["size"], g["sum"])}
        cnt, tot = num(df, "Count"), num(df, "Total Time(us)")
        off = [t for t, c, s in zip(text(df, "OP Type"), cnt, tot)
               if t in sums and (sums[t][0] != c or abs(sums[t][1] - s) > max(1.0, 1e-3 * s))]
        if off:
            warnings.append(f"{os.path.basename(p)}: {len(off)} op type(s) whose Count/Total Time differ "
                            f"from op_summary (e.g. {off[0]}); the views use op_summary")


class _TimelineEvent(msgspec.Struct):
    """The fields of a timeline event this loader reads (others are skipped unparsed)."""
    name: Any = ""
    ph: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: msgspec.Raw = msgspec.Raw(b"null")


_EVENTS = msgspec.json.Decoder(list[_TimelineEvent])
_ANY = msgspec.json.Decoder()


class _Redo(Exception):
    """A process named CANN after events of it were dropped as another process's."""


class _Timeline:
    """The ``decode`` callback of :func:`jsonstream.iter_event_chunks` for one ``msprof_*.json``:
    keeps (pid, name, ts, dur, tid) of the X events of every process not already known to be
    another than ``CANN`` (msprof writes the process_name metadata first, so in practice only the
    CANN track is kept, ~16% of the events); ``keep_all`` keeps every X event.  A chunk's metadata
    is applied before its X events are filtered."""

    def __init__(self, keep_all: bool) -> None:
        self.keep_all = keep_all
        self.n_events = 0
        self.cann: set = set()            # pids named CANN
        self.other: set = set()           # pids named something else (their X events dropped)
        self.suspect: set = set()         # pids of ``other`` when a chunk was filtered
        self.x: list = []                 # (pid, name, ts, dur, tid)

    def __call__(self, view) -> None:
        try:
            evs = _EVENTS.decode(view)
            self.n_events += len(evs)
        except msgspec.ValidationError:               # an element that is not an object: skip those
            raw = _ANY.decode(view)
            self.n_events += len(raw)
            evs = [_TimelineEvent(**{k: v for k, v in e.items() if k in _FIELDS and k != "args"},
                                  args=msgspec.Raw(msgspec.json.encode(e.get("args"))))
                   for e in raw if isinstance(e, dict)]
        for e in [e for e in evs if e.ph == "M" and e.name == "process_name"]:
            try:
                args = _ANY.decode(e.args)
            except msgspec.DecodeError:
                args = None
            if isinstance(args, dict) and args.get("name") == "CANN":
                if e.pid in self.suspect:
                    raise _Redo
                self.cann.add(e.pid)
                self.other.discard(e.pid)
            elif e.pid not in self.cann:
                self.other.add(e.pid)
        other = self.other
        if self.keep_all or not other:
            self.x += [(e.pid, e.name, e.ts, e.dur, e.tid) for e in evs if e.ph == "X"]
        else:
            self.suspect |= other
            self.x += [(e.pid, e.name, e.ts, e.dur, e.tid) for e in evs if e.ph == "X" and e.pid not in other]


_FIELDS = frozenset(_TimelineEvent.__struct_fields__)


def _read_timeline(p: str) -> _Timeline:
    for keep_all in (False, True):
        col = _Timeline(keep_all)
        try:
            with gc_paused():
                for _ in jsonstream.iter_event_chunks(p, col, chunk_bytes=CHUNK_BYTES):
                    pass
        except _Redo:
            continue
        except MemoryError:
            raise LoadError(p, "not enough memory to load this timeline") from None
        return col
    raise AssertionError("unreachable: keep_all keeps every event")


def _timeline_ops(paths: list, sym, warnings: list):
    """The CANN track of ``msprof_*.json`` slices as host ops (cat ``runtime``), decoded chunk by
    chunk (:mod:`.jsonstream`) keeping only that track: the same table as a whole-file decode."""
    names, ts, dur, tid = [], [], [], []
    for p in paths:
        col = _read_timeline(p)
        cann, n_events = col.cann, col.n_events
        x = [e for e in col.x if e[0] in cann]
        del col
        _, nm, t, d, th = zip(*x) if x else ((),) * 5
        d = _floats(d)
        ok = np.isfinite(d) & (d >= 0)
        bad = int(len(d) - ok.sum())
        keep = ok.tolist()
        names += [v if type(v) is str else str(v) for v in compress(nm, keep)]
        ts += compress(t, keep)
        dur.append(d[ok])
        tid += compress(th, keep)
        if not n_events:
            warnings.append(f"{os.path.basename(p)}: empty slice (no events)")
        elif not x:
            warnings.append(f"{os.path.basename(p)}: no CANN track events")
        if bad:
            warnings.append(f"{os.path.basename(p)}: {bad} CANN event(s) dropped (missing or bad dur)")
    dur = np.concatenate(dur) if dur else np.zeros(0)
    start = ts_ns(ts) if ts else np.zeros(0, np.int64)
    keep = start >= 0
    if int((~keep).sum()):
        warnings.append(f"{os.path.basename(paths[0])}: {int((~keep).sum())} CANN event(s) dropped (bad ts)")
    start = start[keep]
    d_ns = np.round(dur[keep] * 1000).astype(np.int64)
    if keep.all():
        t, nm = _ints(tid), names
    else:
        kl = keep.tolist()
        t, nm = _ints(list(compress(tid, kl))), list(compress(names, kl))
    order = np.lexsort((-d_ns, start))
    start, d_ns, t = start[order], d_ns[order], t[order]
    nm = [nm[i] for i in order]
    parent, depth = nest(start, start + d_ns, t)
    n = len(nm)
    return make_table("ops", n, name=sym.intern_many(nm), cat=sym.intern_many(["runtime"] * n), start_ns=start,
                      dur_ns=d_ns, pid=np.zeros(n, np.int64), tid=t, parent=parent, depth=depth)


def _floats(vals) -> np.ndarray:
    """float(v) of each value, NaN where that fails (numbers and numeric strings alike)."""
    try:
        out = np.array(vals, np.float64)
        if out.shape == (len(vals),):
            return out
    except (TypeError, ValueError):
        pass
    out = np.empty(len(vals))
    for i, v in enumerate(vals):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            out[i] = np.nan
    return out


def _ints(vals) -> np.ndarray:
    """int(v) of each value (-1 where that fails), as int64."""
    try:
        return np.array(vals, np.int64) if set(map(type, vals)) <= {int} else _slow_ints(vals)
    except OverflowError:
        return _slow_ints(vals)


def _slow_ints(vals) -> np.ndarray:
    return np.array([_tid(v) for v in vals], np.int64)


def _tid(x) -> int:
    try:
        return int(x)
    except (TypeError, ValueError, OverflowError):
        return -1
