"""Memory comparison per operator: the reference's MemoryCompare / MemoryCompareStatistic.

Each allocation (``mem_allocs``) is placed in the side's torch-op tree at its allocation time
(``cann::`` rows at the start of the Enqueue whose Dequeue was running when they allocated)
and credited to the innermost op open then.  A top-layer op's memory is the sum over its whole
subtree.  Top-layer ops are paired exactly as operator compare pairs them; MemoryCompare lists
those pairs in order, MemoryCompareStatistic groups each side's ops by raw name.

The tree, the top-layer ops and their pairs are the operator engine's (``optree.OpTree``: host
ops nested per thread, ``ProfilerStep#*`` replaced by its children; ``operator.match_ops``), so
memory rows line up with OperatorCompare rows one for one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..model.derived import derived
from ..model.keys import value_at_key
from .per_step import divided
from .sidebyside import BOTH, BASE_ONLY, TARGET_ONLY, ratio

KB = 1024.0



# ----------------------------------------------------------------------------- op tree

def op_tree(profile):
    """The side's host-op tree, shared with the operator engine (``engines.optree.OpTree``)."""
    from .optree import tree_of
    return tree_of(profile)


def _bfs_rank(tree) -> np.ndarray:
    """Breadth-first visiting rank of each node (level by level, children in start order)."""
    n = tree.n
    rank = np.zeros(n, np.int64)
    nxt = 0
    for d in range(int(tree.depth.max()) + 1 if n else 0):
        lvl = np.flatnonzero(tree.depth == d)
        key = rank[np.maximum(tree.parent[lvl], 0)] if d else np.zeros(len(lvl), np.int64)
        lvl = lvl[np.lexsort((lvl, tree.start[lvl], key))]
        rank[lvl] = np.arange(nxt, nxt + len(lvl))
        nxt += len(lvl)
    return rank


def _top_index(tree, top: np.ndarray, node: np.ndarray) -> np.ndarray:
    """Index into ``top`` of the top-layer node whose subtree holds each node (-1 none).
    Subtrees are pre-order ranges [k, k + size[k])."""
    o = np.argsort(top, kind="stable")
    ts = top[o]
    k = np.searchsorted(ts, node, side="right") - 1
    ok = (node >= 0) & (k >= 0)
    kk = np.maximum(k, 0)
    ok &= node < ts[kk] + tree.size[ts[kk]] if len(ts) else np.zeros(len(node), bool)
    return np.where(ok, o[kk] if len(ts) else -1, -1)


# ----------------------------------------------------------------------------- records

def placement_times(profile) -> np.ndarray:
    """Where each allocation sits in time for tree placement (ns; -1 = cannot be placed).

    ``cann::`` rows were allocated on the device-queue thread: they take the start of the
    Enqueue whose Dequeue (same correlation id) was running at allocation time.
    """
    ma = profile.mem_allocs
    t = ma["alloc_ns"].to_numpy(np.int64).copy()
    if not len(ma):
        return t
    sym = profile.symbols
    cann_ids = sym.ids_matching(lambda s: "cann::" in s)
    cann = np.isin(ma["name"].to_numpy(), cann_ids) & (t >= 0)
    if not cann.any():
        return t
    ops = profile.ops
    cat = ops["cat"].to_numpy()
    deq = ops[cat == sym.lookup("dequeue")].sort_values("start_ns", kind="stable")
    enq = ops[cat == sym.lookup("enqueue")]
    out = np.full(int(cann.sum()), -1, np.int64)
    if len(deq) and len(enq):
        ds = deq["start_ns"].to_numpy()
        de = ds + deq["dur_ns"].to_numpy()
        k = np.searchsorted(ds, t[cann], side="right") - 1
        ok = (k >= 0) & (t[cann] <= de[np.maximum(k, 0)])
        corr = np.where(ok, deq["corr"].to_numpy()[np.maximum(k, 0)], -1)
        at, found = value_at_key(enq["corr"].to_numpy(), enq["start_ns"].to_numpy(), corr, keep="last")
        out = np.where(ok & found, at, -1)
    t[cann] = out
    return t


