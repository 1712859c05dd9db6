"""Operator comparison (OperatorCompare / OperatorCompareStatistic, spec c).

Per side, the top-layer host ops (c.3 step 1, ``OpTree.top_layer``) are cut into forward /
backward segments by thread when both sides know their autograd thread (c.3 step 2), each
segment pair is aligned on a key (op name through the name map, optionally + input shape; see
``name_map``), and with ``max_kernel_num`` a matched pair whose subtrees launch more kernels is
replaced by the alignment of its children (step 5).  Device time of an op = Σ of the device
events in its subtree, each attached once; besides the reference's columns it is split into
``*_comm_*`` (collectives) and ``*_compute_*`` (the rest), and ``diff_compute_*`` ranks compute
regressions without the all-reduce that the last AccumulateGrad happens to launch.

``match_ops`` (the aligned node pairs) is reused by the memory comparison.  Pure function of
two Profiles.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .options import Options
from .align import align, unmatched
from .name_map import NameMapper
from .optree import OpTree, none_for_missing, tree_of
from .scope_tree import op_view
from .per_step import divided
from .sidebyside import BASE_ONLY, BOTH, TARGET_ONLY, merge_sides, ratio



@dataclass
class Matched:
    """Aligned top-layer node pairs of two op trees (node index or -1), in matching order."""
    base: OpTree
    target: OpTree
    b_nodes: np.ndarray
    t_nodes: np.ndarray
    segment: np.ndarray         # segment pair index of each row
    bwd: np.ndarray             # row belongs to a backward-thread segment


def _shape_keys(tree: OpTree, nodes: np.ndarray) -> list[str]:
    shapes = tree.strings("input_shapes", nodes, missing="")
    return [s.replace(";\r\n", ";").replace(";\n", ";") for s in shapes.tolist()]


def _keys(tree: OpTree, nodes: np.ndarray, mapper: NameMapper, use_shape: bool) -> list[str]:
    # the ids of these nodes only (``as_array`` would copy every string of the profile: ~700
    # segments on an Ascend pair with 175 steps)
    names = tree.profile.symbols.strings(tree.name[nodes].tolist()) if len(nodes) else []
    keys = mapper.keys(names)
    if use_shape:
        keys = [k + "\x1f" + s for k, s in zip(keys, _shape_keys(tree, nodes))]
    return keys


def _segments(tree: OpTree, nodes: np.ndarray) -> list[tuple[bool, np.ndarray]]:
    """Runs of top-layer nodes on / off the backward thread (nodes are in start order)."""
    bwd_tid = tree.profile.meta.bwd_tid
    if not len(nodes):
        return []
    is_bwd = tree.tid[nodes] == bwd_tid
    cut = np.flatnonzero(is_bwd[1:] != is_bwd[:-1]) + 1
    return [(bool(is_bwd[idx[0]]), nodes[idx]) for idx in np.split(np.arange(len(nodes)), cut)]


def _pair_segments(bseg, tseg):
    """Segment pairing of spec c.3 step 2: (base nodes, target nodes, is_bwd) per pair."""
    empty = np.zeros(0, np.int64)
    if not bseg and not tseg:
        return []
    if not bseg or not tseg:
        return [(np.concatenate([s for _, s in bseg]) if bseg else empty,
                 np.concatenate([s for _, s in tseg]) if tseg else empty,
                 bool((bseg or tseg)[0][0]))]
    out = []
    bi = ti = 0
    if bseg[0][0] != tseg[0][0]:
        if len(bseg) > len(tseg):
            out.append((bseg[0][1], empty, bseg[0][0]))
            bi = 1
        else:
            out.append((empty, tseg[0][1], tseg[0][0]))
            ti = 1
    while bi < len(bseg):
        t = tseg[ti][1] if ti < len(tseg) else empty
        out.append((bseg[bi][1], t, bseg[bi][0]))
        bi += 1
        ti += 1
    while ti < len(tseg):
        out.append((empty, tseg[ti][1], tseg[ti][0]))
        ti += 1
    return out


def _align_nodes(bt: OpTree, tt: OpTree, bn, tn, mapper, opts: Options):
    if opts.disable_details:
        ai, ti = unmatched(len(bn), len(tn))
    else:
        ai, ti = align(_keys(bt, bn, mapper, opts.use_input_shape), _keys(tt, tn, mapper, opts.use_input_shape))
    return (np.where(ai >= 0, bn[np.maximum(ai, 0)] if len(bn) else -1, -1),
            np.where(ti >= 0, tn[np.maximum(ti, 0)] if len(tn) else -1, -1))


def _drill_down(bt: OpTree, tt: OpTree, b, t, mapper, opts: Options):
    """Replace pairs whose subtrees launch more than max_kernel_num kernels by their children."""
    limit = opts.max_kernel_num
    out_b, out_t = [], []
    stack = list(zip(b.tolist()[::-1], t.tolist()[::-1]))
    while stack:
        x, y = stack.pop()
        if x >= 0 and y >= 0:
            cx, cy = bt.children(x), tt.children(y)
            if len(cx) and len(cy) and max(bt.kernel_num[x], tt.kernel_num[y]) > limit:
                sb, stt = _align_nodes(bt, tt, cx, cy, mapper, opts)
                stack.extend(zip(sb.tolist()[::-1], stt.tolist()[::-1]))
                continue
        out_b.append(x)
        out_t.append(y)
    return np.array(out_b, dtype=np.int64), np.array(out_t, dtype=np.int64)


def match_ops(base, target, options: Options | None = None,
              trees: tuple[OpTree, OpTree] | None = None) -> Matched:
    """Aligned top-layer op pairs of two profiles (shared with the memory comparison)."""
    opts = options or Options()
    base, target = op_view(base), op_view(target)
    bt, tt = trees or (tree_of(base), tree_of(target))
    mapper = NameMapper.for_profiles(base, target, opts.op_name_map)
    bnodes, tnodes = bt.top_layer(opts.base_step), tt.top_layer(opts.target_step)
    if base.meta.bwd_tid is not None and target.meta.bwd_tid is not None:
        groups = _pair_segments(_segments(bt, bnodes), _segments(tt, tnodes))
    else:
        groups = [(bnodes, tnodes, False)]
    rb, rt, seg, bwd = [], [], [], []
    for g, (bn, tn, is_bwd) in enumerate(groups):
        if not len(bn) and not len(tn):
            continue
        b, t = _align_nodes(bt, tt, bn, tn, mapper, opts)
        if opts.max_kernel_num is not None:
            b, t = _drill_down(bt, tt, b, t, mapper, opts)
        rb.append(b)
        rt.append(t)
        seg.append(np.full(len(b), g, np.int64))
        bwd.append(np.full(len(b), is_bwd))
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
    return Matched(bt, tt, cat(rb, np.int64), cat(rt, np.int64), cat(seg, np.int64), cat(bwd, bool))


def _side(tree: OpTree, nodes: np.ndarray, prefix: str) -> dict:
    have = nodes >= 0
    safe = np.maximum(nodes, 0)
    us = (lambda ns: np.where(have, ns[safe] if tree.n else 0, 0) / 1000.0)
    dev = us(tree.kernel_ns)
    return {
        f"{prefix}_name": tree.strings("name", nodes),
        f"{prefix}_input_shape": tree.strings("input_shapes", nodes),
        f"{prefix}_input_type": tree.strings("input_types", nodes),
        # the op's own call stack, as the Module view shows it (None where the profile has none)
        f"{prefix}_call_stack": np.array([c or None for c in tree.strings("call_stack", nodes).tolist()],
                                         dtype=object),
        f"{prefix}_device_us": dev,
        f"{prefix}_compute_us": us(tree.compute_ns),
        f"{prefix}_comm_us": us(tree.comm_ns),
        f"{prefix}_kernel_count": np.where(have, tree.kernel_num[safe] if tree.n else 0, 0).astype(np.int64),
        f"{prefix}_op": np.where(have, tree.op_rows[safe] if tree.n else -1, -1).astype(np.int64),
    }


def _details(tree: OpTree, nodes: np.ndarray, limit: int | None = None) -> np.ndarray:
    """The kernel-detail texts of ``nodes`` (None where a side has no op), object dtype."""
    return np.array([d if k >= 0 else None for d, k in zip(tree.details_many(nodes, limit), nodes.tolist())],
                    dtype=object)


class OperatorResult:
    """The aligned pairs (``pairs``) and per-name statistics (``stats``) of an operator comparison.

    ``pairs``' kernel-detail columns (every device event under each op, one line each: ~80 MB
    of text a side on a 1 GB trace) are joined on first use, once; the statistics, the JSON and
    the routes never read them, so ``frame`` is the pairs without them, and
    :meth:`kernel_details` gives one side's texts cut to a length (the workbook's cells)."""

    def __init__(self, pairs: pd.DataFrame, stats: pd.DataFrame, base_device: str = "GPU",
                 target_device: str = "GPU", details_disabled: bool = False, sides=None) -> None:
        """``pairs``: with its detail columns, or (``sides``: ((baseline tree, nodes), (target
        tree, nodes))) without them, which are then made from the trees when asked for."""
        self.frame, self.stats = pairs, stats
        self.base_device, self.target_device, self.details_disabled = base_device, target_device, details_disabled
        self._sides = sides
        # the trees hold their profiles weakly: the texts are made from them, so they stay alive
        self._profiles = tuple(tree.profile for tree, _ in sides) if sides is not None else ()
        self._pairs = None if sides is not None else pairs
        self._lock = threading.Lock()

    @property
    def pairs(self) -> pd.DataFrame:
        """The aligned pairs with both sides' ``*_kernel_details`` (before ``*_device_us``)."""
        with self._lock:
            if self._pairs is None:
                df = self.frame.copy(deep=False)
                for p, (tree, nodes) in zip(("b", "t"), self._sides):
                    c = f"{p}_kernel_details"
                    df.insert(df.columns.get_loc(f"{p}_device_us"), c, _details(tree, nodes))
                    col = df[c].astype(object)      # (as ``none_for_missing``: insert infers a str dtype)
                    df[c] = col.where(col.notna(), None)
                self._pairs = df
            return self._pairs

    def kernel_details(self, prefix: str, limit: int | None = None) -> list:
        """Side ``prefix``'s ("b" / "t") detail texts in pair order, each cut to ``limit``
        characters (None where the side has no op)."""
        if self._sides is None or self._pairs is not None:
            col = self.pairs[f"{prefix}_kernel_details"].tolist()
            return col if limit is None else [d if d is None else d[:limit] for d in col]
        tree, nodes = self._sides[0 if prefix == "b" else 1]
        return _details(tree, nodes, limit).tolist()


