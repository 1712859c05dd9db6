"""Module comparison (ModuleCompare / ModuleCompareStatistic, spec d.1).

Per side: the forward module forest (``nn.Module:`` python functions + ``Optimizer*`` ops, nested
by time), the backward forest (a copy of the autograd op at each ``fwdbwd`` flow end, named
``[ BACKWARD ]<forward module path>``), device time per module (each device event credited, by
its launch op's start time, to the innermost module around it: self; and to every ancestor:
total), the host ops placed in the innermost module around their start, and each module's
top-level ops with the module's own kernels.  Module children are aligned by path (through the
user name map, which the reference ignores here, f.12), breadth-first, forward with forward and
backward with backward; rows follow baseline start order with target-only modules interleaved
by target start.

Module Level is the path depth (number of ``/``) in both sheets (the reference uses tree depth + 1
in ModuleCompare, f.15).  The DataFrames show clean paths (``/DistributedDataParallel_0/...``);
``reference_rows_*`` keep the reference's text (``/ DistributedDataParallel_0/ ...``).

Beyond the reference, every row splits its device times into communication (``*_comm_*``: NCCL
kernels, HCCL ops; see ``optree``) and compute (``*_compute_*``: the rest), so a slower collective is
not blamed on the module that launched it.  ``diff_self_compute_*`` ranks the innermost module that
holds a compute regression first (its ancestors carry it only in their totals).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..comparison import Options
from ..model.intervals import nest
from .align import align, unmatched
from .name_map import NameMapper
from .optree import OpTree, none_for_missing, preorder
from .sidebyside import BASE_ONLY, BOTH, TARGET_ONLY, ratio

REFERENCE_HEADERS_ROWS = ["Order Id", "Module Class", "Module Level", "Module Name", "Operator Name",
                          "Kernel Details", "Device Self Time(us)", "Device Total Time(us)", "Operator Name",
                          "Kernel Details", "Device Self Time(us)", "Device Total Time(us)",
                          "Device Total Time Diff(us)", "Device Self Time Diff(us)", "Diff Total Ratio",
                          "Base Call Stack", "Comparison Call Stack"]
REFERENCE_HEADERS_STATS = ["Order Id", "Module Class", "Module Level", "Module Name", "Operator Name",
                           "Kernel Details", "Device Self Time(ms)", "Number", "Device Total Time(ms)",
                           "Kernel Details", "Device Self Time(ms)", "Number", "Device Total Time(ms)",
                           "Device Total Time Diff(ms)", "Device Self Time Diff(ms)", "Diff Total Ratio",
                           "Base Call Stack", "Comparison Call Stack"]
_CLASS_SUFFIX = re.compile(r"_[0-9]+$")
_EMPTY = np.zeros(0, np.int64)


def has_modules(profile) -> bool:
    return bool(profile.has()["modules"])


def use_module_sheets(base, target, disable_module: bool = False) -> bool:
    """The reference writes Module sheets instead of Operator sheets when both sides have modules."""
    return not disable_module and has_modules(base) and has_modules(target)


def _forest(start: np.ndarray, end: np.ndarray):
    """Nest intervals by time (one group): pre-order permutation, parent and subtree size."""
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    par, _ = nest(start, end)
    order, parent, _, size = preorder(par, start, end - start)
    return order, parent, size


def _innermost(start, end, parent, ts, strict: bool) -> np.ndarray:
    """Innermost pre-ordered interval around each ts (strict: start < ts < end), -1 if none."""
    ts = np.asarray(ts, np.int64)
    if not len(start):
        return np.full(len(ts), -1, np.int64)
    idx = np.searchsorted(start, ts, side="left" if strict else "right") - 1
    while True:
        ok = idx >= 0
        e = end[np.maximum(idx, 0)]
        bad = ok & ~((e > ts) if strict else (e >= ts))
        if not bad.any():
            return idx
        idx = np.where(bad, parent[np.maximum(idx, 0)], idx)


@dataclass
class ModuleSide:
    """Module forests of one profile; modules 0..n_fwd-1 forward, then backward, each pre-ordered."""
    tree: OpTree
    start: np.ndarray
    end: np.ndarray
    parent: np.ndarray
    raw_path: list          # reference form: "/nn.Module: AlexNet_0/nn.Module: Linear_0"
    raw_name: list
    n_fwd: int
    self_ns: np.ndarray
    total_ns: np.ndarray
    call_stack: list
    top_ops: dict           # module -> op nodes in start order
    op_dev: dict            # (module, op node) -> dev event indices assigned to it
    kids: dict              # module -> children in start order; -1 / -2: fwd / bwd roots
    self_comm_ns: np.ndarray            # the communication part of self_ns / total_ns
    total_comm_ns: np.ndarray

    def op_self_ns(self, m: int, node: int, comm_only: bool = False) -> int:
        idx = self.op_dev.get((m, node), _EMPTY)
        if not len(idx):
            return 0
        dev = self.__dict__.get("_dev_arrays")
        if dev is None:   # column arrays once, not per call
            dev = self.__dict__["_dev_arrays"] = (self.tree.dev["dur_ns"].to_numpy(),
                                                  self.tree.dev["comm"].to_numpy(bool))
        if comm_only:
            idx = idx[dev[1][idx]]
        return int(dev[0][idx].sum())

    def times_us(self, m) -> tuple:
        """(self, total, self comm, total comm) device µs of module m (zeros for None)."""
        if m is None:
            return 0.0, 0.0, 0.0, 0.0
        return (self.self_ns[m] / 1e3, self.total_ns[m] / 1e3, self.self_comm_ns[m] / 1e3,
                self.total_comm_ns[m] / 1e3)

    def op_details(self, m: int, node: int) -> str:
        lines = self.tree.kernel_lines
        return "".join(lines[i] for i in self.op_dev.get((m, node), _EMPTY).tolist())


def build_modules(profile, tree: OpTree | None = None, step: int | None = None) -> ModuleSide:
    tree = tree or OpTree(profile)
    sym = profile.symbols
    strings = sym.as_array()
    window = tree.step_window(step)
    pf = profile.pyfuncs
    is_mod = pf["is_module"].to_numpy()
    # ---- forward module events: nn.Module python functions + Optimizer* host ops
    opt_ids = sym.ids_matching(lambda s: s.lower().startswith("optimizer"))
    opt_nodes = np.flatnonzero(np.isin(tree.name, opt_ids))
    f_start = np.concatenate([pf["start_ns"].to_numpy()[is_mod], tree.start[opt_nodes]])
    f_end = np.concatenate([(pf["start_ns"] + pf["dur_ns"]).to_numpy()[is_mod], tree.end[opt_nodes]])
    f_name = np.concatenate([strings[pf["name"].to_numpy()[is_mod]], strings[tree.name[opt_nodes]]])
    if window is not None:
        w = (f_start >= window[0]) & (f_start <= window[1])
        f_start, f_end, f_name = f_start[w], f_end[w], f_name[w]
    order, f_par, f_size = _forest(f_start, f_end)
    f_start, f_end, f_name = f_start[order], f_end[order], f_name[order].tolist()
    f_path = _paths(f_par, f_name)
    # ---- backward events: the autograd op at each fwdbwd flow end, on the bwd pid
    fb = profile.fwdbwd
    b_start, b_end, b_name = _EMPTY, _EMPTY, []
    if len(fb) and len(f_start):
        bwd_pid = int(fb["end_pid"].iloc[0])
        pid = profile.ops["pid"].to_numpy()[tree.op_rows]
        cand = np.flatnonzero(pid == bwd_pid)
        cand = cand[np.lexsort((-(tree.end[cand] - tree.start[cand]), tree.start[cand]))]
        first = np.r_[True, tree.start[cand][1:] != tree.start[cand][:-1]]   # longest op per start
        by_ts = dict(zip(tree.start[cand][first].tolist(), cand[first].tolist()))
        mod = _innermost(f_start, f_end, f_par, fb["start_ns"].to_numpy(), strict=True)
        ends = [by_ts.get(t, -1) for t in fb["end_ns"].to_numpy().tolist()]
        keep = [(e, m) for e, m in zip(ends, mod.tolist()) if e >= 0 and m >= 0]
        if keep:
            en = np.array([e for e, _ in keep], np.int64)
            b_start, b_end = tree.start[en], tree.end[en]
            b_name = np.array([f"[ BACKWARD ]{f_path[m]}" for _, m in keep], dtype=object)
            if window is not None:
                w = (b_start >= window[0]) & (b_start <= window[1])
                b_start, b_end, b_name = b_start[w], b_end[w], b_name[w]
    border, b_par, b_size = _forest(b_start, b_end)
    b_start, b_end = np.asarray(b_start)[border], np.asarray(b_end)[border]
    b_name = [b_name[i] for i in border.tolist()]
    b_path = _paths(b_par, b_name)
    nf, nb = len(f_start), len(b_start)
    start = np.concatenate([f_start, b_start]).astype(np.int64)
    end = np.concatenate([f_end, b_end]).astype(np.int64)
    parent = np.concatenate([f_par, np.where(b_par >= 0, b_par + nf, -1)]).astype(np.int64)
    n = nf + nb
    # ---- device time: each event credited in each forest to the innermost module (inclusive)
    dev = tree.dev
    launch, dur = dev["launch_ns"].to_numpy(), dev["dur_ns"].to_numpy()
    credit_f = _innermost(f_start, f_end, f_par, launch, strict=False)
    credit_b = _innermost(b_start, b_end, b_par, launch, strict=False)
    credit_b = np.where(credit_b >= 0, credit_b + nf, -1)
    comm_dur = np.where(dev["comm"].to_numpy(bool), dur, 0)
    self_ns, self_comm_ns = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for cr in (credit_f, credit_b):
        np.add.at(self_ns, cr[cr >= 0], dur[cr >= 0])
        np.add.at(self_comm_ns, cr[cr >= 0], comm_dur[cr >= 0])
    ids = np.arange(n)
    hi = ids + np.concatenate([f_size, b_size]).astype(np.int64)   # both forests are pre-ordered blocks
    total_ns, total_comm_ns = ((c[hi] - c[ids]) for c in (np.concatenate([[0], np.cumsum(v)])
                                                           for v in (self_ns, self_comm_ns)))
    # ---- host ops into modules (strict containment), top-level ops per module
    skip = tree.is_step | np.isin(tree.name, opt_ids)
    nodes = np.flatnonzero(~skip)
    mf = _innermost(f_start, f_end, f_par, tree.start[nodes], strict=True)
    mb = _innermost(b_start, b_end, b_par, tree.start[nodes], strict=True)
    where = np.full(tree.n, -1, np.int64)
    where[nodes] = np.where(mf >= 0, mf, np.where(mb >= 0, mb + nf, -1))
    par_mod = np.where(tree.parent >= 0, where[np.maximum(tree.parent, 0)], -1)
    top = np.flatnonzero((where >= 0) & ((tree.parent < 0) | (par_mod != where)))
    top = top[np.lexsort((tree.start[top], where[top]))]
    bounds = np.searchsorted(where[top], np.arange(n + 1))
    top_ops = {m: top[bounds[m]:bounds[m + 1]] for m in range(n) if bounds[m + 1] > bounds[m]}
    # ---- each module's self kernels go to the first top op ending at/after the launch
    op_dev: dict = {}
    for cr in (credit_f, credit_b):
        ev = np.flatnonzero(cr >= 0)
        ev = ev[np.lexsort((launch[ev], cr[ev]))]
        eb = np.searchsorted(cr[ev], np.arange(n + 1))
        for m, ops in top_ops.items():
            e = ev[eb[m]:eb[m + 1]]
            if not len(e):
                continue
            run_end = np.maximum.accumulate(tree.end[ops])
            k = np.searchsorted(run_end, launch[e], side="left")
            ok = k < len(ops)
            ok[ok] &= tree.start[ops[k[ok]]] <= launch[e[ok]]
            ev_ok, node_ok = e[ok], ops[k[ok]]
            if not len(ev_ok):
                continue
            o = np.argsort(node_ok, kind="stable")       # group by node, keeping event order
            ev_ok, node_ok = ev_ok[o], node_ok[o]
            cut = np.flatnonzero(np.diff(node_ok)) + 1
            for node, idx in zip(node_ok[np.r_[0, cut]].tolist(), np.split(ev_ok, cut)):
                key = (m, int(node))
                prev = op_dev.get(key)
                op_dev[key] = idx if prev is None else np.concatenate([prev, idx])
    names = f_name + b_name
    raw_path = f_path + b_path
    kids = {}
    for i in range(n):
        key = parent[i] if parent[i] >= 0 else (-1 if i < nf else -2)
        kids.setdefault(int(key), []).append(i)
    return ModuleSide(tree, start, end, parent, raw_path, names, nf, self_ns, total_ns,
                      _call_stacks(profile, start, parent, names), top_ops, op_dev, kids,
                      self_comm_ns, total_comm_ns)


def _paths(parent: np.ndarray, names: list) -> list:
    out = []
    for i, nm in enumerate(names):
        out.append((out[parent[i]] if parent[i] >= 0 else "") + "/" + nm)
    return out


def _call_stacks(profile, start, parent, names) -> list:
    """Chain of the innermost non-module python function around each module start, else the
    chain of module names."""
    pf = profile.pyfuncs
    fn = ~pf["is_module"].to_numpy()
    s = pf["start_ns"].to_numpy()[fn]
    e = s + pf["dur_ns"].to_numpy()[fn]
    order, fpar, _ = _forest(s, e)
    fname = profile.symbols.as_array()[pf["name"].to_numpy()[fn][order]]
    hit = _innermost(s[order], e[order], fpar, start, strict=True)
    memo: dict = {}

    def chain(i):
        todo = []
        while i >= 0 and i not in memo:
            todo.append(i)
            i = fpar[i]
        for j in reversed(todo):
            memo[j] = (memo[fpar[j]] + ";\n" if fpar[j] >= 0 else "") + fname[j]
        return memo[todo[0] if todo else i]

    own = []                                  # module-name chains (pre-order: parents first)
    for i, nm in enumerate(names):
        own.append((own[parent[i]] + ";\n" if parent[i] >= 0 else "") + nm)
    return [chain(h) if h >= 0 else own[i] for i, h in enumerate(hit.tolist())]


# ------------------------------------------------------------------------------ comparison

def _clean(raw: str) -> str:
    return raw.replace("nn.Module: ", "").replace("nn.Module:", "")


def _ref_class(raw_name: str) -> str:
    return _CLASS_SUFFIX.sub("", raw_name.split("/")[-1])


def _ratio1(t: float, b: float) -> float:
    """sidebyside.ratio for one pair of numbers (no array round trip)."""
    t = 0.0 if t != t else t
    b = 0.0 if b != b else b
    return t / b if b else (float("inf") if t else 1.0)


def _ref_ratio(t: float, b: float) -> float:
    if not b and not t:
        return 1.0
    return float("inf") if not b else round(t / b, 4)


def match_modules(bs: ModuleSide, ts: ModuleSide, mapper: NameMapper, opts: Options) -> list:
    """Module pairs (base or None, target or None) in the reference's row order."""
    out = []
    for root in (-1, -2):
        queue = [(root, root)]
        while queue:
            b, t = queue.pop(0)
            cb = bs.kids.get(b, []) if b is not None else []
            ct = ts.kids.get(t, []) if t is not None else []
            if not cb and not ct:
                continue
            if opts.disable_details:
                ai, ti = unmatched(len(cb), len(ct))
            else:
                ai, ti = align([mapper.module_key(bs.raw_path[m]) for m in cb],
                               [mapper.module_key(ts.raw_path[m]) for m in ct])
            for x, y in zip(ai.tolist(), ti.tolist()):
                pair = (cb[x] if x >= 0 else None, ct[y] if y >= 0 else None)
                out.append(pair)
                queue.append(pair)
    with_b = sorted((p for p in out if p[0] is not None), key=lambda p: bs.start[p[0]])
    only_t = sorted((p for p in out if p[0] is None), key=lambda p: ts.start[p[1]])
    ordered, i = [], 0
    for b, t in with_b:
        if t is not None:
            while i < len(only_t) and ts.start[only_t[i][1]] < ts.start[t]:
                ordered.append(only_t[i])
                i += 1
        ordered.append((b, t))
    return ordered + only_t[i:]


