"""Kernel comparison: device kernels grouped by (type, input shapes), both sides side by side.

NPU: kernel_details rows (or DB compute tasks) with a real ``Type``, grouped by Type and
Input Shapes as the reference's KernelCompare sheet does.  GPU (which the reference does
not support): compute kernels grouped by kernel name and the input shapes of the operator
that launched them.  A step restricts each side to its kernels of that step.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import KIND_COMPUTE
from .kernel_classes import tensor_core_flags
from .per_step import divided
from .sidebyside import merge_sides, ratio

STAT_COLS = ("total_us", "avg_us", "max_us", "min_us", "calls")
# GPU only, as the PyTorch Profiler plugin's kernel view: Tensor Cores Used (Yes/No), Mean Blocks
# per SM, Mean Est. Achieved Occupancy (%), duration-weighted over the kernels that have the arg
GPU_COLS = ("tensor_cores", "blocks_per_sm", "occupancy_pct")


def _launch_shapes(profile, kernels: pd.DataFrame) -> np.ndarray:
    """Input-shape symbol of the nearest op (launcher or an ancestor) that recorded shapes."""
    return _shapes_from(profile, kernels["launch_op"].to_numpy())


def _shapes_from(profile, launch: np.ndarray) -> np.ndarray:
    """``_launch_shapes`` of kernels given their launching op rows."""
    ops = profile.ops
    out = np.zeros(len(launch), dtype=np.int32)
    if not len(ops):
        return out
    cur = np.array(launch, copy=True)
    shapes = ops["input_shapes"].to_numpy()
    parent = ops["parent"].to_numpy()
    for _ in range(8):  # launcher -> aten op -> ... ; a few hops suffice
        live = (cur >= 0) & (out == 0)
        if not live.any():
            break
        s = shapes[cur[live]]
        idx = np.flatnonzero(live)
        out[idx] = s
        cur[idx] = np.where(s == 0, parent[cur[idx]], -1)
    return out


def _listed(profile, k: pd.DataFrame) -> np.ndarray:
    """Which kernels of ``k`` (a slice of the kernels table) the Kernel view lists: NPU, the detailed
    ones with a real ``Type``; GPU, the compute kernels."""
    if profile.meta.device == "NPU":
        bad = [0, profile.symbols.lookup("N/A")]
        return k["detail"].to_numpy() & ~np.isin(k["type"].to_numpy(), bad)
    return k["kind"].to_numpy() == KIND_COMPUTE


def _row_names_shapes(profile, sel: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The Kernel view's (kernel, input shape) symbol ids of the listed kernels ``sel`` (shape 0: "N/A").
    NPU rows name the kernel's Type, GPU rows the kernel itself with its launching op's shapes."""
    if profile.meta.device == "NPU":
        names, shapes = sel["type"].to_numpy(), sel["input_shapes"].to_numpy()
    else:
        names, shapes = sel["name"].to_numpy(), _launch_shapes(profile, sel)
    na = profile.symbols.lookup("N/A")
    if na > 0:                                  # one group for "N/A", however it was spelt
        shapes = np.where(shapes == na, 0, shapes)
    return names, shapes


def listed_names(profile) -> np.ndarray:
    """Per kernels-table row, the symbol id of the Kernel view row name it is listed under (NPU: its
    Type; GPU: its name), 0 where the view does not list it."""
    k = profile.kernels
    names = (k["type"] if profile.meta.device == "NPU" else k["name"]).to_numpy()
    return np.where(_listed(profile, k), names, 0)


def row_keys(profile, rows) -> tuple[np.ndarray, np.ndarray]:
    """For kernels-table ``rows``: the symbol ids of the Kernel view row each belongs to, (kernel,
    input shape) as that view names them (an NPU row names the kernel's Type); kernel 0 where the
    view lists no such kernel (an untyped NPU task, a GPU memcpy), shape 0 for "N/A".  Reads only
    those rows of the columns it needs (a click's lookup on a trace of millions of kernels)."""
    rows = np.asarray(rows, np.int64)
    k = profile.kernels
    col = lambda c: k[c].to_numpy()[rows]  # noqa: E731
    if profile.meta.device == "NPU":
        names, shapes = col("type"), col("input_shapes")
        on = col("detail") & ~np.isin(names, [0, profile.symbols.lookup("N/A")])
    else:
        on = col("kind") == KIND_COMPUTE
        names, shapes = col("name"), _shapes_from(profile, col("launch_op"))
    na = profile.symbols.lookup("N/A")
    if na > 0:
        shapes = np.where(shapes == na, 0, shapes)
    return np.where(on, names, 0).astype(np.int64), np.where(on, shapes, 0).astype(np.int64)


