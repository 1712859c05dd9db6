"""GPU time metrics of the overall breakdown (spec b.3).

Owns, for one Kineto trace: E2E (span of device activity), Computing (union of non-NCCL
kernels), Uncovered Communication (NCCL kernels outside computing), the stream "SDMA" time
(memory copies / sets on the compute stream), which kernels the categorisation walks and,
outside compat mode, the per-process-group split of Uncovered Communication: per group
(the NCCL kernel's ``Process Group Name``) the part of its kernels outside computing, with
Wait 0 (no task data) and Transmit = that part, plus the pairwise overlap of groups.

Differences from the reference (docs/deviations.md), switchable back with ``compat=True``:

* computing / uncovered are exact unions on ns; the reference counts 1-µs ticks
  (``compat`` floors every kernel's start and end to the µs, which reproduces the ticks);
* memory activity is recognised whatever its category spelling (``gpu_memcpy`` and the
  2021-era ``Memcpy``; ``gpu_memset`` / ``Memset``): it counts in E2E and, on the compute
  stream, in SDMA.  The reference picks only ``gpu_memcpy`` and treats stream 0 as "no
  stream".
"""
from __future__ import annotations

import numpy as np

from ..model import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET
from ..model.intervals import overlap_length, subtract, union
from .kernel_classes import text_flags
from .overall_npu import DeviceTimes, GroupTimes

SDMA_MARKS = ("htod", "dtod", "dtoh", "memset (device)")
TORCH_OP_CATS = frozenset({"cpu_op", "user_annotation", "cuda_runtime", "operator", "runtime"})


def _arr(df, col, rows):
    return df[col].to_numpy()[rows]


class GpuRows:
    """The per-kernel flags both the categorisation and the device times need."""

    def __init__(self, profile, sel, compat: bool) -> None:
        k, sym = profile.kernels, profile.symbols
        rows = np.flatnonzero(sel.kernels)
        kind = _arr(k, "kind", rows)
        cat = _arr(k, "task_type", rows)
        name = _arr(k, "name", rows)
        stream = _arr(k, "stream", rows)
        if compat:
            kern = text_flags(sym, cat, lambda s: s == "kernel")
            mem = text_flags(sym, cat, lambda s: s == "gpu_memcpy")
            has_stream = stream > 0
            nccl = kern & text_flags(sym, name, lambda s: s.startswith("nccl"))
        else:
            kern = (kind == KIND_COMPUTE) | (kind == KIND_COMM)
            mem = (kind == KIND_MEMCPY) | (kind == KIND_MEMSET)
            has_stream = stream >= 0
            nccl = (kind == KIND_COMM) | (kern & text_flags(sym, name, lambda s: s.startswith("nccl")))
        comp_stream = profile.meta.compute_stream
        if comp_stream is None:
            cand = stream[kern & ~nccl & has_stream]
            vals, cnt = np.unique(cand, return_counts=True)
            comp_stream = int(vals[np.argmax(cnt)]) if len(vals) else None
        marks = text_flags(sym, name, lambda s: any(m in s for m in SDMA_MARKS))
        on_cs = (stream == comp_stream) if comp_stream is not None else np.zeros(len(rows), bool)
        self.rows = rows
        self.sdma = (kern | mem) & on_cs & marks
        self.span = (kern | mem) & has_stream
        self.nccl = nccl & ~self.sdma
        self.compute = kern & ~nccl & ~self.sdma
        if not compat:      # a kernel without a stream id still counts: E2E must span it too
            self.span |= self.compute | self.nccl
        if compat:
            # the reference keys kernels by (pid, tid, ts): a later kernel on the same stream
            # with the same start replaces an earlier one
            ks = _arr(k, "start_ns", rows)
            dev = _arr(k, "device", rows)
            key = np.stack([dev, stream, ks], axis=1)
            picked = kern | mem
            idx = np.flatnonzero(picked)
            if len(idx):
                _, last = np.unique(key[idx][::-1], axis=0, return_index=True)
                keep = np.zeros(len(rows), bool)
                keep[idx[::-1][last]] = True
                self.sdma &= keep
                self.span &= keep
                self.nccl &= keep
                self.compute &= keep