@dataclass
class ModuleResult:
    rows: pd.DataFrame          # ModuleCompare (µs): a module row, then its top-level op rows
    stats: pd.DataFrame         # ModuleCompareStatistic (ms): per module path, then per op name

    def reference_rows_rows(self) -> list[list]:
        return reference_rows_rows(self.rows)

    def reference_rows_stats(self) -> list[list]:
        return reference_rows_stats(self.stats)


def _module_info(side: ModuleSide, m):
    raw = side.raw_path[m]
    return {"raw_path": raw, "path": _clean(raw), "depth": raw.count("/"),
            "raw_class": _ref_class(side.raw_name[m]), "module_class": _clean(_ref_class(side.raw_name[m])),
            "module": _clean(side.raw_name[m].split("/")[-1]),
            "phase": "backward" if m >= side.n_fwd else "forward"}


def _op_cs(side: ModuleSide, node: int) -> str | None:
    prof = side.tree.profile
    return prof.symbols.string(prof.ops["call_stack"].to_numpy()[side.tree.op_rows[node]]) or None


def _split(b: tuple, t: tuple, unit: str) -> dict:
    """Compute / communication columns from (self, total, self comm, total comm) of each side.

    Op rows have NaN totals.  ``diff_compute_<unit>`` mirrors ``diff_<unit>``: the total diff on
    module rows, the self diff on op rows."""
    out = {}
    for p, (sf, tot, sc, tc) in (("b", b), ("t", t)):
        out.update({f"{p}_self_compute_{unit}": sf - sc, f"{p}_total_compute_{unit}": tot - tc,
                    f"{p}_self_comm_{unit}": sc, f"{p}_total_comm_{unit}": tc})
    for part in ("self_compute", "total_compute", "self_comm", "total_comm"):
        out[f"diff_{part}_{unit}"] = out[f"t_{part}_{unit}"] - out[f"b_{part}_{unit}"]
    tot = out[f"diff_total_compute_{unit}"]
    out[f"diff_compute_{unit}"] = out[f"diff_self_compute_{unit}"] if np.isnan(tot) else tot
    return out


