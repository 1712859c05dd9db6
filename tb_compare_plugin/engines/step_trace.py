"""Ascend's per-step trace (step_trace_time.csv columns) of one profile: as the profiler wrote it
(the model's ``step_trace`` table) and recomputed from the events, the way torch_npu makes it.

torch_npu's rule (``TraceStepTimeParser``; docs/steps.md):

* each step's device range: from the first device task launched inside the ``ProfilerStep#N``
  host range to the later of the last such task's end and the host range's end;
* every Overlap Analysis interval (Computing, Communication, Communication(Not Overlapped), Free)
  and every ``hcom_receive`` collective is given to the step whose range holds its start, and its
  duration is summed: Computing, Communication, Communication(Not Overlapped), Free, Bubble
  (receives);
* Overlapped = Communication - Communication(Not Overlapped); Communication(Not Overlapped and
  Exclude Receive) = Communication(Not Overlapped) - Bubble; Stage = last end - first start of the
  step's intervals, minus Bubble; Preparing = first Computing/Communication start - host start.

A profile without Overlap Analysis lanes (GPU, or an export that lacks them) gets the lanes built
from its kernels: Computing = union of compute kernels, Communication = union of collectives,
Not Overlapped = Communication minus Computing, Free = the gaps between busy periods.  Pure.
"""
from __future__ import annotations

import numpy as np

from ..model.intervals import subtract, union
from ..model.profile import STEP_TRACE_COLUMNS
from .kernel_classes import text_flags

OV_COMPUTING, OV_COMM, OV_COMM_NOT_OVERLAPPED, OV_FREE = 0, 1, 2, 3


def from_file(profile) -> dict:
    """step -> {column: ns or None} from the profiler's own file (empty without one)."""
    st = profile.tables.get("step_trace")
    if st is None or not len(st):
        return {}
    out = {}
    for i, sid in enumerate(st["step"].to_numpy()):
        row = {}
        for c in STEP_TRACE_COLUMNS:
            v = float(st[f"{c}_ns"].iat[i])
            row[c] = None if np.isnan(v) else v
        out[int(sid)] = row
    return out


def device_ranges(profile):
    """(step ids, range start, range end, host start) per ProfilerStep, torch_npu's step range."""
    st = profile.steps.sort_values("start_ns", kind="stable")
    sid, hs, he = (st[c].to_numpy(np.int64) for c in ("step", "start_ns", "end_ns"))
    k, ops = profile.kernels, profile.ops
    lo = k["launch_op"].to_numpy()
    ok = (lo >= 0) & (lo < len(ops))
    rows = np.flatnonzero(ok)
    t = ops["start_ns"].to_numpy()[lo[rows]]
    i = np.searchsorted(hs, t, "right") - 1
    inside = (i >= 0)
    inside[inside] &= t[inside] <= he[i[inside]]
    rows, i, t = rows[inside], i[inside], t[inside]
    ks = k["start_ns"].to_numpy()
    ke = ks + k["dur_ns"].to_numpy()
    n = len(sid)
    start, end = hs.copy(), he.copy()
    kstep = k["step"].to_numpy()
    for j in range(n):
        m = i == j
        if m.any():
            r, tj = rows[m], t[m]
            first, last = r[tj == tj.min()], r[tj == tj.max()]
            start[j] = int(ks[first].min())
            end[j] = max(int(ke[last].max()), int(he[j]))
        else:
            tagged = np.flatnonzero(kstep == sid[j])
            if len(tagged):
                start[j] = int(ks[tagged].min())
                end[j] = max(int(ke[tagged].max()), int(he[j]))
    return sid, start, end, hs


def _lanes(profile, roles):
    """Overlap Analysis intervals (kind, start, dur): the profile's own, else built from kernels."""
    ov = profile.overlap
    if len(ov):
        return (ov["kind"].to_numpy(), ov["start_ns"].to_numpy(np.int64), ov["dur_ns"].to_numpy(np.int64)), "overlap"
    k = profile.kernels
    comp = roles.device_rows["compute"]
    cs = k["start_ns"].to_numpy()[comp]
    cu = union(cs, cs + k["dur_ns"].to_numpy()[comp])
    mu = roles.pieces["communication"]
    not_ov = subtract(*mu, *cu)
    bs, be = union(np.concatenate([cu[0], mu[0]]), np.concatenate([cu[1], mu[1]]))
    free = (be[:-1], bs[1:])                 # the gaps between busy periods, as Ascend's Free lane
    parts = [(OV_COMPUTING, cu), (OV_COMM, mu), (OV_COMM_NOT_OVERLAPPED, not_ov), (OV_FREE, free)]
    kind = np.concatenate([np.full(len(p[0]), kd, np.int8) for kd, p in parts])
    s = np.concatenate([p[0] for _, p in parts])
    e = np.concatenate([p[1] for _, p in parts])
    return (kind, s, e - s), "kernels"


def from_events(profile, roles) -> tuple[dict, str]:
    """(step -> {column: ns}, lanes source: "overlap" | "kernels")."""
    if not len(profile.steps):
        return {}, "none"
    sid, start, end, hs = device_ranges(profile)
    (kind, s, d), source = _lanes(profile, roles)
    co = profile.comm_ops
    recv = text_flags(profile.symbols, co["name"].to_numpy(), lambda x: x.startswith("hcom_receive"))
    rs, rd = co["start_ns"].to_numpy()[recv], co["dur_ns"].to_numpy()[recv]
    order = np.argsort(start, kind="stable")
    so, eo = start[order], end[order]

    def step_of(t):
        j = np.searchsorted(so, t, "right") - 1
        hit = (j >= 0)
        hit[hit] &= t[hit] < eo[j[hit]]
        return np.where(hit, order[np.maximum(j, 0)], -1)

    js, jr = step_of(s), step_of(rs)
    out = {}
    for j in range(len(sid)):
        m, mr = js == j, jr == j
        tot = {kd: float(d[m & (kind == kd)].sum()) for kd in (OV_COMPUTING, OV_COMM, OV_COMM_NOT_OVERLAPPED, OV_FREE)}
        bubble = float(rd[mr].sum())
        starts = np.concatenate([s[m], rs[mr]])
        ends = np.concatenate([s[m] + d[m], rs[mr] + rd[mr]])
        e2e = float(ends.max() - starts.min()) if len(starts) else 0.0
        first = s[m & ((kind == OV_COMPUTING) | (kind == OV_COMM))]
        out[int(sid[j])] = {
            "computing": tot[OV_COMPUTING],
            "communication_not_overlapped": tot[OV_COMM_NOT_OVERLAPPED],
            "overlapped": tot[OV_COMM] - tot[OV_COMM_NOT_OVERLAPPED],
            "communication": tot[OV_COMM],
            "free": tot[OV_FREE],
            "stage": e2e - bubble,
            "bubble": bubble,
            "communication_not_overlapped_and_exclude_receive": tot[OV_COMM_NOT_OVERLAPPED] - bubble,
            "preparing": float(first.min() - hs[j]) if len(first) else 0.0,
        }
    return out, source
