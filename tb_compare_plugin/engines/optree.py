"""The host-operator tree of one profile and the device time under each operator.

Shared by the operator, module and memory comparisons (spec c.1, c.2).  Nodes are the host ops
(cpu_op, user_annotation, cuda_runtime, ... — ``api.host_op_mask``), nested by time **per thread**
(the reference nests every thread together, spec f.11).  Nodes are stored in pre-order, so the
subtree of node ``k`` is the contiguous range ``[k, k + size[k])``; subtree sums are prefix-sum
differences.

Device events attach to exactly one node, through the loader's ``kernels.launch_op`` (built from
correlation / flow ids) — never by equal timestamps, so ops sharing a start time do not count a
kernel twice (f.11).  GPU: kernels and memcpys (not memsets, as the reference); NPU: every device
task reached by a flow, plus the HCCL collectives (``comm_ops.launch_op``).

Each node's subtree device time ``kernel_ns`` splits into ``comm_ns`` (collectives: kernels of kind
``KIND_COMM`` such as NCCL, and the attached ``comm_ops`` rows such as HCCL) and ``compute_ns``
(everything else, memcpys included), so a slower collective does not pass for a slower operator.
"""
from __future__ import annotations

import weakref
from functools import cached_property

import numpy as np
import pandas as pd

from ..model import KIND_COMM, KIND_MEMSET
from ..model import jit
from ..model.derived import derived
from ..model.intervals import depths, nest, sweep_order
from ..model.keys import id_mask
from .api import host_op_mask

STEP_MARK = "ProfilerStep#"