def place_records(profile, tree) -> pd.DataFrame:
    """Per allocation: the tree node that allocated it (-1 = outside every op).

    GPU allocations carry their thread: the loader's per-thread innermost op (``mem_allocs.op``).
    Ascend rows have no thread: on each thread take the innermost op open at the placement time
    (the last op started at or before it, then up its ancestors to the first still open) and keep
    the one that started last: the reference's walk (spec c.1) without nesting across threads.
    """
    ma = profile.mem_allocs
    t = placement_times(profile)
    node = np.full(len(ma), -1, np.int64)
    if tree.n and len(ma):
        own = ma["op"].to_numpy(np.int64)
        if profile.meta.device == "GPU":
            node = np.where(own >= 0, tree.node_of_op[np.maximum(own, 0)], -1)
        todo = np.flatnonzero((node < 0) & (t >= 0))
        best_start = np.full(len(todo), -1, np.int64)
        tt = t[todo]
        for tid in np.unique(tree.tid):
            nodes = np.flatnonzero(tree.tid == tid)          # pre-order: start-sorted
            k = np.searchsorted(tree.start[nodes], tt, side="right") - 1
            cur = np.where(k >= 0, nodes[np.maximum(k, 0)], -1)
            live = np.flatnonzero(cur >= 0)
            while len(live):
                live = live[tree.end[cur[live]] < tt[live]]
                cur[live] = tree.parent[cur[live]]
                live = live[cur[live] >= 0]
            better = (cur >= 0) & (tree.start[np.maximum(cur, 0)] > best_start)
            node[todo[better]] = cur[better]
            best_start[better] = tree.start[cur[better]]
    return pd.DataFrame({"alloc": np.arange(len(ma)), "t_ns": t, "node": node})


def side_placement(profile, tree=None) -> pd.DataFrame:
    """``place_records(profile, tree)`` (``tree``: the profile's own op tree, built when not
    given), built once per profile in the derived-data cache: a per-side reduction
    (``engines.side_work``) the CLI computes in the process that parsed the side.  Callers must
    not change the frame in place."""
    return derived(profile, "placement", lambda: place_records(profile, tree if tree is not None else op_tree(profile)))


def placed_op_rows(profile, tree=None, node: np.ndarray | None = None) -> np.ndarray:
    """Row in ops of the op each allocation was placed under (-1 none), kept in the derived-data
    cache: the memory and peak engines both need it, and the op tree it comes from is costly to
    build.  ``node``: the ``place_records`` nodes of ``tree`` when the caller has them."""
    def build():
        nonlocal tree, node
        if node is None:
            tree = tree if tree is not None else op_tree(profile)
            node = side_placement(profile, tree)["node"].to_numpy()
        return np.where(node >= 0, tree.op_rows[np.maximum(node, 0)], -1) if tree.n else node
    return derived(profile, "placed_op_rows", build)


# ----------------------------------------------------------------------------- per top-layer op

ALLOC_COLS = ["slot", "name", "alloc_ns", "release_ns", "duration_ns", "size_kb"]