def kernel_rows(profile, step: int | None = None) -> pd.DataFrame:
    """One side's kernels as (kernel, input_shape, dur_us) in file order; ``kernel`` and
    ``input_shape`` are symbol ids (shape 0 stands for "N/A").  GPU rows also carry ``tc``
    (runs on tensor / matrix cores), ``blocks_per_sm`` and ``occupancy_pct`` (NaN: no arg)."""
    k = profile.kernels
    sym = profile.symbols
    keep = _listed(profile, k)
    if step is not None:
        keep = keep & (k["step"].to_numpy() == step)
    # only the columns read below, then the rows (the table has ~40 columns)
    sel = k[[c for c in _ROW_COLUMNS if c in k.columns]][keep]
    names, shapes = _row_names_shapes(profile, sel)
    out = pd.DataFrame({"kernel": names, "input_shape": shapes,
                        "dur_us": sel["dur_ns"].to_numpy() / 1000.0})
    if profile.meta.device != "NPU":
        out["tc"] = tensor_core_flags(sym, names)
        out["blocks_per_sm"] = sel["blocks_per_sm"].to_numpy()
        out["occupancy_pct"] = sel["occupancy_pct"].to_numpy()
    return out


_ROW_COLUMNS = ("name", "type", "input_shapes", "launch_op", "dur_ns", "blocks_per_sm", "occupancy_pct")


def _weighted(rows: pd.DataFrame, keys: list, col: str) -> pd.Series:
    """Duration-weighted mean of ``col`` per group, over the kernels that have it (NaN: none)."""
    has = rows[col].notna()
    w = rows["dur_us"].where(has, 0.0)
    num = (rows[col].fillna(0.0) * w).groupby([rows[k] for k in keys], sort=False).sum()
    den = w.groupby([rows[k] for k in keys], sort=False).sum()
    cnt = has.groupby([rows[k] for k in keys], sort=False).sum()
    mean = num / den.where(den > 0)
    # kernels with the arg but zero total duration: their plain mean
    plain = rows[col].groupby([rows[k] for k in keys], sort=False).mean()
    return mean.where(den > 0, plain).where(cnt > 0)


def kernel_stats(rows: pd.DataFrame, sym) -> pd.DataFrame:
    """Per (kernel, input shape) statistics, grouped on symbol ids, named at the end."""
    gpu = "tc" in rows.columns
    if not len(rows):
        return pd.DataFrame(columns=["kernel", "input_shape", *STAT_COLS, *(GPU_COLS if gpu else ())])
    keys = ["kernel", "input_shape"]
    g = rows.groupby(keys, sort=False)
    st = g["dur_us"].agg(total_us="sum", max_us="max", min_us="min", calls="count")
    if gpu:
        st["tensor_cores"] = np.where(g["tc"].any(), "Yes", "No")
        for c in GPU_COLS[1:]:
            st[c] = _weighted(rows, keys, c)
    st = st.reset_index()
    strings = sym.as_array()
    shape_s = strings[st["input_shape"].to_numpy()]
    shape_s[st["input_shape"].to_numpy() == 0] = "N/A"
    st["kernel"] = strings[st["kernel"].to_numpy()]
    st["input_shape"] = shape_s
    st["avg_us"] = st["total_us"] / st["calls"]
    return st[["kernel", "input_shape", *STAT_COLS, *(GPU_COLS if gpu else ())]]


def side_kernel_stats(profile, step: int | None = None) -> pd.DataFrame:
    """``kernel_stats(kernel_rows(profile, step))``, built once per (profile, step) in the
    derived-data cache (``model.derived``): a per-side reduction (``engines.side_work``) the CLI
    computes where the side was parsed.  Callers must not change the frame in place."""
    from ..model.derived import derived
    return derived(profile, f"kernel_stats:{step}",
                   lambda: kernel_stats(kernel_rows(profile, step), profile.symbols))


def compare_kernels(base, target, base_step=None, target_step=None, divide=(1, 1)) -> pd.DataFrame:
    """Side-by-side kernel statistics with diff (µs) and ratios.

    Empty (with ``attrs["reason"]``) when the sides run on different kinds of device (kernels
    are platform-specific) or when either side has no typed kernels (e.g. Ascend Level0), as
    the reference leaves its KernelCompare sheet out then.  ``divide``: (baseline, target) step
    counts the totals and calls are divided by (``per_step``; avg / max / min stay per call)."""
    b = side_kernel_stats(base, base_step)
    t = side_kernel_stats(target, target_step)
    reason = None
    if base.meta.device != target.meta.device:
        reason = (f"kernels differ by platform (baseline {base.meta.device}, target {target.meta.device}); "
                  "use the Operator and Module comparisons")
    elif not len(b) or not len(t):
        reason = "one side has no typed device kernels (e.g. Ascend Level0 data has no kernel Type)"
    if reason:
        b, t = b.iloc[0:0], t.iloc[0:0]
    m = merge_sides(b, t, ["kernel", "input_shape"])
    for side in ("b", "t"):
        for c in STAT_COLS:
            col = f"{side}_{c}"
            m[col] = m[col].fillna(0)
        m[f"{side}_calls"] = m[f"{side}_calls"].astype("int64")
    for side, div in zip(("b", "t"), divide):
        for c in ("total_us", "calls"):
            m[f"{side}_{c}"] = divided(m[f"{side}_{c}"], div)
    m["diff_us"] = m["t_total_us"] - m["b_total_us"]
    m["diff_total_ratio"] = ratio(m["t_total_us"], m["b_total_us"])
    m["diff_avg_ratio"] = ratio(m["t_avg_us"], m["b_avg_us"])
    m.insert(0, "name", m["kernel"] + np.where(m["input_shape"] != "N/A", " " + m["input_shape"], ""))
    m.attrs["reason"] = reason
    return m
