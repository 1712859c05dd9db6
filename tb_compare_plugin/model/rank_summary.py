"""What one rank contributes to a cluster analysis: :class:`RankSummary`.

A RankSummary is small (a few rows per step and per collective), picklable and plain: it is what
``analyses/run/summarise.summarise_worker`` returns for one worker, what the cluster cache stores
and what a Dask task sends back.  Three tables, pandas DataFrames with fixed schemas:

* ``steps`` - one row per step of the rank: the columns of the reference's
  ``cluster_step_trace_time.csv`` / ``cluster_time_summary.csv``;
* ``collectives`` - one row per collective operation of the rank (per step): its wait and
  transmit time and the bytes it moved;
* ``links`` - one row per (step, collective, src rank, dst rank) link the rank reports: the
  transport, bytes and time of what it moved over that link.

Units: durations are float64 **nanoseconds** (NaN = the source does not hold this figure; float so
that a missing figure is not confused with a zero), sizes float64 **bytes**, steps and ranks int64
(-1 = unknown), names plain Python strings.  ``to_dict()`` / ``from_dict()`` give a JSON-able
dict (cache files, Dask transport) and back, exactly (floats round-trip through ``repr``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

I64, F64, S = "int64", "float64", "object"

STEP_METRICS = ("step_time", "computing", "communication_not_overlapped", "overlapped",
                "communication", "free", "wait", "transmit", "preparing", "bubble")

SCHEMAS: dict[str, dict[str, str]] = {
    "steps": {"step": I64, **{m: F64 for m in STEP_METRICS}},
    # elapse = the op's wall time on the rank; wait/transmit/synchronization/idle as the Ascend
    # Communication Time Info (wait includes synchronization); start_ns absolute, NaN unknown
    "collectives": {"step": I64, "name": S, "op_type": S, "group": S, "start_ns": F64,
                    "elapse": F64, "wait": F64, "transmit": F64, "synchronization": F64,
                    "idle": F64, "bytes": F64},
    "links": {"step": I64, "collective": S, "src_rank": I64, "dst_rank": I64, "transport": S,
              "bytes": F64, "time": F64, "group": S, "op_name": S},
}
_MISSING = {I64: -1, F64: np.nan, S: ""}


def make_table(name: str, data: Mapping[str, Any] | pd.DataFrame | None = None) -> pd.DataFrame:
    """A table of schema ``name`` from columns (absent ones filled with their missing value)."""
    schema = SCHEMAS[name]
    data = {} if data is None else data
    n = len(data) if isinstance(data, pd.DataFrame) else max(
        (len(v) for v in data.values()), default=0)
    cols = {}
    for col, dtype in schema.items():
        if col in data:
            v = data[col]
            values = list(v) if dtype == S else v
            cols[col] = pd.Series(values, dtype=dtype if dtype != S else object)
            if dtype == S:
                cols[col] = cols[col].map(lambda x: "" if x is None or (isinstance(x, float)
                                                                         and math.isnan(x)) else str(x))
        else:
            cols[col] = pd.Series([_MISSING[dtype]] * n, dtype=dtype if dtype != S else object)
    return pd.DataFrame(cols).reset_index(drop=True)


@dataclass
class RankSummary:
    rank: int
    worker: str = ""                 # worker name inside its run
    path: str = ""                   # the worker's root (folder, .db or trace file)
    source: tuple = ()               # the files actually read (paths), in reading order
    warnings: list = field(default_factory=list)   # "FILE: what was dropped and why"
    steps: pd.DataFrame = field(default_factory=lambda: make_table("steps"))
    collectives: pd.DataFrame = field(default_factory=lambda: make_table("collectives"))
    links: pd.DataFrame = field(default_factory=lambda: make_table("links"))
    device: str = ""                 # GPU | NPU
    format: str = ""                 # the format id it was read as (for the user; analyses ignore it)

    def __post_init__(self) -> None:
        self.rank = int(self.rank)
        self.source = tuple(self.source)
        for t in SCHEMAS:
            df = getattr(self, t)
            if list(df.columns) != list(SCHEMAS[t]):
                setattr(self, t, make_table(t, df))

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        def table(name: str) -> dict:
            df, out = getattr(self, name), {}
            for col, dtype in SCHEMAS[name].items():
                v = df[col]
                if dtype == F64:
                    out[col] = [None if math.isnan(x) else float(x) for x in v.to_numpy(F64)]
                elif dtype == I64:
                    out[col] = [int(x) for x in v.to_numpy(I64)]
                else:
                    out[col] = [str(x) for x in v]
            return out
        return {"rank": self.rank, "worker": self.worker, "path": self.path,
                "source": list(self.source), "warnings": list(self.warnings),
                "device": self.device, "format": self.format,
                **{t: table(t) for t in SCHEMAS}}

    @classmethod
    def from_dict(cls, d: Mapping) -> "RankSummary":
        def table(name: str) -> pd.DataFrame:
            cols = dict(d.get(name) or {})
            for col, dtype in SCHEMAS[name].items():
                if dtype == F64 and col in cols:
                    cols[col] = [np.nan if x is None else float(x) for x in cols[col]]
            return make_table(name, cols)
        return cls(rank=int(d["rank"]), worker=d.get("worker", ""), path=d.get("path", ""),
                   source=tuple(d.get("source", ())), warnings=list(d.get("warnings", ())),
                   device=d.get("device", ""), format=d.get("format", ""),
                   steps=table("steps"), collectives=table("collectives"), links=table("links"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RankSummary) and self.to_dict() == other.to_dict()

