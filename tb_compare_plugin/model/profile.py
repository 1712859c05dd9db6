"""The one columnar profile model every loader fills and every engine reads.

A :class:`Profile` is a handful of pandas DataFrames with fixed schemas (below),
a :class:`SymbolTable` that decodes every ``int32`` name column, and a
:class:`ProfileMeta`.  Conventions, for every table:

* times are ``int64`` nanoseconds (``*_ns``), absolute, as the profiler wrote them;
  durations too.  No float timestamps anywhere (Ascend needs 19 digits).
* string columns hold symbol ids (``int32``, 0 = empty / missing);
* integer "missing" is ``-1``; float "missing" is NaN;
* row order is the order of the source file unless a table says otherwise;
* cross-table links are row positions (``int64``, -1 = none).

Loaders build tables with :func:`make_table`, which fills absent columns with
their missing value and casts to the schema dtype, so engines can rely on every
column existing.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from .symbols import SymbolTable

I8, I16, I32, I64, F64, B = "int8", "int16", "int32", "int64", "float64", "bool"

# step_trace columns (Ascend step_trace_time.csv headers, snake_cased), each as <name>_ns
STEP_TRACE_COLUMNS = ("computing", "communication_not_overlapped", "overlapped", "communication", "free",
                      "stage", "bubble", "communication_not_overlapped_and_exclude_receive", "preparing")

# kernels.kind
KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET, KIND_COMM, KIND_OTHER = 0, 1, 2, 3, 4
# overlap.kind (Ascend "Overlap Analysis" thread names)
OVERLAP_KINDS = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")

SCHEMAS: dict[str, dict[str, str]] = {
    # Device activity: GPU kernels/memcpy/memset, Ascend "Ascend Hardware" tasks joined with
    # kernel_details.csv rows (or DB TASK + COMPUTE_TASK_INFO).  One row per device execution.
    "kernels": {
        "name": I32, "type": I32,            # NPU op Type (kernel_details "Type"); GPU: 0
        "task_type": I32,                    # NPU Task Type (AI_CORE, SDMA_SQE, ...); GPU: cat
        "accel_core": I32,                   # NPU Accelerator Core; GPU: 0
        "kind": I8,                          # KIND_* above
        "stream": I64, "device": I64,
        "start_ns": I64, "dur_ns": I64,
        "step": I64,                         # step id the row belongs to, -1 unknown
        "task_id": I64, "corr": I64,         # correlation / connection id, -1 none
        "launch_op": I64,                    # row in ops of the host op that launched it, -1
        "flow_start_ns": I64,                # host-side launch time from the flow, -1
        "input_shapes": I32, "input_dtypes": I32, "input_formats": I32,
        "bytes": I64,                        # memcpy/memset bytes, -1
        "detail": B,                         # row is in kernel_details.csv / COMPUTE_TASK_INFO
        # PMU columns in microseconds, NaN when absent (names as in kernel_details.csv)
        "aicore_time_us": F64, "mac_time_us": F64, "aic_mac_time_us": F64,
        "aic_mte2_time_us": F64, "aiv_time_us": F64, "aiv_vec_time_us": F64,
        # NPU PMU ratios as the profiler wrote them (0..1; NaN when absent): aic_mac_time /
        # aicore_time and aiv_vec_time / aiv_time of the task
        "aic_mac_ratio": F64, "aiv_vec_ratio": F64,
        # GPU launch geometry and occupancy (Kineto kernel args; -1 / NaN when absent): grid and
        # block dimensions, "registers per thread", "shared memory" (bytes), "blocks per SM" and
        # "est. achieved occupancy %" (0..100) as CUPTI estimated them
        "grid_x": I64, "grid_y": I64, "grid_z": I64, "block_x": I64, "block_y": I64, "block_z": I64,
        "registers": I64, "shared_mem": I64, "blocks_per_sm": F64, "occupancy_pct": F64,
    },
    # Host operators (cpu_op, user_annotation, cuda_runtime; Ascend cpu_op; DB PYTORCH_API op).
    "ops": {
        "name": I32, "cat": I32,
        "start_ns": I64, "dur_ns": I64, "pid": I64, "tid": I64,
        "parent": I64, "depth": I16,         # per-thread nesting by time, -1 root
        "is_backward": B,
        "input_shapes": I32, "input_types": I32, "call_stack": I32,
        "corr": I64,                         # External id / correlation id, -1
        "seq": I64,                          # autograd Sequence number, -1
    },
    # python_function events (with_stack / with_modules).  is_module: name starts "nn.Module:".
    "pyfuncs": {
        "name": I32, "start_ns": I64, "dur_ns": I64, "pid": I64, "tid": I64,
        "py_id": I64, "py_parent": I64, "parent": I64, "depth": I16, "is_module": B,
    },
    # fwd -> bwd flow pairs ("fwdbwd" flows).
    "fwdbwd": {
        "start_ns": I64, "start_pid": I64, "start_tid": I64,
        "end_ns": I64, "end_pid": I64, "end_tid": I64,
    },
    # Collective operations (HCCL ops on "Group N Communication"; NCCL kernels; DB COMMUNICATION_OP).
    "comm_ops": {
        "name": I32, "op_type": I32, "group": I32,
        "start_ns": I64, "dur_ns": I64, "op_id": I64,
        "launch_op": I64, "kernel": I64,     # GPU: row in kernels of the NCCL kernel, -1
        "bytes": I64, "wait_ns": I64,
    },
    # Communication tasks (HCCL "Plane k" tasks: Notify_Wait, Memcpy, RDMASend, ...).
    "comm_tasks": {
        "name": I32, "group": I32, "plane": I64,
        "start_ns": I64, "dur_ns": I64,
        "comm_op": I64,                      # row in comm_ops, -1
        "task_type": I32, "transport": I32, "bytes": I64,
        "src_rank": I64, "dst_rank": I64,
    },
    # Per-op memory allocations (operator_memory.csv, OP_MEMORY, GPU [memory] alloc/free pairs).
    "mem_allocs": {
        "name": I32, "bytes": I64,
        "alloc_ns": I64, "release_ns": I64,  # -1 when not released inside the capture
        "op": I64,                           # row in ops that allocated it, -1
        "device": I64,
    },
    # Memory usage over time (memory_record.csv, MEMORY_RECORD, GPU [memory] totals).
    "mem_records": {
        "ts_ns": I64, "component": I32, "device": I64,
        "allocated_bytes": F64, "reserved_bytes": F64, "active_bytes": F64,
    },
    # Step boundaries (ProfilerStep#N ops, STEP_TIME).
    # fp_start_ns / bp_end_ns: where the profiler's own step trace marks the first forward and the
    # last backward task of the step (MindSpore step_trace_raw fp_point / bp_point), -1 when it does not
    "steps": {"step": I64, "start_ns": I64, "end_ns": I64, "fp_start_ns": I64, "bp_end_ns": I64},
    # Ascend Overlap Analysis intervals.
    "overlap": {"kind": I8, "start_ns": I64, "dur_ns": I64},
    # The profiler's own per-step trace (Ascend step_trace_time.csv, analysis.db StepTraceTime):
    # one row per step, ns (the file's µs x 1000), NaN where the file's cell is empty or bad.
    "step_trace": {"step": I64, **{f"{c}_ns": F64 for c in STEP_TRACE_COLUMNS}},
}

_MISSING = {I8: -1, I16: -1, I32: 0, I64: -1, F64: np.nan, B: False}
# kind/depth defaults that differ from the generic "missing" value
_DEFAULTS = {("kernels", "kind"): KIND_COMPUTE, ("ops", "depth"): 0, ("pyfuncs", "depth"): 0}


def make_table(table: str, n: int | None = None, fill=None, **columns: Any) -> pd.DataFrame:
    """Build a DataFrame of ``table``'s schema from column arrays; absent columns get defaults
    (``fill(value, dtype, n)`` makes them when given, else ``np.full``).

    Unknown column names raise, so a typo in a loader fails loudly in tests.
    """
    schema = SCHEMAS[table]
    unknown = set(columns) - set(schema)
    if unknown:
        raise KeyError(f"{table}: unknown columns {sorted(unknown)}")
    if n is None:
        n = len(next(iter(columns.values()))) if columns else 0
    data = {}
    for col, dtype in schema.items():
        if col in columns and columns[col] is not None:
            arr = np.asarray(columns[col])
            if len(arr) != n:
                raise ValueError(f"{table}.{col}: {len(arr)} rows, expected {n}")
            if arr.dtype != np.dtype(dtype):
                if dtype == B:
                    arr = arr.astype(bool)
                elif np.dtype(dtype).kind in "iu" and arr.dtype.kind == "f":
                    arr = np.where(np.isfinite(arr), arr, -1).astype(dtype)
                else:
                    arr = arr.astype(dtype)
            data[col] = arr
        else:
            value = _DEFAULTS.get((table, col), _MISSING[dtype])
            data[col] = np.full(n, value, dtype=dtype) if fill is None else fill(value, dtype, n)
    return pd.DataFrame(data, copy=False)


def empty_table(table: str) -> pd.DataFrame:
    return make_table(table, 0)


@dataclass
class ProfileMeta:
    """What kind of profile this is and how it was read."""
    device: str = "GPU"                 # "GPU" | "NPU" | "CPU"
    framework: str = "PyTorch"          # "PyTorch" | "MindSpore"
    format: str = "trace-json"          # a format id of formats/registry.py (trace-json, ascend-text,
                                        # ascend-db, ...): presenters show it, engines never read it
    rank: int | None = None
    path: str = ""                      # the worker's root path (file or folder)
    files: list[str] = field(default_factory=list)   # every file actually read
    profiler_level: str | None = None   # Ascend Level0/1/2
    device_name: str | None = None      # e.g. "NVIDIA A100", "Ascend910B"
    config: dict = field(default_factory=dict)       # profiler_info config, if any
    pg_names: dict = field(default_factory=dict)     # group id/name -> process-group name
    bandwidth: dict = field(default_factory=dict)    # communication.json summary {transport: {size_mb, time_ms}}
    bwd_tid: int | None = None          # autograd backward thread (from fwdbwd flows)
    compute_stream: int | None = None   # most frequent non-comm kernel stream
    # True when the CSV had the PMU columns the Cube/Vector split needs (Ascend level1+)
    has_pmu: bool = False
    # How the source wrote its data, recorded by the format descriptor (formats/*.py): engines
    # ask these facts, never the format id.
    task_types_from_db: bool = False    # device task types come from a profiler database's TASK
                                        # table (kernels.accel_core: the compute task's own type)
    us_text: str = "trim"               # how the source prints µs timestamps: "trim" (123 when
                                        # whole, else 123.456), "fixed3" (123.000), "float" (ns/1000)
    unreleased_text: str = "None"       # the reference's text for a release time the source lacks
    capabilities: list = field(default_factory=list)  # what the format can hold (formats/base.py)
    # memory components the loader took from a secondary table (Ascend DB: "APP" from NPU_MEM when
    # MEMORY_RECORD lacks it); the reference never reads them (reference-compat Mem Usage skips them)
    mem_components_added: list = field(default_factory=list)
    # GPU device properties as the trace lists them (Kineto ``deviceProperties``): one dict per
    # device with its scalar fields (id, name, numSms, maxThreadsPerMultiprocessor, warpSize, ...)
    device_props: list = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    # the fields above that the format descriptor sets, not the loader
    FORMAT_FACTS = ("task_types_from_db", "us_text", "unreleased_text", "capabilities")

    def to_dict(self) -> dict:
        """The fields by name, values as they are (not copied: ``asdict``'s deep copy of an
        Ascend export's bandwidth summary was ~5 ms of each hand-off)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class Profile:
    """One worker's profile: tables + symbols + meta.  Immutable once a loader returns it."""
    symbols: SymbolTable
    meta: ProfileMeta
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in SCHEMAS:
            if name not in self.tables:
                self.tables[name] = empty_table(name)

    # convenient attribute access: profile.kernels, profile.ops, ...
    def __getattr__(self, item: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables")
        if tables is not None and item in tables:
            return tables[item]
        raise AttributeError(item)

    def names(self, ids) -> list[str]:
        return self.symbols.strings(ids)

    def has(self) -> dict[str, bool]:
        t = self.tables
        return {
            "kernels": bool(len(t["kernels"])),
            "communication": bool(len(t["comm_ops"])),
            "memory": bool(len(t["mem_allocs"]) or len(t["mem_records"])),
            "modules": bool(t["pyfuncs"]["is_module"].any()) if len(t["pyfuncs"]) else False,
        }

    def step_ids(self) -> list[int]:
        return sorted(int(s) for s in self.tables["steps"]["step"].unique())

    def time_span_ns(self) -> tuple[int, int] | None:
        lo, hi = None, None
        for name in ("kernels", "ops", "overlap"):
            df = self.tables[name]
            if len(df):
                a = int(df["start_ns"].min())
                b = int((df["start_ns"] + df["dur_ns"]).max())
                lo = a if lo is None else min(lo, a)
                hi = b if hi is None else max(hi, b)
        return None if lo is None else (lo, hi)

    def summary(self) -> dict:
        """Counts per table, steps, span, device: the worker summary route's payload."""
        span = self.time_span_ns()
        return {
            "device": self.meta.device,
            "framework": self.meta.framework,
            "format": self.meta.format,
            "rank": self.meta.rank,
            "profiler_level": self.meta.profiler_level,
            "device_name": self.meta.device_name,
            "counts": {k: int(len(v)) for k, v in self.tables.items()},
            "steps": self.step_ids(),
            "time_span_ns": None if span is None else {"start": span[0], "end": span[1],
                                                       "duration_ms": (span[1] - span[0]) / 1e6},
            "has": self.has(),
            "files": list(self.meta.files),
            "warnings": list(self.meta.warnings),
        }
