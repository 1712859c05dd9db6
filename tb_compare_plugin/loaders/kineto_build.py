"""Kineto loader, second half: the collected columns -> a :class:`Profile`.

Vectorised post-processing of a whole trace: op nesting per thread, steps, the backward thread,
op -> kernel links (correlation ids, then flows), NCCL collectives and memory events.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import jit
from ..model.intervals import nest
from ..model.keys import id_mask, member
from ..model.profile import KIND_COMPUTE, Profile, ProfileMeta, make_table
from .kineto_values import C_RUNTIME, CAT_CLASS, STEP_RE
from ..heap import give_back

def _group_ids(*keys: np.ndarray) -> np.ndarray:
    """Dense ids of equal key tuples (e.g. (pid, tid)), numbered in the tuples' sorted order."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    k = jit.kernels(n)
    if k is not None and len(keys) == 2:            # a few threads: one pass, then sort those
        ids, ua, ub, m = k.pair_ids(np.asarray(keys[0], np.int64), np.asarray(keys[1], np.int64), 256)
        if m >= 0:
            rank = np.empty(m, np.int64)
            rank[np.lexsort((ub, ua))] = np.arange(m)
            return rank[ids]
    order = np.lexsort(keys[::-1])
    new = np.zeros(n, bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    g = np.empty(n, np.int64)
    g[order] = np.cumsum(new) - 1
    return g


def _innermost(op_g, op_start, op_end, op_parent, g, t) -> np.ndarray:
    """Row of the innermost op of group ``g`` (a thread) containing time ``t``, or -1."""
    cand = np.full(len(t), -1, np.int64)
    if not len(op_g) or not len(t):
        return cand
    order = np.lexsort((op_start, op_g))
    sg, ss = op_g[order], op_start[order]
    for grp in np.unique(g).tolist():                 # one searchsorted per thread
        q = np.flatnonzero(g == grp)
        lo, hi = np.searchsorted(sg, grp, "left"), np.searchsorted(sg, grp, "right")
        if lo == hi:
            continue
        pos = np.searchsorted(ss[lo:hi], t[q], "right") - 1
        ok = pos >= 0
        cand[q[ok]] = order[lo + pos[ok]]
    for _ in range(1024):                             # climb while the candidate ended before t
        miss = (cand >= 0) & (op_end[np.maximum(cand, 0)] < t)
        if not miss.any():
            break
        cand[miss] = op_parent[cand[miss]]
    return cand


# the general decoder parsing less than this (~0.05 s of CPU) is not worth a warning: the tables
# are the same either way, only the time differs (small hand-made or damaged traces)
FALLBACK_NOTE_BYTES = 4 << 20


def build_profile(col, outside: dict, path: str) -> Profile:
    sym = col.sym
    meta = ProfileMeta(format="trace-json", framework="PyTorch", path=path, files=[path])
    tables = {}
    # with a hand-off (born columns), the NPU-only kernel columns (~25 MB of one value a 1 GB trace)
    # are read-only constant columns, never written, recorded by value by the hand-off's put
    born = getattr(col, "born", None)
    fill = born.filled if born is not None else None

    # ops: nesting per (pid, tid), steps, backward thread
    o = col.columns("ops")
    n_ops = col.rows.get("ops", 0)
    rtcorr = o.pop("_rtcorr", np.zeros(0, np.int64))
    # the kernels' launching ops by correlation id first: the runtime ops' ids and, when every
    # kernel is linked that way, the flow events leave before the nesting's temporaries come
    k = col.columns("kernels")
    n_k = col.rows.get("kernels", 0)
    kpid, ktid = k.pop("_pid", None), k.pop("_tid", None)
    launch = _launch_by_corr(rtcorr, k["corr"], n_k) if n_k else None
    del rtcorr
    flows = None
    if n_k and n_ops and (launch < 0).any() and col.rows.get("_flows"):
        flows = col.columns("_flows")
    else:
        col.columns("_flows")       # not needed: its columns go now (~30 MB on a 1 GB trace)
        kpid = ktid = None
    give_back()                     # the parse's freed heap (scanner tables, ...) before the nesting
    o_end = o["start_ns"] + o["dur_ns"] if n_ops else np.zeros(0, np.int64)
    parent, depth = (nest(o["start_ns"], o_end, _group_ids(o["pid"], o["tid"])) if n_ops
                     else (np.zeros(0, np.int64), np.zeros(0, np.int16)))

    fb = col.columns("_fwdbwd")
    bwd_tid = None
    if len(fb.get("ts", ())):
        f_rows = np.flatnonzero(~fb["is_s"])
        if len(f_rows):
            bwd_tid = int(fb["tid"][f_rows[0]])
    meta.bwd_tid = bwd_tid
    if n_ops:
        tables["ops"] = make_table("ops", **o, parent=parent, depth=depth, fill=fill,
                                   is_backward=(o["tid"] == bwd_tid) if bwd_tid is not None else None)

    rt_cats = sym.ids_matching(lambda s: CAT_CLASS.get(s.lower()) == C_RUNTIME)
    is_runtime = id_mask(o["cat"], rt_cats) if n_ops else np.zeros(0, bool)
    step_ids = sym.ids_matching(lambda s: s.startswith("ProfilerStep#") and STEP_RE.search(s) is not None)
    st_rows = np.flatnonzero(id_mask(o["name"], step_ids) & ~is_runtime) if n_ops and len(step_ids) else []
    if len(st_rows):
        step_no = np.array([int(STEP_RE.search(sym.string(i)).group(1)) for i in o["name"][st_rows]])
        tables["steps"] = make_table("steps", step=step_no, start_ns=o["start_ns"][st_rows],
                                     end_ns=o_end[st_rows])

    # kernels: links to launching ops, steps, kind
    if n_k:
        if flows is not None:
            _link_by_flows(flows, launch, k["start_ns"], kpid, ktid, o, depth, is_runtime, meta)
            del flows
        linked = launch >= 0
        flow_start = np.where(linked, o["start_ns"][np.maximum(launch, 0)] if n_ops else -1, -1)
        kstep = np.full(n_k, -1, np.int64)
        if "steps" in tables and linked.any():
            stp = tables["steps"]
            ss, se, sn = (stp[c].to_numpy() for c in ("start_ns", "end_ns", "step"))
            so = np.argsort(ss, kind="stable")
            i = np.searchsorted(ss[so], flow_start[linked], "right") - 1
            ok = (i >= 0) & (flow_start[linked] <= se[so][np.maximum(i, 0)])
            kstep[np.flatnonzero(linked)[ok]] = sn[so][i[ok]]
        tables["kernels"] = make_table("kernels", **k, launch_op=launch, flow_start_ns=flow_start, fill=fill,
                                       step=kstep)
        comp = k["kind"] == KIND_COMPUTE
        if comp.any():
            vals, cnt = np.unique(k["stream"][comp], return_counts=True)
            meta.compute_stream = int(vals[np.argmax(cnt)])
        c = col.columns("comm_ops")
        if col.rows.get("comm_ops"):
            kr = c.pop("kernel")
            tables["comm_ops"] = make_table("comm_ops", **c, kernel=kr, name=k["name"][kr],
                                            start_ns=k["start_ns"][kr], dur_ns=k["dur_ns"][kr],
                                            launch_op=launch[kr])
    meta.device = "GPU" if n_k else "CPU"

    # python functions
    p = col.columns("pyfuncs")
    if col.rows.get("pyfuncs"):
        pend = p["start_ns"] + p["dur_ns"]
        pp, pd_ = nest(p["start_ns"], pend, _group_ids(p["pid"], p["tid"]))
        mod_ids = sym.ids_matching(lambda s: s.startswith("nn.Module:"))
        tables["pyfuncs"] = make_table("pyfuncs", **p, parent=pp, depth=pd_,
                                       is_module=id_mask(p["name"], mod_ids))

    # fwd -> bwd flow pairs
    if col.rows.get("_fwdbwd"):
        tables["fwdbwd"] = _pair_fwdbwd(fb)

    # memory
    if col.rows.get("_mem"):
        _memory(col.columns("_mem"), tables, o, o_end, parent, meta.warnings)

    fill_meta(meta, outside, col)
    return Profile(symbols=sym, meta=meta, tables=tables)


def _launch_by_corr(rtcorr: np.ndarray, corr: np.ndarray, n_k: int) -> np.ndarray:
    """Row of the runtime op whose correlation id each kernel carries (the first such op), or -1."""
    launch = np.full(n_k, -1, np.int64)
    rt = np.flatnonzero(rtcorr >= 0)
    k = jit.kernels(len(rt) + n_k)
    if len(rt) and k is not None and rtcorr.dtype == np.int64 and corr.dtype == np.int64:
        v = rtcorr[rt]              # both nearly in order in a trace: two cheap stable sorts, one merge
        k.first_match(v, np.argsort(v, kind="stable"), rt, corr, np.argsort(corr, kind="stable"), launch)
        return launch
    if len(rt):
        u, first = np.unique(rtcorr[rt], return_index=True)
        pos = np.clip(np.searchsorted(u, corr), 0, len(u) - 1)
        hit = (corr >= 0) & (u[pos] == corr)
        launch[hit] = rt[first[pos[hit]]]
    return launch


def _pair_fwdbwd(fb: dict) -> pd.DataFrame:
    df = pd.DataFrame({"id": fb["id"], "s": fb["is_s"], "ts": fb["ts"], "pid": fb["pid"],
                       "tid": fb["tid"]})
    df["row"] = np.arange(len(df))
    s = df[df["s"] & (df["id"] != -1)].drop_duplicates("id")
    f = df[~df["s"] & (df["id"] != -1)].drop_duplicates("id")
    m = s.merge(f, on="id", suffixes=("_s", "_f")).sort_values("row_s")
    return make_table("fwdbwd", start_ns=m["ts_s"].to_numpy(), start_pid=m["pid_s"].to_numpy(),
                      start_tid=m["tid_s"].to_numpy(), end_ns=m["ts_f"].to_numpy(),
                      end_pid=m["pid_f"].to_numpy(), end_tid=m["tid_f"].to_numpy())


def _link_by_flows(fl, launch, k_start, kpid, ktid, o, depth, is_runtime, meta) -> None:
    """Fallback link for kernels without a correlation match: s end on the op, f end on the kernel."""
    todo = np.flatnonzero(launch < 0)
    if not len(todo) or not len(o.get("start_ns", ())):
        return
    ids, is_s, ts = fl["id"], fl["is_s"], fl["ts"]
    # only the f ends at a start time of one of these kernels, and the s ends of their ids
    f = np.flatnonzero(~is_s & (ids != -1) & member(ts, k_start[todo]))
    s = np.flatnonzero(is_s & member(ids, ids[f]))
    f = pd.DataFrame({"id": ids[f], "pid_f": fl["pid"][f], "tid_f": fl["tid"][f], "ts_f": ts[f]})
    s = pd.DataFrame({"id": ids[s], "pid_s": fl["pid"][s], "tid_s": fl["tid"][s], "ts_s": ts[s],
                      "srow": s}).drop_duplicates("id")
    kd = pd.DataFrame({"krow": todo, "pid_f": kpid[todo], "tid_f": ktid[todo], "ts_f": k_start[todo]})
    # of several flows ending on a kernel, the one whose s end comes first in the file
    kd = kd.merge(f, on=["pid_f", "tid_f", "ts_f"]).merge(s, on="id")
    kd = kd.sort_values(["krow", "srow"], kind="stable").drop_duplicates("krow")
    if not len(kd):
        return
    # several ops can start at the flow's ts: prefer the outermost runtime call, else the deepest op
    rank = np.where(is_runtime, depth.astype(np.int64), (1 << 20) - depth.astype(np.int64))
    od = pd.DataFrame({"orow": np.arange(len(o["start_ns"])), "pid_s": o["pid"], "tid_s": o["tid"],
                       "ts_s": o["start_ns"], "rank": rank})
    od = od.sort_values(["rank", "orow"]).drop_duplicates(["pid_s", "tid_s", "ts_s"])
    kd = kd.merge(od, on=["pid_s", "tid_s", "ts_s"])
    launch[kd["krow"].to_numpy()] = kd["orow"].to_numpy()
    if len(kd):
        meta.warnings.append(f"{len(kd):,} kernels had no correlation id match and were linked to their "
                             "launching op through flow events")


def _memory(m, tables, o, o_end, parent, warnings: list) -> None:
    """[memory] events (Device Id >= 0): one mem_records row each; alloc/free pairs per address."""
    keep = np.flatnonzero(m["dev"] >= 0)
    ts, dev, nb, addr = m["ts"][keep], m["dev"][keep], m["nbytes"][keep], m["addr"][keep]
    alloc, res = m["alloc"][keep].astype(float), m["res"][keep].astype(float)
    _rebuild_totals(ts, dev, nb, alloc, res, warnings)
    tables["mem_records"] = make_table("mem_records", ts_ns=ts, device=dev, allocated_bytes=alloc,
                                       reserved_bytes=res)
    ev = np.flatnonzero(nb != 0)
    if not len(ev):
        return
    order = ev[np.lexsort((ev, ts[ev], addr[ev], dev[ev]))]
    nxt = np.full(len(order), -1, np.int64)
    same = (dev[order][1:] == dev[order][:-1]) & (addr[order][1:] == addr[order][:-1])
    nxt[:-1] = np.where(same, order[1:], -1)
    is_alloc = nb[order] > 0
    a_rows, a_next = order[is_alloc], nxt[is_alloc]
    has_next = a_next >= 0
    nxt_b = np.where(has_next, nb[np.maximum(a_next, 0)], 0)
    freed = has_next & (nxt_b < 0) & (-nxt_b == nb[a_rows])
    dropped = has_next & (nxt_b < 0) & ~freed
    a_rows, a_next, freed = a_rows[~dropped], a_next[~dropped], freed[~dropped]
    srt = np.argsort(a_rows, kind="stable")
    a_rows, a_next, freed = a_rows[srt], a_next[srt], freed[srt]
    release = np.where(freed, ts[np.maximum(a_next, 0)], -1)
    op = np.full(len(a_rows), -1, np.int64)
    n_ops = len(o.get("start_ns", ()))
    if n_ops and len(a_rows):
        # map the memory events' (pid, tid) into the ops' group ids
        g_all = _group_ids(np.concatenate([o["pid"], m["pid"][keep][a_rows]]),
                           np.concatenate([o["tid"], m["tid"][keep][a_rows]]))
        op = _innermost(g_all[:n_ops], o["start_ns"], o_end, parent, g_all[n_ops:], ts[a_rows])
    name = np.where(op >= 0, o["name"][np.maximum(op, 0)] if n_ops else 0, 0)
    tables["mem_allocs"] = make_table("mem_allocs", name=name, bytes=nb[a_rows], alloc_ns=ts[a_rows],
                                      release_ns=release, op=op, device=dev[a_rows])


def _rebuild_totals(ts, dev, nb, alloc, res, warnings: list) -> None:
    """Old traces (PyTorch 1.8/1.9) give each device [memory] event its signed ``Bytes`` but no
    ``Total Allocated``: on each device that has none, allocated-over-time is the running sum of
    ``Bytes`` in time order (file order at equal times), filled into ``alloc`` in place.

    Frees of memory allocated before the capture can take that sum below 0; the device's curve is
    then raised so its lowest point is 0 (a lower bound) and the warning says by how much.
    ``Total Reserved`` cannot be derived from ``Bytes`` (the caching allocator's segments are not
    in the events): when absent it stays unknown (NaN) and the warning says so.  CPU events
    (Device Id -1) are not in ``mem_records`` at all.
    """
    n_events, raised = 0, []
    for d in np.unique(dev).tolist():
        rows = np.flatnonzero(dev == d)
        if np.isfinite(alloc[rows]).any():
            continue
        rows = rows[np.argsort(ts[rows], kind="stable")]
        run = np.cumsum(nb[rows].astype(np.int64))
        low = int(run.min())
        if low < 0:
            run -= low
            raised.append(f"device {d} by {-low / (1 << 20):,.1f} MiB")
        alloc[rows] = run
        n_events += len(rows)
    if not n_events:
        return
    msg = (f"[memory] events without Total Allocated: allocated memory over time was reconstructed "
           f"from their Bytes (a running sum per device over {n_events:,} events)")
    if raised:
        msg += ("; frees of memory allocated before the capture took the sum below 0, so the curve was "
                "raised to start at 0 (a lower bound): " + ", ".join(raised))
    if not np.isfinite(res).any():
        msg += "; they carry no Total Reserved either, so reserved memory is unknown"
    warnings.append(msg)


def fill_meta(meta: ProfileMeta, outside: dict, col=None) -> None:
    di = outside.get("distributedInfo")
    if isinstance(di, dict):
        r = di.get("rank")
        if isinstance(r, int) or (isinstance(r, str) and r.isdigit()):
            meta.rank = int(r)
        for pg in di.get("pg_config") or []:
            if isinstance(pg, dict) and "pg_name" in pg:
                meta.pg_names[str(pg["pg_name"])] = str(pg.get("pg_desc", pg["pg_name"]))
    dp = outside.get("deviceProperties")
    if isinstance(dp, list) and dp and isinstance(dp[0], dict) and dp[0].get("name"):
        meta.device_name = str(dp[0]["name"])
    if isinstance(dp, list):
        meta.device_props = [{k: v for k, v in d.items() if isinstance(v, (str, int, float, bool))}
                             for d in dp if isinstance(d, dict)]
    if col is None:
        return
    w = meta.warnings
    if col.n_bad_ts:
        w.append(f"{col.n_bad_ts:,} events skipped: missing or unreadable ts")
    if col.n_skipped:
        w.append(f"{col.n_skipped:,} events skipped: not a JSON object or fields of the wrong type")
    if col.n_fixed:
        w.append(f"{col.n_fixed:,} events had fields of an unexpected type; those fields were ignored")
    for label, n in col.bad_dur.items():
        w.append(f"{n:,} {label} events have a negative, missing or non-numeric dur: loaded with duration 0")
    if col.n_no_stream:
        w.append(f"{col.n_no_stream:,} GPU kernel/memcpy/memset events have no readable args.stream: "
                 "their tid is used as the stream")
    if col.n_no_device:
        w.append(f"{col.n_no_device:,} GPU kernel/memcpy/memset events have no readable args.device: "
                 "their pid is used as the device")
    for label, n in col.bad_args.items():
        what = "a list of three integers" if label in ("grid", "block") else "a number"
        w.append(f"{n:,} GPU kernel events have a {label!r} arg that is not {what}: read as unknown")
    for label, n in col.neg_args.items():
        w.append(f"{n:,} GPU kernel events have a negative {label!r}: read as unknown")
    w.extend(col.ids.warnings())
    if col.fast_missing:
        w.append(f"parsed with the general decoder, not the fast parser ({col.fast_missing}): "
                 f"the same tables, several times slower")
    if col.fallbacks and col.fallback_bytes >= FALLBACK_NOTE_BYTES:
        n = sum(col.fallbacks.values())
        why = "; ".join(f"{reason} ({k:,})" for reason, k in col.fallbacks.items())
        w.append(f"{n:,} of {n + col.n_fast:,} chunks parsed with the general decoder, not the fast parser "
                 f"({why}): the same tables, slower")


# ----------------------------------------------------------------------------- API
