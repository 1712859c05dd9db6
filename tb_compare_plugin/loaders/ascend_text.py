"""Loader for the Ascend PyTorch / MindSpore profiler *text* export.

Owns: locating the files of a ``*_ascend_pt`` / ``*_ascend_ms`` folder (or its
``ASCEND_PROFILER_OUTPUT``) and assembling the :class:`Profile` from the trace columns
(decoded chunk by chunk by :mod:`ascend_trace`) and the side files (read by
:mod:`ascend_csv`): kernels ("Ascend Hardware" tasks joined with kernel_details.csv), host ops
(cpu_op / enqueue / dequeue), python functions, fwd->bwd flows, HCCL ops and tasks,
Overlap Analysis, steps and memory.  Process roles come from ``process_name`` metadata (spec a.5).
"""
from __future__ import annotations

import glob
import os
import re

import numpy as np
import pandas as pd

from ..model import KIND_COMPUTE, OVERLAP_KINDS, Profile, ProfileMeta, SymbolTable, make_table
from ..model.intervals import nest
from . import ascend_csv as sidefiles, ascend_step_trace
from .ascend_columns import equals, intern as _intern, ints as _ints, objects, per_distinct
from .ascend_trace import TRACE, Trace, parse_trace
from .errors import LoadError

OUT_DIR = "ASCEND_PROFILER_OUTPUT"
SIDE_FILES = ("kernel_details.csv", "operator_memory.csv", "memory_record.csv", "communication.json",
              "step_trace_time.csv")


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


def _rank(info: object, info_path: str | None) -> int | None:
    """profiler_info rank_id (a negative id means "not distributed"), else N of profiler_info_N.json."""
    rid = info.get("rank_id") if isinstance(info, dict) else None
    if isinstance(rid, str) and rid.strip().lstrip("-").isdigit():
        rid = int(rid)
    if isinstance(rid, int) and not isinstance(rid, bool) and rid >= 0:
        return rid
    return _rank_from_name(info_path)


def _sub(d: object, *keys: str) -> dict:
    """d[k1][k2]... when each level is a dict, else {} (profiler_info layouts vary)."""
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d if isinstance(d, dict) else {}


def _level_of(info: object) -> str | None:
    """torch_npu's config.experimental_config._profiler_level, else MindSpore's
    profiler_parameters.profiler_level."""
    if isinstance(info, dict):
        lvl = (_sub(info, "config", "experimental_config").get("_profiler_level")
               or _sub(info, "profiler_parameters").get("profiler_level"))
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
    side = [] if trace_only else [os.path.join(out, f) for f in SIDE_FILES]
    files = [p for p in [trace] + side if os.path.isfile(p)]
    files += [p for p in (info_path, meta_path) if p]
    info, error = None, None
    if info_path:
        try:
            info = sidefiles.read_json(info_path)
        except LoadError as exc:
            error = str(exc)
    common = _sub(info, "config", "common_config")
    has_file = lambda f: os.path.isfile(os.path.join(out, f)) and not trace_only  # noqa: E731
    if not os.path.isfile(trace):
        error = f"{trace}: no {TRACE} (not an Ascend text export, or it was not parsed/exported)"
    return {
        "rank": _rank(info, info_path),
        "profiler_level": _level_of(info),
        "files": files,
        "has": {"kernels": has_file("kernel_details.csv"),
                "communication": has_file("communication.json"),
                "memory": has_file("operator_memory.csv") or has_file("memory_record.csv"),
                "modules": bool(common.get("with_stack") or common.get("with_modules"))},
        "error": error,
    }


# --------------------------------------------------------------------------------------------- tables

def _group_ids(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    if len(pid) == 0:
        return np.zeros(0, dtype=np.int64)
    return pd.DataFrame({"p": pid, "t": tid}).groupby(["p", "t"], sort=False).ngroup().to_numpy(np.int64)


def _first_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct codes, the first row holding each)."""
    return np.unique(codes, return_index=True)


def _flow_pairs(c: dict, what: str, warnings: list) -> dict:
    """s/f events of one flow category paired by id (first s and first f of each id), in the
    order of their s events: ``n`` and the ends' ts_/pid_/tid_ + s/f columns."""
    key, is_f = c["key"], c["is_f"]
    valid = key >= 0
    srows, frows = np.flatnonzero(valid & ~is_f), np.flatnonzero(valid & is_f)
    sk, si = _first_rows(key[srows])
    fk, fi = _first_rows(key[frows])
    _, a, b = np.intersect1d(sk, fk, assume_unique=True, return_indices=True)
    s_rows, f_rows = srows[si[a]], frows[fi[b]]
    order = np.argsort(s_rows, kind="stable")
    s_rows, f_rows = s_rows[order], f_rows[order]
    pairs = {"n": len(s_rows)}
    for end, rows in (("s", s_rows), ("f", f_rows)):
        for col in ("ts", "pid", "tid"):
            pairs[f"{col}_{end}"] = c[col][rows]
    if c["n"] > 2 * pairs["n"]:
        warnings.append(f"{TRACE}: {c['n'] - 2 * pairs['n']} '{what}' flow event(s) without a partner "
                        "(no other end with the same id) were not used")
    return pairs


