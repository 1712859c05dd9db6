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
the reference's sheets (``presenters.reference_rows``) keep its text (``/ DistributedDataParallel_0/ ...``).

Beyond the reference, every row splits its device times into communication (``*_comm_*``: NCCL
kernels, HCCL ops; see ``optree``) and compute (``*_compute_*``: the rest), so a slower collective is
not blamed on the module that launched it.  ``diff_self_compute_*`` ranks the innermost module that
holds a compute regression first (its ancestors carry it only in their totals).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from .options import Options
from ..model.intervals import nest, sweep_order
from .align import align, unmatched
from .module_sheets import module_stats, objects, rows_frame
from .name_map import NameMapper
from .optree import OpTree, tree_of
from .scope_tree import op_view

_EMPTY = np.zeros(0, np.int64)


def has_modules(profile) -> bool:
    """nn.Module events, or (``scope_tree``) a scope tree from the kernels' scope paths."""
    return bool(profile.has()["modules"]) or bool(op_view(profile).has()["modules"])


def use_module_sheets(base, target, disable_module: bool = False) -> bool:
    """The reference writes Module sheets instead of Operator sheets when both sides have modules."""
    return not disable_module and has_modules(base) and has_modules(target)


def _forest(start: np.ndarray, end: np.ndarray, sizes: bool = True):
    """Nest intervals by time (one group): pre-order permutation, parent and subtree size (None
    unless ``sizes``).

    ``nest``'s parent of an interval is its previous greater-or-equal end in sweep order (start,
    longer first, row), so every subtree is a contiguous run of that order: it is the pre-order
    ``optree.preorder`` lays out (siblings by start, longer first, row)."""
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    n = len(start)
    par, depth = nest(start, end)
    order = sweep_order(start, end, np.zeros(n, np.int64))
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    p = par[order]
    parent = np.where(p >= 0, pos[np.maximum(p, 0)], -1)
    if not sizes:
        return order, parent, None
    depth = depth[order].astype(np.int64)
    size = np.ones(n, np.int64)
    by = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by], np.arange(int(depth.max()) + 2)) if n else []
    for d in range(int(depth.max()) if n else 0, 0, -1):       # deepest level first
        at = by[bounds[d]:bounds[d + 1]]
        np.add.at(size, parent[at], size[at])
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
    """Module forests of one profile; modules 0..n_fwd-1 forward, then backward, each pre-ordered.

    The top-level ops of module m are the slots ``top[top_bounds[m]:top_bounds[m + 1]]`` (start
    order); slot s owns the device events ``slot_ev[slot_lo[s]:slot_hi[s]]`` (launch order)."""
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
    kids: dict              # module -> children in start order; -1 / -2: fwd / bwd roots
    self_comm_ns: np.ndarray            # the communication part of self_ns / total_ns
    total_comm_ns: np.ndarray
    top: np.ndarray                     # op nodes, grouped by module
    top_bounds: np.ndarray
    slot_ev: np.ndarray
    slot_lo: np.ndarray
    slot_hi: np.ndarray
    slot_ns: np.ndarray                 # device time of each slot (its own kernels)
    slot_comm_ns: np.ndarray
    strings: np.ndarray                 # the profile's symbols

    @property
    def top_ops(self) -> dict:
        """module -> its top-level op nodes in start order."""
        b = self.top_bounds
        return {m: self.top[b[m]:b[m + 1]] for m in np.flatnonzero(b[1:] > b[:-1]).tolist()}

    @property
    def op_dev(self) -> dict:
        """(module, op node) -> the device events credited to it."""
        mod = np.repeat(np.arange(len(self.top_bounds) - 1), np.diff(self.top_bounds))
        out = {}
        for s in np.lexsort((self.top, mod)).tolist():
            if self.slot_hi[s] > self.slot_lo[s]:
                out[(int(mod[s]), int(self.top[s]))] = self.slot_ev[self.slot_lo[s]:self.slot_hi[s]]
        return out

    @cached_property
    def slot_name(self) -> np.ndarray:
        """Op name of each slot."""
        return self.strings[self.tree.name[self.top]]

    @cached_property
    def slot_details(self) -> np.ndarray:
        """Kernel detail lines of each slot."""
        texts, codes = self.tree.kernel_line_table     # (each distinct line once: no line per event)
        ev = [texts[i] for i in (self.slot_ev if codes is None else codes[self.slot_ev]).tolist()]
        return objects("".join(ev[lo:hi]) for lo, hi in zip(self.slot_lo.tolist(), self.slot_hi.tolist()))

    @cached_property
    def slot_call_stack(self) -> np.ndarray:
        """Call stack of each slot's op (None when it has none)."""
        ids = self.tree.profile.ops["call_stack"].to_numpy()[self.tree.op_rows[self.top]]
        return objects(s or None for s in self.strings[ids].tolist())

    @cached_property
    def dev_dur(self) -> np.ndarray:
        """Duration (ns) of each device event of the tree."""
        return self.tree.dev["dur_ns"].to_numpy()

    def kernel_codes(self) -> tuple:
        """(code of each device event's kernel name, the names)."""
        if "_kernel_codes" not in self.__dict__:
            self.__dict__["_kernel_codes"] = pd.factorize(self.strings[self.tree.dev["name"].to_numpy()])
        return self.__dict__["_kernel_codes"]

    def prepared(self) -> "ModuleSide":
        """Itself with every per-side value the sheets read built (op names, kernel details, call
        stacks, kernel codes), so a copy pickled elsewhere needs no tree for them."""
        self.slot_name, self.slot_details, self.slot_call_stack, self.kernel_codes()
        return self

    def __getstate__(self) -> dict:
        """Pickled without the op tree and the symbols (the receiving process has its own copies
        of both: :meth:`attach`)."""
        return {**self.__dict__, "tree": None, "strings": None}

    def attach(self, tree: OpTree, strings: np.ndarray) -> "ModuleSide":
        """Give an unpickled copy its profile's op tree and symbols back."""
        if self.tree is None:
            self.tree, self.strings = tree, strings
        return self


