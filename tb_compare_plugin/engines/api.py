"""API comparison: host-side time per operator/API name (total, self, average, calls).

Source: every host op except ``ProfilerStep#*`` (GPU includes CUDA runtime calls and user
annotations); with a step, the ops inside that step's ``ProfilerStep#N``.  Self time =
duration minus the duration of the op's children, with children found per thread
(the reference nests all threads together by time; see docs/deviations.md).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import jit
from ..model.keys import id_mask
from .per_step import divided
from .sidebyside import merge_sides, ratio

HOST_CATS = ("cpu_op", "user_annotation", "cuda_runtime", "operator", "runtime", "cuda_driver")
STAT_COLS = ("total_ms", "self_ms", "avg_ms", "calls")


def host_op_mask(profile) -> np.ndarray:
    sym = profile.symbols
    cats = [sym.lookup(c) for c in HOST_CATS]
    cat = profile.ops["cat"].to_numpy()
    lower_ids = sym.ids_matching(lambda s: s.lower() in HOST_CATS)
    return id_mask(cat, np.union1d([c for c in cats if c > 0], lower_ids))


def step_descendant_mask(profile, step: int) -> np.ndarray:
    """Ops that sit (transitively) under the ProfilerStep#<step> op(s)."""
    ops = profile.ops
    sym = profile.symbols
    sid = sym.lookup(f"ProfilerStep#{step}")
    names = ops["name"].to_numpy()
    if sid <= 0 or not (names == sid).any():
        raise ValueError(f"step {step} not found; valid steps: {profile.step_ids()}")
    parent = ops["parent"].to_numpy()
    inside = names == sid
    anc = parent.copy()
    under = np.zeros(len(ops), dtype=bool)
    for _ in range(64):
        live = anc >= 0
        if not live.any():
            break
        hit = np.zeros(len(ops), dtype=bool)
        hit[live] = inside[anc[live]]
        under |= hit
        anc = np.where(live, parent[np.maximum(anc, 0)], -1)
    if not under.any():
        # ops on other threads than the step marker: fall back to the step's time window
        st = ops[inside]
        s0, e0 = int(st["start_ns"].min()), int((st["start_ns"] + st["dur_ns"]).max())
        start = ops["start_ns"].to_numpy()
        under = (start >= s0) & (start <= e0) & ~inside
    return under


def api_stats(profile, step: int | None = None) -> pd.DataFrame:
    ops = profile.ops
    if not len(ops):
        return pd.DataFrame(columns=["name", *STAT_COLS])
    sym = profile.symbols
    mask = host_op_mask(profile)
    dur = ops["dur_ns"].to_numpy()
    parent = ops["parent"].to_numpy()
    k = jit.kernels(len(ops))
    if k is not None:
        child_sum = k.child_sums(np.asarray(parent, np.int64), np.asarray(dur, np.int64))
    else:
        child_sum = np.zeros(len(ops), dtype=np.int64)
        has_parent = parent >= 0
        np.add.at(child_sum, parent[has_parent], dur[has_parent])
    selfd = dur - child_sum
    names = ops["name"].to_numpy()
    step_ids = sym.ids_matching(lambda s: s.startswith("ProfilerStep#"))
    mask &= ~id_mask(names, step_ids)
    if step is not None:
        mask &= step_descendant_mask(profile, step)
    rows = np.flatnonzero(mask)
    rows = rows[np.argsort(ops["start_ns"].to_numpy()[rows], kind="stable")]
    # each column its own block (copy=False: fresh arrays): no copy into a 2-D block (~38 MB a 1 GB side)
    df = pd.DataFrame({"nid": names[rows],               # symbol ids: one per distinct name
                       "dur": dur[rows] / 1e6, "self": selfd[rows] / 1e6}, copy=False)
    g = df.groupby("nid", sort=False)
    st = g.agg(total_ms=("dur", "sum"), self_ms=("self", "sum"), calls=("dur", "count")).reset_index()
    st.insert(0, "name", sym.as_array()[st.pop("nid").to_numpy()])
    st["avg_ms"] = st["total_ms"] / st["calls"]
    return st[["name", *STAT_COLS]]


def side_api_stats(profile, step: int | None = None) -> pd.DataFrame:
    """``api_stats(profile, step)``, built once per (profile, step) in the derived-data cache
    (``model.derived``): a per-side reduction (``engines.side_work``) the CLI computes where
    the side was parsed.  Callers must not change the frame in place."""
    from ..model.derived import derived
    return derived(profile, f"api_stats:{step}", lambda: api_stats(profile, step))


def compare_api(base, target, base_step=None, target_step=None, divide=(1, 1)) -> pd.DataFrame:
    """Side-by-side API statistics; ``divide``: (baseline, target) step counts the totals and
    calls are divided by (``per_step``; averages stay per call)."""
    m = merge_sides(side_api_stats(base, base_step), side_api_stats(target, target_step), ["name"])
    for side in ("b", "t"):
        for c in STAT_COLS:
            m[f"{side}_{c}"] = m[f"{side}_{c}"].fillna(0)
        m[f"{side}_calls"] = m[f"{side}_calls"].astype("int64")
    for side, div in zip(("b", "t"), divide):
        for c in ("total_ms", "self_ms", "calls"):
            m[f"{side}_{c}"] = divided(m[f"{side}_{c}"], div)
    m["diff_ms"] = m["t_total_ms"] - m["b_total_ms"]
    m["diff_self_ms"] = m["t_self_ms"] - m["b_self_ms"]
    for c in ("total", "self", "avg", "calls"):
        col = f"{c}_ms" if c != "calls" else "calls"
        m[f"diff_{c}_ratio"] = ratio(m[f"t_{col}"], m[f"b_{col}"])
    return m
