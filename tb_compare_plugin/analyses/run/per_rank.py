"""The per-rank table: per rank and step, the figures of the reference's
``cluster_step_trace_time.csv`` / ``cluster_time_summary.csv`` in milliseconds, and per collective
per rank its wait and transmit time."""
from __future__ import annotations

import math
from typing import Sequence

from ...model.rank_summary import STEP_METRICS, RankSummary

ROW_KEYS = ("rank", "worker", "step") + tuple(f"{m}_ms" for m in STEP_METRICS)


def _ms(ns) -> "float | None":
    x = float(ns)
    return None if math.isnan(x) else x / 1e6


def rows(summaries: Sequence[RankSummary]) -> list:
    out = []
    for s in summaries:
        for rec in s.steps.itertuples(index=False):
            row = {"rank": s.rank, "worker": s.worker, "step": int(rec.step)}
            for m in STEP_METRICS:
                row[f"{m}_ms"] = _ms(getattr(rec, m))
            out.append(row)
    return out


def collective_rows(summaries: Sequence[RankSummary]) -> list:
    out = []
    for s in summaries:
        for rec in s.collectives.itertuples(index=False):
            out.append({"rank": s.rank, "step": int(rec.step), "collective": rec.name,
                        "op_type": rec.op_type, "group": rec.group,
                        "elapse_ms": _ms(rec.elapse), "wait_ms": _ms(rec.wait),
                        "transmit_ms": _ms(rec.transmit),
                        "synchronization_ms": _ms(rec.synchronization), "idle_ms": _ms(rec.idle),
                        "size_mb": None if math.isnan(rec.bytes) else rec.bytes / 1e6})
    return out


def overview(summaries: Sequence[RankSummary]) -> dict:
    steps = sorted({int(x) for s in summaries for x in s.steps["step"]})
    return {"rank_count": len(summaries), "steps": steps,
            "ranks_without_steps": [s.rank for s in summaries if s.steps.empty]}
