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

from ..model.intervals import union
from ..model.profile import STEP_TRACE_COLUMNS
from .kernel_classes import text_flags
from .step_breakdown import group_reduce

OV_COMPUTING, OV_COMM, OV_COMM_NOT_OVERLAPPED, OV_FREE = 0, 1, 2, 3


def from_file(profile) -> dict:
    """step -> {column: ns or None} from the profiler's own file (empty without one)."""
    st = profile.tables.get("step_trace")
    if st is None or not len(st):
        return {}
    cols = {c: st[f"{c}_ns"].to_numpy(np.float64).tolist() for c in STEP_TRACE_COLUMNS}   # a column at a time
    out = {}
    for i, sid in enumerate(st["step"].to_numpy().tolist()):
        out[int(sid)] = {c: (None if vals[i] != vals[i] else vals[i]) for c, vals in cols.items()}   # NaN: None
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
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    # per step: the first and the last launch time, then the tasks of those launches
    t_min = group_reduce(np.minimum, i, t, n, big)
    t_max = group_reduce(np.maximum, i, t, n, small)
    f = t == t_min[i]
    first_s = group_reduce(np.minimum, i[f], ks[rows[f]], n, big)
    la = t == t_max[i]
    last_e = group_reduce(np.maximum, i[la], ke[rows[la]], n, small)
    has = t_min < big
    start[has] = first_s[has]
    end[has] = np.maximum(last_e[has], he[has])
    # steps without linked launches: the tasks tagged with the step id
    if not has.all():
        kstep = k["step"].to_numpy()
        so = np.argsort(sid, kind="stable")
        p = np.clip(np.searchsorted(sid[so], kstep), 0, n - 1)
        kj = np.where(sid[so][p] == kstep, so[p], -1)       # kernel -> its step's position
        kj[kj >= 0] = np.where(has[kj[kj >= 0]], -1, kj[kj >= 0])
        m = kj >= 0
        t_first = group_reduce(np.minimum, kj[m], ks[m], n, big)
        t_last = group_reduce(np.maximum, kj[m], ke[m], n, small)
        got = t_first < big
        start[got] = t_first[got]
        end[got] = np.maximum(t_last[got], he[got])
    return sid, start, end, hs


def _lanes(profile, roles):
    """Overlap Analysis intervals (kind, start, dur): the profile's own, else built from kernels."""
    ov = profile.overlap
    if len(ov):
        return (ov["kind"].to_numpy(), ov["start_ns"].to_numpy(np.int64), ov["dur_ns"].to_numpy(np.int64)), "overlap"
    cu = roles.union_of("kernel")                    # the compute kernels' union
    mu = roles.union_of("communication")
    not_ov = roles.comm_not_overlapped()
    bs, be = union(np.concatenate([cu[0], mu[0]]), np.concatenate([cu[1], mu[1]]))
    free = (be[:-1], bs[1:])                 # the gaps between busy periods, as Ascend's Free lane
    parts = [(OV_COMPUTING, cu), (OV_COMM, mu), (OV_COMM_NOT_OVERLAPPED, not_ov), (OV_FREE, free)]
    kind = np.concatenate([np.full(len(p[0]), kd, np.int8) for kd, p in parts])
    s = np.concatenate([p[0] for _, p in parts])
    e = np.concatenate([p[1] for _, p in parts])
    return (kind, s, e - s), "kernels"


def from_events(profile, roles) -> tuple[dict, str]:
    """(step -> {column: ns}, lanes source: "overlap" | "kernels")."""
    if not len(profile.steps) or not (len(profile.overlap) or len(profile.kernels)):
        return {}, "none"                # no device activity: nothing to put in the columns
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
    n = len(sid)
    tot = {}
    for kd in (OV_COMPUTING, OV_COMM, OV_COMM_NOT_OVERLAPPED, OV_FREE):
        m = (js >= 0) & (kind == kd)
        tot[kd] = np.bincount(js[m], weights=d[m].astype(np.float64), minlength=n)
    mr = jr >= 0
    bubble = np.bincount(jr[mr], weights=rd[mr].astype(np.float64), minlength=n)
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    m = js >= 0
    lo = np.minimum(group_reduce(np.minimum, js[m], s[m], n, big),
                    group_reduce(np.minimum, jr[mr], rs[mr], n, big))
    hi = np.maximum(group_reduce(np.maximum, js[m], s[m] + d[m], n, small),
                    group_reduce(np.maximum, jr[mr], rs[mr] + rd[mr], n, small))
    m = (js >= 0) & ((kind == OV_COMPUTING) | (kind == OV_COMM))
    first = group_reduce(np.minimum, js[m], s[m], n, big)
    out = {}
    for j in range(n):
        b = float(bubble[j])
        nov = float(tot[OV_COMM_NOT_OVERLAPPED][j])
        out[int(sid[j])] = {
            "computing": float(tot[OV_COMPUTING][j]),
            "communication_not_overlapped": nov,
            "overlapped": float(tot[OV_COMM][j]) - nov,
            "communication": float(tot[OV_COMM][j]),
            "free": float(tot[OV_FREE][j]),
            "stage": (float(hi[j] - lo[j]) if lo[j] < big else 0.0) - b,
            "bubble": b,
            "communication_not_overlapped_and_exclude_receive": nov - b,
            "preparing": float(first[j] - hs[j]) if first[j] < big else 0.0,
        }
    return out, source