def _nest_rows(start, end, pid, tid, rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nest the chosen rows per (pid, tid); parent as row numbers of the full table."""
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int16)
    if len(rows):
        p, d = nest(start[rows], end[rows], _group_ids(pid[rows], tid[rows]))
        parent[rows] = np.where(p >= 0, rows[np.maximum(p, 0)], -1)
        depth[rows] = d
    return parent, depth


def _host_tables(tr: Trace, sym: SymbolTable, meta: ProfileMeta) -> dict:
    fb = _flow_pairs(tr.b["fwdbwd"], "fwdbwd", meta.warnings)
    fc = tr.b["fwdbwd"]
    f_tids = fc["tid"][fc["is_f"]]
    meta.bwd_tid = int(f_tids[-1]) if len(f_tids) else None
    out = {"fwdbwd": make_table("fwdbwd", start_ns=fb["ts_s"], start_pid=fb["pid_s"], start_tid=fb["tid_s"],
                                end_ns=fb["ts_f"], end_pid=fb["pid_f"], end_tid=fb["tid_f"])}
    c = tr.b["ops"]
    n = c["n"]
    start, end = c["ts"], c["ts"] + c["dur"]
    cpu = np.flatnonzero(equals(c["cat"], "cpu_op"))
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


def _take(values, idx: np.ndarray):
    """Rows ``idx`` of an int64 column or of a list of raw values (see Trace)."""
    return values[idx] if isinstance(values, np.ndarray) else [values[i] for i in idx.tolist()]


def _op_type(name: str) -> str:
    t = name.lower().split("_")
    return t[1] if t[0] == "hcom" and len(t) > 1 else t[0]


def _threads(pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (pid, tid) rows in sorted order and each row's index into them
    (``np.unique(axis=0, return_inverse=True)`` of the pairs, without sorting rows as records)."""
    pu, pi = np.unique(pid, return_inverse=True)
    tu, ti = np.unique(tid, return_inverse=True)
    ku, inv = np.unique(pi.astype(np.int64) * len(tu) + ti, return_inverse=True)
    return np.stack([pu[ku // max(len(tu), 1)], tu[ku % max(len(tu), 1)]], axis=1), inv.reshape(-1)


def _comm_tables(tr: Trace, sym: SymbolTable) -> tuple[pd.DataFrame, pd.DataFrame, tuple]:
    c = tr.b["hccl"]
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
    threads, row_thread = _threads(c["pid"], c["tid"])
    per = [info.get(k, (False, "", -1)) for k in map(tuple, threads.tolist())]
    is_op = np.array([p[0] for p in per], dtype=bool)[row_thread]
    gkey = np.array([p[2] for p in per], dtype=np.int64)[row_thread]
    gsym = _intern(sym, objects([p[1] for p in per])[row_thread])    # interned in row order
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
    comm_tasks = make_table(
        "comm_tasks", len(t), name=names[t], group=gsym[t], plane=c["tid"][t], start_ns=c["ts"][t],
        dur_ns=c["dur"][t], comm_op=comm_op, task_type=_intern(sym, c["hccl_task_type"][t]),
        transport=_intern(sym, c["transport"][t]), bytes=_ints(_take(c["size"], t)),
        src_rank=_ints(_take(c["src_rank"], t)), dst_rank=_ints(_take(c["dst_rank"], t)))
    return comm_ops, comm_tasks, (c["pid"][o], c["tid"][o])


def _flow_starts(ops: pd.DataFrame, cpu_cat: int, pairs: dict) -> np.ndarray:
    """Where each async_npu flow starts: the innermost cpu_op (its row; -1 none) of the flow's
    (pid_s, tid_s, ts_s) = (pid, tid, start_ns).

    The cpu_ops of one thread starting at one time are nested in a chain (:func:`_nest_rows`:
    of two with one start the longer is the parent, or either when both end together), so the
    innermost is the one with no child of its own start: no sort by depth needed."""
    cat = ops["cat"].to_numpy()
    rows = np.flatnonzero(cat == cpu_cat)     # only the 4 columns used, not the table
    start, parent = ops["start_ns"].to_numpy(), ops["parent"].to_numpy()
    par = parent[rows]
    par = par[par >= 0]
    outer = np.zeros(len(cat), bool)
    outer[par[start[par] == start[rows[parent[rows] >= 0]]]] = True    # a parent of its own start
    rows = rows[~outer[rows]]
    starts = pd.DataFrame({"pid_s": ops["pid"].to_numpy()[rows], "tid_s": ops["tid"].to_numpy()[rows],
                           "ts_s": start[rows], "orow": rows})
    flows = pd.DataFrame({k: pairs[k] for k in ("pid_s", "tid_s", "ts_s")})
    # (one (pid, tid, start) a row in ``starts``: the left merge keeps the flows, in order)
    m = flows.merge(starts, on=["pid_s", "tid_s", "ts_s"], how="left")
    return m["orow"].fillna(-1).to_numpy(dtype=np.int64)


def _link(pairs: dict, launch_of: np.ndarray, dev_pid, dev_tid, dev_start) -> tuple:
    """async_npu flows -> (launch_op, flow_start_ns) arrays per device row.

    A flow end sits on a device row with the same (pid, tid, ts); its start on the innermost
    cpu_op of the same (pid, tid) starting exactly at the flow-start ts (``launch_of``, per flow:
    see :func:`_flow_starts`).  Each row is linked once, by the first flow ending on it.
    """
    n = len(dev_start)
    launch, fstart = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    if not n or not pairs["n"]:
        return launch, fstart
    flows = pd.DataFrame({"pid_f": pairs["pid_f"], "tid_f": pairs["tid_f"], "ts_f": pairs["ts_f"],
                          "flow": np.arange(pairs["n"])})
    dev = pd.DataFrame({"pid_f": dev_pid, "tid_f": dev_tid, "ts_f": dev_start, "drow": np.arange(n)})
    dev = dev.drop_duplicates(["pid_f", "tid_f", "ts_f"])
    m = flows.merge(dev, on=["pid_f", "tid_f", "ts_f"], how="inner").drop_duplicates("drow")
    rows, flow = m["drow"].to_numpy(), m["flow"].to_numpy()
    fstart[rows] = pairs["ts_s"][flow]
    launch[rows] = launch_of[flow]
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


def _overlap_kind(name) -> int:
    return OVERLAP_KINDS.index(name) if name in OVERLAP_KINDS else -1


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
            meta.device_name = info.get("device_name") or None
        meta.rank = _rank(info, info_path)
    if md_path:
        md = sidefiles.read_json(md_path)
        meta.files.append(md_path)
        meta.pg_names = sidefiles.pg_names(md)
        if isinstance(md, dict) and not meta.device_name:
            meta.device_name = md.get("device_name") or md.get("device_type") or None
    tick(0.05)
    last = [0.0]

    def read_progress(f: float) -> None:             # ~1 call per MB: pass on whole percents only
        if f - last[0] >= 0.01 or f >= 1.0:
            last[0] = f
            tick(0.05 + 0.55 * f)
    tr = parse_trace(trace_path, progress=read_progress)
    meta.files.insert(0, trace_path)
    meta.warnings += tr.warnings
    if not tr.n_events:
        raise LoadError(trace_path, "the trace has no events (its JSON array is empty)")
    tick(0.6)
    tables = _host_tables(tr, sym, meta)
    kernels, kkey = sidefiles.kernels_table(tr.b["hw"], sym, meta,
                                            None if trace_only else os.path.join(out_dir, "kernel_details.csv"))
    if tr.n_device and not len(kernels):
        raise LoadError(trace_path, f"the trace holds {tr.n_device:,} 'Ascend Hardware' events but none could be "
                                    f"loaded ({'; '.join(meta.warnings) or 'none is readable'})")
    comm_ops, comm_tasks, op_keys = _comm_tables(tr, sym)
    pairs = _flow_pairs(tr.b["npu_flow"], "async_npu", meta.warnings)
    starts = _flow_starts(tables["ops"], sym.lookup("cpu_op"), pairs) if pairs["n"] else None
    kl, kf = _link(pairs, starts, kkey[:, 0], kkey[:, 1], kernels["start_ns"].to_numpy())
    kernels["launch_op"], kernels["flow_start_ns"] = kl, kf
    comm_ops["launch_op"] = _link(pairs, starts, *op_keys, comm_ops["start_ns"].to_numpy())[0]
    o = tr.b["ovl"]
    kind = per_distinct(o["name"], _overlap_kind, np.int8)
    keep = kind >= 0
    if not keep.all():
        meta.warnings.append(f"{TRACE}: {int((~keep).sum())} 'Overlap Analysis' event(s) with an unknown name "
                             f"(not one of {', '.join(OVERLAP_KINDS)}) were skipped")
    tables["overlap"] = make_table("overlap", int(keep.sum()), kind=kind[keep], start_ns=o["ts"][keep],
                                   dur_ns=o["dur"][keep])
    tables.update(kernels=kernels, comm_ops=comm_ops, comm_tasks=comm_tasks)
    tables["steps"] = _steps(tables["ops"], kernels, sym)
    comp = kernels.loc[kernels["kind"] == KIND_COMPUTE, "stream"]
    meta.compute_stream = int(comp.value_counts().index[0]) if len(comp) else None
    tick(0.8)
    if not trace_only:
        tables.update(sidefiles.memory_tables(out_dir, sym, meta, tables["ops"]))
        p = os.path.join(out_dir, "communication.json")
        if os.path.isfile(p):
            meta.bandwidth = sidefiles.bandwidth_summary(sidefiles.read_json(p))
            meta.files.append(p)
        p = ascend_step_trace.find_csv(out_dir)
        st = ascend_step_trace.from_csv(p, meta) if p else None
        if st is not None:
            tables["step_trace"] = st
    tick(1.0)
    return Profile(symbols=sym, meta=meta, tables=tables)
