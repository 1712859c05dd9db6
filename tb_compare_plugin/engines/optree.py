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
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from ..model import KIND_MEMSET
from ..model.intervals import nest
from .api import host_op_mask

STEP_MARK = "ProfilerStep#"


def none_for_missing(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns as object dtype with None (not NaN) where a side is absent."""
    for c in df.columns:
        if df[c].dtype == object or isinstance(df[c].dtype, pd.StringDtype):
            col = df[c].astype(object)
            df[c] = col.where(col.notna(), None)
    return df


class OpTree:
    """Pre-ordered host-op forest of one profile with the device events under each node."""

    def __init__(self, profile) -> None:
        self.profile = profile
        self.device = profile.meta.device
        ops = profile.ops
        sym = profile.symbols
        sel = np.flatnonzero(host_op_mask(profile)) if len(ops) else np.zeros(0, np.int64)
        start = ops["start_ns"].to_numpy()[sel]
        dur = np.maximum(ops["dur_ns"].to_numpy()[sel], 0)
        tid = ops["tid"].to_numpy()[sel]
        par_local, depth = nest(start, start + dur, tid)
        order = np.lexsort((-dur, start, tid))            # nest()'s order, i.e. pre-order
        pos = np.empty(len(sel), dtype=np.int64)
        pos[order] = np.arange(len(sel))
        n = len(sel)
        self.n = n
        self.op_rows = sel[order]
        self.start = start[order]
        self.end = (start + dur)[order]
        self.tid = tid[order]
        self.depth = depth[order].astype(np.int64)
        p = par_local[order]
        self.parent = np.where(p >= 0, pos[np.maximum(p, 0)], -1)
        self.name = ops["name"].to_numpy()[self.op_rows]
        # subtree sizes, deepest level first
        size = np.ones(n, dtype=np.int64)
        for d in range(int(self.depth.max()) if n else 0, 0, -1):
            at = np.flatnonzero(self.depth == d)
            np.add.at(size, self.parent[at], size[at])
        self.size = size
        # any ops row -> node: itself, else its nearest host-op ancestor (enqueue/dequeue rows)
        node_of = np.full(len(ops), -1, dtype=np.int64)
        node_of[self.op_rows] = np.arange(n)
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
        self.node_of_op = node_of
        self.is_step = np.isin(self.name, sym.ids_matching(lambda s: STEP_MARK in s))
        self._attach_device()

    # ------------------------------------------------------------------ device events
    def _attach_device(self) -> None:
        prof = self.profile
        k = prof.kernels
        keep = k["launch_op"].to_numpy() >= 0
        if self.device == "GPU":
            keep &= k["kind"].to_numpy() != KIND_MEMSET
        kk = k[keep]
        c = prof.comm_ops
        cc = c[(c["launch_op"].to_numpy() >= 0) & (c["kernel"].to_numpy() < 0)]
        launch = np.concatenate([kk["launch_op"].to_numpy(), cc["launch_op"].to_numpy()]).astype(np.int64)
        nk, nc = len(kk), len(cc)
        dev = pd.DataFrame({
            "node": self.node_of_op[launch] if len(launch) else np.zeros(0, np.int64),
            "launch_ns": prof.ops["start_ns"].to_numpy()[launch] if len(launch) else np.zeros(0, np.int64),
            "start_ns": np.concatenate([kk["start_ns"].to_numpy(), cc["start_ns"].to_numpy()]),
            "dur_ns": np.concatenate([kk["dur_ns"].to_numpy(), cc["dur_ns"].to_numpy()]),
            "name": np.concatenate([kk["name"].to_numpy(), cc["name"].to_numpy()]),
            "task_id": np.concatenate([kk["task_id"].to_numpy(), np.full(nc, -1, np.int64)]),
            "task_type": np.concatenate([kk["task_type"].to_numpy(), np.zeros(nc, np.int32)]),
            "input_shapes": np.concatenate([kk["input_shapes"].to_numpy(), np.zeros(nc, np.int32)]),
            "source": np.concatenate([np.zeros(nk, np.int8), np.ones(nc, np.int8)]),  # 0 kernel, 1 comm
            "row": np.concatenate([kk.index.to_numpy(), cc.index.to_numpy()]).astype(np.int64),
        })
        dev = dev[dev["node"].to_numpy() >= 0]
        dev = dev.sort_values(["node", "start_ns"], kind="stable").reset_index(drop=True)
        self.dev = dev
        node = dev["node"].to_numpy()
        ids = np.arange(self.n)
        self.dev_lo = np.searchsorted(node, ids, side="left")
        self.dev_hi = np.searchsorted(node, ids + self.size, side="left")
        cum = np.concatenate([[0], np.cumsum(dev["dur_ns"].to_numpy(dtype=np.int64))])
        self.kernel_ns = cum[self.dev_hi] - cum[self.dev_lo]       # subtree device time
        self.kernel_num = self.dev_hi - self.dev_lo                 # subtree device events

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
        bounds = np.searchsorted(self.parent[kids], np.arange(self.n + 1))
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
            inner = np.flatnonzero(np.isin(self.parent, step_roots))
            return self._by_start(np.concatenate([roots[~self.is_step[roots]], inner]))
        steps = self.step_nodes(step)
        inner = np.flatnonzero(np.isin(self.parent, steps))
        s0, e0 = int(self.start[steps].min()), int(self.end[steps].max())
        other = roots[~np.isin(self.tid[roots], self.tid[steps]) & ~self.is_step[roots]
                      & (self.start[roots] >= s0) & (self.start[roots] <= e0)]
        return self._by_start(np.concatenate([inner, other]))

    def step_window(self, step: int | None) -> tuple[int, int] | None:
        if step is None:
            return None
        steps = self.step_nodes(step)
        return int(self.start[steps].min()), int(self.end[steps].max())

    # ------------------------------------------------------------------ text
    @cached_property
    def kernel_lines(self) -> list[str]:
        """One reference-format detail line per device event (spec c.4)."""
        dev = self.dev
        strings = self.profile.symbols.as_array()
        names = strings[dev["name"].to_numpy()].tolist()
        durs = (dev["dur_ns"].to_numpy() / 1000.0).tolist()
        if self.device == "GPU":
            return [f"{n} [duration: {d}]\n" for n, d in zip(names, durs)]
        tids = ["None" if t < 0 else str(t) for t in dev["task_id"].to_numpy().tolist()]
        ttypes = [s if s else "None" for s in strings[dev["task_type"].to_numpy()].tolist()]
        shapes = [f", [input shapes: {s}]" if s else "" for s in strings[dev["input_shapes"].to_numpy()].tolist()]
        return [f"{n}, {i}, {t}{s} [duration: {d}]\n" for n, i, t, s, d in zip(names, tids, ttypes, shapes, durs)]

    def details(self, node: int) -> str:
        """Kernel details of a node's subtree, in launch (pre-)order."""
        if node < 0:
            return ""
        return "".join(self.kernel_lines[self.dev_lo[node]:self.dev_hi[node]])

    def details_many(self, nodes: np.ndarray) -> list[str]:
        lines = self.kernel_lines
        lo, hi = self.dev_lo, self.dev_hi
        return ["" if k < 0 else "".join(lines[lo[k]:hi[k]]) for k in np.asarray(nodes).tolist()]

    def strings(self, col: str, nodes: np.ndarray, missing=None) -> np.ndarray:
        """A symbol column of ``ops`` for the given nodes (``missing`` where node < 0)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        ids = self.profile.ops[col].to_numpy()[self.op_rows[np.maximum(nodes, 0)]] if self.n else \
            np.zeros(len(nodes), np.int32)
        out = self.profile.symbols.as_array()[ids] if len(nodes) else np.zeros(0, dtype=object)
        out = out.astype(object)
        out[nodes < 0] = missing
        return out
