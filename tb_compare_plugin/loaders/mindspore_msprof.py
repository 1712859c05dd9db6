"""Parse the msprof timeline export MindSpore 2.x writes beside its ``profiler/`` files
(``profiler/PROF_*/device_N/timeline/``, CANN 6/7 era) into a Profile.

Files, one slice per iteration: ``<kind>_<device>_<model>_<slice>.json``, Chrome-trace lists whose
``ts`` / ``dur`` are **microseconds of the device's monotonic clock** (absolute, 2 decimals):

* ``task_time_*``: one ``X`` event per device task on pid "Ascend Hardware", tid = stream:
  name = the task's op (MindSpore full scope name, e.g.
  ``Default/network-WithLossCell/_backbone-AlexNet/Cast-op239``, or an HCCL task name),
  ``args``: ``Task Type`` (AI_CORE, AI_CPU, NOTIFY_WAIT, ...), ``Stream Id``, ``Task Id``.
  -> ``kernels`` (op type: the scope path's last part without its ``-opN`` suffix).
* ``step_trace_*``: ``Iteration N`` events (cat ``Iteration Time``; ``args``: ``Iteration ID``,
  ``FP Start``, ``BP End``, ``Iteration End`` in µs, ``Iteration Time(ns)``); every slice repeats
  all iterations.  -> ``steps`` (``FP Start`` / ``BP End`` -> ``fp_start_ns`` / ``bp_end_ns``).
* ``hccl_*``: tid 70000 ("Communication Kernel"): one event per collective op -> ``comm_ops``;
  tids 0..k ("Plane k"): its tasks (``args``: task type, transport type, size(Byte), src/dst rank)
  -> ``comm_tasks``.
* ``msprof_*``: the same tasks and iterations merged with CANN host events: not read.

Problems are warnings naming the file, count and reason; an unreadable file raises LoadError.
"""
from __future__ import annotations

import os
import re

import numpy as np

from ..model import (KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_OTHER, Profile, ProfileMeta, SymbolTable,
                     make_table)
from .errors import LoadError
from .mindspore_legacy import read_event_list

SLICE_RE = re.compile(r"^(task_time|step_trace|hccl)_(\d+)_(\d+)_(\d+)\.json$")
DEVICE_RE = re.compile(r"^device_(\d+)$")
_OP_SUFFIX = re.compile(r"-op\d+(_\d+)?$")
COMM_OPS_TID = 70000


def slices(worker_dir: str) -> dict:
    """kind -> [path, ...] of ``worker_dir/timeline`` in slice order."""
    tl = os.path.join(worker_dir, "timeline")
    out: dict = {"task_time": [], "step_trace": [], "hccl": []}
    try:
        names = os.listdir(tl)
    except OSError:
        return out
    found = []
    for n in names:
        m = SLICE_RE.match(n)
        if m:
            found.append((m.group(1), int(m.group(3)), int(m.group(4)), os.path.join(tl, n)))
    for kind, model, sl, p in sorted(found):
        out[kind].append(p)
    return out


def op_type(full_name: str) -> str:
    """``Default/.../Conv2D-op12`` -> ``Conv2D`` (MindSpore names a kernel ``<Type>-op<N>``)."""
    return _OP_SUFFIX.sub("", full_name.rsplit("/", 1)[-1])


def _events(path: str, warnings: list) -> list:
    doc = read_event_list(path)
    out, bad = [], 0
    for e in doc:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            ts, dur = float(e["ts"]), float(e["dur"])
        except (KeyError, TypeError, ValueError):
            bad += 1
            continue
        if not (np.isfinite(ts) and np.isfinite(dur)) or dur < 0:
            bad += 1
            continue
        out.append((ts, dur, e))
    if bad:
        warnings.append(f"{path}: {bad} event(s) dropped (missing or bad ts/dur)")
    if not out:
        warnings.append(f"{path}: empty slice (no complete events)")
    return out


def _ns(us) -> np.ndarray:
    return np.round(np.asarray(us, np.float64) * 1000).astype(np.int64)


