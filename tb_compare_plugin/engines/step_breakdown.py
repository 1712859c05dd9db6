"""Per-step windows and the step-time breakdown of one profile (Kernel, Memcpy, Memset,
Communication, Runtime, DataLoader, CPU Exec, Other), by the PyTorch Profiler plugin's rule.

The plugin's rule (torch-tb-profiler 0.4.3, ``event_parser.StepParser`` and
``overall_parser.OverallParser``; docs/steps.md):

* **step windows**: each ``ProfilerStep#N`` host range, widened to the device: a step ends at
  the later of its host end and the end of the last device activity launched (by a launch op
  lying wholly inside the host range) during it; a step starts at the later of its host start
  and the previous step's end (the first step: the later of its host start and the end of the
  device work launched before any step that finished before the first step's device work).
  Trailing steps that launched nothing are dropped, and so is the last one when it launched
  fewer than 80% of the device activities of the one before (the profiler may have cut its
  kernels off); ``notes`` says so.
* **priority**: inside the steps, each time point is given to the first role active there, in
  the order Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec; the rest is
  Other.  So the eight parts add up to the step's wall time exactly.

Roles come from the model's columns (never the format): device rows by ``kernels.kind``
(communication kernels and HCCL device tasks -> Communication), host rows by ``ops.cat`` and
name (runtime / CANN launch categories -> Runtime; ``enumerate(DataLoader)#...__next__`` and
``enumerate(DataPipe)#...`` -> DataLoader; ``nccl:*`` / ``gloo:*`` host ops -> Communication; other host
operators -> CPU Exec), plus the collectives of ``comm_ops``.  Interval work is numpy
(model.intervals); the only Python loops run over steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET, KIND_OTHER, jit
from ..model.derived import derived
from ..model.intervals import subtract, union
from ..model.keys import id_kernels, lut_take
from .kernel_classes import distinct_ids, text_flags

ROLES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec")
BREAKDOWN = ROLES + ("other",)

# host categories: launch APIs (CUDA/HIP/other runtimes; Ascend's task queue, CANN/ACL APIs)
RUNTIME_CATS = frozenset({"runtime", "cuda_runtime", "cuda_driver", "hip_runtime", "mtia_runtime",
                          "glow_runtime", "xpu_runtime", "privateuse1_runtime", "enqueue", "dequeue",
                          "cann_api", "acl", "acl_api", "runtime_api"})
CPU_CATS = frozenset({"cpu_op", "operator", "user_annotation", "python"})
# host ops that are collectives / point-to-point transfers (our rule: every nccl:/gloo: op, e.g.
# nccl:all_to_all, nccl:send; 0.4.3 knows only the ten names of COMM_OP_NAMES)
COMM_OP_PREFIXES = ("nccl:", "gloo:")
COMM_OP_NAMES = frozenset(f"{lib}:{op}" for lib in ("nccl", "gloo")
                          for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter"))
# device task types of an Ascend kernel row that are collective-communication work
COMM_TASK_MARKS = ("hccl", "notify", "write value", "rdma", "reduce_tbe", "memcpy_async_hccl")


def is_dataloader_name(s: str) -> bool:
    """``s`` lower-cased: the plugin's DataLoader rule."""
    return (s.startswith("enumerate(dataloader)#") and s.endswith(".__next__")) or \
        s.startswith("enumerate(datapipe)#")


@dataclass
class StepWindows:
    """The steps kept, their windows (ns) and per step the device activity it launched."""
    steps: np.ndarray                       # step ids
    start: np.ndarray
    end: np.ndarray
    host_start: np.ndarray
    host_end: np.ndarray
    launched: np.ndarray                    # device rows launched inside the host step
    notes: list = field(default_factory=list)


class Roles:
    """Per role its intervals (ns, raw) and, computed when first asked, their sorted disjoint
    union (``union_of(role)``); the kernel rows of each device class (``device_rows``)."""

    def __init__(self, raw: dict, device_rows: dict) -> None:
        self.raw = raw                          # role -> (start, end), any order, may overlap
        self.device_rows = device_rows          # "compute"/"memcpy"/"memset"/"comm" -> kernel rows
        self._pieces: dict = {}

    def union_of(self, role: str):
        if role not in self._pieces:
            a, b = self.raw[role]
            self._pieces[role] = union(np.asarray(a, np.int64), np.asarray(b, np.int64))
        return self._pieces[role]

    def comm_not_overlapped(self):
        """Communication minus compute (kernel) time, sorted disjoint pieces (cached)."""
        if "_comm_only" not in self._pieces:
            self._pieces["_comm_only"] = subtract(*self.union_of("communication"), *self.union_of("kernel"))
        return self._pieces["_comm_only"]