def compare_modules(base, target, options: Options | None = None) -> ModuleResult:
    opts = options or Options()
    bs = build_modules(base, step=opts.base_step)
    ts = build_modules(target, step=opts.target_step)
    mapper = NameMapper.for_profiles(base, target, opts.op_name_map)
    pairs = match_modules(bs, ts, mapper, opts)
    bsym, tsym = base.symbols.as_array(), target.symbols.as_array()
    rows, groups = [], {}
    for k, (b, t) in enumerate(pairs):
        info = _module_info(bs, b) if b is not None else _module_info(ts, t)
        status = BOTH if b is not None and t is not None else (BASE_ONLY if b is not None else TARGET_ONLY)
        bt, tt = bs.times_us(b), ts.times_us(t)
        (bself, btot), (tself, ttot) = bt[:2], tt[:2]
        rows.append({"name": info["module"], "pair": k, "kind": "module", **info, "b_op_name": None, "t_op_name": None,
                     "b_kernel_details": None, "t_kernel_details": None,
                     "b_self_us": bself, "b_total_us": btot, "t_self_us": tself, "t_total_us": ttot,
                     "diff_total_us": ttot - btot, "diff_self_us": tself - bself, "diff_us": ttot - btot,
                     "diff_ratio": _ratio1(ttot, btot),
                     "b_call_stack": bs.call_stack[b] if b is not None else None,
                     "t_call_stack": ts.call_stack[t] if t is not None else None, "status": status,
                     **_split(bt, tt, "us")})
        bo = bs.top_ops.get(b, _EMPTY) if b is not None else _EMPTY
        to = ts.top_ops.get(t, _EMPTY) if t is not None else _EMPTY
        bnames = bsym[bs.tree.name[bo]].tolist() if len(bo) else []
        tnames = tsym[ts.tree.name[to]].tolist() if len(to) else []
        ai, ti = (unmatched(len(bo), len(to)) if opts.disable_details
                  else align(mapper.keys(bnames), mapper.keys(tnames)))
        for x, y in zip(ai.tolist(), ti.tolist()):
            bv = bs.op_self_ns(b, int(bo[x])) / 1e3 if x >= 0 else 0.0
            tv = ts.op_self_ns(t, int(to[y])) / 1e3 if y >= 0 else 0.0
            bc = bs.op_self_ns(b, int(bo[x]), comm_only=True) / 1e3 if x >= 0 else 0.0
            tc = ts.op_self_ns(t, int(to[y]), comm_only=True) / 1e3 if y >= 0 else 0.0
            rows.append({"name": bnames[x] if x >= 0 else tnames[y], "pair": k, "kind": "op", **info,
                         "b_op_name": bnames[x] if x >= 0 else None, "t_op_name": tnames[y] if y >= 0 else None,
                         "b_kernel_details": bs.op_details(b, int(bo[x])) if x >= 0 else None,
                         "t_kernel_details": ts.op_details(t, int(to[y])) if y >= 0 else None,
                         "b_self_us": bv, "b_total_us": np.nan, "t_self_us": tv, "t_total_us": np.nan,
                         "diff_total_us": np.nan, "diff_self_us": tv - bv, "diff_us": tv - bv,
                         "diff_ratio": _ratio1(tv, bv),
                         "b_call_stack": _op_cs(bs, int(bo[x])) if x >= 0 else None,
                         "t_call_stack": _op_cs(ts, int(to[y])) if y >= 0 else None,
                         "status": BOTH if x >= 0 and y >= 0 else (BASE_ONLY if x >= 0 else TARGET_ONLY),
                         **_split((bv, np.nan, bc, np.nan), (tv, np.nan, tc, np.nan), "us")})
        # statistic groups, keyed by mapped path, in the reference's insertion order
        for side, m, slot in ((bs, b, 0), (ts, t, 1)):
            if m is not None:
                g = groups.setdefault((slot, mapper.module_key(side.raw_path[m])), [])
                g.append(m)
    df = none_for_missing(pd.DataFrame(rows, columns=list(rows[0]) if rows else
                                       ["name", "pair", "kind", "path", "status"]))
    return ModuleResult(df, _module_stats(bs, ts, groups, mapper, bsym, tsym))


