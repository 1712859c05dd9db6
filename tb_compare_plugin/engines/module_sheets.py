"""Column-wise building blocks of the module comparison's sheets (see ``module``).

The module-info columns, the compute / communication split and the ModuleCompareStatistic table
(per mapped module path, then per operator name); the reference's rows of both sheets are
``presenters.reference_rows``.
Per-operator sums are ``np.bincount`` over occurrences in the reference's order, which adds the
values one by one exactly as the reference's running ``sum`` does.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .optree import none_for_missing
from .per_step import divided
from .sidebyside import BASE_ONLY, BOTH, TARGET_ONLY

INFO_COLS = ("raw_path", "path", "depth", "raw_class", "module_class", "module", "phase")
STATUS = np.array([BOTH, BASE_ONLY, TARGET_ONLY], dtype=object)
_CLASS_SUFFIX = re.compile(r"_[0-9]+$")


def _clean(raw: str) -> str:
    """The path / name without the ``nn.Module:`` prefixes."""
    return raw.replace("nn.Module: ", "").replace("nn.Module:", "")


def module_info(side, m: int) -> tuple:
    """The INFO_COLS values of module m (memoised per side by path, name and phase)."""
    raw, name, bwd = side.raw_path[m], side.raw_name[m], m >= side.n_fwd
    memo = side.__dict__.setdefault("_info_memo", {})
    got = memo.get((raw, name, bwd))
    if got is None:
        last = name.split("/")[-1]
        cls = _CLASS_SUFFIX.sub("", last)
        got = memo[(raw, name, bwd)] = (raw, _clean(raw), raw.count("/"), cls, _clean(cls), _clean(last),
                                        "backward" if bwd else "forward")
    return got


def info_columns(infos: list, take: np.ndarray) -> dict:
    """INFO_COLS as columns: ``infos[take[i]]`` for every row i."""
    cols = {}
    for j, col in enumerate(INFO_COLS):
        vals = [x[j] for x in infos]
        arr = np.array(vals, dtype=np.int64) if col == "depth" else np.array(vals + [None], dtype=object)[:-1]
        cols[col] = arr[take]
    return cols


def status_col(has_b: np.ndarray, has_t: np.ndarray) -> np.ndarray:
    """both / baseline_only / target_only per row."""
    return STATUS[np.where(has_b & has_t, 0, np.where(has_b, 1, 2))]


def ratio_col(t: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sidebyside.ratio semantics per row: t / b, inf when only b is 0, 1 when both are (NaN = 0)."""
    t = np.where(np.isnan(t), 0.0, t)
    b = np.where(np.isnan(b), 0.0, b)
    q = t / np.where(b != 0, b, 1.0)
    return np.where(b != 0, q, np.where(t != 0, np.inf, 1.0))


def split_cols(b: tuple, t: tuple, unit: str) -> dict:
    """Compute / communication columns from (self, total, self comm, total comm) arrays of each side.

    Op rows have NaN totals.  ``diff_compute_<unit>`` mirrors ``diff_<unit>``: the total diff on
    module rows, the self diff on op rows."""
    out = {}
    for p, (sf, tot, sc, tc) in (("b", b), ("t", t)):
        out.update({f"{p}_self_compute_{unit}": sf - sc, f"{p}_total_compute_{unit}": tot - tc,
                    f"{p}_self_comm_{unit}": sc, f"{p}_total_comm_{unit}": tc})
    for part in ("self_compute", "total_compute", "self_comm", "total_comm"):
        out[f"diff_{part}_{unit}"] = out[f"t_{part}_{unit}"] - out[f"b_{part}_{unit}"]
    tot = out[f"diff_total_compute_{unit}"]
    out[f"diff_compute_{unit}"] = np.where(np.isnan(tot), out[f"diff_self_compute_{unit}"], tot)
    return out


def ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The index ranges [lo, hi) concatenated."""
    n = np.asarray(hi, np.int64) - np.asarray(lo, np.int64)
    if not n.sum():
        return np.zeros(0, np.int64)
    return np.repeat(np.asarray(lo, np.int64) - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))


def objects(values: list) -> np.ndarray:
    """A 1-d object array of the values (strings stay scalars)."""
    return np.array(list(values) + [None], dtype=object)[:-1]


def pick(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """values[idx] as objects, None where idx < 0."""
    out = np.full(len(idx), None, dtype=object)
    ok = idx >= 0
    out[ok] = values[idx[ok]]
    return out


# ------------------------------------------------------------------------------ compare sheet

def _side_columns(side, idx: np.ndarray, is_mod: np.ndarray) -> dict:
    """One side's per-row values (µs, op name, kernel details, call stack)."""
    mi, si = idx[is_mod], idx[~is_mod]
    out = {}
    for col, per_mod, per_slot in (("self", side.self_ns, side.slot_ns), ("total", side.total_ns, None),
                                   ("self_comm", side.self_comm_ns, side.slot_comm_ns),
                                   ("total_comm", side.total_comm_ns, None)):
        v = np.zeros(len(idx))
        v[is_mod] = np.where(mi >= 0, per_mod[np.maximum(mi, 0)] / 1e3, 0.0) if len(per_mod) else 0.0
        v[~is_mod] = np.nan if per_slot is None else \
            (np.where(si >= 0, per_slot[np.maximum(si, 0)] / 1e3, 0.0) if len(per_slot) else 0.0)
        out[col] = v
    for col, per_mod, per_slot in (("op_name", None, side.slot_name), ("details", None, side.slot_details),
                                   ("call_stack", objects(side.call_stack), side.slot_call_stack)):
        v = np.full(len(idx), None, dtype=object)
        if per_mod is not None:
            v[is_mod] = pick(per_mod, mi)
        v[~is_mod] = pick(per_slot, si)
        out[col] = v
    return out


def rows_frame(bs, ts, pb, pt, rp, rm, rb, rt) -> pd.DataFrame:
    """ModuleCompare (µs) from the row layout: pair, is module row, base and target index per row
    (module on module rows, slot on op rows, -1 absent); pb / pt: the pairs' modules."""
    if not len(rp):
        return none_for_missing(pd.DataFrame([], columns=["name", "pair", "kind", "path", "status"]))
    b, t = _side_columns(bs, rb, rm), _side_columns(ts, rt, rm)
    info = info_columns([module_info(bs, x) if x >= 0 else module_info(ts, y)
                         for x, y in zip(pb.tolist(), pt.tolist())], rp)
    kind = np.full(len(rp), "op", dtype=object)
    kind[rm] = "module"
    dtot, dself = t["total"] - b["total"], t["self"] - b["self"]
    df = pd.DataFrame({
        "name": np.where(rm, info["module"], np.where(rb >= 0, b["op_name"], t["op_name"])),
        "pair": rp, "kind": kind, **info, "b_op_name": b["op_name"], "t_op_name": t["op_name"],
        "b_kernel_details": b["details"], "t_kernel_details": t["details"],
        "b_self_us": b["self"], "b_total_us": b["total"], "t_self_us": t["self"], "t_total_us": t["total"],
        "diff_total_us": dtot, "diff_self_us": dself, "diff_us": np.where(rm, dtot, dself),
        "diff_ratio": np.where(rm, ratio_col(t["total"], b["total"]), ratio_col(t["self"], b["self"])),
        "b_call_stack": b["call_stack"], "t_call_stack": t["call_stack"], "status": status_col(rb >= 0, rt >= 0),
        **split_cols(*((s["self"], s["total"], s["self_comm"], s["total_comm"]) for s in (b, t)), "us")})
    return none_for_missing(df)


# ------------------------------------------------------------------------------ statistic sheet

