"""The per-rank table: per rank and step, the figures of the reference's
``cluster_step_trace_time.csv`` / ``cluster_time_summary.csv`` in milliseconds, and per collective
per rank its wait and transmit time.

Wait and transmit are cross-rank figures, as the reference's cluster_time_summary defines them:
a collective (same group, name and step on every rank that ran it) cannot finish before its
last rank arrives, so the shortest elapse among its ranks is the collective's transmit time and
each rank's excess over it is that rank's wait.  A rank's wait in a step is the sum of its
waits, its transmit the sum of the collectives' shortest elapses.  Where no collective of a rank
is seen on another rank (one rank, or files without collectives), the rank's own figures stay
(the profiler's Wait/Transit Time sums).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ...model.rank_summary import STEP_METRICS, RankSummary, records, stack

ROW_KEYS = ("rank", "worker", "step") + tuple(f"{m}_ms" for m in STEP_METRICS)


def all_collectives(summaries: Sequence[RankSummary]) -> pd.DataFrame:
    """Every rank's collectives in one frame with ``rank``, plus the cross-rank columns
    ``min_elapse`` (the collective's shortest elapse over the ranks that ran it), ``x_wait``
    (elapse - min_elapse), ``ranks`` (how many ranks ran it) and ``last`` (this rank had the
    shortest elapse: the one the others waited for)."""
    df = stack(summaries, "collectives", rank="rank")
    if df.empty:
        return df.assign(min_elapse=np.zeros(0), x_wait=np.zeros(0), ranks=np.zeros(0, int),
                         last=np.zeros(0, bool))
    key = [df["group"], df["name"], df["step"]]
    g = df.groupby(key, sort=False)["elapse"]
    df["min_elapse"] = g.transform("min")
    df["ranks"] = g.transform("count")
    df["x_wait"] = df["elapse"] - df["min_elapse"]
    df["last"] = (df["x_wait"] == 0) & (df["ranks"] > 1)
    return df


def step_table(summaries: Sequence[RankSummary], coll: pd.DataFrame | None = None) -> pd.DataFrame:
    """All ranks' steps tables in one frame (ns) with ``rank``/``worker``; wait/transmit replaced
    by the cross-rank figures where the rank's collectives were seen on other ranks."""
    df = stack(summaries, "steps", rank="rank", worker="worker")
    coll = all_collectives(summaries) if coll is None else coll
    shared = coll[(coll["ranks"] > 1) & coll["elapse"].notna()]
    if not shared.empty:
        sums = shared.groupby(["rank", "step"]).agg(w=("x_wait", "sum"), t=("min_elapse", "sum"))
        idx = pd.MultiIndex.from_arrays([df["rank"], df["step"]])
        hit = idx.isin(sums.index)
        if hit.any():
            got = sums.reindex(idx[hit])
            df.loc[hit, "wait"] = got["w"].to_numpy()
            df.loc[hit, "transmit"] = got["t"].to_numpy()
    return df


def rows(summaries: Sequence[RankSummary], table: pd.DataFrame | None = None) -> list:
    table = step_table(summaries) if table is None else table
    t = table.sort_values(["rank", "step"], kind="stable")
    return records({"rank": t["rank"].to_numpy(), "worker": t["worker"].to_numpy(),
                    "step": t["step"].to_numpy(),
                    **{f"{m}_ms": t[m].to_numpy(float) / 1e6 for m in STEP_METRICS}})


def collective_rows(coll: pd.DataFrame) -> list:
    """Per collective per rank: the profiler's own Communication Time Info (elapse, wait,
    transmit, synchronization, idle) and the cross-rank wait (``cluster_wait_ms``)."""
    c = coll.sort_values(["step", "rank"], kind="stable")
    ms = {f"{k}_ms": c[k].to_numpy(float) / 1e6
          for k in ("elapse", "wait", "transmit", "synchronization", "idle")}
    return records({"rank": c["rank"].to_numpy(), "step": c["step"].to_numpy(),
                    "collective": c["name"].to_numpy(), "op_type": c["op_type"].to_numpy(),
                    "group": c["group"].to_numpy(), **ms,
                    "cluster_wait_ms": c["x_wait"].to_numpy(float) / 1e6,
                    "waited_for": c["last"].to_numpy(bool),
                    "size_mb": c["bytes"].to_numpy(float) / 1e6})


def overview(summaries: Sequence[RankSummary], table: pd.DataFrame) -> dict:
    steps = sorted({int(x) for x in table["step"]}) if len(table) else []
    slowest = None
    if len(table) and table["step_time"].notna().any():
        from .cluster_diff import busy_time
        per = table.groupby("rank")[["step_time", "wait"]].mean()
        busy = busy_time(per)
        r = int(busy.idxmax())
        slowest = {"rank": r, "step_time_ms": float(per.loc[r, "step_time"]) / 1e6,
                   "busy_ms": float(busy[r]) / 1e6,
                   "median_step_time_ms": float(np.median(per["step_time"].to_numpy())) / 1e6}
    return {"rank_count": len(summaries), "ranks_listed": [s.rank for s in summaries][:64],
            "steps": steps, "slowest_rank": slowest,
            "ranks_without_steps": [s.rank for s in summaries if not len(s.columns("steps")["step"])][:64]}
