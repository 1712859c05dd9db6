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

Each table is held as plain numpy columns (``summary.columns("steps")``: what the cluster
analyses stack over thousands of ranks) and shown as a DataFrame (``summary.steps``, built once
on first use).  The constructor takes a DataFrame or a mapping of columns per table.

Units: durations are float64 **nanoseconds** (NaN = the source does not hold this figure; float so
that a missing figure is not confused with a zero), sizes float64 **bytes**, steps and ranks int64
(-1 = unknown), names plain Python strings.  ``to_dict()`` / ``from_dict()`` give a JSON-able
dict (cache files, Dask transport) and back, exactly (floats round-trip through ``repr``).
"""
from __future__ import annotations

import math
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


def columns_of(name: str, data: "Mapping[str, Any] | pd.DataFrame | None" = None) -> dict:
    """Numpy columns of schema ``name`` from columns (absent ones filled with their missing
    value; strings: None/NaN -> "")."""
    schema = SCHEMAS[name]
    data = {} if data is None else data
    n = len(data) if isinstance(data, pd.DataFrame) else max(
        (len(v) for v in data.values()), default=0)
    cols = {}
    for col, dtype in schema.items():
        if col in data:
            v = data[col]
            if dtype == S:
                arr = np.empty(n, dtype=object)
                arr[:] = [x if type(x) is str else _text(x) for x in v]
            else:
                arr = np.asarray(v, dtype=dtype)     # None -> NaN for floats
            if len(arr) != n:
                raise ValueError(f"{name}.{col}: {len(arr)} rows, expected {n}")
            cols[col] = arr
        else:
            cols[col] = np.full(n, _MISSING[dtype], dtype=dtype if dtype != S else object)
    return cols


def make_table(name: str, data: "Mapping[str, Any] | pd.DataFrame | None" = None) -> pd.DataFrame:
    """A DataFrame of schema ``name`` from columns (see :func:`columns_of`)."""
    return pd.DataFrame(columns_of(name, data), copy=False)


def _text(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)


def stack(summaries, name: str, **per_rank) -> pd.DataFrame:
    """Table ``name`` of every summary in one frame, plus a column per keyword filled with the
    summary's attribute of that name (``rank="rank"``): column-wise numpy concatenation, fast
    for thousands of ranks."""
    tables = [s.columns(name) for s in summaries]
    lengths = [len(t["step"]) for t in tables]
    cols = {}
    for col, dtype in SCHEMAS[name].items():
        cols[col] = (np.concatenate([t[col] for t in tables]) if tables else
                     np.zeros(0, dtype=dtype if dtype != S else object))
    for col, attr in per_rank.items():
        values = [getattr(s, attr) for s in summaries]
        arr = np.empty(len(values), dtype=object) if attr == "worker" else np.zeros(len(values), I64)
        arr[:] = values
        cols[col] = np.repeat(arr, lengths)
    return pd.DataFrame(cols, copy=False)


class RankSummary:
    """One rank's summary (see the module docstring)."""

    def __init__(self, rank: int, worker: str = "", path: str = "", source=(), warnings=None,
                 steps=None, collectives=None, links=None, device: str = "",
                 format: str = "") -> None:
        self.rank = int(rank)
        self.worker = worker            # worker name inside its run
        self.path = path                # the worker's root (folder, .db or trace file)
        self.source = tuple(source)     # the files actually read, in reading order
        self.warnings = list(warnings or [])   # "FILE: what was dropped and why"
        self.device = device            # GPU | NPU
        self.format = format            # the format id it was read as (for the user)
        self._cols = {"steps": columns_of("steps", steps),
                      "collectives": columns_of("collectives", collectives),
                      "links": columns_of("links", links)}
        self._frames: dict = {}

    def columns(self, name: str) -> dict:
        """Table ``name`` as ``{column: numpy array}`` (do not modify)."""
        return self._cols[name]

    def _frame(self, name: str) -> pd.DataFrame:
        df = self._frames.get(name)
        if df is None:
            df = self._frames[name] = pd.DataFrame(dict(self._cols[name]), copy=True)
        return df

    @property
    def steps(self) -> pd.DataFrame:
        return self._frame("steps")

    @property
    def collectives(self) -> pd.DataFrame:
        return self._frame("collectives")

    @property
    def links(self) -> pd.DataFrame:
        return self._frame("links")

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_frames"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._frames = {}

    def __repr__(self) -> str:
        n = {t: len(c["step"]) for t, c in self._cols.items()}
        return f"<RankSummary rank {self.rank} {self.worker!r} {n}>"

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        """JSON-able: every column a list (floats with None for NaN)."""
        def table(name: str) -> dict:
            out = {}
            for col, dtype in SCHEMAS[name].items():
                v = self._cols[name][col]
                if dtype == F64:
                    lst = v.tolist()
                    if np.isnan(v).any():
                        lst = [None if x != x else x for x in lst]
                    out[col] = lst
                else:
                    out[col] = v.tolist()
            return out
        return {"rank": self.rank, "worker": self.worker, "path": self.path,
                "source": list(self.source), "warnings": list(self.warnings),
                "device": self.device, "format": self.format,
                **{t: table(t) for t in SCHEMAS}}

    @classmethod
    def from_dict(cls, d: Mapping) -> "RankSummary":
        return cls(rank=int(d["rank"]), worker=d.get("worker", ""), path=d.get("path", ""),
                   source=tuple(d.get("source", ())), warnings=list(d.get("warnings", ())),
                   device=d.get("device", ""), format=d.get("format", ""),
                   steps=d.get("steps"), collectives=d.get("collectives"), links=d.get("links"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RankSummary) and self.to_dict() == other.to_dict()


def records(columns: "Mapping[str, Any]") -> list:
    """``{key: array or list}`` -> a list of row dicts with plain Python values, NaN -> None
    (fast for 100,000s of rows: one ``tolist`` per column, no per-cell pandas access)."""
    keys, lists = [], []
    for key, v in columns.items():
        a = np.asarray(v)
        lst = a.tolist()
        if a.dtype.kind == "f" and np.isnan(a).any():
            lst = [None if x != x else x for x in lst]
        keys.append(key)
        lists.append(lst)
    return [dict(zip(keys, row)) for row in zip(*lists)]
