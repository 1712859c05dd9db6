"""Parse a MindSpore 1.x Ascend ``profiler/`` folder (the MindInsight intermediate files) into a Profile.

One worker is one device id ``N`` of the folder; its files are siblings named with ``N``:

* ``step_trace_raw_N_detail_time.csv``: one row per iteration (``step_num``, ``start_point``,
  ``end_point``, ``total``, ``fp_point``, ``bp_point``, ``iteration_interval``, ``fp_and_bp``,
  ``tail``, then ``stream_*_parallel_*`` / reduce columns); a closing row with ``step_num`` ``-``
  holds the means and is not an iteration.  Times are Ascend system-counter
  ticks (100 MHz: 1 tick = 10 ns; MindInsight shows them as ticks / 1e5 ms).  -> ``steps``.
* ``timeline_display_N.json`` (1.x) or ``ascend_timeline_display_N.json`` (2.x): a Chrome-trace
  list.  Events with ``args.fullname`` are device tasks: ``tid`` = stream, ``args.type`` = op
  type, ``ts`` / ``dur`` in microseconds *relative to the capture start*, which is
  ``min_cycle_counter_N.txt`` (ticks) when present.  pid 10000 rows (``stream_*_parallel_*``)
  repeat the step-trace segments and are not tasks.  -> ``kernels``.
* ``framework_raw_N.csv``: task id, stream, block dim, full scope name, op type per task (no
  times) -> ``kernels.task_id`` joined by full name.

Problems are reported as warnings naming the file, count and reason; a file that cannot be read at
all raises :class:`LoadError`.
"""
from __future__ import annotations

import csv
import json
import os
import re

import numpy as np

from ..model import KIND_COMM, KIND_COMPUTE, Profile, SymbolTable, make_table
from .errors import LoadError
from .regular import open_regular

TICK_NS = 10                        # Ascend system counter: 100 MHz
STEP_COLUMNS = ("step_num", "start_point", "end_point", "total", "fp_point", "bp_point",
                "iteration_interval", "fp_and_bp", "tail")
STEP_RE = re.compile(r"^step_trace_raw_(\d+)_detail_time\.csv$")
TIMELINE_RE = re.compile(r"^(?:ascend_)?timeline_display_(\d+)\.json$")
_COMM_TYPES = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AlltoAll", "Send", "Receive")


def device_files(folder: str, dev: int) -> dict:
    """The files of device ``dev`` in ``folder`` that exist: role -> path."""
    names = {"step_trace": f"step_trace_raw_{dev}_detail_time.csv",
             "timeline": f"timeline_display_{dev}.json",
             "timeline2": f"ascend_timeline_display_{dev}.json",
             "framework": f"framework_raw_{dev}.csv",
             "cycle": f"min_cycle_counter_{dev}.txt",
             "aicore_type": f"aicore_intermediate_{dev}_type.csv",
             "aicore_detail": f"aicore_intermediate_{dev}_detail.csv"}
    out = {k: os.path.join(folder, v) for k, v in names.items() if os.path.isfile(os.path.join(folder, v))}
    if "timeline2" in out:
        out.setdefault("timeline", out["timeline2"])
    out.pop("timeline2", None)
    return out