def op_memory(profile, tree=None, step: int | None = None, details: bool = True,
              top: np.ndarray | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per op, allocations).  Per op: one row per top-layer node (``top``, default
    ``tree.top_layer(step)``): op (row in ops), node, name, input shape/type, tid, start_ns,
    size_kb, duration_ms (Σ release − alloc), n_allocs, all over the node's subtree.
    Allocations (``details``; else empty): every allocation credited to a row, in the reference's
    listing order (:func:`allocations`), with ``slot`` its row in the first frame."""
    tree = tree if tree is not None else op_tree(profile)
    top = np.asarray(tree.top_layer(step) if top is None else top, dtype=np.int64)
    ops = profile.ops
    strings = profile.symbols.as_array()
    n = len(top)
    size, dur = np.zeros(n), np.zeros(n)
    cnt = np.zeros(n, np.int64)
    listing = pd.DataFrame({c: [] for c in ALLOC_COLS})
    ma = profile.mem_allocs
    if len(ma) and n:
        pl = side_placement(profile, tree)
        node = pl["node"].to_numpy()
        placed_op_rows(profile, tree, node)
        ti = _top_index(tree, top, node)
        sel = np.flatnonzero(ti >= 0)
        b = ma["bytes"].to_numpy(np.int64)[sel] / KB
        a = ma["alloc_ns"].to_numpy(np.int64)[sel]
        r = ma["release_ns"].to_numpy(np.int64)[sel]
        d = np.where((a > 0) & (r > 0), r - a, 0)
        np.add.at(size, ti[sel], b)
        np.add.at(dur, ti[sel], d / 1e6)
        np.add.at(cnt, ti[sel], 1)
        if details and len(sel):
            listing = allocations(profile, tree, sel, node[sel], ti[sel], pl["t_ns"].to_numpy()[sel], b, a, r, d)
    rows = tree.op_rows[top] if n else np.zeros(0, np.int64)
    shapes = ops["input_shapes"].to_numpy()[rows] if n else np.zeros(0, np.int32)
    types = ops["input_types"].to_numpy()[rows] if n else np.zeros(0, np.int32)
    return pd.DataFrame({
        "op": rows, "node": top, "name": strings[ops["name"].to_numpy()[rows]] if n else np.zeros(0, object),
        # N/A when the op recorded neither (as the reference); "" when only the other one
        "input_shape": np.where(shapes > 0, strings[shapes], np.where(types > 0, "", "N/A")) if n
        else np.zeros(0, object),
        "input_type": np.where(types > 0, strings[types], np.where(shapes > 0, "", "N/A")) if n
        else np.zeros(0, object),
        "tid": tree.tid[top] if n else np.zeros(0, np.int64),
        "start_ns": tree.start[top] if n else np.zeros(0, np.int64),
        "size_kb": size, "duration_ms": dur, "n_allocs": cnt}), listing


def allocations(profile, tree, sel, node, top, t_ns, kb, a, r, d) -> pd.DataFrame:
    """The allocations behind each top-layer op (MemoryCompare's Allocated Details, whose text
    ``presenters.reference_rows`` writes): nodes breadth-first, each node's allocations in
    placement-time order (the reference's listing order); the name shown is the ``cann::`` row's
    own, else the op it was placed in."""
    strings = profile.symbols.as_array()
    raw = profile.mem_allocs["name"].to_numpy()[sel]
    cann_ids = profile.symbols.ids_matching(lambda s: "cann::" in s)
    owner = profile.ops["name"].to_numpy()[tree.op_rows[node]]
    shown = np.where(np.isin(raw, cann_ids), raw, owner)
    rank = _bfs_rank(tree)[node]
    order = np.lexsort((sel, t_ns, rank, top))
    return pd.DataFrame({"slot": top[order], "name": strings[shown[order]], "alloc_ns": a[order],
                         "release_ns": r[order], "duration_ns": d[order], "size_kb": kb[order]})


# ----------------------------------------------------------------------------- comparison

@dataclass
class MemoryResult:
    pairs: pd.DataFrame     # one row per top-layer op pair, matching order
    stats: pd.DataFrame     # one row per raw op name, Diff Memory descending
    base_device: str = "GPU"
    target_device: str = "GPU"
    # per side ("b", "t"): the allocations behind each pair (op_memory's second frame; a pair's
    # ``{p}_slot`` is its ``slot``), and how that side's source writes times (ProfileMeta facts)
    allocations: dict = field(default_factory=dict)
    us_text: dict = field(default_factory=dict)
    unreleased_text: dict = field(default_factory=dict)


PAIR_COLS = ["order", "name", "status", "b_op", "b_name", "b_input_shape", "b_input_type", "b_slot",
             "b_size_kb", "b_duration_ms", "b_n_allocs", "t_op", "t_name", "t_input_shape", "t_input_type",
             "t_slot", "t_size_kb", "t_duration_ms", "t_n_allocs", "diff_kb", "diff_ratio"]
STAT_COLS = ["name", "status", "b_duration_ms", "b_memory_mb", "b_count", "t_duration_ms", "t_memory_mb",
             "t_count", "diff_mb", "diff_ratio"]


def _empty() -> MemoryResult:
    return MemoryResult(pd.DataFrame(columns=PAIR_COLS), pd.DataFrame(columns=STAT_COLS))


def _side(frame: pd.DataFrame, idx: np.ndarray, p: str) -> dict:
    take = np.maximum(idx, 0)
    has = idx >= 0
    out = {}
    out[f"{p}_slot"] = np.where(has, idx, -1).astype(np.int64)
    for col, fill in (("op", -1), ("name", None), ("input_shape", None), ("input_type", None),
                      ("size_kb", 0.0), ("duration_ms", 0.0), ("n_allocs", 0)):
        v = frame[col].to_numpy()[take] if len(frame) else np.zeros(len(idx), object)
        if col == "op":
            v = np.where(has, v, -1).astype(np.int64)
        elif fill is None or isinstance(fill, str):
            v = np.where(has, v.astype(object), fill)
        else:
            v = np.where(has, v, fill)
        out[f"{p}_{col}"] = v
    return out


def _options(options):
    from .options import Options
    if options is None or isinstance(options, Options):
        return options or Options()
    names = Options.__dataclass_fields__
    if isinstance(options, dict):
        return Options(**{k: v for k, v in options.items() if k in names})
    return Options(**{k: getattr(options, k) for k in names if hasattr(options, k)})


def compare_memory(base, target, options=None, matched=None, divide=(1, 1)) -> MemoryResult:
    """Per-op allocation comparison over the operator engine's pairs.

    ``options``: ``comparison.Options`` (or a dict / object with its field names): steps, name
    map, input-shape keys, max_kernel_num, disable_details.  ``matched``: an
    ``operator.match_ops`` result to reuse (its trees and node pairs); computed when not given.
    ``divide``: (baseline, target) step counts the statistic's totals and counts are divided by
    (``engines.per_step``); the per-pair rows stay per call.
    """
    if not (base.has()["memory"] or target.has()["memory"]):
        return _empty()
    from .operator import match_ops
    from .scope_tree import op_view
    opts = _options(options)
    base, target = op_view(base), op_view(target)   # the profiles the operator pairs were made on
    if matched is None:
        matched = match_ops(base, target, opts, trees=(op_tree(base), op_tree(target)))
    cols, listings = {}, {}
    for p, prof, tree, nodes in (("b", base, matched.base, matched.b_nodes), ("t", target, matched.target,
                                                                             matched.t_nodes)):
        nodes = np.asarray(nodes, dtype=np.int64)
        uniq = np.unique(nodes[nodes >= 0])
        mem, listings[p] = op_memory(prof, tree, details=not opts.disable_details, top=uniq)
        cols.update(_side(mem, np.where(nodes >= 0, np.searchsorted(uniq, nodes), -1), p))
    bi, ti = np.asarray(matched.b_nodes) >= 0, np.asarray(matched.t_nodes) >= 0
    df = pd.DataFrame({"order": np.arange(1, len(bi) + 1)})
    for k, v in cols.items():
        df[k] = v
    df["name"] = np.where(bi, df["b_name"], df["t_name"])
    df["status"] = np.where(bi & ti, BOTH, np.where(bi, BASE_ONLY, TARGET_ONLY))
    df["diff_kb"] = df["t_size_kb"].astype(float) - df["b_size_kb"].astype(float)
    df["diff_ratio"] = ratio(df["t_size_kb"], df["b_size_kb"])
    return MemoryResult(df[PAIR_COLS], _statistic(df, divide), base.meta.device, target.meta.device, listings,
                        {"b": base.meta.us_text, "t": target.meta.us_text},
                        {"b": base.meta.unreleased_text, "t": target.meta.unreleased_text})


def _statistic(df: pd.DataFrame, divide=(1, 1)) -> pd.DataFrame:
    """Group each side's paired ops by raw name; baseline names first, then target-only."""
    def agg(p):
        s = df[df[f"{p}_op"] >= 0]
        g = s.groupby(f"{p}_name", sort=False).agg(
            duration_ms=(f"{p}_duration_ms", "sum"), memory_mb=(f"{p}_size_kb", "sum"),
            count=(f"{p}_op", "size"))
        g["memory_mb"] = g["memory_mb"] / KB
        return g
    b, t = agg("b"), agg("t")
    names = list(b.index) + [x for x in t.index if x not in b.index]
    st = pd.DataFrame({"name": names})
    for p, g in (("b", b), ("t", t)):
        for c in ("duration_ms", "memory_mb", "count"):
            st[f"{p}_{c}"] = g[c].reindex(names).fillna(0).to_numpy()
        st[f"{p}_count"] = st[f"{p}_count"].astype(np.int64)
    st["status"] = np.where(st["b_count"] > 0, np.where(st["t_count"] > 0, BOTH, BASE_ONLY), TARGET_ONLY)
    for p, div in zip(("b", "t"), divide):
        for c in ("duration_ms", "memory_mb", "count"):
            st[f"{p}_{c}"] = divided(st[f"{p}_{c}"], div)
    st["diff_mb"] = st["t_memory_mb"] - st["b_memory_mb"]
    st["diff_ratio"] = ratio(st["t_memory_mb"], st["b_memory_mb"])
    st = st.iloc[np.argsort(-st["diff_mb"].round(2).to_numpy(), kind="stable")].reset_index(drop=True)
    return st[STAT_COLS]