def _kernel_summaries(side, ev: np.ndarray, ev_op: np.ndarray, n_ops: int) -> list:
    """Per op record: "name, [number: n], [duration_ms: x]" lines of its kernels, first seen first."""
    out = [""] * n_ops
    if not len(ev):
        return out
    kc, kuniq = side.kernel_codes()
    nk = len(kuniq) + 1
    codes, uniq = pd.factorize(ev_op * nk + kc[ev])
    count = np.bincount(codes, minlength=len(uniq)).tolist()
    total = np.bincount(codes, weights=side.dev_dur[ev] / 1e6, minlength=len(uniq)).tolist()
    op = uniq // nk
    names = kuniq[uniq % nk]
    for u in np.argsort(op, kind="stable").tolist():
        out[op[u]] += f"{names[u]}, [number: {count[u]}], [duration_ms: {'%.3f' % total[u]}]\n"
    return out


def _op_records(side, groups: list, slot_key: np.ndarray, all_names: bool = False) -> list:
    """Per module group: {op key: (name, number, self ms, comm ms, kernel summary)} over the
    group's modules' top-level ops, keys in first-seen order; ``all_names``: name is the tuple of
    the distinct raw names under the key, first seen first (a user name map merges names)."""
    mods = np.array([m for g in groups for m in g], dtype=np.int64)
    gid = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    lo, hi = side.top_bounds[mods], side.top_bounds[mods + 1]
    occ = ranges(lo, hi)                                  # slots, group by group, modules in pair order
    nkey = int(slot_key.max()) + 1 if len(slot_key) else 1
    codes, uniq = pd.factorize(np.repeat(gid, hi - lo) * nkey + slot_key[occ])
    codes = codes.astype(np.int64)
    n = len(uniq)
    first = np.full(n, len(codes), np.int64)
    np.minimum.at(first, codes, np.arange(len(codes)))
    number = np.bincount(codes, minlength=n)
    self_ms = np.bincount(codes, weights=side.slot_ns[occ] / 1e6, minlength=n)
    comm_ms = np.bincount(codes, weights=side.slot_comm_ns[occ] / 1e6, minlength=n)
    elo, ehi = side.slot_lo[occ], side.slot_hi[occ]
    ev = side.slot_ev[ranges(elo, ehi)]
    summary = _kernel_summaries(side, ev, np.repeat(codes, ehi - elo), n)
    out = [{} for _ in groups]
    names = side.slot_name[occ[first]]
    if all_names:
        seen = pd.DataFrame({"u": codes, "n": side.slot_name[occ]}).drop_duplicates()
        names = seen.groupby("u", sort=True)["n"].agg(tuple).reindex(range(n)).tolist()
    for u, (g, key) in enumerate(zip((uniq // nkey).tolist(), (uniq % nkey).tolist())):
        out[g][key] = (names[u], int(number[u]), self_ms[u], comm_ms[u], summary[u])
    return out


def _group(side, mods_in_pair_order: list, mapper) -> dict:
    """Mapped module path -> its modules (pair order), paths in first-seen order."""
    out: dict = {}
    for m in mods_in_pair_order:
        out.setdefault(mapper.module_key(side.raw_path[m]), []).append(m)
    return out


def module_stats(bs, ts, pb: np.ndarray, pt: np.ndarray, mapper, bkey: np.ndarray, tkey: np.ndarray,
                 divide=(1, 1), user_map: bool = False) -> pd.DataFrame:
    """ModuleCompareStatistic (ms): per mapped module path (baseline first-seen order, then the
    target's own), a module row with the summed times, then one row per operator key.
    ``divide``: (baseline, target) step counts times and numbers are divided by (``per_step``).
    ``user_map``: the user gave a name map: an operator row whose key gathers several names is
    named ``"<baseline name> ↔ <target name>"`` as in the operator statistics (the match editor's
    pairs; without a map a row keeps its first baseline name, as the reference)."""
    gb, gt = _group(bs, pb[pb >= 0].tolist(), mapper), _group(ts, pt[pt >= 0].tolist(), mapper)
    keys = list(gb) + [k for k in gt if k not in gb]
    if not keys:
        return none_for_missing(pd.DataFrame([], columns=["name", "kind", "path", "status"]))
    bops = dict(zip(gb, _op_records(bs, list(gb.values()), bkey, user_map)))
    tops = dict(zip(gt, _op_records(ts, list(gt.values()), tkey, user_map)))
    infos, rows = [], []        # rows: (True, base modules, target modules) or (False, base op, target op)
    for key in keys:
        bm, tm = gb.get(key, []), gt.get(key, [])
        infos.append(module_info(bs, bm[0]) if bm else module_info(ts, tm[0]))
        rows.append((True, bm, tm))
        bo, to = bops.get(key, {}), tops.get(key, {})
        rows += [(False, bo.get(k), to.get(k)) for k in list(bo) + [k for k in to if k not in bo]]
    return _stats_frame(bs, ts, infos, rows, divide)


def _stats_side(side, rows: list, j: int) -> tuple:
    """One side's ((self, total, self comm, total comm) ms, number, kernel details, call stack) per row."""
    n = len(rows)
    vals, cnt = np.zeros((n, 4)), np.zeros(n, np.int64)
    det, cs = np.full(n, None, dtype=object), np.full(n, None, dtype=object)
    for i, r in enumerate(rows):
        x = r[j]
        if r[0]:                                  # module row: summed over the group's modules
            cnt[i] = len(x)
            if x:
                vals[i] = [int(a[x].sum()) / 1e6 for a in (side.self_ns, side.total_ns, side.self_comm_ns,
                                                           side.total_comm_ns)]
                cs[i] = side.call_stack[x[0]]
        else:
            vals[i] = [x[2], np.nan, x[3], np.nan] if x else [0.0, np.nan, 0.0, np.nan]
            cnt[i], det[i] = (x[1], x[4]) if x else (0, "")
    return tuple(vals.T), cnt, det, cs


def _op_row_name(b, t) -> str:
    """An operator row's name from its two records: the name, or (``all_names`` records) the
    distinct names of both sides, baseline first, joined by " ↔ "."""
    first = (b or t)[0]
    if not isinstance(first, tuple):
        return first
    names = list(dict.fromkeys((b[0] if b else ()) + (t[0] if t else ())))
    return " ↔ ".join(names)


def _stats_frame(bs, ts, infos: list, rows: list, divide=(1, 1)) -> pd.DataFrame:
    """The statistic sheet's columns from its row list (see module_stats)."""
    is_mod = np.array([r[0] for r in rows])
    take = np.cumsum(is_mod) - 1
    (b, bnum, bdet, bcs), (t, tnum, tdet, tcs) = _stats_side(bs, rows, 1), _stats_side(ts, rows, 2)
    b, bnum = tuple(divided(a, divide[0]) for a in b), divided(bnum, divide[0])
    t, tnum = tuple(divided(a, divide[1]) for a in t), divided(tnum, divide[1])
    names = objects(infos[k][5] if r[0] else _op_row_name(r[1], r[2]) for k, r in zip(take.tolist(), rows))
    kind = np.full(len(rows), "op", dtype=object)
    kind[is_mod] = "module"
    dtot, dself = t[1] - b[1], t[0] - b[0]
    df = pd.DataFrame({"name": names, "kind": kind, **info_columns(infos, take),
                       "b_self_ms": b[0], "b_number": bnum, "b_total_ms": b[1],
                       "t_self_ms": t[0], "t_number": tnum, "t_total_ms": t[1],
                       "diff_total_ms": dtot, "diff_self_ms": dself, "diff_ms": np.where(is_mod, dtot, dself),
                       "diff_ratio": np.where(is_mod, ratio_col(t[1], b[1]), ratio_col(t[0], b[0])),
                       "b_kernel_details": bdet, "t_kernel_details": tdet, "b_call_stack": bcs, "t_call_stack": tcs,
                       "status": status_col(np.array([bool(r[1]) for r in rows]), np.array([bool(r[2]) for r in rows])),
                       **split_cols(b, t, "ms")})
    return none_for_missing(df)