# host op classes, one code per distinct name / category
_N_STEP, _N_LOADER, _N_COMM, _N_COMM10 = 1, 2, 4, 8
_C_RUNTIME, _C_CPU, _C_ANNOT, _C_RUNTIME043, _C_CPU043 = 1, 2, 4, 8, 16


def _name_code(s: str) -> int:
    c = 0
    if s.startswith("profilerstep#"):
        c |= _N_STEP
    if is_dataloader_name(s):
        c |= _N_LOADER
    if s.startswith(COMM_OP_PREFIXES):
        c |= _N_COMM
    if s in COMM_OP_NAMES:
        c |= _N_COMM10
    return c


def _cat_code(s: str) -> int:
    return ((_C_RUNTIME if s in RUNTIME_CATS else 0) | (_C_CPU if s in CPU_CATS else 0)
            | (_C_ANNOT if s == "user_annotation" else 0) | (_C_RUNTIME043 if s == "runtime" else 0)
            | (_C_CPU043 if s in ("cpu_op", "operator", "python") else 0))


def _codes(symbols, ids: np.ndarray, fn) -> np.ndarray:
    """``fn(lower-cased string)`` (a small int) per row, evaluated once per distinct id."""
    ids = np.asarray(ids)
    if not len(ids):
        return np.zeros(0, np.int8)
    uniq = distinct_ids(ids)
    lut = np.zeros(int(uniq[-1]) + 1, np.int8)
    lut[uniq] = np.fromiter((fn(x.lower()) for x in symbols.strings(uniq)), np.int8, count=len(uniq))
    return lut_take(lut, ids, id_kernels(ids))


def host_roles(profile, compat: bool = False) -> dict:
    """Boolean masks over ops: runtime, dataloader, communication, cpu_exec, step markers.

    ``compat``: the event selection of torch-tb-profiler 0.4.3 (docs/steps.md): only the category
    ``runtime`` is a runtime (it drops ``cuda_runtime``/``cuda_driver``), and a ``user_annotation``
    is read only when it is a step marker or a collective (so neither DataLoader nor CPU Exec)."""
    ops, sym = profile.ops, profile.symbols
    nc = _codes(sym, ops["name"].to_numpy(), _name_code)
    cc = _codes(sym, ops["cat"].to_numpy(), _cat_code)
    step = (nc & _N_STEP) > 0
    if compat:
        runtime = (cc & _C_RUNTIME043) > 0
        cpu = (cc & _C_CPU043) > 0
        comm = (cpu | ((cc & _C_ANNOT) > 0)) & ((nc & _N_COMM10) > 0)
    else:
        runtime = (cc & _C_RUNTIME) > 0
        cpu = (cc & _C_CPU) > 0
        comm = cpu & ((nc & _N_COMM) > 0)
    loader = cpu & ((nc & _N_LOADER) > 0)
    cpu_exec = cpu & ~step & ~loader & ~comm
    return {"runtime": runtime & ~step, "dataloader": loader, "communication": comm,
            "cpu_exec": cpu_exec, "step": step}


def device_kinds(profile, compat: bool = False, hosts: dict | None = None) -> dict:
    """Kernel rows by role: compute, memcpy, memset, comm (HCCL/NCCL device work).

    ``compat``: as torch-tb-profiler 0.4.3, a kernel is communication only when launched inside
    a host op named ``nccl:<collective>`` / ``gloo:<collective>`` (it carries that op's external
    id), not by being an NCCL kernel."""
    k, sym = profile.kernels, profile.symbols
    kind = k["kind"].to_numpy()
    if compat:
        hosts = host_roles(profile, True) if hosts is None else hosts
        ops = profile.ops
        ext = ops["corr"].to_numpy()
        comm_ext = np.unique(ext[hosts["communication"] & (ext >= 0)])
        lo = k["launch_op"].to_numpy()
        kext = np.where(lo >= 0, ext[np.clip(lo, 0, max(len(ext) - 1, 0))] if len(ext) else -1, -1)
        under = (kext >= 0) & np.isin(kext, comm_ext)
        kern = (kind == KIND_COMPUTE) | (kind == KIND_COMM)
        return {"compute": np.flatnonzero(kern & ~under), "memcpy": np.flatnonzero(kind == KIND_MEMCPY),
                "memset": np.flatnonzero(kind == KIND_MEMSET), "comm": np.flatnonzero(kern & under)}
    comm = kind == KIND_COMM
    other = np.flatnonzero(kind == KIND_OTHER)
    if len(other):
        tt = k["task_type"].to_numpy()[other]
        ac = k["accel_core"].to_numpy()[other]
        commish = (text_flags(sym, tt, lambda s: any(m in s for m in COMM_TASK_MARKS))
                   | text_flags(sym, ac, lambda s: s == "hccl"))
        comm[other[commish]] = True
    return {"compute": np.flatnonzero(kind == KIND_COMPUTE), "memcpy": np.flatnonzero(kind == KIND_MEMCPY),
            "memset": np.flatnonzero(kind == KIND_MEMSET), "comm": np.flatnonzero(comm)}