def none_for_missing(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns as object dtype with None (not NaN) where a side is absent."""
    for c in df.columns:
        if df[c].dtype == object or isinstance(df[c].dtype, pd.StringDtype):
            col = df[c].astype(object)
            df[c] = col.where(col.notna(), None)
    return df


def preorder(parent: np.ndarray, start: np.ndarray, dur: np.ndarray, index_dtype=np.int64):
    """Pre-order layout of a forest given by ``parent`` (row indices, -1 = root).

    Siblings (and roots) are ordered by start, longer first, then row.  Returns
    (order, parent, depth, size) with order[k] = the row at pre-order position k and the other
    arrays indexed by position; the subtree of position k is [k, k + size[k]).  With numba
    (``model.jit``): the rows by (start, longer first, row), then, when every parent comes before
    its children in that order (a nesting by time), two passes over it (subtree sizes, then
    positions); else those rows bucketed by parent and one depth-first walk over those lists.
    ``index_dtype``: the type of order, parent and depth (int32 saves a copy when the caller
    keeps them so); size is int64.
    """
    n = len(parent)
    parent = np.asarray(parent, np.int64)
    k = jit.kernels(n)
    if k is not None:
        start = np.asarray(start, np.int64)
        by_start = k.longer_first(np.argsort(start, kind="stable"), start, start + np.asarray(dur, np.int64))
        order, ppos, depth = (np.empty(n, index_dtype) for _ in range(3))
        size = np.empty(n, np.int64)
        if k.preorder_prefix(parent, by_start, order, ppos, depth, size, np.empty(n, index_dtype),
                             np.empty(n, index_dtype)):
            return order, ppos, depth, size     # two passes: every parent before its children by start
        del order, ppos, depth, size
        order, ppos, depth, size, reached = k.preorder_walk(parent, by_start, np.empty(n + 2, np.int64),
                                                            *(np.empty(n, np.int64) for _ in range(7)))
        if reached == n:                    # else a cycle: the numpy form below says what it says
            return order.astype(index_dtype, copy=False), ppos.astype(index_dtype, copy=False), \
                depth.astype(index_dtype, copy=False), size
    depth = depths(parent)
    has = parent >= 0
    size = np.ones(n, np.int64)
    by_depth = np.argsort(depth.astype(np.int32 if n and depth.max() > 32000 else np.int16), kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2 if n else 0))
    for d in range(int(depth.max()) if n else 0, 0, -1):
        at = by_depth[bounds[d]:bounds[d + 1]]
        np.add.at(size, parent[at], size[at])
    # offset of each node inside its parent's block: exclusive cumsum of earlier siblings' sizes
    start = np.asarray(start, np.int64)
    sib = sweep_order(start, start + np.asarray(dur, np.int64), parent)
    ps = parent[sib]
    csum = np.cumsum(size[sib]) - size[sib]
    first = np.r_[True, ps[1:] != ps[:-1]] if n else np.zeros(0, bool)
    group_base = np.maximum.accumulate(np.where(first, csum, 0))
    offset = np.empty(n, np.int64)
    offset[sib] = csum - group_base
    pos = np.zeros(n, np.int64)
    for d in range(int(depth.max()) + 1 if n else 0):
        at = by_depth[bounds[d]:bounds[d + 1]]
        pos[at] = offset[at] if d == 0 else pos[parent[at]] + 1 + offset[at]
    order = np.empty(n, np.int64)
    order[pos] = np.arange(n)
    ppos = np.where(has, pos[np.maximum(parent, 0)], -1)
    return (order.astype(index_dtype, copy=False), ppos[order].astype(index_dtype, copy=False),
            depth[order].astype(index_dtype, copy=False), size[order])


def adopt(parent, start, end, tid, is_annotation, is_step, in_place: bool = False) -> np.ndarray:
    """Hang each thread root under the innermost user annotation of another thread that holds it.

    Per-thread nesting leaves the autograd thread's ops as roots although they run inside the
    main thread's ``## backward ##`` / ``ProfilerStep#N`` annotations; annotations are phase
    markers, so the work of other threads inside a phase belongs to it.  Plain operators never
    adopt (that is the reference's cross-thread false nesting, spec f.11).
    ``in_place``: ``parent`` is the caller's own int64 array, changed and returned (no copy).
    """
    parent = parent if in_place and parent.dtype == np.int64 else np.array(parent, np.int64)
    roots = np.flatnonzero((parent < 0) & ~is_step)
    ann = np.flatnonzero(is_annotation)
    if not len(roots) or not len(ann):
        return parent
    # nearest annotation ancestor of each annotation (same thread)
    is_ann = np.zeros(len(parent), bool)
    is_ann[ann] = True
    up = parent[ann].copy()
    for _ in range(len(parent)):
        live = (up >= 0) & ~is_ann[np.maximum(up, 0)]
        if not live.any():
            break
        up[live] = parent[up[live]]
    # ... as a position in ann (every array below is indexed by annotation, not by op)
    up = np.where(up >= 0, np.searchsorted(ann, np.maximum(up, 0)), -1)
    best = np.full(len(roots), -1, np.int64)
    tid_ann = tid[ann]
    slot = np.full(len(ann), -1, np.int64)          # annotation -> its place in its thread's ``a``
    for t in np.unique(tid_ann).tolist():
        ai = np.flatnonzero(tid_ann == t)
        a = ann[ai]
        o = np.lexsort((-(end[a] - start[a]), start[a]))
        ai, a = ai[o], a[o]
        slot[ai] = np.arange(len(a))
        r = np.flatnonzero(tid[roots] != t)
        rr = roots[r]
        idx = np.searchsorted(start[a], start[rr], side="right") - 1
        for _ in range(len(a) + 1):
            live = idx >= 0
            node = a[np.maximum(idx, 0)]
            bad = live & ((end[node] < end[rr]) | ((end[node] - start[node]) <= (end[rr] - start[rr])))
            if not bad.any():
                break
            up_node = up[ai[idx[bad]]]
            idx[bad] = np.where(up_node >= 0, slot[np.maximum(up_node, 0)], -1)
        slot[ai] = -1
        found = idx >= 0
        cand = np.where(found, a[np.maximum(idx, 0)], -1)
        cur = np.maximum(best[r], 0)
        better = found & ((best[r] < 0) | ((end[cand] - start[cand]) < (end[cur] - start[cur])))
        best[r[better]] = cand[better]
    parent[roots[best >= 0]] = best[best >= 0]
    return parent


def _loader_parents(ops, sel: np.ndarray | None):
    """The loader's per-thread nesting re-indexed to ``sel`` (None: every op) when it nested
    exactly these ops (every selected op's parent is selected too); None when the tree must be
    rebuilt."""
    if not len(ops) or (sel is not None and not len(sel)):
        return None
    parent = ops["parent"].to_numpy()
    if sel is None or len(sel) == len(ops):         # every op (sel is sorted and distinct)
        has = parent >= 0
        return np.where(has, parent, -1) if has.any() else None
    pos = np.full(len(ops), -1, dtype=np.int64)
    pos[sel] = np.arange(len(sel))
    p = parent[sel]
    has = p >= 0
    if not has.any() or (pos[p[has]] < 0).any():   # never nested (hand-made tables) or differently
        return None
    outside = np.ones(len(ops), dtype=bool)
    outside[sel] = False
    if outside.any() and (parent[outside] >= 0).any() and (pos[parent[outside & (parent >= 0)]] >= 0).any():
        return None      # an unselected op hangs under a selected one: nesting differs
    out = np.full(len(sel), -1, dtype=np.int64)
    out[has] = pos[p[has]]
    return out


def _index_dtype(n: int):
    """int32 for node / row positions and counts up to ``n`` when they fit, else int64."""
    return np.int32 if n < 2 ** 31 - 1 else np.int64


def tree_of(profile) -> "OpTree":
    """The profile's tree, built once per profile whoever asks first (a profile never changes once
    loaded), kept in the derived-data cache (``model.derived``).  Any thread may ask: while one
    builds it, the others wait for that build.  So the CLI can start a side's tree as soon as that
    side is parsed, on the core its parser left idle."""
    return derived(profile, "optree", lambda: OpTree(profile))


def _node_of_ops(op_rows: np.ndarray, n: int, ops, small) -> np.ndarray:
    """Any ops row -> node: itself, else its nearest host-op ancestor (enqueue/dequeue rows);
    -1 for none."""
    node_of = np.full(len(ops), -1, dtype=small)
    node_of[op_rows] = np.arange(n, dtype=small)
    if len(ops) and (node_of < 0).any():
        oparent = ops["parent"].to_numpy()
        cur = np.where(node_of < 0, oparent, -1)
        todo = np.flatnonzero(cur >= 0)
        for _ in range(256):
            if not len(todo):
                break
            hit = node_of[cur[todo]]
            done = hit >= 0
            node_of[todo[done]] = hit[done]
            nxt = oparent[cur[todo[~done]]]
            todo = todo[~done]
            cur[todo] = nxt
            todo = todo[nxt >= 0]
    return node_of


class OpTree:
    """Pre-ordered host-op forest of one profile with the device events under each node."""

    @property
    def profile(self):
        prof = self._profile()
        if prof is None:
            raise ReferenceError("the profile of this op tree is gone")
        return prof

    def __init__(self, profile) -> None:
        self._profile = weakref.ref(profile)    # weak: the derived-data cache keys trees by profile
        self.device = profile.meta.device
        ops = profile.ops
        sym = profile.symbols
        host = host_op_mask(profile) if len(ops) else np.zeros(0, bool)
        every = bool(host.all())                    # every op is a host op: no copies
        sel = None if every else np.flatnonzero(host)
        del host
        start = ops["start_ns"].to_numpy() if every else ops["start_ns"].to_numpy()[sel]
        dur = ops["dur_ns"].to_numpy() if every else ops["dur_ns"].to_numpy()[sel]
        if len(dur) and dur.min() < 0:
            dur = np.maximum(dur, 0)
        tid = ops["tid"].to_numpy() if every else ops["tid"].to_numpy()[sel]
        names = ops["name"].to_numpy() if every else ops["name"].to_numpy()[sel]
        cats = ops["cat"].to_numpy() if every else ops["cat"].to_numpy()[sel]
        step_ids = sym.ids_matching(lambda s: STEP_MARK in s)
        annot_ids = sym.ids_matching(lambda s: s.lower() == "user_annotation")
        end = start + dur
        par = _loader_parents(ops, sel)           # a new array: adopted in place
        if par is None:
            par, _ = nest(start, end, tid)
        is_step = id_mask(names, step_ids)
        par = adopt(par, start, end, tid, id_mask(cats, annot_ids), is_step, in_place=True)
        del end
        n = len(start)
        self.n = n
        # node positions and counts as int32 (a 1 GB trace's 1.9 M nodes: 60 MB less here and in
        # the copy a parser process hands over); times and sums of times stay int64
        small = _index_dtype(max(n, len(ops)))
        order, self.parent, self.depth, size = preorder(par, start, dur, small)
        del par
        self.size = size                       # int64 until the device spans are summed
        self.op_rows = order if every else sel[order].astype(small)
        del sel
        self.node_of_op = _node_of_ops(self.op_rows, n, ops, small)
        self.is_step = is_step[order]
        del order, is_step
        self._attach_device()
        self.size, self.dev_lo, self.dev_hi = (a.astype(small, copy=False) for a in (self.size, self.dev_lo, self.dev_hi))

    # Per node, the op's columns and two differences, made when first read: a parser process that
    # builds the tree for the CLI never reads them, and they are not handed over (~75 MB of the
    # tree's ~150 MB on a 1 GB trace, at the parser's memory peak)
    def _ops_column(self, name: str) -> np.ndarray:
        return self.profile.ops[name].to_numpy()[self.op_rows]

    @cached_property
    def start(self) -> np.ndarray:
        return self._ops_column("start_ns")

    @cached_property
    def end(self) -> np.ndarray:
        return self.start + np.maximum(self._ops_column("dur_ns"), 0)

    @cached_property
    def tid(self) -> np.ndarray:
        return self._ops_column("tid")

    @cached_property
    def name(self) -> np.ndarray:
        return self._ops_column("name")

    @cached_property
    def node_of_op(self) -> np.ndarray:
        """Set by the build (it attaches the device events with it); on a tree handed over by a
        parser process (:meth:`from_arrays`), made when first read: only the placement of
        allocations and the timeline's item details read it, and it is not handed over (8 MB of
        tmpfs writes on a 1 GB trace)."""
        ops = self.profile.ops
        return _node_of_ops(self.op_rows, self.n, ops, _index_dtype(max(self.n, len(ops))))

    @cached_property
    def kernel_num(self) -> np.ndarray:
        """Subtree device events."""
        return self.dev_hi - self.dev_lo

    @cached_property
    def compute_ns(self) -> np.ndarray:
        """Subtree device time outside collectives."""
        return self.kernel_ns - self.comm_ns

    # ------------------------------------------------------------------ hand-over
    _ARRAYS = ("parent", "depth", "size", "op_rows", "is_step", "dev_lo", "dev_hi", "kernel_ns", "comm_ns")

    def to_arrays(self) -> tuple[dict, dict]:
        """(meta, arrays): everything the tree holds, as plain values and named arrays, for a
        process that built it to hand it to another one holding the same profile
        (:meth:`from_arrays`)."""
        arrays = {name: getattr(self, name) for name in self._ARRAYS}
        arrays.update({f"dev.{c}": self.dev[c].to_numpy() for c in self.dev.columns})
        return {"device": self.device, "n": int(self.n), "dev_columns": list(self.dev.columns)}, arrays

    @classmethod
    def from_arrays(cls, profile, meta: dict, arrays: dict) -> "OpTree":
        """The tree :meth:`to_arrays` described, on ``profile`` (the same profile's data)."""
        tree = cls.__new__(cls)
        tree._profile = weakref.ref(profile)
        tree.device, tree.n = meta["device"], int(meta["n"])
        for name in cls._ARRAYS:
            setattr(tree, name, arrays[name])
        tree.dev = pd.DataFrame({c: arrays[f"dev.{c}"] for c in meta["dev_columns"]})
        return tree

    # ------------------------------------------------------------------ device events
    def _attach_device(self) -> None:
        prof = self.profile
        k, c = prof.kernels, prof.comm_ops
        keep = k["launch_op"].to_numpy() >= 0
        if self.device == "GPU":
            keep &= k["kind"].to_numpy() != KIND_MEMSET
        kr = np.flatnonzero(keep)
        cr = np.flatnonzero((c["launch_op"].to_numpy() >= 0) & (c["kernel"].to_numpy() < 0))

        def col(frame, rows, name):
            return frame[name].to_numpy()[rows]
        ttype = col(k, kr, "task_type")
        if prof.meta.task_types_from_db:        # DB: the compute task's own type (AI_VECTOR_CORE...)
            core = col(k, kr, "accel_core")
            ttype = np.where(core > 0, core, ttype)
        nk, nc = len(kr), len(cr)
        launch = np.concatenate([col(k, kr, "launch_op"), col(c, cr, "launch_op")]).astype(np.int64)
        node = self.node_of_op[launch].astype(np.int64) if len(launch) else np.zeros(0, np.int64)
        dev_start = np.concatenate([col(k, kr, "start_ns"), col(c, cr, "start_ns")])
        o = np.flatnonzero(node >= 0)                  # attached rows by (node, start), stable
        o = o[np.argsort(dev_start[o], kind="stable")]
        o = o[np.argsort(node[o], kind="stable")]
        cols = {
            "node": node,
            "launch_ns": prof.ops["start_ns"].to_numpy()[launch] if len(launch) else np.zeros(0, np.int64),
            "start_ns": dev_start,
            "dur_ns": np.concatenate([col(k, kr, "dur_ns"), col(c, cr, "dur_ns")]),
            "name": np.concatenate([col(k, kr, "name"), col(c, cr, "name")]),
            "task_id": np.concatenate([col(k, kr, "task_id"), np.full(nc, -1, np.int64)]),
            "task_type": np.concatenate([ttype, np.zeros(nc, np.int32)]),
            "input_shapes": np.concatenate([col(k, kr, "input_shapes"), np.zeros(nc, np.int32)]),
            "source": np.concatenate([np.zeros(nk, np.int8), np.ones(nc, np.int8)]),  # 0 kernel, 1 comm
            "comm": np.concatenate([col(k, kr, "kind") == KIND_COMM, np.ones(nc, bool)]),
            "row": np.concatenate([k.index.to_numpy()[kr], c.index.to_numpy()[cr]]).astype(np.int64),
        }
        # each column its own block (copy=False: the gathers are fresh arrays): pandas' consolidation
        # into 2-D blocks would copy the ~16 MB of a 1 GB trace's device rows once more
        dev = pd.DataFrame({name: v[o] for name, v in cols.items()}, copy=False)
        self.dev = dev
        node = dev["node"].to_numpy()
        dur = dev["dur_ns"].to_numpy(dtype=np.int64)
        kern = jit.kernels(self.n)
        if kern is not None:                # the spans in the tree's index type, the sums in int64
            small = _index_dtype(max(self.n, len(prof.ops)))
            self.dev_lo, self.dev_hi, self.kernel_ns, self.comm_ns = kern.subtree_spans(
                np.asarray(node, np.int64), np.asarray(self.size, np.int64), dur, dev["comm"].to_numpy(bool),
                np.empty(self.n + 1, small), np.empty(self.n, small), np.empty(self.n, np.int64),
                np.empty(self.n, np.int64))
        else:
            ids = np.arange(self.n)
            first = np.zeros(self.n + 1, np.int64)       # first dev row of each node (node-sorted rows)
            np.cumsum(np.bincount(node, minlength=self.n), out=first[1:])
            self.dev_lo = first[ids]
            self.dev_hi = first[ids + self.size]
            cum = np.concatenate([[0], np.cumsum(dur)])
            ccum = np.concatenate([[0], np.cumsum(np.where(dev["comm"].to_numpy(bool), dur, 0))])
            self.kernel_ns = cum[self.dev_hi] - cum[self.dev_lo]       # subtree device time
            self.comm_ns = ccum[self.dev_hi] - ccum[self.dev_lo]       # ... of it in collectives

    def subtree_total(self, node_values: np.ndarray) -> np.ndarray:
        """Σ of a per-node value over each node's subtree (pre-order prefix sums)."""
        cum = np.concatenate([[0], np.cumsum(np.asarray(node_values))])
        ids = np.arange(self.n)
        return cum[ids + self.size] - cum[ids]

    # ------------------------------------------------------------------ structure
    @cached_property
    def _children_index(self) -> tuple[np.ndarray, np.ndarray]:
        kids = np.flatnonzero(self.parent >= 0)
        o = np.argsort(self.parent[kids], kind="stable")   # pre-order kept inside a parent
        kids = kids[o]
        bounds = np.zeros(self.n + 1, np.int64)
        np.cumsum(np.bincount(self.parent[kids], minlength=self.n), out=bounds[1:])
        return kids, bounds

    def children(self, node: int) -> np.ndarray:
        kids, bounds = self._children_index
        return kids[bounds[node]:bounds[node + 1]]

    def _by_start(self, nodes: np.ndarray) -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        return nodes[np.lexsort((nodes, self.start[nodes]))]

    def step_nodes(self, step: int) -> np.ndarray:
        sym = self.profile.symbols
        want = sym.lookup(f"{STEP_MARK}{step}")
        hits = np.flatnonzero(self.name == want) if want > 0 else np.zeros(0, np.int64)
        if not len(hits):
            raise ValueError(f"Invalid step id: {step}, please choose from the valid steps: "
                             f"{self.profile.step_ids()}")
        return hits

    def top_layer(self, step: int | None = None) -> np.ndarray:
        """Top-layer nodes in start order (spec a.4 / c.3 step 1).

        No step: every root, with each ``ProfilerStep#*`` root replaced by its children.  A step:
        the children of that ``ProfilerStep#N`` plus the roots of other threads (the autograd
        thread) that start inside its window.
        """
        roots = np.flatnonzero(self.parent < 0)
        if step is None:
            step_roots = roots[self.is_step[roots]]
            inner = self._children_of(step_roots)
            return self._by_start(np.concatenate([roots[~self.is_step[roots]], inner]))
        steps = self.step_nodes(step)
        inner = self._children_of(steps)
        s0, e0 = int(self.start[steps].min()), int(self.end[steps].max())
        other = roots[~np.isin(self.tid[roots], self.tid[steps]) & ~self.is_step[roots]
                      & (self.start[roots] >= s0) & (self.start[roots] <= e0)]
        return self._by_start(np.concatenate([inner, other]))

    def _children_of(self, nodes: np.ndarray) -> np.ndarray:
        """The nodes whose parent is one of ``nodes``, ascending: each node's children are the
        nodes one level deeper inside its pre-order span ``(x, x + size[x])``, so only the spans
        are read (``np.isin(parent, nodes)`` over the ~2M parents was 0.03-0.06 s a 1 GB side,
        twice per matching)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        depth, size = self.depth, self.size
        if int(size[nodes].sum()) > 2 * len(size) + 1024:      # nested spans: read each once instead
            return np.flatnonzero(np.isin(self.parent, nodes))
        parts = [x + 1 + np.flatnonzero(depth[x + 1:x + int(size[x])] == depth[x] + 1)
                 for x in nodes.tolist()]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    def step_window(self, step: int | None) -> tuple[int, int] | None:
        if step is None:
            return None
        steps = self.step_nodes(step)
        return int(self.start[steps].min()), int(self.end[steps].max())

    # ------------------------------------------------------------------ text
    @cached_property
    def kernel_line_table(self) -> tuple[list[str], np.ndarray | None]:
        """(texts, codes): device event i's reference-format detail line (spec c.4) is
        ``texts[codes[i]]``; codes None: ``texts`` are the lines themselves.  GPU lines
        ("name [duration: µs]") are formatted once per distinct (name, duration): a step's kernels
        repeat, so a 1 GB trace's 440k kernels have about 2k distinct lines."""
        dev = self.dev
        strings = self.profile.symbols.as_array()
        if self.device == "GPU":
            return self._gpu_lines(strings, dev["name"].to_numpy(), dev["dur_ns"].to_numpy())
        # NPU lines ("name, task id, task type[, [input shapes: ...]] [duration: µs]") once per
        # distinct (name, task id, task type, shapes, duration): npu_500mb's 36.5k have 210
        cols = [dev[c].to_numpy() for c in ("name", "task_id", "task_type", "input_shapes", "dur_ns")]
        codes, rows = _distinct_rows(cols)
        name, task_id, task_type, shapes, dur = (c[rows] for c in cols)
        names = strings[name].tolist()
        durs = (dur / 1000.0).tolist()
        tids = ["None" if t < 0 else str(t) for t in task_id.tolist()]
        ttypes = [s if s else "None" for s in strings[task_type].tolist()]
        shapes = [f", [input shapes: {s}]" if s else "" for s in strings[shapes].tolist()]
        texts = [f"{n}, {i}, {t}{s} [duration: {d}]\n" for n, i, t, s, d in zip(names, tids, ttypes, shapes, durs)]
        return texts, codes

    @cached_property
    def kernel_lines(self) -> list[str]:
        """One reference-format detail line per device event (spec c.4)."""
        texts, codes = self.kernel_line_table
        return texts if codes is None else [texts[c] for c in codes.tolist()]

    @staticmethod
    def _gpu_lines(strings: np.ndarray, name: np.ndarray, dur: np.ndarray) -> tuple[list[str], np.ndarray | None]:
        """GPU lines as :attr:`kernel_line_table` (the distinct ones and each event's code; one
        by one, no codes, when the ids or durations do not fit the packed key)."""
        if not len(dur) or dur.min() < 0 or dur.max() >= 1 << 40 or name.max() >= 1 << 22:
            return [f"{n} [duration: {d}]\n" for n, d in zip(strings[name].tolist(), (dur / 1000.0).tolist())], None
        codes, keys = pd.factorize((name.astype(np.int64) << 40) | dur.astype(np.int64))
        text = [f"{n} [duration: {d}]\n" for n, d in
                zip(strings[keys >> 40].tolist(), ((keys & ((1 << 40) - 1)) / 1000.0).tolist())]
        return text, codes

    def details(self, node: int) -> str:
        """Kernel details of a node's subtree, in launch (pre-)order."""
        if node < 0:
            return ""
        return "".join(self.kernel_lines[self.dev_lo[node]:self.dev_hi[node]])

    @cached_property
    def kernel_line_offsets(self) -> np.ndarray:
        """Where each of :attr:`kernel_lines` starts in their concatenation (int64, one more
        entry: the total length), for :meth:`details_many`'s ``limit`` (the lines themselves
        not needed)."""
        texts, codes = self.kernel_line_table
        lengths = np.fromiter(map(len, texts), np.int64, len(texts))
        if codes is not None:
            lengths = lengths[codes]
        offs = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offs[1:])
        return offs

    def details_many(self, nodes: np.ndarray, limit: int | None = None) -> list[str]:
        """:meth:`details` of each node ("" where node < 0); ``limit``: each text cut to its first
        ``limit`` characters (what a workbook cell keeps) without joining the lines past it: on
        a 1 GB trace the whole texts of the top-layer ops are ~80 MB a side, their cells' ~20."""
        lo, hi = self.dev_lo, self.dev_hi
        nodes = np.asarray(nodes)
        kept = self.__dict__.get("_cut_texts", {}).get(limit) if limit is not None else None
        if kept:
            ks = nodes.tolist()
            if all(k < 0 or k in kept for k in ks):
                return ["" if k < 0 else kept[k] for k in ks]
        if limit is None or not len(nodes):
            lines = self.kernel_lines
            return ["" if k < 0 else "".join(lines[lo[k]:hi[k]]) for k in nodes.tolist()]
        offs = self.kernel_line_offsets
        texts, codes = self.kernel_line_table
        if codes is None:
            def span(a: int, b: int) -> str:
                return "".join(texts[a:b])

            def line(c: int) -> str:
                return texts[c]
        else:                   # only the lines up to each cut are looked up (no list of every event's)
            take = texts.__getitem__

            def span(a: int, b: int) -> str:
                return "".join(map(take, codes[a:b].tolist()))

            def line(c: int) -> str:
                return texts[codes[c]]
        safe = np.maximum(nodes, 0)
        first, last = lo[safe].astype(np.int64), hi[safe].astype(np.int64)
        end = offs[first] + limit
        # the last line that starts at or before the cut (only read where the text is longer)
        cut = np.searchsorted(offs, end, side="right") - 1
        out = []
        for k, a, b, c, e in zip(nodes.tolist(), first.tolist(), last.tolist(), cut.tolist(), end.tolist()):
            if k < 0:
                out.append("")
            elif c >= b:                                    # the whole text fits
                out.append(span(a, b))
            else:                                           # lines a..c-1 whole, then c's head
                out.append(span(a, c) + line(c)[:e - int(offs[c])])
        return out

    def keep_details(self, nodes: np.ndarray, limit: int) -> None:
        """Make :meth:`details_many` ``(nodes, limit)`` now and keep the texts: a later call for
        nodes among these, with this limit, reads them (the workbook's forked writer cuts the
        top layer's texts while the op pairs are matched in the other process)."""
        nodes = np.asarray(nodes)
        texts = self.details_many(nodes, limit)
        self.__dict__.setdefault("_cut_texts", {}).setdefault(limit, {}).update(zip(nodes.tolist(), texts))

    def strings(self, col: str, nodes: np.ndarray, missing=None) -> np.ndarray:
        """A symbol column of ``ops`` for the given nodes (``missing`` where node < 0)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        ids = self.profile.ops[col].to_numpy()[self.op_rows[np.maximum(nodes, 0)]] if self.n else \
            np.zeros(len(nodes), np.int32)
        out = self.profile.symbols.as_array()[ids] if len(nodes) else np.zeros(0, dtype=object)
        out = out.astype(object)
        out[nodes < 0] = missing
        return out


def _distinct_rows(cols: list) -> tuple[np.ndarray, np.ndarray]:
    """(code of each row's tuple of values over the equal-length integer ``cols``, numbered in
    order of first appearance; the first row of each code)."""
    codes, _ = pd.factorize(cols[0], use_na_sentinel=False)
    for col in cols[1:]:                    # pairs of codes factorized again: exact, no packing
        more, uniq = pd.factorize(col, use_na_sentinel=False)
        codes, _ = pd.factorize(codes.astype(np.int64) * max(len(uniq), 1) + more)
    _, rows = np.unique(codes, return_index=True)
    return codes, rows