def _op_stats(side: ModuleSide, mods: list, mapper: NameMapper, strings) -> dict:
    """op key -> [display name, [ms per op], {kernel name: [ms]}, [comm ms per op]] over the modules'
    top-level ops."""
    out: dict = {}
    dev = side.tree.dev
    dur, kname = dev["dur_ns"].to_numpy(), strings[dev["name"].to_numpy()] if len(dev) else []
    comm = dev["comm"].to_numpy(bool)
    for m in mods:
        for node in side.top_ops.get(m, _EMPTY).tolist():
            nm = strings[side.tree.name[node]]
            rec = out.setdefault(mapper.key(nm), [nm, [], {}, []])
            idx = side.op_dev.get((m, node), _EMPTY)
            rec[1].append(dur[idx].sum() / 1e6 if len(idx) else 0.0)
            rec[3].append(dur[idx[comm[idx]]].sum() / 1e6 if len(idx) else 0.0)
            for i in idx.tolist():
                rec[2].setdefault(kname[i], []).append(dur[i] / 1e6)
    return out


def _kernel_summary(d: dict) -> str:
    return "".join(f"{k}, [number: {len(v)}], [duration_ms: {'%.3f' % sum(v)}]\n" for k, v in d.items())


def _group_ms(side: ModuleSide, mods: list) -> tuple:
    """(self, total, self comm, total comm) device ms summed over a group of modules."""
    return tuple(sum(arr[m] for m in mods) / 1e6
                 for arr in (side.self_ns, side.total_ns, side.self_comm_ns, side.total_comm_ns))


