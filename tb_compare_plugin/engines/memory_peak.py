"""Peak attribution: what holds memory at each side's allocated-memory peak, and how the two
sides differ.

At a side's peak time (``memory_curve.peak_time_ns``) an allocation is live when
``alloc <= t_peak`` and it is released after ``t_peak`` or never inside the capture.  Live bytes
are grouped two ways:

* by **op**: the allocating operator's name (``mem_allocs.name``: the Ascend CSV's Name, the
  GPU allocation's innermost op), else the name of the op it was placed under;
* by **module**: the innermost ``nn.Module:`` python function enclosing the allocating op on
  that op's thread (containing the op's start), else enclosing the allocation time on any
  thread; shown as a path ``Outer_0/Inner_1`` ("(no module)" when none encloses it).

Both sides are then put side by side by (kind, name) and sorted by the target − baseline diff.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .memory import placed_op_rows
from .memory_curve import peak_time_ns
from .sidebyside import BOTH, BASE_ONLY, TARGET_ONLY

NO_MODULE = "(no module)"
COLUMNS = ["name", "kind", "b_bytes", "t_bytes", "diff_bytes", "status", "b_count", "t_count"]
MODULE_PREFIX = "nn.Module:"


def live_at(profile, t_ns: int) -> np.ndarray:
    """Rows of mem_allocs live at ``t_ns``."""
    ma = profile.mem_allocs
    a = ma["alloc_ns"].to_numpy(np.int64)
    r = ma["release_ns"].to_numpy(np.int64)
    return np.flatnonzero((a >= 0) & (a <= t_ns) & ((r < 0) | (r > t_ns)))


def _alloc_ops(profile, rows: np.ndarray, tree=None) -> np.ndarray:
    """Row in ops of the op each allocation was placed under (-1 none)."""
    return placed_op_rows(profile, tree)[rows]


class _Modules:
    """Per-thread lookup of the innermost nn.Module python function containing a time."""

    def __init__(self, profile) -> None:
        py = profile.pyfuncs
        self.sym = profile.symbols
        mods = np.flatnonzero(py["is_module"].to_numpy()) if len(py) else np.zeros(0, np.int64)
        self.rows = mods
        self.name = py["name"].to_numpy()
        self.start = py["start_ns"].to_numpy()
        self.end = self.start + py["dur_ns"].to_numpy()
        self.tid = py["tid"].to_numpy()
        parent = py["parent"].to_numpy() if len(py) else np.zeros(0, np.int64)
        is_mod = py["is_module"].to_numpy() if len(py) else np.zeros(0, bool)
        # nearest module ancestor of every module (walking up over non-modules; -1 elsewhere)
        up = parent[mods]
        todo = np.flatnonzero((up >= 0) & ~is_mod[np.maximum(up, 0)])
        while len(todo):
            up[todo] = parent[up[todo]]
            todo = todo[(up[todo] >= 0) & ~is_mod[np.maximum(up[todo], 0)]]
        self.mod_parent = np.full(len(parent), -1, np.int64)
        self.mod_parent[mods] = up
        self.by_tid: dict[int, np.ndarray] = {}
        if len(mods):
            o = mods[np.lexsort((mods, self.start[mods], self.tid[mods]))]
            tids = self.tid[o]
            cut = np.flatnonzero(np.r_[True, tids[1:] != tids[:-1]])
            for s, e in zip(cut, np.r_[cut[1:], len(o)]):
                self.by_tid[int(tids[s])] = o[s:e]
        self._paths: dict[int, str] = {}

    def innermost(self, tid: int | None, t: int) -> int:
        """Row in pyfuncs of the innermost module containing t on tid (any thread when None)."""
        best, best_start = -1, None
        for k, cand in (self.by_tid.items() if tid is None else [(tid, self.by_tid.get(tid))]):
            if cand is None or not len(cand):
                continue
            i = int(np.searchsorted(self.start[cand], t, side="right")) - 1
            m = int(cand[i]) if i >= 0 else -1
            while m >= 0 and self.end[m] < t:
                m = int(self.mod_parent[m])
            if m >= 0 and (best_start is None or self.start[m] > best_start):
                best, best_start = m, self.start[m]
        return best

    def path(self, m: int) -> str:
        if m < 0:
            return NO_MODULE
        p = self._paths.get(m)
        if p is None:
            chain = []
            x = m
            while x >= 0:
                s = self.sym.string(self.name[x])
                chain.append(s[len(MODULE_PREFIX):].strip() if s.startswith(MODULE_PREFIX) else s)
                x = int(self.mod_parent[x])
            p = "/".join(reversed(chain))
            self._paths[m] = p
        return p


def side_attribution(profile, t_ns: int | None = None, tree=None) -> tuple[pd.DataFrame, int | None]:
    """Live allocations at the side's peak: DataFrame(alloc, bytes, op_name, module) and t_peak."""
    cols = ["alloc", "bytes", "op_name", "module"]
    if t_ns is None:
        t_ns = peak_time_ns(profile)
    if t_ns is None or not len(profile.mem_allocs):
        return pd.DataFrame(columns=cols), t_ns
    rows = live_at(profile, t_ns)
    ma = profile.mem_allocs
    strings = profile.symbols.as_array()
    op = _alloc_ops(profile, rows, tree)
    given = ma["name"].to_numpy()[rows]
    placed = np.where(op >= 0, profile.ops["name"].to_numpy()[np.maximum(op, 0)], 0) if len(profile.ops) else 0
    op_name = strings[np.where(given > 0, given, placed)]
    op_name = np.where(op_name == "", "(unknown op)", op_name)
    mods = _Modules(profile)
    module = []
    if len(mods.rows):
        o_tid = profile.ops["tid"].to_numpy()
        o_start = profile.ops["start_ns"].to_numpy()
        a_ns = ma["alloc_ns"].to_numpy()[rows]
        cache: dict[tuple, str] = {}
        for k in range(len(rows)):
            key = (int(o_tid[op[k]]), int(o_start[op[k]])) if op[k] >= 0 else (None, int(a_ns[k]))
            p = cache.get(key)
            if p is None:
                m = mods.innermost(*key)
                if m < 0 and key[0] is not None:      # op on a thread without modules
                    m = mods.innermost(None, int(a_ns[k]))
                p = cache[key] = mods.path(m)
            module.append(p)
    else:
        module = [NO_MODULE] * len(rows)
    return pd.DataFrame({"alloc": rows, "bytes": ma["bytes"].to_numpy(np.int64)[rows],
                         "op_name": op_name, "module": np.array(module, dtype=object)}), t_ns


