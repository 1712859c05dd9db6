"""Memory over time for one side: allocated / reserved / active curves, their peak, and the
overall "Mem Usage" figure.

Source: ``mem_records`` (Ascend memory_record.csv / MEMORY_RECORD, GPU ``[memory]`` totals),
one series per Component on Ascend (APP = the whole process, PTA = the PyTorch caching
allocator, GE = the graph engine, PTA+GE = both; Ascend DB exports whose MEMORY_RECORD lacks APP
get it from NPU_MEM in the loader).  Old Kineto traces without ``Total Allocated`` have their
allocated totals rebuilt by the loader (running sum of ``Bytes`` per device).  When the records
carry no allocated or reserved value but ``mem_allocs`` has allocations, allocated-over-time is
rebuilt here from the allocations and frees (a running sum).

:func:`side_series` picks the series the Memory view shows; its peak (:func:`curve_peak`) is
the one figure of peak allocated memory: the view's, and via :func:`peak_allocated_gb` the
overview JSON's ``memory.<side>.peak_allocated_gb``.

Curves are thinned to at most ``max_points`` points per series by keeping, in each of a set of
equal time buckets, the first, last, minimum and maximum sample of every series, plus each
series' global maximum and minimum: every visible peak and trough survives, and the global peak
is exact.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

MIB = float(1 << 20)
GIB = float(1 << 30)
# Ascend components, most useful first: PTA is what torch.npu.memory_allocated() reports.
COMPONENT_PREFERENCE = ("PTA", "PTA+GE", "GE", "APP")
SERIES = ("allocated", "reserved", "active")


# what each Ascend component's records measure, for labels (the tab, the workbook)
COMPONENT_LABELS = {"APP": "the whole process: PyTorch, runtime and workspaces",
                    "PTA": "the PyTorch caching allocator",
                    "GE": "the graph engine",
                    "PTA+GE": "the PyTorch caching allocator and the graph engine"}


def component_label(component: str | None) -> str:
    """``"APP (the whole process: ...)"``; for records without components (GPU traces) the
    allocator's totals."""
    if not component:
        return "the PyTorch caching allocator (Total Reserved)"
    what = COMPONENT_LABELS.get(component)
    return f"{component} ({what})" if what else component


def reserved_peak_component(profile, mask: np.ndarray | None = None) -> str | None:
    """The component whose record holds the max reserved bytes (of ``mask``'s records), the
    one Mem Usage comes from; None without named components or reserved figures."""
    rec = profile.mem_records
    r = rec["reserved_bytes"].to_numpy(dtype=float)
    comp = rec["component"].to_numpy()
    if mask is not None:
        r, comp = r[mask], comp[mask]
    ok = np.isfinite(r)
    if not ok.any():
        return None
    cid = int(comp[ok][int(np.argmax(r[ok]))])
    return profile.symbols.string(cid) if cid > 0 else None


def peak_reserved_label(component: str | None) -> str:
    """What the overview's Peak reserved memory (Mem Usage) measures."""
    return ("Peak reserved memory over all components, reached by " + component_label(component)
            if component else "Peak reserved memory of " + component_label(None))


def peak_reserved_gb(profile) -> float:
    """The reference's "Mem Usage": max reserved bytes over every record (all components,
    APP included) in GiB; 0.0 when the profile has no reserved figure."""
    r = profile.mem_records["reserved_bytes"].to_numpy(dtype=float)
    r = r[np.isfinite(r)]
    return float(r.max() / GIB) if len(r) else 0.0


def components(profile) -> list[str]:
    """Component names present in the records, in first-seen order (GPU traces have none)."""
    ids = pd.unique(profile.mem_records["component"].to_numpy())
    return [profile.symbols.string(i) for i in ids if i > 0]


def default_component(profile) -> str | None:
    """The component whose curve we show by default (None: no named components, use every record)."""
    comps = components(profile)
    if not comps:
        return None
    for c in COMPONENT_PREFERENCE:
        if c in comps:
            return c
    rec = profile.mem_records
    counts = rec[rec["component"].to_numpy() > 0].groupby("component").size()
    return profile.symbols.string(int(counts.idxmax()))


