"""Ascend (and MindSpore) ranks from their light files: text exports' ``step_trace_time.csv``,
``communication.json`` and ``communication_matrix.json``; a database's step and communication
tables.  Chooses and assembles; the reading is in ``loaders/``."""
from __future__ import annotations

import os

from ...model.rank_summary import RankSummary, make_table

OUT = "ASCEND_PROFILER_OUTPUT"


def _out_dir(root: str) -> str:
    out = os.path.join(root, OUT)
    return out if os.path.isdir(out) else root


def steps_from_step_trace(cols: dict):
    """The steps table from :func:`loaders.step_trace_csv.read_step_trace` columns.  Step time
    = Computing + Communication(Not Overlapped) + Free (the reference's Stage for a rank with no
    pipeline bubble; see docs/cluster.md)."""
    n = len(cols["step"])
    step_time = [cols["computing"][i] + cols["communication_not_overlapped"][i] + cols["free"][i]
                 for i in range(n)]
    return make_table("steps", {**{k: cols[k] for k in ("step", "computing",
                                                        "communication_not_overlapped",
                                                        "overlapped", "communication", "free",
                                                        "preparing", "bubble")},
                                "step_time": step_time})


def from_text(root: str, rank) -> RankSummary:
    from ...loaders.step_trace_csv import read_step_trace
    out = _out_dir(root)
    warnings, source = [], []
    steps = make_table("steps")
    path = os.path.join(out, "step_trace_time.csv")
    if os.path.isfile(path):
        cols, w = read_step_trace(path)
        warnings += w
        source.append(path)
        steps = steps_from_step_trace(cols)
    else:
        warnings.append(f"{path}: missing (no per-step breakdown for this rank)")
    return RankSummary(rank=-1 if rank is None else rank, source=source, warnings=warnings,
                       steps=steps)


def from_db(db: str, rank) -> RankSummary:
    return RankSummary(rank=-1 if rank is None else rank, source=(db,),
                       warnings=[f"{db}: database summaries not read yet"])