def _forward(profile, tree, strings, opt_ids, window):
    """nn.Module python functions + Optimizer* host ops, pre-ordered: start, end, name, parent, size."""
    pf = profile.pyfuncs
    is_mod = pf["is_module"].to_numpy()
    opt_nodes = np.flatnonzero(np.isin(tree.name, opt_ids))
    f_start = np.concatenate([pf["start_ns"].to_numpy()[is_mod], tree.start[opt_nodes]])
    f_end = np.concatenate([(pf["start_ns"] + pf["dur_ns"]).to_numpy()[is_mod], tree.end[opt_nodes]])
    f_name = np.concatenate([strings[pf["name"].to_numpy()[is_mod]], strings[tree.name[opt_nodes]]])
    if window is not None:
        w = (f_start >= window[0]) & (f_start <= window[1])
        f_start, f_end, f_name = f_start[w], f_end[w], f_name[w]
    order, f_par, f_size = _forest(f_start, f_end)
    return f_start[order], f_end[order], f_name[order].tolist(), f_par, f_size


def _backward(profile, tree, f_start, f_end, f_par, f_path, window):
    """The autograd op at each fwdbwd flow end (on the bwd pid), named after the forward module
    around the flow start, pre-ordered: start, end, name, parent, size."""
    fb = profile.fwdbwd
    b_start, b_end, b_name = _EMPTY, _EMPTY, objects([])
    if len(fb) and len(f_start):
        pid = profile.ops["pid"].to_numpy()[tree.op_rows]
        cand = np.flatnonzero(pid == int(fb["end_pid"].iloc[0]))
        cand = cand[np.lexsort((-(tree.end[cand] - tree.start[cand]), tree.start[cand]))]
        cs = tree.start[cand]
        first = np.r_[True, cs[1:] != cs[:-1]][:len(cs)]       # longest op per start
        at, node = cs[first], cand[first]
        mod = _innermost(f_start, f_end, f_par, fb["start_ns"].to_numpy(), strict=True)
        fe = fb["end_ns"].to_numpy()
        k = np.minimum(np.searchsorted(at, fe), max(len(at) - 1, 0))
        hit = (at[k] == fe) if len(at) else np.zeros(len(fe), bool)
        keep = hit & (mod >= 0)
        if keep.any():
            en = node[k[keep]]
            b_start, b_end = tree.start[en], tree.end[en]
            b_name = objects(f"[ BACKWARD ]{f_path[m]}" for m in mod[keep].tolist())
            if window is not None:
                w = (b_start >= window[0]) & (b_start <= window[1])
                b_start, b_end, b_name = b_start[w], b_end[w], b_name[w]
    order, b_par, b_size = _forest(b_start, b_end)
    return np.asarray(b_start)[order], np.asarray(b_end)[order], b_name[order].tolist(), b_par, b_size