def categorised_rows(g: GpuRows) -> np.ndarray:
    return g.rows[g.compute]


def cube_op_rows(profile) -> np.ndarray:
    ops = profile.ops
    return np.flatnonzero(text_flags(profile.symbols, ops["cat"].to_numpy(), lambda s: s in TORCH_OP_CATS))


def device_times(profile, g: GpuRows, compat: bool, next_start: int | None = None) -> DeviceTimes:
    """``next_start``: with one step selected, where the next step's device work begins; the
    step's E2E then runs up to it (not in reference-compat mode)."""
    k = profile.kernels
    dt = DeviceTimes()
    s = _arr(k, "start_ns", g.rows)
    e = s + _arr(k, "dur_ns", g.rows)
    if g.span.any():
        end = int(e[g.span].max())
        if next_start is not None and not compat and next_start > end:
            end = next_start
        dt.e2e_ns = end - int(s[g.span].min())
    if compat:
        # 1-µs ticks int(ts+1) .. int(ts+dur): the same as the union of µs-floored intervals
        s, e = (s // 1000) * 1000, (e // 1000) * 1000
    cs, ce = union(s[g.compute], e[g.compute])
    dt.computing_ns = int((ce - cs).sum())
    us, ue = union(np.concatenate([cs, s[g.nccl]]), np.concatenate([ce, e[g.nccl]]))
    dt.uncovered_ns = int((ue - us).sum()) - dt.computing_ns
    dt.sdma_rows = g.rows[g.sdma]
    dt.sdma_ns = int(_arr(k, "dur_ns", dt.sdma_rows).sum())
    dt.comm_rows = g.rows[g.nccl]           # kernel rows (GPU collectives are kernels)
    if not compat:                          # the reference has no GPU group rows
        _groups(profile, dt, s[g.nccl], e[g.nccl], cs, ce)
    return dt


def _groups(profile, dt: DeviceTimes, ns, ne, cs, ce) -> None:
    """Per process group: its NCCL kernels minus computing (exact ns), in first-start order."""
    rows = dt.comm_rows
    if not len(rows):
        return
    co, sym = profile.comm_ops, profile.symbols
    kgroup = np.zeros(len(profile.kernels), np.int64)        # 0 = "" (no group)
    krow_op = np.full(len(profile.kernels), -1, np.int64)
    kr = co["kernel"].to_numpy()
    ok = (kr >= 0) & (kr < len(kgroup))
    kgroup[kr[ok]] = co["group"].to_numpy()[ok]
    krow_op[kr[ok]] = np.flatnonzero(ok)
    grp = kgroup[rows]
    uniq = np.unique(grp)
    first = {int(x): int(ns[grp == x].min()) for x in uniq}
    order = sorted(first, key=lambda x: (first[x], x))
    pg_names = profile.meta.pg_names or {}
    clipped = {}
    for x in order:
        m = grp == x
        key = sym.string(x)
        pg = (pg_names.get(key) or None) if key else None
        label = f"{pg}: {key}" if pg else (key or "(no group)")
        us, ue = subtract(ns[m], ne[m], cs, ce)
        clipped[x] = (us, ue)
        ops = krow_op[rows[m]]
        dt.groups.append(GroupTimes(key, label, pg, int((ue - us).sum()), 0, ops[ops >= 0],
                                    np.zeros(0, np.int64), first[x], rows[m],
                                    redundant=(len(order) == 1 and not key)))
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            n = overlap_length(*clipped[a], *clipped[b])
            if n:
                la, lb = sym.string(a), sym.string(b)
                dt.overlaps.append((pg_names.get(la) or la or "(no group)", pg_names.get(lb) or lb or "(no group)",
                                    int(n)))