def _us(v) -> float:
    """A µs figure of the step trace's args, NaN when absent or not a number."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _kind(task_type: str) -> int:
    t = task_type.upper()
    if t.startswith(("AI_", "MIX_")) or t in ("AI_CORE", "AI_CPU"):
        return KIND_COMPUTE
    if t.startswith(("NOTIFY", "REDUCE", "HCCL")):
        return KIND_COMM
    if t.startswith("MEMCPY"):
        return KIND_MEMCPY
    return KIND_OTHER


def _int(v, default=-1) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def load(root: str, progress=None, framework: str = "MindSpore") -> Profile:
    root = os.path.abspath(root)
    m = DEVICE_RE.match(os.path.basename(root))
    if not m:
        raise LoadError(root, "not an msprof device_N folder")
    dev = int(m.group(1))
    files = slices(root)
    if not files["task_time"]:
        raise LoadError(os.path.join(root, "timeline"), "no task_time_*.json slices (no device tasks)")
    warnings: list[str] = []
    sym = SymbolTable()
    read: list[str] = []
    # steps: every slice repeats the iterations; keep the first of each id
    it: dict = {}
    for p in files["step_trace"]:
        read.append(p)
        for ts, dur, e in _events(p, warnings):
            a = e.get("args") or {}
            if e.get("cat") == "Iteration Time" and _int(a.get("Iteration ID")) >= 0:
                it.setdefault(_int(a["Iteration ID"]), (ts, dur, _us(a.get("FP Start")), _us(a.get("BP End"))))
    if not files["step_trace"]:
        warnings.append(f"{root}/timeline: no step_trace_*.json slices; no steps")
    ids = sorted(it)
    s0 = _ns([it[i][0] for i in ids])
    s1 = s0 + _ns([it[i][1] for i in ids])
    fp, bp = (np.array([it[i][c] for i in ids], np.float64) for c in (2, 3))
    fp_ns = np.where(np.isfinite(fp), np.round(np.nan_to_num(fp) * 1000), -1).astype(np.int64)
    bp_ns = np.where(np.isfinite(bp), np.round(np.nan_to_num(bp) * 1000), -1).astype(np.int64)
    bad = (fp_ns >= 0) & (bp_ns >= 0) & ((fp_ns < s0) | (bp_ns < fp_ns) | (bp_ns > s1))
    if bad.any():
        warnings.append(f"{root}/timeline: step_trace: {int(bad.sum())} iteration(s) with FP Start / BP End "
                        f"outside the iteration; their phases are taken from the tasks instead")
    none = (fp_ns < 0) | (bp_ns < 0) | bad
    tables = {"steps": make_table("steps", len(ids), step=np.array(ids, np.int64), start_ns=s0, end_ns=s1,
                                  fp_start_ns=np.where(none, -1, fp_ns), bp_end_ns=np.where(none, -1, bp_ns))}
    # kernels, slice after slice
    rows = []
    for k, p in enumerate(files["task_time"]):
        read.append(p)
        for ts, dur, e in _events(p, warnings):
            a = e.get("args") or {}
            if "Task Type" not in a:
                continue
            rows.append((ts, dur, str(e.get("name", "")), str(a["Task Type"]),
                         _int(a.get("Stream Id"), _int(e.get("tid"))), _int(a.get("Task Id"))))
        if progress is not None:
            progress(0.8 * (k + 1) / len(files["task_time"]))
    n = len(rows)
    start = _ns([r[0] for r in rows])
    step_of = np.full(n, -1, np.int64)
    if n and ids:
        s0, s1 = tables["steps"]["start_ns"].to_numpy(), tables["steps"]["end_ns"].to_numpy()
        pos = np.searchsorted(s0, start, side="right") - 1
        idx = np.clip(pos, 0, None)
        inside = (pos >= 0) & (start < s1[idx])
        step_of[inside] = np.array(ids, np.int64)[idx[inside]]
        if int((~inside).sum()):
            warnings.append(f"{root}/timeline: {int((~inside).sum())} of {n} task(s) outside every "
                            f"iteration of the step trace (step -1)")
    kinds = np.array([_kind(r[3]) for r in rows], np.int8)
    names = [r[2] for r in rows]
    tables["kernels"] = make_table(
        "kernels", n, name=sym.intern_many(names),
        type=sym.intern_many([op_type(x) if kd == KIND_COMPUTE else "" for x, kd in zip(names, kinds)]),
        task_type=sym.intern_many([r[3] for r in rows]), kind=kinds,
        stream=np.array([r[4] for r in rows], np.int64), device=np.full(n, dev, np.int64),
        start_ns=start, dur_ns=_ns([r[1] for r in rows]), step=step_of,
        task_id=np.array([r[5] for r in rows], np.int64), detail=np.ones(n, bool))
    # communication
    ops, tasks = [], []
    for p in files["hccl"]:
        read.append(p)
        for ts, dur, e in _events(p, warnings):
            if _int(e.get("tid")) == COMM_OPS_TID:
                ops.append((ts, dur, str(e.get("name", ""))))
            else:
                tasks.append((ts, dur, e))
    tables["comm_ops"] = make_table(
        "comm_ops", len(ops), name=sym.intern_many([o[2] for o in ops]),
        op_type=sym.intern_many([op_type(o[2]) for o in ops]),
        group=sym.intern_many(["HCCL"] * len(ops)),
        start_ns=_ns([o[0] for o in ops]), dur_ns=_ns([o[1] for o in ops]),
        op_id=np.arange(len(ops), dtype=np.int64))
    ta = [t[2].get("args") or {} for t in tasks]
    tables["comm_tasks"] = make_table(
        "comm_tasks", len(tasks), name=sym.intern_many([str(t[2].get("name", "")) for t in tasks]),
        group=sym.intern_many(["HCCL"] * len(tasks)),
        plane=np.array([_int(t[2].get("tid")) for t in tasks], np.int64),
        start_ns=_ns([t[0] for t in tasks]), dur_ns=_ns([t[1] for t in tasks]),
        task_type=sym.intern_many([str(a.get("task type", "")) for a in ta]),
        transport=sym.intern_many([str(a.get("transport type", "")) for a in ta]),
        bytes=np.array([_int(a.get("size(Byte)")) for a in ta], np.int64),
        src_rank=np.array([_int(a.get("src rank")) for a in ta], np.int64),
        dst_rank=np.array([_int(a.get("dst rank")) for a in ta], np.int64))
    if progress is not None:
        progress(1.0)
    comp = tables["kernels"].loc[tables["kernels"]["kind"] == KIND_COMPUTE, "stream"]
    meta = ProfileMeta(device="NPU", framework=framework, format="mindspore-msprof", rank=dev, path=root,
                       files=read, device_name="Ascend", warnings=warnings,
                       compute_stream=int(comp.value_counts().idxmax()) if len(comp) else None)
    return Profile(sym, meta, tables)
