"""Communication comparison: collective ops and their tasks, baseline vs target.

Owns the CommunicationCompare view (spec d.2) on the columnar model: one row per
(collective name, group) with calls / total / avg / max / min, transit vs wait time,
bytes and bandwidth where the data has them, and the communication tasks (HCCL
Notify_Wait, Memcpy, ...) of each row paired **by name**; ``reference`` keeps the per-name
statistics the reference's sheet shows (``presenters.reference_rows``).  Deliberate differences from
the reference are listed in docs/deviations.md (communication section):

* GPU NCCL kernels get one row per collective (allreduce, sendrecv, ...), not one
  ``ncclkernel`` row (f.5);
* task rows are paired by name, not by position (f.13);
* rows are split by communication group.  Groups are paired by name; groups the two sides
  name differently (GPU ``default_pg: 0`` vs Ascend ``Group 0 Communication``) are paired by
  ``overall_rows.pair_leftover_groups`` when that is unambiguous, and their rows are labelled
  ``"<baseline group> ↔ <target group>"`` (a note says which and why).  When a collective's
  groups still differ between the sides, a per-name aggregate row (``aggregate: True``,
  group "") precedes the group rows.

Pure function of two Profiles: no file reading, no HTTP.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .overall_rows import PAIR_SEP, GroupSig, pair_leftover_groups, pairing_note
from .sidebyside import BASE_ONLY, BOTH, TARGET_ONLY, ratio as _ratio_vec

# collective spellings -> one canonical name (NCCL annotations, kernels, HCCL op types)
_ALIASES = {
    "all_reduce": "allreduce", "all_gather": "allgather", "_all_gather_base": "allgather",
    "all_gather_into_tensor": "allgather", "allgather_into_tensor_coalesced": "allgather",
    "reduce_scatter": "reducescatter", "_reduce_scatter_base": "reducescatter",
    "reduce_scatter_tensor": "reducescatter", "all_to_all": "alltoall", "alltoall_base": "alltoall",
    "all_to_all_single": "alltoall", "receive": "recv",
}
_NCCL_PREFIX = re.compile(r"^(?:nccl|rccl)(?:dev)?kernel_", re.I)
_NOTIFY_WAIT, _RDMA_SEND = "Notify_Wait", "RDMASend"
_LOCAL_TRANSPORTS = {"LOCAL", "ON_CHIP"}
_NO_RANK = 0xFFFFFFFF          # HCCL's "no peer" rank: an on-chip step (e.g. a 4-byte Reduce_Inline)


def collective_name(raw: str) -> str:
    """Canonical collective of an op / kernel name or op type.

    ``hcom_allReduce__586_0_1`` / ``hcom_allReduce_`` -> ``allreduce`` (spec d.2);
    ``ncclKernel_AllReduce_RING_LL_Sum_float(...)`` / ``ncclDevKernel_SendRecv(...)`` ->
    ``allreduce`` / ``sendrecv``; ``nccl:all_reduce`` -> ``allreduce``; otherwise the first
    ``_``-token, lower-cased.
    """
    s = (raw or "").strip()
    if not s:
        return ""
    s = s.split("(", 1)[0]
    low = s.lower()
    if low in _ALIASES:
        return _ALIASES[low]
    m = _NCCL_PREFIX.match(s)
    if m:
        tok = next((t for t in s[m.end():].split("_") if t), "")
        return tok.lower() or "ncclkernel"
    if low.startswith(("nccl:", "gloo:", "hccl:")):
        op = low.split(":", 1)[1]
        return _ALIASES.get(op, op.replace("_", ""))
    toks = low.split("_")
    if toks[0] == "hcom" and len(toks) > 1:
        return toks[1]
    return _ALIASES.get(low, toks[0])


# --------------------------------------------------------------------------------------- sides

def _window(profile, step: int | None, side: str) -> tuple[int, int] | None:
    if step is None:
        return None
    steps = profile.steps
    rows = steps[steps["step"] == int(step)]
    if not len(rows):
        valid = profile.step_ids()
        if not valid:
            raise ValueError(f"Invalid step id: {step} for the {side} profile: it has no steps")
        raise ValueError(f"Invalid step id: {step} for the {side} profile, "
                         f"please choose from the valid steps: {', '.join(map(str, valid))}")
    return int(rows["start_ns"].min()), int(rows["end_ns"].max())


def _decode_coded(sym, ids: np.ndarray, fmt=None) -> tuple[np.ndarray, np.ndarray, list]:
    """(strings, codes, distinct): symbol ids -> object array of strings, decoding each distinct
    id once (optionally mapped by ``fmt``), and each row's code into ``distinct`` (the distinct
    strings; equal strings share a code), so that tests and groupings run once per distinct
    string, not once per row."""
    if not len(ids):
        return np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64), []
    u, inv = np.unique(ids, return_inverse=True)
    names = sym.strings(u)
    if fmt:
        names = [fmt(x) for x in names]
    return _coded(np.array(names, dtype=object), inv.reshape(-1))


def _coded(lut: np.ndarray, inv: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """(lut[inv], codes, distinct) with one code per distinct string of ``lut``."""
    code_of: dict = {}
    lut_code = np.array([code_of.setdefault(x, len(code_of)) for x in lut.tolist()], dtype=np.int64)
    return lut[inv], lut_code[inv], list(code_of)


def _link_by_time(ops: pd.DataFrame, tasks: pd.DataFrame) -> np.ndarray:
    """Op row of each task whose start lies in [op.start, op.end] (same group when both have one)."""
    out = np.full(len(tasks), -1, dtype=np.int64)
    ostart = ops["start_ns"].to_numpy()
    oend = ostart + ops["dur_ns"].to_numpy()
    ogrp = ops["group"].to_numpy()
    tstart = tasks["start_ns"].to_numpy()
    tgrp = tasks["group"].to_numpy()
    for g in np.unique(tgrp).tolist():
        rows = np.flatnonzero(ogrp == g) if g != 0 else np.arange(len(ops))
        if not len(rows):
            rows = np.arange(len(ops))
        rows = rows[np.argsort(ostart[rows], kind="stable")]
        trows = np.flatnonzero(tgrp == g)
        k = np.searchsorted(ostart[rows], tstart[trows], side="right") - 1
        ok = (k >= 0) & (tstart[trows] <= oend[rows[np.maximum(k, 0)]])
        out[trows[ok]] = rows[k[ok]]
    return out


def _counted_waits(tasks: pd.DataFrame, codes: np.ndarray, distinct: list) -> np.ndarray:
    """Mask of Notify_Wait tasks that are waiting, not RDMA transfer (spec b.2 filter); each
    task's name is ``distinct[codes[i]]`` (tested once per distinct name).

    Per (group, plane), in time order: a Notify_Wait right after RDMASend, RDMASend, or after
    RDMASend, RDMASend, Notify_Wait, RDMASend, is part of an RDMA transfer.
    """
    kind = np.array([1 if x == _NOTIFY_WAIT else 2 if x == _RDMA_SEND else 0 for x in distinct] or [0],
                    dtype=np.int64)
    code = kind[codes] if len(codes) else np.zeros(0, dtype=np.int64)
    is_wait = code == 1
    if not is_wait.any():
        return is_wait
    order = np.lexsort((np.arange(len(tasks)), tasks["start_ns"].to_numpy(),
                        tasks["plane"].to_numpy(), tasks["group"].to_numpy()))
    g, p, c = tasks["group"].to_numpy()[order], tasks["plane"].to_numpy()[order], code[order]
    run = np.cumsum(np.r_[True, (g[1:] != g[:-1]) | (p[1:] != p[:-1])])      # (group, plane) runs

    def before(k: int) -> np.ndarray:           # the code k tasks earlier in the same run, else -1
        out = np.full(len(c), -1, dtype=np.int64)
        if k < len(c):
            out[k:] = np.where(run[k:] == run[:-k], c[:-k], -1)
        return out
    p1, p2, p3, p4 = (before(k) for k in (1, 2, 3, 4))
    rdma = ((p1 == 2) & (p2 == 2)) | ((p1 == 2) & (p2 == 1) & (p3 == 2) & (p4 == 2))
    counted = np.zeros(len(tasks), dtype=bool)
    counted[order] = (c == 1) & ~rdma
    return counted


def _union_per_op(op: np.ndarray, s: np.ndarray, e: np.ndarray, n_ops: int) -> np.ndarray:
    """Length of the union of intervals [s, e) per op id (vectorised sweep)."""
    out = np.zeros(n_ops, dtype=np.int64)
    if not len(op):
        return out
    o = np.lexsort((s, op))
    op, s, e = op[o], s[o], e[o]
    run = pd.Series(e).groupby(op).cummax().to_numpy()
    prev = np.empty_like(run)
    prev[0] = np.iinfo(np.int64).min
    prev[1:] = run[:-1]
    first = np.ones(len(op), dtype=bool)
    first[1:] = op[1:] != op[:-1]
    prev[first] = np.iinfo(np.int64).min
    contrib = np.maximum(0, e - np.maximum(s, prev))
    np.add.at(out, op, contrib)
    return out


def _side(profile, step: int | None, side: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ops, tasks) of one side, decoded: ops carry coll/group labels, wait, bytes, link time."""
    win = _window(profile, step, side)
    sym = profile.symbols
    full = profile.comm_ops.reset_index(drop=True)
    keep_op = (full["start_ns"] >= 0) & (full["dur_ns"] >= 0)
    if win is not None:
        keep_op &= (full["start_ns"] >= win[0]) & (full["start_ns"] <= win[1])
    kept = np.flatnonzero(keep_op.to_numpy())
    ops = full.iloc[kept]
    tasks = profile.comm_tasks
    # collective name per distinct (name, op_type) symbol pair: op_type wins when the loader set it
    key = ops["op_type"].to_numpy().astype(np.int64) * (1 << 32) + ops["name"].to_numpy()
    uniq, inv = np.unique(key, return_inverse=True)
    lut = np.array([collective_name(sym.string(int(k >> 32)) or sym.string(int(k & 0xFFFFFFFF)))
                    for k in uniq], dtype=object)
    pg = profile.meta.pg_names or {}
    n = len(ops)
    # each key column's code per distinct string: the statistics group by codes (_grouped)
    colls, coll_c, _ = _coded(lut, inv.reshape(-1)) if n else (np.zeros(0, dtype=object),
                                                               np.zeros(0, dtype=np.int64), [])
    groups, group_c, _ = _decode_coded(sym, ops["group"].to_numpy(), lambda g: f"{pg[g]}: {g}" if g in pg else g)
    out = pd.DataFrame({
        "coll": colls,
        "group": groups,
        "start_ns": ops["start_ns"].to_numpy(), "dur_ns": ops["dur_ns"].to_numpy(),
        "wait_ns": np.full(n, -1, dtype=np.int64), "bytes": np.zeros(n, dtype=np.int64),
        "link_ns": np.zeros(n, dtype=np.int64), "has_tasks": np.zeros(n, dtype=bool),
        "coll_c": coll_c, "group_c": group_c,
    })
    # tasks: keep those inside a kept op, attributed to that op's row in `out`
    pos = np.full(len(full) + 1, -1, dtype=np.int64)      # full-table row -> row in `out`
    pos[kept] = np.arange(n)
    link = tasks["comm_op"].to_numpy()
    if len(tasks) and len(full) and (link < 0).all():       # loader did not link: by time
        link = _link_by_time(full, tasks)
    row = np.where((link >= 0) & (link < len(full)), pos[np.clip(link, 0, len(full))], -1)
    keep = row >= 0
    t = tasks[keep]
    row = row[keep]
    tname_ids = np.where(t["name"].to_numpy() != 0, t["name"].to_numpy(), t["task_type"].to_numpy())
    tnames, task_c, task_names = _decode_coded(sym, tname_ids)
    ts, td = t["start_ns"].to_numpy(), t["dur_ns"].to_numpy()
    if len(t):
        out.loc[np.unique(row), "has_tasks"] = True
        # wait: per plane, the union of its counted Notify_Wait intervals inside the op; the op's
        # wait is the least-waiting plane among those that wait (the overview's Wait rule)
        w = _counted_waits(t, task_c, task_names)
        ostart, oend = out["start_ns"].to_numpy(), (out["start_ns"] + out["dur_ns"]).to_numpy()
        s = np.maximum(ts[w], ostart[row[w]])
        e = np.minimum(ts[w] + np.maximum(td[w], 0), oend[row[w]])
        _, plane_code = np.unique(t["plane"].to_numpy()[w], return_inverse=True)
        nplanes = int(plane_code.max()) + 1 if len(plane_code) else 1
        key = row[w] * nplanes + plane_code.reshape(-1)
        per_plane = _union_per_op(key, s, np.maximum(e, s), n * nplanes).reshape(n, nplanes)
        waits_on = np.zeros((n, nplanes), dtype=bool)
        waits_on[row[w], plane_code.reshape(-1)] = True
        waited = np.where(waits_on.any(axis=1),
                          np.where(waits_on, per_plane, np.iinfo(np.int64).max).min(axis=1), 0)
        out["wait_ns"] = np.where(out["has_tasks"], waited, -1)
        # transfer tasks: bytes moved between ranks, and the link busy time moving them
        src, dst = t["src_rank"].to_numpy(), t["dst_rank"].to_numpy()
        _, tr_c, tr_names = _decode_coded(sym, t["transport"].to_numpy())
        nb = t["bytes"].to_numpy()
        local = (((src == dst) & (src >= 0)) | (src == _NO_RANK) | (dst == _NO_RANK)
                 | np.array([x in _LOCAL_TRANSPORTS for x in tr_names] or [False], dtype=bool)[tr_c])
        notify = np.array([x.startswith("Notify") for x in task_names] or [False], dtype=bool)[task_c]
        xfer = (nb > 0) & ~local & ~notify
        out["bytes"] = np.bincount(row[xfer], weights=nb[xfer], minlength=n).astype(np.int64)
        out["link_ns"] = np.bincount(row[xfer], weights=np.maximum(td[xfer], 0), minlength=n).astype(np.int64)
    # ops without tasks: the loader's wait (DB waitNs) and op bytes, when present
    notask = ~out["has_tasks"].to_numpy()
    out.loc[notask, "wait_ns"] = ops["wait_ns"].to_numpy()[notask]
    opb = ops["bytes"].to_numpy()
    use_opb = notask & (opb > 0)
    out.loc[use_opb, "bytes"] = opb[use_opb]
    out.loc[use_opb, "link_ns"] = out["dur_ns"].to_numpy()[use_opb]
    tdf = pd.DataFrame({"coll": out["coll"].to_numpy()[row], "group": out["group"].to_numpy()[row],
                        "task": tnames, "start_ns": ts, "dur_ns": td,
                        "coll_c": coll_c[row], "group_c": group_c[row], "task_c": task_c})
    return out, tdf