def compare_operators(base, target, options: Options | None = None, matched: Matched | None = None,
                      divide=(1, 1)) -> OperatorResult:
    """Operator pairs and per-name statistics; ``matched``: a ``match_ops`` result to reuse;
    ``divide``: (baseline, target) step counts the statistics are divided by (``per_step``)."""
    opts = options or Options()
    m = matched if matched is not None else match_ops(base, target, opts)
    df = pd.DataFrame({**_side(m.base, m.b_nodes, "b"), **_side(m.target, m.t_nodes, "t")})
    hb, ht = m.b_nodes >= 0, m.t_nodes >= 0
    df["status"] = np.where(hb & ht, BOTH, np.where(hb, BASE_ONLY, TARGET_ONLY))
    df["diff_us"] = df["t_device_us"] - df["b_device_us"]
    df["diff_ratio"] = ratio(df["t_device_us"], df["b_device_us"])
    df["diff_compute_us"] = df["t_compute_us"] - df["b_compute_us"]
    df["diff_comm_us"] = df["t_comm_us"] - df["b_comm_us"]
    df["segment"] = m.segment
    df["phase"] = np.where(m.bwd, "backward", "forward")
    df.insert(0, "name", np.where(hb, df["b_name"], df["t_name"]))
    df = none_for_missing(df)
    return OperatorResult(df, operator_stats(df, divide, dict(opts.op_name_map)), base.meta.device,
                          target.meta.device, opts.disable_details,
                          sides=((m.base, m.b_nodes), (m.target, m.t_nodes)))


