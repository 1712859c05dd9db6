"""A parsed :class:`Profile` -> :class:`RankSummary`, for formats with no light per-rank files
(GPU Kineto traces).  Pure reduction; no file access.

Per step (the ProfilerStep windows; the whole capture as step -1 without them), on the device:
computing = union of compute kernels, communication = union of collective (NCCL) kernels,
overlapped = their intersection, communication not overlapped = communication - overlapped,
free = the step's device span - union(computing, communication), where the span is the host
step window widened to cover the step's kernels (so computing + not-overlapped + free = span,
the profiler's Stage on Ascend), preparing = first kernel start - host step start, step time =
the host step window.  Bubble is unknown on GPU traces (null).  Wait / transmit are left to the
cluster analysis (cross-rank, as the reference).

Collectives: one row per NCCL kernel, named ``<collective>#<n>`` (its n-th of that kind in its
process group and step: the same name on every rank that ran it), bytes from the kernel's
``In msg nelems`` x dtype size.  Links: one row per collective with the rank as source and the
peer unknown (``dst_rank`` -1, transport ``NCCL``): the trace names the group, not the peer;
the cluster analysis takes the next rank of the group's ring (docs/cluster.md).
"""
from __future__ import annotations

import math

import numpy as np

from ...engines.overall_steps import select
from ...model import KIND_COMM, KIND_COMPUTE
from ...model.intervals import overlap_length, total_length, union
from ...model.rank_summary import RankSummary, make_table


def _windows(profile) -> list:
    steps = profile.tables["steps"]
    if len(steps):
        g = steps.groupby("step").agg(start=("start_ns", "min"), end=("end_ns", "max"))
        return [(int(s), int(r.start), int(r.end)) for s, r in g.iterrows()]
    span = profile.time_span_ns()
    return [(-1, span[0], span[1])] if span else []


def summarise_profile(profile, rank) -> RankSummary:
    if rank is None:
        rank = profile.meta.rank
    warnings = [f"{profile.meta.path}: {w}" for w in profile.meta.warnings]
    k = profile.tables["kernels"]
    ks = k["start_ns"].to_numpy()
    ke = ks + k["dur_ns"].to_numpy()
    kind = k["kind"].to_numpy()
    co = profile.tables["comm_ops"]
    kernel_row = co["kernel"].to_numpy()
    steps = {c: [] for c in ("step", "step_time", "computing", "communication_not_overlapped",
                             "overlapped", "communication", "free", "preparing", "bubble")}
    coll = {c: [] for c in ("step", "name", "op_type", "group", "start_ns", "elapse", "bytes")}
    windows = _windows(profile)
    if windows and windows[0][0] == -1:
        warnings.append(f"{profile.meta.path}: no ProfilerStep markers; the whole capture is one step (-1)")
    for step, host_start, host_end in windows:
        if step >= 0:
            sel = select(profile, step)
            m = sel.kernels
            lo, hi = sel.window
        else:
            m = np.ones(len(k), bool)
            lo, hi = host_start, host_end
        comp, comm = m & (kind == KIND_COMPUTE), m & (kind == KIND_COMM)
        c_len = total_length(ks[comp], ke[comp])
        m_len = total_length(ks[comm], ke[comm])
        both = overlap_length(ks[comp], ke[comp], ks[comm], ke[comm])
        busy = total_length(ks[comp | comm], ke[comp | comm])
        first = int(ks[m].min()) if m.any() else host_start
        steps["step"].append(step)
        steps["step_time"].append(float(host_end - host_start))
        steps["computing"].append(float(c_len))
        steps["communication"].append(float(m_len))
        steps["overlapped"].append(float(both))
        steps["communication_not_overlapped"].append(float(m_len - both))
        steps["free"].append(float(max(0, (hi - lo) - busy)))
        steps["preparing"].append(float(max(0, first - host_start)))
        steps["bubble"].append(math.nan)
        # the step's collectives, in launch order on the device
        rows = np.flatnonzero((kernel_row >= 0) & m[np.clip(kernel_row, 0, max(len(k) - 1, 0))]) \
            if len(k) else np.zeros(0, int)
        rows = rows[np.argsort(co["start_ns"].to_numpy()[rows], kind="stable")]
        seen: dict = {}
        op_types = profile.names(co["op_type"].to_numpy()[rows])
        groups = profile.names(co["group"].to_numpy()[rows])
        for i, op, grp in zip(rows.tolist(), op_types, groups):
            n = seen.get((grp, op), 0)
            seen[(grp, op)] = n + 1
            coll["step"].append(step)
            coll["name"].append(f"{op or 'collective'}#{n}")
            coll["op_type"].append(op)
            coll["group"].append(grp)
            coll["start_ns"].append(float(co["start_ns"].iat[i]))
            coll["elapse"].append(float(co["dur_ns"].iat[i]))
            b = int(co["bytes"].iat[i])
            coll["bytes"].append(float(b) if b >= 0 else math.nan)
    nb = sum(1 for b in coll["bytes"] if math.isnan(b))
    if nb:
        warnings.append(f"{profile.meta.path}: {nb} NCCL kernel(s) without message size "
                        "(no In msg nelems/dtype args): their links have no bandwidth")
    links = {"step": coll["step"], "collective": coll["name"], "group": coll["group"],
             "src_rank": [-1 if rank is None else int(rank)] * len(coll["step"]),
             "dst_rank": [-1] * len(coll["step"]), "transport": ["NCCL"] * len(coll["step"]),
             "bytes": coll["bytes"], "time": coll["elapse"], "op_name": coll["op_type"]}
    return RankSummary(rank=-1 if rank is None else rank, source=tuple(profile.meta.files or
                                                                      [profile.meta.path]),
                       warnings=warnings, steps=make_table("steps", steps),
                       collectives=make_table("collectives", coll), links=make_table("links", links))