def _has_values(df: pd.DataFrame) -> bool:
    return bool(np.isfinite(df["allocated_bytes"].to_numpy(dtype=float)).any()
                or np.isfinite(df["reserved_bytes"].to_numpy(dtype=float)).any())


def _records_series(profile, component: str | None, device: int | None):
    """(ts_ns, {series: bytes}) from mem_records of one component and device, time-sorted."""
    rec = profile.mem_records
    if component is not None:
        cid = profile.symbols.lookup(component)
        rec = rec[rec["component"].to_numpy() == cid]
    if len(rec) and device is None:
        devs = rec["device"].to_numpy()
        if len(np.unique(devs)) > 1:   # several devices: the one reaching the highest value
            v = np.fmax(rec["allocated_bytes"].to_numpy(dtype=float), rec["reserved_bytes"].to_numpy(dtype=float))
            device = int(devs[np.nanargmax(np.where(np.isfinite(v), v, -np.inf))])
    if device is not None:
        rec = rec[rec["device"].to_numpy() == device]
    rec = rec.sort_values("ts_ns", kind="stable")
    ts = rec["ts_ns"].to_numpy(dtype=np.int64)
    out = {s: rec[f"{s}_bytes"].to_numpy(dtype=float) for s in SERIES}
    return ts, {s: v for s, v in out.items() if np.isfinite(v).any()}