# --------------------------------------------------------------------------------------- stats

def _grouped(df: pd.DataFrame, keys: list[str]) -> tuple:
    """``df`` (ordered by start, stably) grouped by ``keys`` through their ``<key>_c`` codes, as
    ``groupby(keys, sort=False)``: (the key columns of each group, in order of first appearance;
    the rows' order grouped; each group's first position in it; the group sizes)."""
    key = np.zeros(len(df), dtype=np.int64)
    for k in keys:
        c = df[k + "_c"].to_numpy()
        width = int(c.max()) + 1 if len(c) else 1
        key = key * width + c
    order = np.argsort(df["start_ns"].to_numpy(), kind="stable")
    key = key[order]
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)                 # groups by first appearance
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    g = rank[inv.reshape(-1)]
    within = np.argsort(g, kind="stable")
    rows = order[within]
    sizes = np.bincount(g, minlength=len(first)).astype(np.int64)
    starts = np.zeros(len(first), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    heads = rows[starts]
    return {k: df[k].to_numpy()[heads] for k in keys}, rows, starts, sizes


def _sums(values: np.ndarray, rows: np.ndarray, starts: np.ndarray, how=np.add) -> np.ndarray:
    return how.reduceat(values[rows], starts) if len(starts) else np.zeros(0, dtype=values.dtype)


def _op_stats(ops: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    heads, rows, starts, sizes = _grouped(ops, keys)
    known = ops["wait_ns"].to_numpy() >= 0
    dur = ops["dur_ns"].to_numpy()
    return pd.DataFrame({
        **heads, "calls": sizes, "total": _sums(dur, rows, starts), "max": _sums(dur, rows, starts, np.maximum),
        "min": _sums(dur, rows, starts, np.minimum),
        "wait": _sums(np.where(known, ops["wait_ns"].to_numpy(), 0), rows, starts),
        "known_dur": _sums(np.where(known, dur, 0), rows, starts),
        "n_known": _sums(known.astype(np.int64), rows, starts),
        "bytes": _sums(ops["bytes"].to_numpy(), rows, starts), "link": _sums(ops["link_ns"].to_numpy(), rows, starts)})


def _task_stats(tasks: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    heads, rows, starts, sizes = _grouped(tasks, keys + ["task"])
    dur = tasks["dur_ns"].to_numpy()
    return pd.DataFrame({**heads, "calls": sizes, "total": _sums(dur, rows, starts),
                         "max": _sums(dur, rows, starts, np.maximum), "min": _sums(dur, rows, starts, np.minimum)})


def _side_dict(r: dict | None, with_extras: bool = True) -> dict:
    if r is None:
        return {"calls": 0, "total_ms": 0.0, "avg_ms": None, "max_ms": None, "min_ms": None}
    calls, total = int(r["calls"]), int(r["total"])
    d = {"calls": calls, "total_ms": total / 1e6, "avg_ms": total / calls / 1e6 if calls else None,
         "max_ms": int(r["max"]) / 1e6, "min_ms": int(r["min"]) / 1e6}
    if with_extras:
        if int(r["n_known"]):
            d["wait_ms"] = int(r["wait"]) / 1e6
            d["transit_ms"] = (int(r["known_dur"]) - int(r["wait"])) / 1e6
        if int(r["bytes"]) > 0:
            d["bytes"] = int(r["bytes"])
            if int(r["link"]) > 0:
                d["bandwidth_gbps"] = int(r["bytes"]) / int(r["link"])   # B/ns == GB/s
    return d


def _pair(b: dict | None, t: dict | None, extras: bool = True) -> dict:
    bt = int(b["total"]) if b is not None else 0
    tt = int(t["total"]) if t is not None else 0
    r = float(_ratio_vec([tt], [bt])[0])
    return {"baseline": _side_dict(b, extras), "target": _side_dict(t, extras),
            "diff_ms": (tt - bt) / 1e6, "ratio": None if not np.isfinite(r) else r,
            "status": BOTH if (b is not None and t is not None) else (BASE_ONLY if b is not None else TARGET_ONLY)}


def _records(df: pd.DataFrame, keys: list[str]) -> dict:
    return {tuple(rec[k] for k in keys): rec for rec in df.to_dict("records")}


def _ordered_union(b_keys, t_keys) -> list:
    seen = dict.fromkeys(b_keys)
    seen.update(dict.fromkeys(k for k in t_keys if k not in seen))
    return list(seen)


def _task_rows(bt: dict, tt: dict, prefix: tuple) -> list[dict]:
    bk = [k[-1] for k in bt if k[:-1] == prefix]
    tk = [k[-1] for k in tt if k[:-1] == prefix]
    rows = []
    for name in _ordered_union(bk, tk):
        p = _pair(bt.get(prefix + (name,)), tt.get(prefix + (name,)), extras=False)
        rows.append({"name": name, **p})
    return rows


@dataclass
class CommunicationResult:
    """Rows of the communication comparison; ``to_list()`` is the JSON the overview sends."""
    rows: list[dict]
    reference: list[tuple]            # per collective name: (name, base stats, target stats, tasks)
    notes: list[str] = field(default_factory=list)


    def to_list(self) -> list[dict]:
        return self.rows



def _group_sigs(ops: pd.DataFrame) -> list[GroupSig]:
    if not len(ops):
        return []
    g = ops.groupby("group", sort=False)
    first = g["start_ns"].min()
    colls = g["coll"].agg(lambda c: frozenset(x for x in c if x))
    return [GroupSig(str(k), int(first[k]), colls[k]) for k in first.index]


def _pair_groups(base, target, bo: pd.DataFrame, to: pd.DataFrame, notes: list) -> tuple[dict, dict]:
    """Row label of each side's group: itself, or "<base> ↔ <target>" for groups paired across names."""
    bs, ts = _group_sigs(bo), _group_sigs(to)
    matched = bool({g.name for g in bs} & {g.name for g in ts})
    lb = [g for g in bs if g.name not in {x.name for x in ts}]
    lt = [g for g in ts if g.name not in {x.name for x in bs}]
    same = str(base.meta.device) == str(target.meta.device)
    idx, why = pair_leftover_groups(lb, lt, same, matched)
    show = lambda n: n or "(no group)"  # noqa: E731
    bmap, tmap = {}, {}
    for i, j in idx:
        label = show(lb[i].name) + PAIR_SEP + show(lt[j].name)
        bmap[lb[i].name], tmap[lt[j].name] = label, label
    if idx:
        notes.append(pairing_note("Communication", [(show(lb[i].name), show(lt[j].name)) for i, j in idx], why))
    return bmap, tmap


def _relabel(df: pd.DataFrame, mapping: dict) -> pd.DataFrame:
    if not mapping or not len(df):
        return df
    group = [mapping.get(g, g) for g in df["group"].tolist()]
    code_of: dict = {}
    return df.assign(group=group, group_c=np.array([code_of.setdefault(g, len(code_of)) for g in group],
                                                   dtype=np.int64))


def compare_communication(base, target, base_step: int | None = None,
                          target_step: int | None = None) -> CommunicationResult:
    """Compare the collectives of two profiles (optionally each restricted to one step)."""
    bo, btk = _side(base, base_step, "baseline")
    to, ttk = _side(target, target_step, "target")
    notes: list[str] = []
    bmap, tmap = _pair_groups(base, target, bo, to, notes)
    bo, btk, to, ttk = _relabel(bo, bmap), _relabel(btk, bmap), _relabel(to, tmap), _relabel(ttk, tmap)
    by_name = {k: _records(_op_stats(o, ["coll"]), ["coll"]) for k, o in (("b", bo), ("t", to))}
    by_group = {k: _records(_op_stats(o, ["coll", "group"]), ["coll", "group"]) for k, o in (("b", bo), ("t", to))}
    tn = {k: _records(_task_stats(x, ["coll"]), ["coll", "task"]) for k, x in (("b", btk), ("t", ttk))}
    tg = {k: _records(_task_stats(x, ["coll", "group"]), ["coll", "group", "task"])
          for k, x in (("b", btk), ("t", ttk))}
    rows: list[dict] = []
    reference: list[tuple] = []
    for (name,) in _ordered_union(list(by_name["b"]), list(by_name["t"])):
        gb = [k[1] for k in by_group["b"] if k[0] == name]
        gt = [k[1] for k in by_group["t"] if k[0] == name]
        b, t = by_name["b"].get((name,)), by_name["t"].get((name,))
        reference.append((name, b, t, [(task, tn["b"].get((name, task)), tn["t"].get((name, task)))
                                       for task in _ordered_union([k[1] for k in tn["b"] if k[0] == name],
                                                                  [k[1] for k in tn["t"] if k[0] == name])]))
        if gb and gt and set(gb) != set(gt):
            rows.append({"name": name, "group": "", "aggregate": True, **_pair(b, t),
                         "tasks": _task_rows(tn["b"], tn["t"], (name,))})
            notes.append(f"{name}: the communication groups differ between the sides "
                         f"({', '.join(map(repr, gb))} vs {', '.join(map(repr, gt))}); "
                         "its first row adds up all groups, the rows after it are per group")
        for grp in _ordered_union(gb, gt):
            rows.append({"name": name, "group": grp, "aggregate": False,
                         **_pair(by_group["b"].get((name, grp)), by_group["t"].get((name, grp))),
                         "tasks": _task_rows(tg["b"], tg["t"], (name, grp))})
    return CommunicationResult(rows=rows, reference=reference, notes=notes)