def _module_stats(bs, ts, groups, mapper, bsym, tsym) -> pd.DataFrame:
    keys = [k for (slot, k) in groups if slot == 0]
    keys += [k for (slot, k) in groups if slot == 1 and (0, k) not in groups]
    rows = []
    for key in keys:
        bm, tm = groups.get((0, key), []), groups.get((1, key), [])
        info = _module_info(bs, bm[0]) if bm else _module_info(ts, tm[0])
        status = BOTH if bm and tm else (BASE_ONLY if bm else TARGET_ONLY)
        bt, tt = _group_ms(bs, bm), _group_ms(ts, tm)
        (bself, btot), (tself, ttot) = bt[:2], tt[:2]
        rows.append({"name": info["module"], "kind": "module", **info,
                     "b_self_ms": bself, "b_number": len(bm), "b_total_ms": btot,
                     "t_self_ms": tself, "t_number": len(tm), "t_total_ms": ttot,
                     "diff_total_ms": ttot - btot, "diff_self_ms": tself - bself, "diff_ms": ttot - btot,
                     "diff_ratio": _ratio1(ttot, btot),
                     "b_kernel_details": None, "t_kernel_details": None,
                     "b_call_stack": bs.call_stack[bm[0]] if bm else None,
                     "t_call_stack": ts.call_stack[tm[0]] if tm else None, "status": status,
                     **_split(bt, tt, "ms")})
        bops, tops = _op_stats(bs, bm, mapper, bsym), _op_stats(ts, tm, mapper, tsym)
        for k in list(bops) + [k for k in tops if k not in bops]:
            b, t = bops.get(k), tops.get(k)
            bv, tv = (sum(b[1]) if b else 0.0), (sum(t[1]) if t else 0.0)
            rows.append({"name": (b or t)[0], "kind": "op", **info,
                         "b_self_ms": bv, "b_number": len(b[1]) if b else 0, "b_total_ms": np.nan,
                         "t_self_ms": tv, "t_number": len(t[1]) if t else 0, "t_total_ms": np.nan,
                         "diff_total_ms": np.nan, "diff_self_ms": tv - bv, "diff_ms": tv - bv,
                         "diff_ratio": _ratio1(tv, bv),
                         "b_kernel_details": _kernel_summary(b[2]) if b else "",
                         "t_kernel_details": _kernel_summary(t[2]) if t else "",
                         "b_call_stack": None, "t_call_stack": None,
                         "status": BOTH if b and t else (BASE_ONLY if b else TARGET_ONLY),
                         **_split((bv, np.nan, sum(b[3]) if b else 0.0, np.nan),
                                  (tv, np.nan, sum(t[3]) if t else 0.0, np.nan), "ms")})
    return none_for_missing(pd.DataFrame(rows, columns=list(rows[0]) if rows else ["name", "kind", "path", "status"]))


