"""Rows of the reference's sheets (``msprof-analyze compare``, spec e), built from the engines'
results: the headers, the reference's rounding, its ratio rules (``inf`` / ``"INF"``, 1 when
both sides are 0) and its text (``str(list)`` shapes on GPU, ``/ Module_0/`` paths).

One naming scheme: ``<sheet>_rows(result)`` and ``<SHEET>_HEADERS`` per reference sheet, the
sheet name in snake case (OperatorCompareStatistic -> ``operator_compare_statistic_rows``).
The workbook (``xlsx_workbook``) lays them out; the engines return data only.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..engines.sidebyside import ratio as _ratio_vec, ratio1
from . import reference_columns as C
from .xlsx_cells import MAX_CELL_CHARS

# ----------------------------------------------------------------------------- headers

COMMUNICATION_COMPARE_HEADERS = (
    ["Order Id"]
    + ["Communication OP Name", "Task Name", "Calls", "Total Duration(us)", "Avg Duration(us)",
       "Max Duration(us)", "Min Duration(us)"] * 2
    + ["Diff Duration(us)", "Diff Ratio"])
OPERATOR_COMPARE_HEADERS = ["Order Id", "Operator Name", "Input Shape", "Input Type", "Kernel Details",
                            "Device Duration(us)", "Operator Name", "Input Shape", "Input Type",
                            "Kernel Details", "Device Duration(us)", "Diff Duration(us)", "Diff Ratio"]
OPERATOR_COMPARE_STATISTIC_HEADERS = ["Top", "Operator Name", "Base Device Duration(ms)", "Base Operator Number",
                                      "Comparison Device Duration(ms)", "Comparison Operator Number",
                                      "Diff Duration(ms)", "Diff Ratio"]
MODULE_COMPARE_HEADERS = ["Order Id", "Module Class", "Module Level", "Module Name", "Operator Name",
                          "Kernel Details", "Device Self Time(us)", "Device Total Time(us)", "Operator Name",
                          "Kernel Details", "Device Self Time(us)", "Device Total Time(us)",
                          "Device Total Time Diff(us)", "Device Self Time Diff(us)", "Diff Total Ratio",
                          "Base Call Stack", "Comparison Call Stack"]
MODULE_COMPARE_STATISTIC_HEADERS = ["Order Id", "Module Class", "Module Level", "Module Name", "Operator Name",
                                    "Kernel Details", "Device Self Time(ms)", "Number", "Device Total Time(ms)",
                                    "Kernel Details", "Device Self Time(ms)", "Number", "Device Total Time(ms)",
                                    "Device Total Time Diff(ms)", "Device Self Time Diff(ms)", "Diff Total Ratio",
                                    "Base Call Stack", "Comparison Call Stack"]
MEMORY_COMPARE_HEADERS = [
    "Order Id", "Operator Name", "Input Shape", "Input Type", "Allocated Details", "Size(KB)",
    "Operator Name", "Input Shape", "Input Type", "Allocated Details", "Size(KB)", "Diff Size(KB)", "Diff Ratio"]
MEMORY_COMPARE_STATISTIC_HEADERS = [
    "Top", "Operator Name", "Base Allocated Duration(ms)", "Base Allocated Memory(MB)", "Base Operator Number",
    "Comparison Allocated Duration(ms)", "Comparison Allocated Memory(MB)", "Comparison Operator Number",
    "Diff Memory(MB)", "Diff Ratio"]
API_COMPARE_HEADERS = ["Order Id", "api name", "Total Duration(ms)", "Self Time(ms)", "Avg Duration(ms)", "Calls",
                       "Total Duration(ms)", "Self Time(ms)", "Avg Duration(ms)", "Calls",
                       "Diff Total Ratio", "Diff Self Ratio", "Diff Avg Ratio", "Diff Calls Ratio"]
KERNEL_COMPARE_HEADERS = ["Order Id", "Kernel", "Input Shape", "Total Duration(us)", "Avg Duration(us)",
                          "Max Duration(us)", "Min Duration(us)", "Calls", "Total Duration(us)",
                          "Avg Duration(us)", "Max Duration(us)", "Min Duration(us)", "Calls",
                          "Diff Total Ratio", "Diff Avg Ratio"]


# ----------------------------------------------------------------------------- cell rules

def _ref_ratio(t: float, b: float) -> float:
    """target / baseline rounded to 4 places; 1 when both are 0, inf when only the baseline is."""
    if not b and not t:
        return 1.0
    return float("inf") if not b else round(t / b, 4)


def _ratio_cell(t, b):
    """Like :func:`_ref_ratio` with NaN as 0 and the string "INF" (MemoryCompare's cells)."""
    t = 0.0 if t is None or t != t else float(t)
    b = 0.0 if b is None or b != b else float(b)
    if not b:
        return "INF" if t else 1.0
    return round(t / b, 4)


def _list_repr(s, kind: str):
    """GPU shapes/types back to the reference's ``str(list)`` display (OperatorCompare):
    ``32,3;;`` -> ``[[32, 3], [], []]``, ``float;Int`` -> ``['float', 'Int']``; "" -> "N/A"."""
    if s is None:
        return None
    if s == "":
        return "N/A"
    parts = s.split(";")
    if kind == "shape":
        return "[" + ", ".join("[" + ", ".join(d for d in p.split(",") if d) + "]" for p in parts) + "]"
    return "[" + ", ".join(repr(p) for p in parts) + "]"


def _mem_list_repr(s, kind: str):
    """MemoryCompare's variant of :func:`_list_repr`: "N/A" stays "N/A", "" becomes ``[[]]``."""
    if s is None or s == "N/A":
        return s
    return _list_repr(s, kind) if s else ("[[]]" if kind == "shape" else "['']")


def _none(s):
    return s if isinstance(s, str) and s else None


# ----------------------------------------------------------------------------- sheets

def communication_compare_rows(res) -> list[list]:
    """CommunicationCompare (µs), task rows paired by name, from ``CommunicationResult.reference``."""
    out: list[list] = []

    def cells(name, task, s):
        if s is None:
            return [None, None, None, 0, None, None, None]
        calls, total = int(s["calls"]), int(s["total"]) / 1e3
        return [name, task, calls, total, total / calls if calls else None,
                int(s["max"]) / 1e3, int(s["min"]) / 1e3]

    for name, b, t, tasks in res.reference:
        bt = int(b["total"]) / 1e3 if b is not None else 0.0
        tt = int(t["total"]) / 1e3 if t is not None else 0.0
        r = float(_ratio_vec([tt], [bt])[0])
        out.append([len(out) + 1] + cells(name, None, b) + cells(name, None, t)
                   + [round(tt - bt, 2), round(r, 4) if np.isfinite(r) else r])
        for task, tb, tg in tasks:
            out.append([len(out) + 1] + cells("|", task, tb) + cells("|", task, tg) + [None, None])
    return out


def operator_compare_rows(res) -> list[list]:
    """OperatorCompare from ``OperatorResult.pairs``: one row per aligned pair (built column by
    column; a shape or type text is converted once per distinct text; the kernel details joined
    only as far as a cell keeps them, ``MAX_CELL_CHARS``)."""
    cut = getattr(res, "kernel_details", None)      # (an OperatorResult; else any object with pairs)
    df = res.frame if cut is not None else res.pairs
    sides = []
    for p, dev in (("b", res.base_device), ("t", res.target_device)):
        present = (df[f"{p}_op"].to_numpy() >= 0).tolist()
        shapes, types = df[f"{p}_input_shape"].tolist(), df[f"{p}_input_type"].tolist()
        if dev == "GPU":
            shapes, types = _converted(shapes, "shape", present), _converted(types, "type", present)
        else:
            shapes, types = [x or "N/A" for x in shapes], [x or "N/A" for x in types]
        details = cut(p, MAX_CELL_CHARS) if cut is not None else df[f"{p}_kernel_details"].tolist()
        sides.append(zip(present, df[f"{p}_name"].tolist(), shapes, types, details, df[f"{p}_device_us"].tolist()))
    out = []
    for i, (bs, ts) in enumerate(zip(*sides), 1):
        row = [i]
        for present, name, shape, typ, details, dev_us in (bs, ts):
            row += [name, shape, typ, details or None, dev_us] if present \
                else [None, None, None, details or None, dev_us]
        b, t = bs[5], ts[5]
        row += [round(t - b, 2), _ref_ratio(t, b)]
        out.append(row)
    return out


def _converted(texts: list, kind: str, present: list) -> list:
    """:func:`_list_repr` of each text of a present op (None elsewhere), once per distinct text."""
    memo: dict = {}
    out = []
    for x, here in zip(texts, present):
        if x is None or not here:
            out.append(None)
            continue
        r = memo.get(x)
        if r is None:
            r = memo[x] = _list_repr(x, kind)
        out.append(r)
    return out


def _n(count):
    """A count cell: an int, or an average count to 2 places when the figures are per step
    (``engines.per_step``: a side's count divided by its steps)."""
    c = float(count)
    return int(c) if c.is_integer() else round(c, 2)


def operator_compare_statistic_rows(res) -> list[list]:
    """OperatorCompareStatistic from ``OperatorResult.stats``."""
    return [[i, r.name, r.b_device_ms, _n(r.b_count), r.t_device_ms, _n(r.t_count),
             round(r.t_device_ms - r.b_device_ms, 2), _ref_ratio(r.t_device_ms, r.b_device_ms)]
            for i, r in enumerate(res.stats.itertuples(index=False), 1)]


def module_compare_rows(res) -> list[list]:
    """ModuleCompare (µs) from ``ModuleResult.rows``, with the reference's module text: module
    rows ``TOTAL`` with their total times and call stacks, op rows their op's name, kernels and
    self time, call stacks only where the op got slower ("N/A" when it has none).  Built a
    column at a time (``reference_columns``: each rule once per distinct value)."""
    df = res.rows
    n = len(df)
    if not n:
        return []
    mod = df["kind"].to_numpy(dtype=object) == "module"
    b_self, b_total, t_self, t_total = (df[c].to_numpy(np.float64)
                                        for c in ("b_self_us", "b_total_us", "t_self_us", "t_total_us"))
    path = df["raw_path"].tolist()
    short = {p: p.replace("nn.Module:", "") for p in set(path)}
    b_op, t_op = C.nonempty(df["b_op_name"].tolist()), C.nonempty(df["t_op_name"].tolist())
    diff_self = C.rounded(t_self - b_self, 2)
    slower = diff_self.astype(np.float64) > 0
    cols = [range(1, n + 1), df["raw_class"].tolist(), df["depth"].tolist(), list(map(short.__getitem__, path))]
    for op, kd, s, tot in ((b_op, "b_kernel_details", b_self, b_total), (t_op, "t_kernel_details", t_self, t_total)):
        cols += [np.where(mod, "TOTAL", op), np.where(mod, None, C.nonempty(df[kd].tolist())),
                 C.objects(s.tolist()), np.where(mod, C.objects(tot.tolist()), None)]
    cols += [np.where(mod, C.rounded(t_total - b_total, 2), None), diff_self,
             C.ref_ratios(np.where(mod, t_total, t_self), np.where(mod, b_total, b_self))]
    for op, cs in ((b_op, "b_call_stack"), (t_op, "t_call_stack")):
        stack = C.nonempty(df[cs].tolist())
        shown = slower & np.not_equal(op, None)
        cols.append(np.where(mod, stack, np.where(shown, np.where(np.equal(stack, None), "N/A", stack), None)))
    return list(map(list, zip(*(c.tolist() if isinstance(c, np.ndarray) else c for c in cols))))


def module_compare_statistic_rows(res) -> list[list]:
    """ModuleCompareStatistic (ms) from ``ModuleResult.stats``."""
    out = []
    for i, r in enumerate(res.stats.itertuples(index=False), 1):
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


def _floats(col: pd.Series) -> list[float]:
    return col.to_numpy(dtype=np.float64).tolist()


def _us_texts(ns: np.ndarray, style: str) -> list[str]:
    """Timestamps (ns) as the reference prints them, by how the source wrote them
    (``meta.us_text``): "fixed3" the CSV's µs string ``123.456``; "trim" the trace's, ``123``
    when whole; "float" ns / 1000 as a float (DB)."""
    if style == "float":
        return [repr(x / 1000) for x in ns.tolist()]       # int / int: correctly rounded
    q, m = (ns // 1000).tolist(), (ns % 1000).tolist()     # floor division, as Python's
    frac = (_TRIM_FRAC if style == "trim" else _FIXED_FRAC).__getitem__     # f".{b:03d}" ("" when 0: trim)
    return [a + b for a, b in zip(map(str, q), map(frac, m))]


_FIXED_FRAC = [f".{b:03d}" for b in range(1000)]
_TRIM_FRAC = [""] + _FIXED_FRAC[1:]


def _float_texts(v: np.ndarray) -> list[str]:
    """``str(float(x))`` of each value, formatted once per distinct value (sizes and durations
    repeat a lot).  Values come from integers, so there is no NaN and no -0.0 to tell apart."""
    u, inv = np.unique(np.asarray(v, dtype=np.float64), return_inverse=True)
    return np.array([repr(x) for x in u.tolist()], dtype=object)[inv.reshape(-1)].tolist()


def allocated_details(listing: pd.DataFrame, us_text: str = "trim", unreleased_text: str = "None") -> dict:
    """MemoryCompare's Allocated Details text per slot, from the memory engine's allocations (in
    listing order): ``name, (alloc µs, release µs), [duration: ms], [size: KB]`` lines; a
    release the source lacks is written ``unreleased_text``."""
    if listing is None or not len(listing):
        return {}
    a = listing["alloc_ns"].to_numpy(np.int64)
    r = listing["release_ns"].to_numpy(np.int64)
    rel = [x if ok else unreleased_text for x, ok in zip(_us_texts(r, us_text), (r > 0).tolist())]
    lines = [f"{nm}, ({at}, {rt}), [duration: {du}], [size: {k}]\n" for nm, at, rt, du, k in
             zip(listing["name"].tolist(), _us_texts(a, us_text), rel,
                 _float_texts(listing["duration_ns"].to_numpy().astype(np.float64) / 1000.0),
                 _float_texts(listing["size_kb"].to_numpy()))]
    slots = listing["slot"].to_numpy(np.int64)
    cut = np.flatnonzero(np.r_[True, slots[1:] != slots[:-1]]).tolist() + [len(slots)]
    return {k: "".join(lines[s:e]) for k, s, e in zip(slots[cut[:-1]].tolist(), cut[:-1], cut[1:])}


def _memory_side(res, p: str, gpu: bool) -> list[list]:
    """One side's five MemoryCompare columns: name, shape, type, details, size (KB)."""
    pairs = res.pairs
    has = (pairs[f"{p}_op"].to_numpy() >= 0).tolist()

    def only(col, conv=None):
        vals = pairs[f"{p}_{col}"].tolist()
        if conv is None:
            return [v if h else None for v, h in zip(vals, has)]
        memo: dict = {}
        return [(memo[v] if v in memo else memo.setdefault(v, conv(v))) if h else None for v, h in zip(vals, has)]
    shape = only("input_shape", (lambda v: _mem_list_repr(v, "shape")) if gpu else None)
    typ = only("input_type", (lambda v: _mem_list_repr(v, "type")) if gpu else None)
    text = allocated_details(res.allocations.get(p), res.us_text.get(p, "trim"),
                             res.unreleased_text.get(p, "None"))
    details = [text.get(k) or None if h else None for k, h in zip(pairs[f"{p}_slot"].tolist(), has)]
    return [only("name"), shape, typ, details, _floats(pairs[f"{p}_size_kb"])]


def memory_compare_rows(res) -> list[list]:
    """MemoryCompare from ``MemoryResult.pairs`` (the operator pairs, in matching order)."""
    pairs = res.pairs
    if not len(pairs):
        return []
    b = _memory_side(res, "b", res.base_device == "GPU")
    t = _memory_side(res, "t", res.target_device == "GPU")
    bs, ts = b[4], t[4]
    # (diff, ratio) once per distinct pair of sizes (ops repeat every step); a zero is not a key
    # (0.0 and -0.0 are one key but their diffs print differently)
    memo: dict = {}
    diff, ratios = [], []
    for x, y in zip(bs, ts):
        got = memo.get((x, y)) if x and y else None
        if got is None:
            got = (round(y - x, 2), _ratio_cell(y, x))
            if x and y:
                memo[(x, y)] = got
        diff.append(got[0])
        ratios.append(got[1])
    order = [int(v) for v in pairs["order"].tolist()]
    return [list(r) for r in zip(order, *b, *t, diff, ratios)]


def memory_compare_statistic_rows(res) -> list[list]:
    """MemoryCompareStatistic from ``MemoryResult.stats``."""
    out = []
    for i, r in enumerate(res.stats.itertuples(index=False), 1):
        out.append([i, r.name, float(r.b_duration_ms), float(r.b_memory_mb), _n(r.b_count),
                    float(r.t_duration_ms), float(r.t_memory_mb), _n(r.t_count),
                    round(float(r.t_memory_mb) - float(r.b_memory_mb), 2), _ratio_cell(r.t_memory_mb, r.b_memory_mb)])
    return out


def api_compare_rows(m: pd.DataFrame) -> list[list]:
    """ApiCompare from ``compare_api``'s table (values rounded to 2 places, ratios on them)."""
    out = []
    for i, r in enumerate(m.itertuples(index=False), 1):
        def side(p):
            tot, slf, calls = (round(getattr(r, f"{p}_total_ms"), 2), round(getattr(r, f"{p}_self_ms"), 2),
                               _n(getattr(r, f"{p}_calls")))
            return [tot, slf, round(tot / calls, 2) if calls else 0.0, calls]
        bs, ts = side("b"), side("t")
        rat = [ratio1(ts[j], bs[j]) for j in range(4)]
        out.append([i, r.name, *bs, *ts, *rat])
    return out


def kernel_compare_rows(m: pd.DataFrame) -> list[list]:
    """KernelCompare from ``compare_kernels``'s table (values rounded to 2 decimals as the reference
    does, ratios on the rounded values)."""
    out = []
    for i, r in enumerate(m.itertuples(index=False), 1):
        def side(p):
            tot = round(getattr(r, f"{p}_total_us"), 2)
            calls = _n(getattr(r, f"{p}_calls"))
            avg = round(tot / calls, 2) if calls else 0.0
            return [tot, avg, round(getattr(r, f"{p}_max_us"), 2), round(getattr(r, f"{p}_min_us"), 2), calls]
        bs, ts = side("b"), side("t")
        out.append([i, r.kernel, r.input_shape, *bs, *ts,
                    ratio1(ts[0], bs[0]), ratio1(ts[1], bs[1])])
    return out
