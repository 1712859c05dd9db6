"""Cluster against cluster: a baseline run (N ranks) against a target run (M ranks).

Per rank present on both sides, and over all ranks (median and max of each side; N and M may
differ), every step metric: baseline, target and target - baseline (ms, positive = the target
is slower), the reference's cluster_time_compare_summary layout.  The summary names the slowest
rank of each side and the phase (computing, communication not overlapped, free, preparing,
bubble) whose median grew most.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...model.rank_summary import STEP_METRICS

PHASES = ("computing", "communication_not_overlapped", "free", "preparing", "bubble")


def _ms(x) -> "float | None":
    x = float(x)
    return None if math.isnan(x) else x / 1e6


def busy_time(per: pd.DataFrame) -> "pd.Series | None":
    """Per rank: step time minus its cross-rank wait (the time it spends on its own work).  In a
    synchronous job every rank's step time is the slowest rank's, so the slowest rank is the one
    that waits least, not the one with the longest step.  Without wait: the step time."""
    if not len(per) or per["step_time"].isna().all():
        return None
    return (per["step_time"] - per["wait"].fillna(0)) if per["wait"].notna().any() else per["step_time"]


def _per_rank(table: pd.DataFrame) -> pd.DataFrame:
    return table.groupby("rank")[list(STEP_METRICS)].mean() if len(table) else \
        pd.DataFrame(columns=list(STEP_METRICS))


def _workers(table: pd.DataFrame) -> dict:
    if not len(table) or "worker" not in table:
        return {}
    return {int(r): w for r, w in zip(table["rank"], table["worker"])}


def _row(scope: str, rank, base: pd.Series | None, target: pd.Series | None) -> dict:
    row = {"scope": scope, "rank": rank, "base_worker": None, "target_worker": None}
    for m in STEP_METRICS:
        b = _ms(base[m]) if base is not None else None
        t = _ms(target[m]) if target is not None else None
        row[f"{m}_base_ms"] = b
        row[f"{m}_ms"] = t
        row[f"{m}_diff_ms"] = None if b is None or t is None else t - b
    return row


def diff(base_table: pd.DataFrame, target_table: pd.DataFrame) -> tuple[list, dict]:
    b, t = _per_rank(base_table), _per_rank(target_table)
    bw, tw = _workers(base_table), _workers(target_table)
    rows = []
    for r in sorted(set(b.index) | set(t.index)):
        row = _row("rank", int(r), b.loc[r] if r in b.index else None,
                   t.loc[r] if r in t.index else None)
        # the workers to open in the pair views (None: the rank is on one side only)
        row["base_worker"], row["target_worker"] = bw.get(r), tw.get(r)
        rows.append(row)
    rows.append(_row("median", None, b.median() if len(b) else None, t.median() if len(t) else None))
    rows.append(_row("max", None, b.max() if len(b) else None, t.max() if len(t) else None))

    def slowest(p):
        busy = busy_time(p)
        if busy is None:
            return None
        r = int(busy.idxmax())
        return {"rank": r, "step_time_ms": _ms(p.loc[r, "step_time"]), "busy_ms": _ms(busy[r])}

    med = rows[-2]
    grew = [(med[f"{ph}_diff_ms"], ph) for ph in PHASES if med[f"{ph}_diff_ms"] is not None]
    grew.sort(reverse=True)
    regressed = grew[0][1] if grew and grew[0][0] > 0 else None
    summary = {"base_ranks": len(b), "target_ranks": len(t),
               "slowest_base": slowest(b), "slowest_target": slowest(t),
               "step_time_diff_ms": med["step_time_diff_ms"],
               "phase_regressed": regressed,
               "phase_regressed_ms": grew[0][0] if regressed else None,
               "only_base_ranks": sorted(int(r) for r in set(b.index) - set(t.index))[:64],
               "only_target_ranks": sorted(int(r) for r in set(t.index) - set(b.index))[:64]}
    return rows, summary