def allocs_series(allocs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Allocated bytes over time rebuilt from allocations (+) and releases (-).

    At equal timestamps allocations count before releases (the conservative peak).  Memory
    allocated before the capture is invisible, so the curve starts at 0.
    """
    a = allocs["alloc_ns"].to_numpy(dtype=np.int64)
    r = allocs["release_ns"].to_numpy(dtype=np.int64)
    b = allocs["bytes"].to_numpy(dtype=np.int64)
    ok = a >= 0
    freed = ok & (r >= 0)
    ts = np.concatenate([a[ok], r[freed]])
    delta = np.concatenate([b[ok], -b[freed]])
    kind = np.concatenate([np.zeros(ok.sum(), np.int8), np.ones(freed.sum(), np.int8)])
    o = np.lexsort((kind, ts))
    return ts[o], np.cumsum(delta[o]).astype(float)


def downsample_indices(ts: np.ndarray, series: list[np.ndarray], max_points: int) -> np.ndarray:
    """Sorted indices of the samples to keep so each series has <= max_points points.

    Per equal-width time bucket: first, last, and every series' min and max; plus every
    series' global min and max and the first and last sample overall.
    """
    n = len(ts)
    if n <= max_points:
        return np.arange(n)
    k = max(1, len(series))
    fixed = 2 + 2 * k                                    # global first/last and extrema
    per_bucket = 2 + 2 * k
    n_buckets = max(1, (max_points - fixed) // per_bucket)
    t0, t1 = int(ts[0]), int(ts[-1])
    span = max(t1 - t0, 1)
    bucket = np.minimum(((ts - t0).astype(np.float64) * n_buckets / span).astype(np.int64), n_buckets - 1)
    starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    ends = np.r_[starts[1:], n] - 1
    keep = [starts, ends, np.array([0, n - 1])]
    for v in series:
        hi = np.where(np.isfinite(v), v, -np.inf)
        lo = np.where(np.isfinite(v), v, np.inf)
        keep.append(np.array([int(np.argmax(hi)), int(np.argmin(lo))]))
        # per-bucket argmax / argmin: sort by (bucket, value), take each bucket's last / first
        o = np.lexsort((hi, bucket))
        keep.append(o[np.r_[starts[1:], n] - 1])
        o = np.lexsort((lo, bucket))
        keep.append(o[starts])
    return np.unique(np.concatenate(keep))


def _mb_list(v: np.ndarray) -> list:
    return [None if not np.isfinite(x) else x for x in (v / MIB).tolist()]


def _origin_ns(profile, ts: np.ndarray) -> int:
    span = profile.time_span_ns()
    lo = int(ts[0]) if len(ts) else 0
    return min(span[0], lo) if span is not None else lo


def side_series(profile, component: str | None = None, device: int | None = None):
    """The series the Memory view shows for one side: ``(source, component, ts_ns, {series: bytes})``.

    ``source`` is "records" (mem_records of ``component``, the default one when None), else
    "allocations" (allocated rebuilt from mem_allocs, component None), else None (no data).
    """
    comps = components(profile)
    if component is None:
        component = default_component(profile)
    elif component not in comps:
        raise ValueError(f"unknown memory component {component!r}; this profile has {', '.join(comps) or 'none'}")
    ts, vals = (_records_series(profile, component, device) if len(profile.mem_records)
                else (np.zeros(0, np.int64), {}))
    if vals:
        return "records", component, ts, vals
    if len(profile.mem_allocs):
        ts, alloc = allocs_series(profile.mem_allocs)
        return "allocations", None, ts, {"allocated": alloc}
    return None, component, ts, {}


def memory_curves(profile, max_points: int = 2000, component: str | None = None,
                  device: int | None = None) -> dict:
    """One side's memory curves, thinned to <= max_points per series.

    Returns ``{"source": "records"|"allocations"|None, "component", "components", "device",
    "t_ms", "allocated_mb", "reserved_mb", "active_mb" (when present), "n_samples",
    "peak": {"t_ms", "allocated_mb", "reserved_mb"} or None, "peak_reserved_gb",
    "component_label", "peak_reserved_component", "peak_reserved_label"}``: the curve and its peak
    are of ``component`` (``component_label`` says what it measures); ``peak_reserved_gb`` is the
    overview's Mem Usage, the max over every component (``peak_reserved_component`` reached it).  ``t_ms`` is
    relative to the side's first event; MB are MiB; missing values are None.
    """
    source, component, ts, vals = side_series(profile, component, device)
    top = reserved_peak_component(profile) if len(profile.mem_records) else None
    out = {"source": source, "component": component, "components": components(profile), "device": device,
           "component_label": component_label(component) if source == "records" else
           "allocations and frees (a running sum)" if source == "allocations" else None,
           "t_ms": [], "allocated_mb": [], "reserved_mb": [], "n_samples": 0, "peak": None,
           "peak_reserved_gb": peak_reserved_gb(profile), "peak_reserved_component": top,
           "peak_reserved_label": peak_reserved_label(top)}
    if not len(ts):
        return out
    keep = downsample_indices(ts, list(vals.values()), max_points)
    t0 = _origin_ns(profile, ts)
    out["t_ms"] = ((ts[keep] - t0) / 1e6).tolist()
    out["n_samples"] = int(len(ts))
    for s in SERIES:
        if s in vals:
            out[f"{s}_mb"] = _mb_list(vals[s][keep])
        elif s != "active":
            out[f"{s}_mb"] = [None] * len(keep)
    out["peak"] = curve_peak(ts, vals, t0)
    return out


def peak_allocated_gb(curve: dict) -> float | None:
    """The Memory view's peak allocated memory in GiB, from one side's :func:`memory_curves`
    answer (None when that side's curve has no allocated value)."""
    peak = curve.get("peak") or {}
    mb = peak.get("allocated_mb")
    return None if mb is None else mb / 1024.0


def curve_peak(ts: np.ndarray, vals: dict, t0: int = 0) -> dict | None:
    """Where the allocated series (else reserved) is highest: the first time it reaches its max."""
    key = "allocated" if "allocated" in vals else "reserved" if "reserved" in vals else None
    if key is None or not len(ts):
        return None
    v = np.where(np.isfinite(vals[key]), vals[key], -np.inf)
    i = int(np.argmax(v))

    def at(s):
        x = vals.get(s)
        return None if x is None or not np.isfinite(x[i]) else float(x[i] / MIB)
    return {"t_ns": int(ts[i]), "t_ms": (int(ts[i]) - t0) / 1e6, "allocated_mb": at("allocated"),
            "reserved_mb": at("reserved"), "series": key}


def peak_time_ns(profile, component: str | None = None) -> int | None:
    """Absolute time (ns) of the side's allocated-memory peak, from the records of the default
    component when they carry an allocated value, else from the allocations."""
    ts, vals = (_records_series(profile, component or default_component(profile), None)
                if len(profile.mem_records) else (np.zeros(0, np.int64), {}))
    if "allocated" not in vals and len(profile.mem_allocs):
        ts, alloc = allocs_series(profile.mem_allocs)
        vals = {"allocated": alloc}
    p = curve_peak(ts, vals)
    return None if p is None else p["t_ns"]