def _slot_events(tree, top, bounds, credits, launch):
    """Each module's self events go to its first top-level op ending at/after the launch (when that
    op has started): (events, slots) sorted by slot, then launch.

    Per module, the ops' running max end is searched for the launch; all modules at once by keying
    both with (module, rank of the time)."""
    top_mod = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    t_start, t_end = tree.start[top], tree.end[top]
    evs, slots = [_EMPTY], [_EMPTY]
    for cr in credits:
        ev = np.flatnonzero(cr >= 0)
        m = cr[ev]
        uniq, rank = np.unique(np.concatenate([t_end, launch[ev]]), return_inverse=True)
        r = len(uniq) + 1
        run_end = np.maximum.accumulate(top_mod * r + rank[:len(top)]) if len(top) else _EMPTY
        g = np.searchsorted(run_end, m * r + rank[len(top):], side="left")
        ok = g < bounds[m + 1]
        ok[ok] &= t_start[g[ok]] <= launch[ev[ok]]
        evs.append(ev[ok])
        slots.append(g[ok])
    ev, slot = np.concatenate(evs), np.concatenate(slots)
    o = np.lexsort((launch[ev], slot))
    return ev[o], slot[o]


def build_modules(profile, tree: OpTree | None = None, step: int | None = None) -> ModuleSide:
    """The module forests of one profile (optionally one step's window), with device times."""
    tree = tree or tree_of(profile)
    sym = profile.symbols
    strings = sym.as_array()
    window = tree.step_window(step)
    opt_ids = sym.ids_matching(lambda s: s.lower().startswith("optimizer"))
    f_start, f_end, f_name, f_par, f_size = _forward(profile, tree, strings, opt_ids, window)
    f_path = _paths(f_par, f_name)
    b_start, b_end, b_name, b_par, b_size = _backward(profile, tree, f_start, f_end, f_par, f_path, window)
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
    # ---- each top op's own kernels
    slot_ev, slot = _slot_events(tree, top, bounds, (credit_f, credit_b), launch)
    slot_lo = np.searchsorted(slot, np.arange(len(top)), side="left")
    slot_hi = np.searchsorted(slot, np.arange(len(top)), side="right")
    slot_ns, slot_comm_ns = ((c[slot_hi] - c[slot_lo]) for c in (np.concatenate([[0], np.cumsum(v[slot_ev])])
                                                                 for v in (dur, comm_dur)))
    names = f_name + b_name
    kids = {}
    for i, p in enumerate(parent.tolist()):
        kids.setdefault(p if p >= 0 else (-1 if i < nf else -2), []).append(i)
    return ModuleSide(tree, start, end, parent, f_path + b_path, names, nf, self_ns, total_ns,
                      _call_stacks(profile, strings, start, parent, names), kids, self_comm_ns, total_comm_ns,
                      top, bounds, slot_ev, slot_lo, slot_hi, slot_ns, slot_comm_ns, strings)


def side_modules(profile, tree: OpTree | None = None, step: int | None = None) -> ModuleSide:
    """``build_modules(profile, tree, step)`` (prepared), built once per (profile, step) in the
    derived-data cache (``model.derived``): a per-side reduction (``engines.side_work``) the CLI
    computes in the process that parsed the side, which sends it back without its tree."""
    from ..model.derived import derived
    side = derived(profile, f"modules:{step}", lambda: build_modules(profile, tree, step).prepared())
    return side.attach(tree or tree_of(profile), profile.symbols.as_array())


def _paths(parent: np.ndarray, names: list) -> list:
    """Full path of each pre-ordered node ("/" + names from the root)."""
    out = []
    for p, nm in zip(parent.tolist(), names):
        out.append((out[p] if p >= 0 else "") + "/" + nm)
    return out


def _call_stacks(profile, strings, start, parent, names) -> list:
    """Chain of the innermost non-module python function around each module start, else the
    chain of module names."""
    pf = profile.pyfuncs
    fn = ~pf["is_module"].to_numpy()
    s = pf["start_ns"].to_numpy()[fn]
    e = s + pf["dur_ns"].to_numpy()[fn]
    order, fpar, _ = _forest(s, e, sizes=False)
    fname = strings[pf["name"].to_numpy()[fn][order]]
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
    for p, nm in zip(parent.tolist(), names):
        own.append((own[p] + ";\n" if p >= 0 else "") + nm)
    return [chain(h) if h >= 0 else own[i] for i, h in enumerate(hit.tolist())]


# ------------------------------------------------------------------------------ comparison

def _align(a: list, b: list, disable: bool):
    """align() with the common case (equal sequences) answered directly."""
    if a == b and not disable:
        return range(len(a)), range(len(b))
    ai, ti = unmatched(len(a), len(b)) if disable else align(a, b)
    return ai.tolist(), ti.tolist()


