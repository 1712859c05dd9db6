"""Slow ranks: which rank drags the others, by how much, and in which phase.

Two signals (docs/cluster.md says why these):

* **Outliers per metric across ranks.**  Each rank's mean over its steps of computing, free,
  preparing, bubble, step time (high side: slower) and transmit (high side: slower link or
  rank), and of wait (low side: the rank that waits least is the one the others wait for).
  For 3-10 ranks Dixon's Q test at 95 % (the reference's slow_rank recipe uses Dixon; it is
  made for small samples), for more ranks the modified z-score of Iglewicz and Hoaglin,
  0.6745 (x - median) / MAD, flagged beyond 3.5 (MAD = 0: the mean absolute deviation scaled
  by 1.2533 instead).  Two ranks are too few for either: nothing is flagged.
  An outlier must also matter: its distance from the median must be at least ``min_share``
  (default 3 %) of the median step time, so a tight cluster's statistical noise is not named.
* **The collective-wait signal.**  In every collective seen on several ranks, the rank with the
  shortest elapse arrived last: the others waited for it.  A flagged rank's reason says in how
  many collectives it was the last to arrive.

Each finding names the rank, the metric, its value and the median (ms), the score (Q or |z|)
and the phase where the rank loses: the step phase (computing, free, preparing, bubble,
communication) in which it exceeds the median most.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

# Dixon's Q (r10) critical values at 95 % confidence, n = 3..10
DIXON_Q95 = {3: 0.970, 4: 0.829, 5: 0.710, 6: 0.625, 7: 0.568, 8: 0.526, 9: 0.493, 10: 0.466}
Z_LIMIT = 3.5
MIN_SHARE = 0.03
# metric -> (side that is bad, phase it names)
METRICS = {
    "computing": ("high", "computing"),
    "free": ("high", "free"),
    "preparing": ("high", "preparing"),
    "bubble": ("high", "bubble"),
    "step_time": ("high", None),
    "transmit": ("high", "communication"),
    "wait": ("low", None),
}
PHASES = ("computing", "free", "preparing", "bubble", "communication_not_overlapped")


def dixon_q(values: np.ndarray, side: str) -> tuple[int, float] | None:
    """(index of the extreme value on ``side``, Q) or None when the range is 0."""
    order = np.argsort(values, kind="stable")
    v = values[order]
    spread = v[-1] - v[0]
    if spread <= 0:
        return None
    if side == "high":
        return int(order[-1]), float((v[-1] - v[-2]) / spread)
    return int(order[0]), float((v[1] - v[0]) / spread)


def modified_z(values: np.ndarray) -> np.ndarray:
    med = np.median(values)
    mad = np.median(np.abs(values - med))
    if mad > 0:
        return 0.6745 * (values - med) / mad
    mean_ad = np.mean(np.abs(values - med))
    if mean_ad > 0:
        return (values - med) / (1.2533 * mean_ad)
    return np.zeros_like(values)


def outliers(values: np.ndarray, side: str) -> list[tuple[int, float, str]]:
    """(index, score, method) of the outliers of ``values`` on ``side``."""
    n = len(values)
    if n < 3:
        return []
    if n <= 10:
        got = dixon_q(values, side)
        if got and got[1] > DIXON_Q95[n]:
            return [(got[0], got[1], "dixon_q95")]
        return []
    z = modified_z(values)
    bad = np.nonzero(z > Z_LIMIT if side == "high" else z < -Z_LIMIT)[0]
    return [(int(i), float(abs(z[i])), "modified_z") for i in bad]


def _phase(per: pd.DataFrame, rank: int) -> str:
    """The step phase in which ``rank`` exceeds the median of the ranks most."""
    best, gap = "computing", -math.inf
    for ph in PHASES:
        col = per[ph].dropna()
        if rank not in col.index or len(col) < 2:
            continue
        d = col[rank] - float(np.median(col.to_numpy()))
        if d > gap:
            best, gap = ph, d
    return "communication" if best == "communication_not_overlapped" else best


def find(table: pd.DataFrame, coll: pd.DataFrame, min_share: float = MIN_SHARE) -> list:
    """Slow-rank findings from the per-rank step table and the collectives (per_rank)."""
    if table.empty:
        return []
    cols = list(dict.fromkeys(list(METRICS) + list(PHASES)))
    per = table.groupby("rank")[cols].mean()
    if len(per) < 3:
        return []
    floor = min_share * float(np.nanmedian(per["step_time"].to_numpy())) \
        if per["step_time"].notna().any() else 0.0
    last = coll[coll["last"]].groupby("rank").size() if len(coll) else pd.Series(dtype=int)
    shared = int(coll[coll["ranks"] > 1].groupby(["group", "name", "step"]).ngroups) if len(coll) else 0
    out = []
    for metric, (side, phase) in METRICS.items():
        col = per[metric].dropna()
        if len(col) < 3:
            continue
        values = col.to_numpy(dtype=float)
        med = float(np.median(values))
        for i, score, method in outliers(values, side):
            rank = int(col.index[i])
            if abs(values[i] - med) < floor:
                continue
            where = phase or _phase(per, rank)
            how = "above" if values[i] > med else "below"
            reason = (f"rank {rank}: {metric} {values[i] / 1e6:.3f} ms per step, "
                      f"{abs(values[i] - med) / 1e6:.3f} ms {how} the median of {len(col)} ranks "
                      f"({method.replace('_', ' ')} {score:.2f})")
            if metric == "wait":
                reason += "; the other ranks wait for it"
            if shared and rank in last.index:
                reason += f"; last to arrive at {int(last[rank])} of {shared} collectives"
            reason += f"; it loses in {where}"
            out.append({"rank": rank, "metric": metric, "value_ms": values[i] / 1e6,
                        "median_ms": med / 1e6, "score": round(score, 4), "method": method,
                        "phase": where, "reason": reason})
    out.sort(key=lambda d: (-abs(d["value_ms"] - d["median_ms"]), d["rank"], d["metric"]))
    return out