def _group(df: pd.DataFrame, key: str, kind: str) -> pd.DataFrame:
    g = df.groupby(key, sort=False).agg(bytes=("bytes", "sum"), count=("bytes", "size")).reset_index()
    return g.rename(columns={key: "name"}).assign(kind=kind)


def peak_attribution(base, target, trees=None) -> pd.DataFrame:
    """Bytes live at each side's peak by op name and by module path, side by side.

    Columns: name, kind ("op" | "module"), b_bytes, t_bytes, diff_bytes (target − baseline),
    status (both | baseline_only | target_only), b_count, t_count; sorted by diff_bytes
    descending (modules before ops on ties).  ``df.attrs["peak"]`` holds each side's peak time.
    ``trees``: the sides' ``optree.OpTree`` to reuse (built when not given).
    """
    trees = trees or (None, None)
    b, bt = side_attribution(base, tree=trees[0])
    t, tt = side_attribution(target, tree=trees[1])
    parts = []
    for kind, key in (("module", "module"), ("op", "op_name")):
        gb, gt = _group(b, key, kind), _group(t, key, kind)
        m = gb.merge(gt, on=["name", "kind"], how="outer", suffixes=("_b", "_t"))
        parts.append(m)
    m = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not len(m):
        out = pd.DataFrame(columns=COLUMNS)
    else:
        has_b, has_t = m["bytes_b"].notna(), m["bytes_t"].notna()
        out = pd.DataFrame({
            "name": m["name"].astype(object), "kind": m["kind"],
            "b_bytes": m["bytes_b"].fillna(0).astype(np.int64), "t_bytes": m["bytes_t"].fillna(0).astype(np.int64),
        })
        out["diff_bytes"] = out["t_bytes"] - out["b_bytes"]
        out["status"] = np.where(has_b & has_t, BOTH, np.where(has_b, BASE_ONLY, TARGET_ONLY))
        out["b_count"] = m["count_b"].fillna(0).astype(np.int64)
        out["t_count"] = m["count_t"].fillna(0).astype(np.int64)
        o = np.lexsort((np.arange(len(out)), out["kind"].to_numpy() != "module", -out["diff_bytes"].to_numpy()))
        out = out.iloc[o].reset_index(drop=True)
    out.attrs["peak"] = {"baseline": {"t_ns": bt}, "target": {"t_ns": tt}}
    return out