def match_modules(bs: ModuleSide, ts: ModuleSide, mapper: NameMapper, opts: Options) -> list:
    """Module pairs (base or None, target or None) in the reference's row order."""
    bkey, tkey = ([mapper.module_key(p) for p in s.raw_path] for s in (bs, ts))
    out = []
    for root in (-1, -2):
        queue = deque([(root, root)])
        while queue:
            b, t = queue.popleft()
            cb = bs.kids.get(b, []) if b is not None else []
            ct = ts.kids.get(t, []) if t is not None else []
            if not cb and not ct:
                continue
            ai, ti = _align([bkey[m] for m in cb], [tkey[m] for m in ct], opts.disable_details)
            for x, y in zip(ai, ti):
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



def _row_layout(bs, ts, pairs, bkey: list, tkey: list, disable: bool):
    """Per module pair its module row, then its aligned top-level op rows: (pair, is module row,
    base, target) per row, with module indices on module rows, slot indices on op rows, -1 absent."""
    bb, tb = bs.top_bounds.tolist(), ts.top_bounds.tolist()
    rp, rm, rb, rt = [], [], [], []
    for k, (b, t) in enumerate(pairs):
        b0, b1 = (bb[b], bb[b + 1]) if b is not None else (0, 0)
        t0, t1 = (tb[t], tb[t + 1]) if t is not None else (0, 0)
        ai, ti = _align(bkey[b0:b1], tkey[t0:t1], disable)
        if isinstance(ai, range):
            xs, ys = range(b0, b1), range(t0, t1)
        else:
            xs = [b0 + x if x >= 0 else -1 for x in ai]
            ys = [t0 + y if y >= 0 else -1 for y in ti]
        rp.append(k)
        rp.extend([k] * len(xs))
        rm.append(True)
        rm.extend([False] * len(xs))
        rb.append(-1 if b is None else b)
        rb.extend(xs)
        rt.append(-1 if t is None else t)
        rt.extend(ys)
    return np.array(rp, np.int64), np.array(rm, bool), np.array(rb, np.int64), np.array(rt, np.int64)


def compare_modules(base, target, options: Options | None = None, trees=None, divide=(1, 1)) -> ModuleResult:
    """ModuleCompare and ModuleCompareStatistic of two profiles; ``divide``: (baseline, target)
    step counts the statistic is divided by (``per_step``; ModuleCompare's rows stay per call)."""
    opts = options or Options()
    note = scope_note(base, target)
    base, target = op_view(base), op_view(target)
    btree, ttree = trees or (None, None)
    bs = side_modules(base, btree, step=opts.base_step)
    ts = side_modules(target, ttree, step=opts.target_step)
    mapper = NameMapper.for_profiles(base, target, opts.op_name_map)
    pairs = match_modules(bs, ts, mapper, opts)
    bnames, tnames = (mapper.keys(s.slot_name.tolist()) for s in (bs, ts))
    # op matching key -> int, shared by both sides, in key order (not side order: see align.encode)
    codes = {k: i for i, k in enumerate(sorted(set(bnames) | set(tnames)))}
    bkey, tkey = ([codes[k] for k in names] for names in (bnames, tnames))
    pb = np.array([-1 if b is None else b for b, _ in pairs], np.int64)
    pt = np.array([-1 if t is None else t for _, t in pairs], np.int64)
    rows = rows_frame(bs, ts, pb, pt, *_row_layout(bs, ts, pairs, bkey, tkey, opts.disable_details))
    stats = module_stats(bs, ts, pb, pt, mapper, np.array(bkey, np.int64), np.array(tkey, np.int64), divide,
                         user_map=bool(opts.op_name_map))
    if note:
        rows.attrs["note"] = stats.attrs["note"] = note
    return ModuleResult(rows, stats)


def scope_note(base, target) -> str | None:
    """What the module view says when a side's module tree is its kernels' scope tree."""
    scoped = [role for role, p in (("baseline", base), ("target", target)) if op_view(p) is not p]
    if not scoped:
        return None
    text = (f"the {' and '.join(scoped)} module tree{'s are' if len(scoped) > 1 else ' is'} the scope tree of "
            "the device kernels' scope paths (no nn.Module events): each scope's total is the device time "
            "of the kernels under it")
    if len(scoped) == 1 or base.meta.framework != target.meta.framework:
        text += "; module paths of different frameworks rarely match, so each side's tree is shown with rows of "\
                "one side only"
    return text