# ------------------------------------------------------------------------- reference sheets

def _none(s):
    return s if isinstance(s, str) and s else None


def reference_rows_rows(df: pd.DataFrame) -> list[list]:
    out = []
    for i, r in enumerate(df.itertuples(index=False), 1):
        head = [i, r.raw_class, r.depth, r.raw_path.replace("nn.Module:", "")]
        if r.kind == "module":
            out.append(head + ["TOTAL", None, r.b_self_us, r.b_total_us, "TOTAL", None, r.t_self_us, r.t_total_us,
                               round(r.t_total_us - r.b_total_us, 2), round(r.t_self_us - r.b_self_us, 2),
                               _ref_ratio(r.t_total_us, r.b_total_us), _none(r.b_call_stack), _none(r.t_call_stack)])
        else:   # op call stacks only where the op got slower, "N/A" when it has none
            diff = round(r.t_self_us - r.b_self_us, 2)
            cs = [(_none(c) or "N/A") if diff > 0 and _none(op) else None
                  for c, op in ((r.b_call_stack, r.b_op_name), (r.t_call_stack, r.t_op_name))]
            out.append(head + [_none(r.b_op_name), _none(r.b_kernel_details), r.b_self_us, None,
                               _none(r.t_op_name), _none(r.t_kernel_details), r.t_self_us, None, None,
                               diff, _ref_ratio(r.t_self_us, r.b_self_us), *cs])
    return out


def reference_rows_stats(df: pd.DataFrame) -> list[list]:
    out = []
    for i, r in enumerate(df.itertuples(index=False), 1):
        head = [i, r.raw_class, r.depth, r.raw_path.replace("nn.Module:", "")]
        if r.kind == "module":
            out.append(head + ["[ TOTAL ]", None, r.b_self_ms, r.b_number, r.b_total_ms, None, r.t_self_ms,
                               r.t_number, r.t_total_ms, round(r.t_total_ms - r.b_total_ms, 2),
                               round(r.t_self_ms - r.b_self_ms, 2), _ref_ratio(r.t_total_ms, r.b_total_ms),
                               _none(r.b_call_stack), _none(r.t_call_stack)])
        else:
            out.append(head + [r.name, _none(r.b_kernel_details), r.b_self_ms, r.b_number, None,
                               _none(r.t_kernel_details), r.t_self_ms, r.t_number, None, None,
                               round(r.t_self_ms - r.b_self_ms, 2), _ref_ratio(r.t_self_ms, r.b_self_ms),
                               None, None])
    return out