def _outermost(mask: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Rows of ``mask`` whose parent is not in ``mask``: an op nested (by time) in an op of the
    same role adds nothing to the role's union, so the union needs only these."""
    k = jit.kernels(len(mask))
    if k is not None:
        return k.outermost(np.asarray(mask, np.bool_), np.asarray(parent, np.int64))
    rows = np.flatnonzero(mask)
    par = parent[rows]
    inner = (par >= 0) & (par < len(mask))
    inner[inner] = mask[par[inner]]
    return rows[~inner]


def role_pieces(profile, compat: bool = False) -> Roles:
    hosts = host_roles(profile, compat)
    dev = device_kinds(profile, compat, hosts)
    k, ops, co = profile.kernels, profile.ops, profile.comm_ops
    if compat:
        co = co.iloc[:0]
    ks, ke = k["start_ns"].to_numpy(), (k["start_ns"] + k["dur_ns"]).to_numpy()
    os_, oe = ops["start_ns"].to_numpy(), (ops["start_ns"] + ops["dur_ns"]).to_numpy()
    cs, ce = co["start_ns"].to_numpy(), (co["start_ns"] + co["dur_ns"]).to_numpy()
    parent = ops["parent"].to_numpy()
    h = {r: _outermost(hosts[r], parent) for r in ("communication", "runtime", "dataloader", "cpu_exec")}
    # comm_ops rows that are kernels already (GPU) add nothing; NPU collectives add their span
    comm_s = np.concatenate([ks[dev["comm"]], os_[h["communication"]], cs])
    comm_e = np.concatenate([ke[dev["comm"]], oe[h["communication"]], ce])
    raw = {"kernel": (ks[dev["compute"]], ke[dev["compute"]]),
           "memcpy": (ks[dev["memcpy"]], ke[dev["memcpy"]]),
           "memset": (ks[dev["memset"]], ke[dev["memset"]]),
           "communication": (comm_s, comm_e),
           "runtime": (os_[h["runtime"]], oe[h["runtime"]]),
           "dataloader": (os_[h["dataloader"]], oe[h["dataloader"]]),
           "cpu_exec": (os_[h["cpu_exec"]], oe[h["cpu_exec"]])}
    return Roles(raw, dev)


def step_windows(profile, compat: bool = False) -> StepWindows:
    """The plugin's device-aware step windows (see the module docstring).  ``compat``: only
    launches from ``runtime``-category ops count (0.4.3 drops ``cuda_runtime``, so on current
    traces its steps stay host ranges).  Built once per profile (``model.derived``): the steps
    and the efficiency figures both read them (~20 ms on a 1 GB trace); not to be changed."""
    return derived(profile, f"step_windows:{bool(compat)}", lambda: _step_windows(profile, compat))


def _step_windows(profile, compat: bool) -> StepWindows:
    st = profile.steps
    notes: list = []
    if not len(st):
        z = np.zeros(0, np.int64)
        return StepWindows(z, z, z, z, z, z, notes)
    st = st.sort_values("start_ns", kind="stable")
    sid, hs, he = (st[c].to_numpy(np.int64) for c in ("step", "start_ns", "end_ns"))
    n = len(sid)
    k, ops = profile.kernels, profile.ops
    ks, ke = k["start_ns"].to_numpy(), (k["start_ns"] + k["dur_ns"]).to_numpy()
    lo = k["launch_op"].to_numpy()
    linked = np.flatnonzero((lo >= 0) & (lo < len(ops)))
    if compat:
        linked = linked[host_roles(profile, True)["runtime"][lo[linked]]]
    os_ = ops["start_ns"].to_numpy()[lo[linked]]
    oe = os_ + ops["dur_ns"].to_numpy()[lo[linked]]
    i = np.searchsorted(hs, os_, "right") - 1
    ok = (i >= 0)
    ok[ok] &= oe[ok] <= he[i[ok]]
    rows, si = linked[ok], i[ok]
    dmin = group_reduce(np.minimum, si, ks[rows], n, np.iinfo(np.int64).max)
    dmax = group_reduce(np.maximum, si, ke[rows], n, np.iinfo(np.int64).min)
    launched = np.bincount(si, minlength=n).astype(np.int64)
    start, end = hs.copy(), he.copy()
    if len(rows):
        prev_end = int(hs[0])
        if launched[0]:
            unmatched = np.ones(len(k), bool)
            unmatched[rows] = False
            before = unmatched & (ke < dmin[0])
            if before.any():
                prev_end = max(prev_end, int(ke[before].max()))
        for j in range(n):
            s = max(prev_end, int(hs[j]))
            e = int(he[j]) if not launched[j] else max(int(he[j]), int(dmax[j]))
            e = max(e, s)
            start[j], end[j] = s, e
            prev_end = e
        if n > 1:
            last = np.flatnonzero(launched > 0)
            if len(last):
                keep = int(last[-1]) + 1
                if keep > 1 and launched[keep - 2] * 0.8 > launched[keep - 1]:
                    keep -= 1
                if keep < n:
                    dropped = ", ".join(str(int(x)) for x in sid[keep:])
                    notes.append(f"step(s) {dropped} left out: they launched no device work, or fewer than 80% "
                                 "of the previous step's, so the capture probably cut them short "
                                 "(the PyTorch Profiler plugin's rule)")
                    sl = slice(0, keep)
                    sid, start, end, hs, he, launched = sid[sl], start[sl], end[sl], hs[sl], he[sl], launched[sl]
    return StepWindows(sid, start, end, hs, he, launched, notes)


def group_reduce(ufunc, idx: np.ndarray, vals: np.ndarray, n: int, fill) -> np.ndarray:
    """``ufunc`` (np.minimum / np.maximum / np.add) of ``vals`` per group ``idx`` in [0, n); groups
    without rows get ``fill``.  A sort and ``reduceat`` (``ufunc.at`` is slow on big arrays)."""
    out = np.full(n, fill, dtype=np.asarray(vals).dtype if len(vals) else np.int64)
    if not len(idx):
        return out
    k = jit.kernels(len(idx))
    if (k is not None and out.dtype == np.int64 and ufunc in (np.minimum, np.maximum)
            and 0 <= int(idx.min()) and int(idx.max()) < n):
        return k.group_extreme(np.asarray(idx, np.int64), np.asarray(vals), n, int(fill), ufunc is np.maximum)
    o = np.argsort(idx, kind="stable")
    si, sv = idx[o], np.asarray(vals)[o]
    first = np.flatnonzero(np.r_[True, si[1:] != si[:-1]])
    out[si[first]] = ufunc.reduceat(sv, first)
    return out


def prefix_length(s: np.ndarray, e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For sorted disjoint pieces (s, e): total length of the pieces below each time in ``t``."""
    t = np.asarray(t, np.int64)
    if not len(s):
        return np.zeros(len(t), np.int64)
    cum = np.concatenate([[0], np.cumsum(e - s)])
    j = np.searchsorted(s, t, "right")            # pieces starting at or before t
    jm = np.maximum(j - 1, 0)
    inside = np.where(j > 0, np.clip(t - s[jm], 0, e[jm] - s[jm]), 0)
    return cum[jm] * (j > 0) + inside


def window_lengths(s: np.ndarray, e: np.ndarray, ws: np.ndarray, we: np.ndarray) -> np.ndarray:
    """Length of the sorted disjoint pieces inside each window [ws, we)."""
    return prefix_length(s, e, we) - prefix_length(s, e, ws)


def breakdown(roles: Roles, win: StepWindows) -> dict:
    """role -> int64 ns per step (aligned with ``win.steps``); the parts add up to each window.

    The priority rule is pointwise, so a role's part of a window is what the union of it and the
    roles before it covers there, less what the roles before it cover: one running union."""
    n = len(win.steps)
    if not n:
        return {r: np.zeros(0, np.int64) for r in BREAKDOWN}
    out = {}
    cover_s = np.zeros(0, np.int64)
    cover_e = np.zeros(0, np.int64)
    before = np.zeros(n, np.int64)
    lo, hi = int(win.start.min()), int(win.end.max())
    for r in ROLES:
        a, b = roles.raw[r]
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        keep = (b > lo) & (a < hi)                  # only what can meet a window
        cover_s, cover_e = union(np.concatenate([cover_s, a[keep]]), np.concatenate([cover_e, b[keep]]))
        now = window_lengths(cover_s, cover_e, win.start, win.end)
        out[r] = now - before
        before = now
    out["other"] = (win.end - win.start) - before
    return out
