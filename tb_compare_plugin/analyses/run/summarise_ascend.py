"""Ascend (and MindSpore) ranks from their light files.

Text export: ``step_trace_time.csv`` (per-step breakdown), ``communication.json`` (collectives),
``communication_matrix.json`` (links) and the ProfilerStep windows of ``trace_view.json`` (step
time; a byte scan, no parse).  Database export: ``analysis.db`` (StepTraceTime, CommAnalyzerTime,
CommAnalyzerMatrix, CommAnalyzerBandwidth) and the profiler database's STEP_TIME (or
COMMUNICATION_OP when there is no analysis.db).  Chooses and assembles; reading is in loaders/.
"""
from __future__ import annotations

import math
import os

from ...model.rank_summary import RankSummary, make_table

OUT = "ASCEND_PROFILER_OUTPUT"
STEP_KEYS = ("step", "computing", "communication_not_overlapped", "overlapped", "communication",
             "free", "preparing", "bubble")


def _out_dir(root: str) -> str:
    out = os.path.join(root, OUT)
    return out if os.path.isdir(out) else root


def steps_table(cols: dict, windows: dict, collectives: dict, where: str, warnings: list):
    """The RankSummary steps table from step-trace columns (ns), step windows ``{step: (start,
    dur)}`` and the collectives' columns.  Step time: the step's ProfilerStep window; without one,
    Computing + Communication(Not Overlapped) + Free (= the profiler's Stage when there is no
    bubble) for every step of the rank when one of its steps has no window (one meaning per
    rank), said in a warning.  Wait / transmit: the sums of the rank's own Communication Time
    Info over the step's collectives (the cluster analysis replaces them with the reference's
    cross-rank figures when other ranks ran the same collectives)."""
    n = len(cols["step"])
    step_time, wait, transmit = [], [], []
    missing = sum(1 for s in cols["step"] if s not in windows)
    if missing:
        windows = {}         # one meaning of step time for all of a rank's steps
    for i in range(n):
        s = cols["step"][i]
        if s in windows:
            step_time.append(float(windows[s][1]))
        else:
            step_time.append(cols["computing"][i] + cols["communication_not_overlapped"][i]
                             + cols["free"][i])
        idx = [j for j, cs in enumerate(collectives.get("step", ())) if cs == s]
        w = [collectives["wait"][j] for j in idx]
        t = [collectives["transmit"][j] for j in idx]
        wait.append(math.fsum(w) if idx and not any(math.isnan(x) for x in w) else math.nan)
        transmit.append(math.fsum(t) if idx and not any(math.isnan(x) for x in t) else math.nan)
    if missing:
        warnings.append(f"{where}: {missing} of {n} step(s) without a ProfilerStep window; step "
                        "time taken as Computing + Communication(Not Overlapped) + Free for "
                        "every step")
    return make_table("steps", {**{k: cols[k] for k in STEP_KEYS}, "step_time": step_time,
                                "wait": wait, "transmit": transmit})


def _read(fn, path: str, warnings: list, source: list, default):
    try:
        value, w = fn(path)
    except (OSError, ValueError) as e:
        warnings.append(f"{path}: unreadable ({e}); left out")
        return default
    warnings.extend(w)
    source.append(path)
    return value


def from_text(root: str, rank) -> RankSummary:
    from ...loaders.ascend_comm_json import read_communication, read_matrix
    from ...loaders.step_markers import read_step_windows
    from ...loaders.step_trace_csv import read_step_trace
    out = _out_dir(root)
    warnings: list = []
    source: list = []

    def path(name):
        p = os.path.join(out, name)
        return p if os.path.isfile(p) else None

    coll = links = None
    if path("communication.json"):
        coll = _read(read_communication, path("communication.json"), warnings, source, None)
    if path("communication_matrix.json"):
        links = _read(read_matrix, path("communication_matrix.json"), warnings, source, None)
    steps = make_table("steps")
    st = path("step_trace_time.csv")
    if st:
        cols = _read(read_step_trace, st, warnings, source, None)
        if cols is not None:
            tv = path("trace_view.json")
            windows = _read(read_step_windows, tv, warnings, source, {}) if tv else {}
            steps = steps_table(cols, windows, coll or {}, st, warnings)
    else:
        warnings.append(f"{os.path.join(out, 'step_trace_time.csv')}: missing (no per-step "
                        "breakdown for this rank)")
    return RankSummary(rank=-1 if rank is None else rank, source=source, warnings=warnings,
                       steps=steps, collectives=make_table("collectives", coll or {}),
                       links=make_table("links", links or {}))


def from_db(db: str, rank) -> RankSummary:
    from ...loaders.ascend_cluster_db import (analysis_db_of, read_analysis,
                                              read_communication_ops, read_step_times)
    warnings: list = []
    source: list = []
    bounds = _read(read_step_times, db, warnings, source, {})
    windows = {s: (a, b - a) for s, (a, b) in bounds.items()}
    adb = analysis_db_of(db)
    steps = make_table("steps")
    coll = links = None
    if os.path.isfile(adb):
        got = _read(read_analysis, adb, warnings, source, None)
        if got is not None:
            coll, links = got["collectives"], got["links"]
            if got["steps"]["step"]:
                steps = steps_table(got["steps"], windows, coll, adb, warnings)
    else:
        warnings.append(f"{adb}: missing (no per-step breakdown, wait/transmit or links; "
                        "collectives from COMMUNICATION_OP)")
        coll = _read(read_communication_ops, db, warnings, source, None)
        if coll:   # the table has no step: the step whose window holds the collective's start
            coll["step"] = [next((st for st, (a, b) in bounds.items() if a <= t <= b), -1)
                            for t in coll["start_ns"]]
    return RankSummary(rank=-1 if rank is None else rank, source=source, warnings=warnings,
                       steps=steps, collectives=make_table("collectives", coll or {}),
                       links=make_table("links", links or {}))