def _user_rows(names: pd.Series, user: dict) -> pd.Series:
    """The statistics row key of each raw name: its user-map key (the raw name without a map)."""
    return names.map(lambda n: user.get(n, n)) if user else names


def operator_stats(pairs: pd.DataFrame, divide=(1, 1), user: dict | None = None) -> pd.DataFrame:
    """OperatorCompareStatistic: per raw name and side, Σ device ms (and its compute / communication
    parts) and count; by (total) diff descending, as the reference.  ``user``: the user's name map;
    names it maps onto one key share one row, named ``"<baseline name> ↔ <target name>"`` when the
    names differ (the match editor's pairs; without a map every row is one raw name)."""
    user = user or {}

    def side(p):
        cols = {f"{p}_name": "raw", f"{p}_device_us": "dev", f"{p}_compute_us": "cmp", f"{p}_comm_us": "com"}
        d = pairs.loc[pairs[f"{p}_op"] >= 0, list(cols)].rename(columns=cols)
        d["name"] = _user_rows(d["raw"], user)
        raw = {"raw": ("raw", lambda s: tuple(dict.fromkeys(s)))} if user else {}
        g = d.groupby("name", sort=False).agg(device_ms=("dev", "sum"), count=("dev", "size"),
                                              compute_ms=("cmp", "sum"), comm_ms=("com", "sum"),
                                              **raw).reset_index()
        for c in ("device_ms", "compute_ms", "comm_ms"):
            g[c] = g[c] / 1000.0
        return g
    st = merge_sides(side("b"), side("t"), ["name"])
    if user:                    # a row the map merged: its raw names, baseline first
        raw_b, raw_t = st.pop("b_raw"), st.pop("t_raw")
        def shown(key, rb, rt):
            names = list(dict.fromkeys((rb if isinstance(rb, tuple) else ()) + (rt if isinstance(rt, tuple) else ())))
            return names[0] if len(names) == 1 else " ↔ ".join(names) if names else key
        st["name"] = [shown(k, rb, rt) for k, rb, rt in zip(st["name"], raw_b, raw_t)]
    for p in ("b", "t"):
        for c in ("device_ms", "compute_ms", "comm_ms"):
            st[f"{p}_{c}"] = st[f"{p}_{c}"].fillna(0.0)
        st[f"{p}_count"] = st[f"{p}_count"].fillna(0).astype("int64")
    for p, div in zip(("b", "t"), divide):
        for c in ("device_ms", "compute_ms", "comm_ms", "count"):
            st[f"{p}_{c}"] = divided(st[f"{p}_{c}"], div)
    st["diff_ms"] = st["t_device_ms"] - st["b_device_ms"]
    st["diff_ratio"] = ratio(st["t_device_ms"], st["b_device_ms"])
    st["diff_compute_ms"] = st["t_compute_ms"] - st["b_compute_ms"]
    st["diff_comm_ms"] = st["t_comm_ms"] - st["b_comm_ms"]
    key = st["diff_ms"].round(2)
    st = st.iloc[np.argsort(-key.to_numpy(), kind="stable")].reset_index(drop=True)
    return st