def devices(folder: str) -> list[int]:
    """Device ids of ``folder`` with a step trace or a timeline (the files a worker needs)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    ids = set()
    for n in names:
        m = STEP_RE.match(n) or TIMELINE_RE.match(n)
        if m:
            ids.add(int(m.group(1)))
    return sorted(ids)


def split_root(root: str) -> tuple[str, int]:
    """A worker root (one of the device's files) -> (folder, device id)."""
    name = os.path.basename(root)
    m = STEP_RE.match(name) or TIMELINE_RE.match(name)
    if not m:
        raise LoadError(root, "not a MindSpore step_trace_raw_N_detail_time.csv or timeline_display_N.json")
    return os.path.dirname(os.path.abspath(root)), int(m.group(1))


def read_step_trace(path: str, warnings: list) -> list[tuple]:
    """(step, start_tick, end_tick, fp_tick, bp_tick) per well-formed row of a step_trace_raw CSV."""
    try:
        with open_regular(path, "r", newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError) as e:
        raise LoadError(path, f"cannot read the step trace ({e})")
    if not rows:
        raise LoadError(path, "empty step trace (no header)")
    head = [h.strip() for h in rows[0]]
    missing = [c for c in STEP_COLUMNS if c not in head]
    if missing:
        raise LoadError(path, f"not a MindSpore step trace: missing column(s) {', '.join(missing)}")
    ix = [head.index(c) for c in ("step_num", "start_point", "end_point", "fp_point", "bp_point")]
    out, bad = [], 0
    for r in rows[1:]:
        if r and r[0].strip() == "-":       # MindInsight's closing row: the mean of the iterations
            continue
        try:
            vals = tuple(int(r[i]) for i in ix)
        except (IndexError, ValueError):
            bad += 1
            continue
        if vals[2] < vals[1]:
            bad += 1
            continue
        out.append(vals)
    if bad:
        warnings.append(f"{path}: {bad} row(s) dropped (truncated, not integers, or end before start)")
    return out


def read_event_list(path: str, what: str = "") -> list:
    """The event list of a Chrome-trace JSON file (a list, or a dict's ``traceEvents``); a
    LoadError naming ``path`` when it cannot be read or is not one.  Shared with the msprof
    timeline reader (``mindspore_msprof``)."""
    try:
        with open_regular(path, "r", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError) as e:
        raise LoadError(path, f"cannot read{what} ({e})")
    except ValueError as e:
        raise LoadError(path, f"not valid JSON, truncated or damaged copy? ({e})")
    if isinstance(doc, dict):
        doc = doc.get("traceEvents", [])
    if not isinstance(doc, list):
        raise LoadError(path, "not a Chrome-trace event list")
    return doc


def read_timeline(path: str, warnings: list) -> list[dict]:
    """Device-task events (those with ``args.fullname``) of a timeline_display JSON."""
    doc = read_event_list(path, " the timeline")
    out, bad = [], 0
    for e in doc:
        args = e.get("args") if isinstance(e, dict) else None
        if not isinstance(args, dict) or "fullname" not in args:
            continue
        try:
            ts, dur, tid = float(e["ts"]), float(e["dur"]), int(e["tid"])
        except (KeyError, TypeError, ValueError):
            bad += 1
            continue
        if not (np.isfinite(ts) and np.isfinite(dur)) or dur < 0:
            bad += 1
            continue
        out.append({"ts": ts, "dur": dur, "tid": tid, "full": str(args["fullname"]),
                    "type": str(args.get("type", "")), "shapes": _shapes(args)})
    if bad:
        warnings.append(f"{path}: {bad} task event(s) dropped (missing or bad ts/dur/tid)")
    return out


def _shapes(args: dict) -> str:
    parts = []
    k = 0
    while f"input_{k}" in args:
        v = args[f"input_{k}"]
        parts.append(str(v.get("shape", "")) if isinstance(v, dict) else "")
        k += 1
    return ";".join(parts)


def _read_cycle(path: str, warnings: list) -> int | None:
    try:
        with open_regular(path, "r", encoding="utf-8") as f:
            return int(float(f.read().strip()))
    except (OSError, ValueError) as e:
        warnings.append(f"{path}: unreadable capture start ({e}); timeline times left relative")
        return None


def _task_ids(path: str, warnings: list) -> dict:
    try:
        with open_regular(path, "r", newline="", encoding="utf-8") as f:
            rd = csv.DictReader(f)
            if not rd.fieldnames or "full_kernel_name" not in rd.fieldnames or "task_id" not in rd.fieldnames:
                warnings.append(f"{path}: no full_kernel_name/task_id columns; task ids not joined")
                return {}
            out = {}
            for r in rd:
                try:
                    out.setdefault(r["full_kernel_name"], int(r["task_id"]))
                except (TypeError, ValueError):
                    continue
            return out
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        warnings.append(f"{path}: unreadable ({e}); task ids not joined")
        return {}


def load(root: str, progress=None, framework: str = "MindSpore") -> Profile:
    folder, dev = split_root(root)
    files = device_files(folder, dev)
    warnings: list[str] = []
    sym = SymbolTable()
    tables = {}
    read = []
    steps = []
    if "step_trace" in files:
        steps = read_step_trace(files["step_trace"], warnings)
        read.append(files["step_trace"])
        if not steps:
            warnings.append(f"{files['step_trace']}: no iterations")
    else:
        warnings.append(f"{folder}: no step_trace_raw_{dev}_detail_time.csv; no steps")
    st = np.array([s[0] for s in steps], np.int64)
    s0 = np.array([s[1] for s in steps], np.int64) * TICK_NS
    s1 = np.array([s[2] for s in steps], np.int64) * TICK_NS
    fp = np.array([s[3] for s in steps], np.int64) * TICK_NS
    bp = np.array([s[4] for s in steps], np.int64) * TICK_NS
    bad = (fp < s0) | (bp < fp) | (bp > s1)         # the phases need start <= fp <= bp <= end
    if bad.any():
        warnings.append(f"{files['step_trace']}: {int(bad.sum())} iteration(s) with fp_point / bp_point "
                        f"outside start..end; their phases are taken from the tasks instead")
    tables["steps"] = make_table("steps", len(steps), step=st, start_ns=s0, end_ns=s1,
                                 fp_start_ns=np.where(bad, -1, fp), bp_end_ns=np.where(bad, -1, bp))
    if progress is not None:
        progress(0.3)
    tasks = []
    if "timeline" in files:
        tasks = read_timeline(files["timeline"], warnings)
        read.append(files["timeline"])
        if not tasks:
            warnings.append(f"{files['timeline']}: no device task events (no args.fullname); no kernels")
    else:
        warnings.append(f"{folder}: no timeline_display_{dev}.json; no kernels")
    base_ns = 0
    if tasks:
        cyc = _read_cycle(files["cycle"], warnings) if "cycle" in files else None
        if "cycle" in files:
            read.append(files["cycle"])
        if cyc is not None:
            base_ns = cyc * TICK_NS
        elif len(s0):
            base_ns = int(s0[0])
            warnings.append(f"{folder}: no min_cycle_counter_{dev}.txt: timeline times placed from the "
                            f"first iteration's start (step assignment approximate)")
    n = len(tasks)
    start = base_ns + np.round(np.array([t["ts"] for t in tasks], np.float64) * 1000).astype(np.int64)
    dur = np.round(np.array([t["dur"] for t in tasks], np.float64) * 1000).astype(np.int64)
    step_of = np.full(n, -1, np.int64)
    if n and len(steps):
        order = np.argsort(s0, kind="stable")
        pos = np.searchsorted(s0[order], start, side="right") - 1
        ok = pos >= 0
        idx = order[np.clip(pos, 0, None)]
        inside = ok & (start < s1[idx])
        step_of[inside] = st[idx[inside]]
        outside = int((~inside).sum())
        if outside:
            warnings.append(f"{files['timeline']}: {outside} of {n} task(s) outside every iteration of "
                            f"{os.path.basename(files.get('step_trace', ''))} (step -1)")
    if n and len(steps):
        covered = np.isin(st, step_of)
        if not covered.all():
            warnings.append(f"{files['timeline']}: tasks cover {int(covered.sum())} of {len(st)} iterations of "
                            f"{os.path.basename(files['step_trace'])}; steps limited to those "
                            f"{int(covered.sum())} (per-step figures would otherwise average over "
                            f"iterations the timeline does not hold)")
            tables["steps"] = tables["steps"][covered].reset_index(drop=True)
    tids = _task_ids(files["framework"], warnings) if "framework" in files and n else {}
    if tids:
        read.append(files["framework"])
    types = [t["type"] for t in tasks]
    kind = np.array([KIND_COMM if any(c in ty for c in _COMM_TYPES) or ty.startswith("Hccl") else KIND_COMPUTE
                     for ty in types], np.int8)
    tables["kernels"] = make_table(
        "kernels", n, name=sym.intern_many([t["full"] for t in tasks]), type=sym.intern_many(types),
        task_type=sym.intern_many(["" for _ in tasks]), kind=kind,
        stream=np.array([t["tid"] for t in tasks], np.int64), device=np.full(n, dev, np.int64),
        start_ns=start, dur_ns=dur, step=step_of,
        task_id=np.array([tids.get(t["full"], -1) for t in tasks], np.int64),
        input_shapes=sym.intern_many([t["shapes"] for t in tasks]), detail=np.ones(n, bool))
    if progress is not None:
        progress(1.0)
    from ..model import ProfileMeta
    comp = tables["kernels"].loc[tables["kernels"]["kind"] == KIND_COMPUTE, "stream"]
    meta = ProfileMeta(device="NPU", framework=framework, format="mindspore-legacy", rank=dev,
                       path=os.path.abspath(root), files=[os.path.abspath(p) for p in read],
                       device_name="Ascend", warnings=warnings,
                       compute_stream=int(comp.value_counts().idxmax()) if len(comp) else None)
    return Profile(sym, meta, tables)
