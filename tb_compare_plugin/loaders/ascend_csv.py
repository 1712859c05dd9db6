"""Side files of an Ascend text export: the CSVs and small JSONs beside trace_view.json.

Owns reading ``kernel_details.csv``, ``operator_memory.csv``, ``memory_record.csv``,
``communication.json``, ``profiler_info_*.json`` and ``profiler_metadata.json`` into
plain column dicts / dicts, and builds the tables that come from them: kernels
(trace tasks joined with kernel_details.csv by exact start time), mem_allocs,
mem_records.

CSV conventions handled here: timestamp cells end with a TAB, some files use CRLF,
missing cells are "" or "N/A".  Only the needed columns are read, every cell as a string (pandas
C engine), and converted per column: times exactly (:func:`ascend_columns.ts_ns`, timeconv's
rules), numbers via ``pd.to_numeric`` once per distinct cell (junk -> NaN).  A missing
*required* column or undecodable bytes raise LoadError; a missing optional column or an empty
file adds a warning (file and column named).  The memory CSVs go through :mod:`.csv_simple` and
kernel_details.csv through :mod:`.csv_quoted` first (compiled readers giving the same columns,
used when this process has the Ascend scanner loaded); any file they do not read is read here.
"""
from __future__ import annotations

import json
import os
from typing import Iterable

import numpy as np
import pandas as pd

from ..model import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_OTHER, ProfileMeta, SymbolTable, make_table
from ..model.keys import value_at_key
from .ascend_columns import (Texts, as_objects, innermost_ops, intern, ints, objects,  # noqa: F401
                             per_distinct, plain_text, plain_texts, ts_ns)  # (ints, plain_texts, ts_ns: re-exported)
from . import csv_quoted, csv_simple
from .errors import LoadError
from .regular import open_regular

NA_STRINGS = ("", "N/A")
COMPUTE_TASKS = frozenset({"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "FFTS_PLUS",
                           "KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV", "KERNEL_AICPU"})
MEMCPY_TASKS = frozenset({"SDMA_SQE", "PCIE_DMA_SQE"})


def read_csv(path: str, required: Iterable[str], optional: Iterable[str],
             warnings: list[str], aliases: dict[str, tuple[str, ...]] | None = None,
             warn_missing: bool = True, floats: Iterable[str] = ()) -> pd.DataFrame | None:
    """Read the wanted columns of ``path`` as strings (headers stripped); None for an empty file.

    ``floats``: wanted columns parsed as float64 by the C parser itself ("" and "N/A" -> NaN; its
    default precision gives Python's ``float()`` of each cell, i.e. :func:`num`'s values: checked in
    tests/test_msprof_timeline_stream.py); if any cell of them is not a
    number the file is read again all as strings (so :func:`num` gives the same NaNs as always).

    ``aliases`` maps a canonical column to alternative header spellings (e.g. "Step Id"
    -> ("Step ID",)); the frame uses the canonical name.  Absent optional columns are
    simply missing from the frame (and warned about unless ``warn_missing`` is False).
    """
    required, optional = list(required), list(optional)
    want = spellings(required + optional, aliases or {})
    name = os.path.basename(path)
    try:
        with open_regular(path, "rb") as fh:
            empty = not fh.read(4096).strip()
            cut = False
            if not empty:
                fh.seek(-1, os.SEEK_END)
                cut = fh.read(1) not in (b"\n", b"\r")
        if cut:     # every export ends its last row with a line break: a copy cut short does not
            warnings.append(f"{name}: the file does not end with a line break (it may be truncated); "
                            "its last row may be incomplete")
        if empty and not os.path.getsize(path) > 4096:
            warnings.append(f"{name}: the file is empty; ignored")
            return None
        # index_col=False: a first row with extra cells must not turn leading columns into an index
        # (which shifts every column by that many places)
        df = None
        fl = {w for w, canon in want.items() if canon in set(floats)}
        if fl:
            try:
                head = pd.read_csv(path, nrows=0, encoding="utf-8-sig", engine="c", index_col=False).columns
                types = {c: (np.float64 if c.strip() in fl else str) for c in head if c.strip() in want}
                nas = {c: list(NA_STRINGS) for c, t in types.items() if t is np.float64}
                df = pd.read_csv(path, dtype=types, keep_default_na=False, na_values=nas,
                                 encoding="utf-8-sig", usecols=lambda c: c.strip() in want, engine="c",
                                 index_col=False)
            except ValueError:                # a cell that is not a number: the all-strings read
                df = None
        if df is None:
            df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                             usecols=lambda c: c.strip() in want, engine="c", index_col=False)
    except UnicodeDecodeError as exc:
        raise LoadError(path, f"not valid UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except pd.errors.EmptyDataError:
        raise LoadError(path, "the file has no header row") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise LoadError(path, f"not a readable CSV file ({str(exc).splitlines()[0]})") from None
    except OSError as exc:
        raise LoadError(path, f"cannot read the file ({exc.strerror or exc})") from None
    renamed: dict[str, str] = {}
    for c in df.columns:
        canon = want[c.strip()]
        if canon not in renamed.values():
            renamed[c] = canon
    df = df[list(renamed)].rename(columns=renamed)
    for col in required:
        if col not in df.columns:
            raise LoadError(path, f"required column {col!r} is missing from {name}")
    for col in optional:
        if col not in df.columns and warn_missing:
            warnings.append(f"{name}: column {col!r} is missing")
    return df


def spellings(columns: list, aliases: dict) -> dict[str, str]:
    """Header as written (stripped) -> canonical column, for ``columns`` and their ``aliases``."""
    want: dict[str, str] = {}
    for col in columns:
        for spelling in (col,) + tuple(aliases.get(col, ())):
            want[spelling] = col
    return want


class _Compiled:
    """:func:`num` / :func:`ns` / :func:`text` / :func:`texts` / :func:`_given` of the columns
    ``csv_quoted.read_columns`` read (the values they give of pandas' frame of the same file)."""

    def __init__(self, cols: dict, columns: list) -> None:
        v = next(iter(cols.values()))                   # (never empty: the required columns are in)
        self.cols, self.columns, self.n = cols, columns, len(v) if isinstance(v, np.ndarray) else len(v[0])

    def num(self, col):
        return self.cols[col] if col in self.cols else np.full(self.n, np.nan)

    def given(self, col):
        return ~np.isnan(self.cols[col])

    def ns(self, col):
        if col not in self.cols:
            return np.full(self.n, -1, dtype=np.int64)
        if isinstance(self.cols[col], np.ndarray):      # read as ns already (csv_simple's "ts" rule)
            return self.cols[col]
        codes, values = self.cols[col]
        return ts_ns(values)[codes]

    def text(self, col):
        if col not in self.cols:
            return np.full(self.n, None, dtype=object)
        codes, values = self.cols[col]
        return objects([None if v in NA_STRINGS else v for v in values])[codes]

    def texts(self, col):
        if col not in self.cols:
            return Texts(np.full(self.n, -1, np.int32), [])
        codes, values = self.cols[col]
        keep = [i for i, v in enumerate(values) if v not in NA_STRINGS]
        lut = np.full(len(values), -1, np.int32)
        lut[keep] = np.arange(len(keep), dtype=np.int32)
        return Texts(lut[codes], [values[i] for i in keep])


class _Frame:
    """The same for pandas' frame of the file (:func:`read_csv`)."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df, self.columns = df, list(df.columns)

    def num(self, col):
        return num(self.df, col)

    def given(self, col):
        return _given(self.df[col])

    def ns(self, col):
        return ns(self.df, col)

    def text(self, col):
        return text(self.df, col)

    def texts(self, col):
        return texts(self.df, col)


def num(df: pd.DataFrame, col: str) -> np.ndarray:
    """Float column (NaN for missing / 'N/A' / junk / absent column)."""
    if col not in df.columns:
        return np.full(len(df), np.nan)
    if df[col].dtype == np.float64:                              # read as floats (read_csv floats=)
        return df[col].to_numpy(np.float64)
    codes, uniq = pd.factorize(df[col].to_numpy(dtype=object))  # parse each distinct cell once
    cells = objects([v.strip() if type(v) is str else v for v in uniq])
    vals = np.append(pd.to_numeric(cells, errors="coerce").astype(np.float64), np.nan)
    return vals[codes]                                           # code -1 (NaN cell) -> NaN


def ns(df: pd.DataFrame, col: str) -> np.ndarray:
    """Exact int64 ns from a µs string column; -1 for missing cells or an absent column.
    (The cells go in unstripped: ts_ns reads a trailing TAB, and its per-value rules strip.)"""
    if col not in df.columns:
        return np.full(len(df), -1, dtype=np.int64)
    return ts_ns(df[col].to_numpy(dtype=object).tolist())


def text(df: pd.DataFrame, col: str) -> np.ndarray:
    """String column as an object array, missing markers ("", "N/A") -> None."""
    if col not in df.columns:
        return np.full(len(df), None, dtype=object)
    codes, uniq = pd.factorize(df[col].to_numpy(dtype=object))  # NaN (a ragged row's cell) -> -1
    return objects([None if v in NA_STRINGS else v for v in uniq] + [None])[codes]


def texts(df: pd.DataFrame, col: str) -> Texts:
    """:func:`text` as :class:`Texts` (codes into the distinct strings): interned and classified
    once per distinct string, moved around as int32 codes."""
    if col not in df.columns:
        return Texts(np.full(len(df), -1, np.int32), [])
    codes, uniq = pd.factorize(df[col].to_numpy(dtype=object))  # NaN (a ragged row's cell) -> -1
    keep = [i for i, v in enumerate(uniq) if v not in NA_STRINGS]
    lut = np.full(len(uniq) + 1, -1, np.int32)                    # (the last entry: code -1)
    lut[keep] = np.arange(len(keep), dtype=np.int32)
    return Texts(lut[codes], [uniq[i] for i in keep])


def device_index(values: np.ndarray) -> np.ndarray:
    """'NPU:3' -> 3; anything else -> -1 (worked out once per distinct value)."""
    if isinstance(values, Texts):                                  # its distinct values, then its codes
        return np.append(device_index(objects(values.values)), -1)[values.codes]
    codes, uniq = pd.factorize(objects(values))                    # None/NaN -> -1: no index
    s = pd.Series(uniq, dtype=object).astype(str).str.extract(r":\s*(\d+)\s*$")[0]
    lut = pd.to_numeric(s, errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    return np.append(lut, -1)[codes]


# ---------------------------------------------------------------------------------------------
# kernel_details.csv

PMU_COLUMNS = {                     # CSV header -> kernels column
    "aicore_time(us)": "aicore_time_us", "mac_time(us)": "mac_time_us",
    "aic_mac_time(us)": "aic_mac_time_us", "aic_mte2_time(us)": "aic_mte2_time_us",
    "aiv_time(us)": "aiv_time_us", "aiv_vec_time(us)": "aiv_vec_time_us",
    "aic_mac_ratio": "aic_mac_ratio", "aiv_vec_ratio": "aiv_vec_ratio",
}
_KD_TEXT = ("Type", "Accelerator Core", "Input Shapes", "Input Data Types", "Input Formats")


def read_kernel_details(path: str, warnings: list[str]) -> tuple[dict, dict] | None:
    """Columns of kernel_details.csv + facts about its header; None for an empty file.

    Returns (cols, info): cols has name (object array, None = missing), type/accel_core/input_*
    (:class:`Texts`, code -1 = missing),
    start_ns, step, task_id, stream (int64), dur_us and the PMU floats (NaN = missing or absent
    column); info = {"columns": [...], "has_pmu": bool, "pmu_columns": [...present...]}.
    """
    # Level0 exports legitimately lack the PMU/shape columns: warn only for ones every level writes.
    required, optional = ["Name", "Start Time(us)"], ["Duration(us)", "Step Id", "Task ID", "Stream ID",
                                                      *_KD_TEXT, *PMU_COLUMNS]
    aliases = {"Step Id": ("Step ID",), "Task ID": ("Task Id",), "Stream ID": ("Stream Id",)}
    floats = ["Duration(us)", "Step Id", "Task ID", "Stream ID", *PMU_COLUMNS]
    want = spellings(required + optional, aliases)
    got = csv_quoted.read_columns(path, want, {w for w, c in want.items() if c in floats},
                                  {w for w, c in want.items() if c == "Start Time(us)"})
    if got is not None and all(c in got[0] for c in required):
        f = _Compiled(*got)          # (the compiled reader, when this process has it: the same columns)
    else:
        df = read_csv(path, required, optional, warnings, aliases=aliases, warn_missing=False, floats=floats)
        if df is None:                  # read_csv said so in ``warnings``
            return None
        f = _Frame(df)
    for col in ("Duration(us)", "Type"):
        if col not in f.columns:
            warnings.append(f"{os.path.basename(path)}: column {col!r} is missing")
    cols: dict = {
        "name": f.text("Name"),
        "start_ns": f.ns("Start Time(us)"),
        "dur_us": f.num("Duration(us)"),
        "step": _int(f.num("Step Id")),
        "task_id": _int(f.num("Task ID")),
        "stream": _int(f.num("Stream ID")),
        "type": f.texts("Type"), "accel_core": f.texts("Accelerator Core"),
        "input_shapes": f.texts("Input Shapes"), "input_dtypes": f.texts("Input Data Types"),
        "input_formats": f.texts("Input Formats"),
    }
    present = [c for c in PMU_COLUMNS if c in f.columns]
    for c, k in PMU_COLUMNS.items():
        cols[k] = f.num(c)
        if c in present:            # a cell that is neither a number nor a "missing" marker
            _count_bad(warnings, path, f.given(c) & ~np.isfinite(cols[k]), repr(c), "read as unknown")
    has_pmu = any(np.isfinite(cols[PMU_COLUMNS[c]]).any()
                  for c in ("aiv_vec_time(us)", "mac_time(us)", "aic_mac_time(us)") if c in present)
    bad = int((cols["start_ns"] < 0).sum())
    if bad:
        warnings.append(f"{os.path.basename(path)}: {bad} row(s) without a readable 'Start Time(us)'")
    return cols, {"columns": list(f.columns), "has_pmu": bool(has_pmu), "pmu_columns": present}


def _given(col: pd.Series) -> np.ndarray:
    """Which cells hold something (not NaN, and not "" / "N/A" once stripped); each distinct cell
    is looked at once.  (A column read as floats is NaN exactly where a cell was "" or "N/A".)"""
    if col.dtype == np.float64:
        return ~np.isnan(col.to_numpy(np.float64))
    codes, uniq = pd.factorize(col.to_numpy(dtype=object))       # NaN -> -1: not given
    given = np.array([not (type(v) is str and v.strip() in NA_STRINGS) for v in uniq] + [False], dtype=bool)
    return given[codes]


def _count_bad(warnings: list[str], path: str, bad: np.ndarray, col: str, what: str) -> None:
    """One warning for the rows of ``path`` whose ``col`` cell could not be read (``bad``)."""
    n = int(bad.sum())
    if n:
        warnings.append(f"{os.path.basename(path)}: {n} row(s) without a readable {col}: {what}")


def _int(a: np.ndarray) -> np.ndarray:
    """Float column -> int64, -1 for NaN/inf and for values int64 cannot hold."""
    ok = np.isfinite(a) & (np.abs(a) < 2.0 ** 63)
    return np.where(ok, a, -1).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# memory CSVs

def read_operator_memory(path: str, warnings: list[str]) -> dict | None:
    """operator_memory.csv -> name (object), bytes, alloc_ns, release_ns, device (int64)."""
    got = csv_simple.read(path, {"Name": "text", "Allocation Time(us)": "ts", "Size(KB)": "float",
                                 "Release Time(us)": "ts", "Device Type": "text"})
    if got is not None:         # a plain file (no quotes, every column there): the same values
        name, kb, alloc, release, dev = (got["Name"], got["Size(KB)"], got["Allocation Time(us)"],
                                         got["Release Time(us)"], got["Device Type"])
        has_kb = True
    else:
        df = read_csv(path, ["Name", "Allocation Time(us)"], ["Size(KB)", "Release Time(us)", "Device Type"],
                      warnings, floats=["Size(KB)"])
        if df is None:
            return None
        name, kb, alloc = text(df, "Name"), num(df, "Size(KB)"), ns(df, "Allocation Time(us)")
        release, dev, has_kb = ns(df, "Release Time(us)"), text(df, "Device Type"), "Size(KB)" in df.columns
    _count_bad(warnings, path, alloc < 0, "'Allocation Time(us)'", "kept without an allocation time")
    _count_bad(warnings, path, ~np.isfinite(kb) if has_kb else np.zeros(0, bool), "'Size(KB)'",
               "kept with an unknown size")
    return {
        "name": name,
        "bytes": _int(np.rint(kb * 1024.0)),
        "alloc_ns": alloc,
        "release_ns": release,
        "device": device_index(dev),
        "size_kb": kb,
    }


def read_memory_record(path: str, warnings: list[str]) -> dict | None:
    """memory_record.csv -> ts_ns, component (object), device, *_bytes (float, NaN when empty)."""
    sizes = ("Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)")
    got = csv_simple.read(path, {"Timestamp(us)": "ts", "Component": "text", "Device Type": "text",
                                 **{c: "float" for c in sizes}})
    if got is not None:         # a plain file (no quotes, every column there): the same values
        ts, comp, dev = got["Timestamp(us)"], got["Component"], got["Device Type"]
        alloc, res, act = (got[c] for c in sizes)
    else:
        df = read_csv(path, ["Timestamp(us)"], ["Component", *sizes, "Device Type"], warnings, floats=sizes)
        if df is None:
            return None
        ts, comp, dev = ns(df, "Timestamp(us)"), text(df, "Component"), text(df, "Device Type")
        alloc, res, act = (num(df, c) for c in sizes)
    mb = 1024.0 * 1024.0
    _count_bad(warnings, path, ts < 0, "'Timestamp(us)'", "kept with an unknown time")
    return {
        "ts_ns": ts,
        "component": comp,
        "device": device_index(dev),
        "allocated_bytes": alloc * mb,
        "reserved_bytes": res * mb,
        "active_bytes": act * mb,
    }


# ---------------------------------------------------------------------------------------------
# small JSON files

def read_json(path: str):
    """Parse a small JSON file; LoadError on anything unreadable."""
    try:
        with open_regular(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise LoadError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if not raw.strip():
        raise LoadError(path, "the file is empty")
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise LoadError(path, f"not valid UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise LoadError(path, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise LoadError(path, "not valid JSON here (nested too deeply to read)") from None


def bandwidth_summary(comm: object) -> dict:
    """communication.json -> {"by_key": {key: {transport: {size_mb, time_ms}}}, "last_key": key|None}.

    Keys are the file's top-level keys (in practice steps, e.g. "step50"); only the
    ``collective`` → ``Total Op Info`` → ``Communication Bandwidth Info`` block is kept.
    ``last_key`` is the last key that has such a block (what the reference uses).
    """
    by_key: dict = {}
    last = None
    if not isinstance(comm, dict):
        return {"by_key": by_key, "last_key": None}
    for key, val in comm.items():
        info = None
        if isinstance(val, dict):
            info = ((val.get("collective") or {}).get("Total Op Info") or {}).get("Communication Bandwidth Info")
        if not isinstance(info, dict):
            continue
        per: dict = {}
        for transport, t in info.items():
            if isinstance(t, dict):
                per[transport] = {"size_mb": _float(t.get("Transit Size(MB)")),
                                  "time_ms": _float(t.get("Transit Time(ms)"))}
        by_key[key] = per
        last = key
    return {"by_key": by_key, "last_key": last}


def _float(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def pg_names(metadata: object) -> dict:
    """profiler_metadata.json parallel_group_info -> {"Group {id} Communication": group_name}."""
    out: dict = {}
    info = metadata.get("parallel_group_info") if isinstance(metadata, dict) else None
    if isinstance(info, dict):
        for gid, g in info.items():
            name = g.get("group_name") if isinstance(g, dict) else None
            if name:
                out[f"Group {gid} Communication"] = str(name)
    return out


# ---------------------------------------------------------------------------------------------
# joins

def match_rows(trace_names: list, trace_start: np.ndarray, csv_names: np.ndarray,
               csv_start: np.ndarray) -> np.ndarray:
    """kernel_details row joined to each trace kernel (-1: none), one-to-one.

    Join rule (spec a.3, join 1): CSV ``Start Time(us)`` == trace ``ts`` exactly (int ns), and the
    same name when the CSV row has one.  Repeated (start, name) keys pair up in file order.
    """
    out = np.full(len(trace_start), -1, dtype=np.int64)
    if not len(trace_start) or not len(csv_start):
        return out
    nt = len(trace_start)
    if isinstance(trace_names, Texts):          # its distinct strings, once each
        tcode, tvals = trace_names.codes.astype(np.int64), plain_texts(trace_names.values)
    else:
        tcode, tvals = np.arange(nt, dtype=np.int64), plain_texts(list(trace_names))
    # one code per distinct name over both sides (-1: None), the trace's through its values
    codes, _ = pd.factorize(objects(list(tvals) + list(plain_texts(csv_names))))
    tname = np.where(tcode >= 0, codes[:len(tvals)][np.maximum(tcode, 0)], -1)
    cname = codes[len(tvals):]
    tstart, cstart = np.asarray(trace_start, np.int64), np.asarray(csv_start, np.int64)
    trows, crows = np.arange(nt), np.flatnonzero(cstart >= 0)
    named = crows[cname[crows] >= 0]
    if len(named):                              # (start, name), k-th with k-th in file order
        t_ok = trows[tname >= 0]
        _pair(out, t_ok, named, (tstart[t_ok], tname[t_ok]), (cstart[named], cname[named]))
    unnamed = crows[cname[crows] < 0]
    if len(unnamed):                            # (start) alone, among the trace rows still free
        free = trows[out < 0]
        _pair(out, free, unnamed, (tstart[free],), (cstart[unnamed],))
    return out


def _pair(out: np.ndarray, trows: np.ndarray, crows: np.ndarray, tkeys: tuple, ckeys: tuple) -> None:
    """out[trow] = crow for the k-th trace row and the k-th CSV row (each in row order) of every
    key: both sides' rows sorted by (key, side, row), so each key's trace rows come first, then
    its CSV rows."""
    side = np.r_[np.zeros(len(trows), np.int8), np.ones(len(crows), np.int8)]
    rows = np.r_[trows, crows]
    keys = [np.r_[a, b] for a, b in zip(tkeys, ckeys)]
    order = np.lexsort((rows, side, *keys[::-1]))
    same = np.ones(len(order) - 1, bool)        # same key as the row before
    for k in keys:
        ks = k[order]
        same &= ks[1:] == ks[:-1]
    starts = np.flatnonzero(np.r_[True, ~same])
    key_id = np.cumsum(np.r_[True, ~same]) - 1
    is_t = side[order] == 0
    n_t = np.add.reduceat(is_t.astype(np.int64), starts)          # trace rows of each key
    n_c = np.diff(np.r_[starts, len(order)]) - n_t                 # its CSV rows
    at = np.flatnonzero(is_t)
    kid = key_id[at]
    occ = at - starts[kid]                                         # k: k-th trace row of its key
    ok = occ < n_c[kid]
    out[rows[order[at[ok]]]] = rows[order[starts[kid[ok]] + n_t[kid[ok]] + occ[ok]]]


# ---------------------------------------------------------------------------------------------
# the tables built from side files

def _task_class(v) -> int:
    """kind_of's facts about one task type: its kind, + 8 when it says nothing (None / "Other")."""
    t = plain_text(v)
    kind = KIND_COMPUTE if t in COMPUTE_TASKS else KIND_MEMCPY if t in MEMCPY_TASKS else KIND_OTHER
    return kind + 8 * (t is None or t == "Other")


def _core_kind(v) -> int:
    a = plain_text(v)
    return KIND_COMPUTE if a in COMPUTE_TASKS else KIND_COMM if a == "HCCL" else KIND_OTHER


def kind_of(task_types, accel: np.ndarray) -> np.ndarray:
    cls = per_distinct(task_types, _task_class, np.int8)
    by_core = per_distinct(accel, _core_kind, np.int8)
    return np.where((cls >= 8) & (by_core != KIND_OTHER), by_core, cls & 7).astype(np.int8)


def kernels_table(h: dict, sym: SymbolTable, meta: ProfileMeta, kd_path: str | None) -> tuple:
    """"Ascend Hardware" task columns ``h`` joined with kernel_details.csv (when it exists).

    Rows: every trace task (file order), then the CSV rows no task matched (CSV order).
    Matched rows keep the trace's ts/dur and take the CSV's detail columns; unmatched CSV rows
    use the CSV's own start/duration.  Also returns each row's trace (pid, tid) (-1 for CSV-only
    rows), which the flow join needs.
    """
    nt = h["n"]
    sid, psid = ints(h["stream_id"]), ints(h["phys_stream_id"])
    stream = np.where(sid >= 0, sid, np.where(psid >= 0, psid, h["tid"]))
    n_tid = int(((sid < 0) & (psid < 0)).sum())    # ('Physic Stream Id' alone is the usual layout)
    if n_tid:
        meta.warnings.append(f"trace_view.json: {n_tid} task(s) without a readable 'Stream Id' or 'Physic Stream Id': "
                             "their tid is used as the stream")
    kd: dict = {}
    match = np.full(nt, -1, dtype=np.int64)
    got = read_kernel_details(kd_path, meta.warnings) if kd_path and os.path.isfile(kd_path) else None
    if got is not None:
        kd, info = got
        meta.files.append(kd_path)
        meta.has_pmu = info["has_pmu"]
        match = match_rows(h["name"], h["ts"], kd["name"], kd["start_ns"])
        joined = match >= 0
        if nt and len(kd["name"]) and not joined.any():
            meta.warnings.append("kernel_details.csv: no row matches a trace_view.json task by start time "
                                 "(the files may come from different runs); its rows are kept on their own")
        csv_dur = np.rint(kd["dur_us"][match[joined]] * 1000.0)
        off = np.abs(h["dur"][joined] - np.where(np.isfinite(csv_dur), csv_dur, h["dur"][joined]))
        if (off > 1).any():          # both carry µs with 3 decimals: 1 ns of rounding is expected
            meta.warnings.append(f"kernel_details.csv: {int((off > 1).sum())} joined row(s) whose "
                                 "Duration(us) differs from the trace's dur (the trace value is kept)")
    used = np.zeros(len(kd.get("name", ())), dtype=bool)
    used[match[match >= 0]] = True
    extra = np.flatnonzero(~used)
    ne = len(extra)
    n = nt + ne
    sel = np.concatenate([match, extra])              # CSV row behind each output row, -1 none
    has = sel >= 0

    def col(key: str, fill):
        if key not in kd:
            return np.full(n, fill, dtype=object if fill is None else type(fill))
        if isinstance(kd[key], Texts):                # (fill None: code -1)
            codes = np.full(n, -1, np.int32)
            codes[has] = kd[key].codes[sel[has]]
            return Texts(codes, kd[key].values)
        src = np.asarray(kd[key])
        res = np.full(n, fill, dtype=object if fill is None else src.dtype)
        res[has] = src[sel[has]]
        return res

    pad = np.full(ne, -1, dtype=np.int64)
    accel = col("accel_core", None)
    ttypes = h["task_type"]
    ttypes = ttypes.padded(ne) if isinstance(ttypes, Texts) else list(ttypes) + [None] * ne
    csv_dur = col("dur_us", np.nan)[nt:] * 1000.0
    no_dur = int((~(np.isfinite(csv_dur) & (csv_dur >= 0))).sum())
    if no_dur:
        meta.warnings.append(f"kernel_details.csv: {no_dur} row(s) that match no trace_view.json task have no "
                             "readable, non-negative Duration(us): loaded with duration 0")
    csv_dur = np.where(csv_dur >= 0, csv_dur, np.nan)
    task_id = np.concatenate([ints(h["task_id"]), pad])
    table = make_table(
        "kernels", n,
        name=np.concatenate([intern(sym, h["name"]), intern(sym, col("name", None)[nt:])]),
        type=intern(sym, col("type", None)), task_type=intern(sym, ttypes), accel_core=intern(sym, accel),
        kind=kind_of(ttypes, accel), stream=np.concatenate([stream, col("stream", -1)[nt:]]),
        start_ns=np.concatenate([h["ts"], col("start_ns", -1)[nt:]]),
        dur_ns=np.concatenate([h["dur"], np.where(np.isfinite(csv_dur), np.rint(csv_dur), 0).astype(np.int64)]),
        step=col("step", -1), task_id=np.where(task_id >= 0, task_id, col("task_id", -1)),
        corr=np.concatenate([ints(h["connection_id"]), pad]),
        input_shapes=intern(sym, col("input_shapes", None)), input_dtypes=intern(sym, col("input_dtypes", None)),
        input_formats=intern(sym, col("input_formats", None)), detail=has,
        **{k: col(k, np.nan) for k in PMU_COLUMNS.values()})
    trace_key = np.stack([np.concatenate([h["pid"], pad]), np.concatenate([h["tid"], pad])], axis=1)
    return table, trace_key


def _is_cann(name) -> bool:
    return isinstance(name, str) and name.startswith("cann::")


def alloc_ops(ops: pd.DataFrame, sym: SymbolTable, names: np.ndarray, alloc_ns: np.ndarray) -> np.ndarray:
    """Innermost cpu_op of the main thread containing each allocation (cann:: rows: via their
    Dequeue -> Enqueue by correlation id, as the reference does; -1 when not found).  (Reads the
    few columns it needs as arrays: no copy of the op table per category.)"""
    cat = ops["cat"].to_numpy()
    is_cpu = cat == sym.lookup("cpu_op")
    if not len(alloc_ns) or not is_cpu.any():
        return np.full(len(alloc_ns), -1, dtype=np.int64)
    name, tid = ops["name"].to_numpy(), ops["tid"].to_numpy()
    start, dur, corr = ops["start_ns"].to_numpy(), ops["dur_ns"].to_numpy(), ops["corr"].to_numpy()
    step_ids = sym.ids_matching(lambda s: s.startswith("ProfilerStep#"))
    cpu = np.flatnonzero(is_cpu)
    steps = cpu[np.isin(name[cpu], step_ids)]
    main = pd.Series(tid[steps if len(steps) else cpu]).value_counts().index[0]
    t = alloc_ns.copy()
    deq, enq = np.flatnonzero(cat == sym.lookup("dequeue")), np.flatnonzero(cat == sym.lookup("enqueue"))
    cann = per_distinct(names, _is_cann, bool)
    if cann.any() and len(deq) and len(enq):
        d = deq[np.argsort(start[deq], kind="stable")]
        k = np.searchsorted(start[d], t[cann], side="right") - 1
        ok = (k >= 0) & (t[cann] <= (start[d] + dur[d])[np.maximum(k, 0)])
        corr_d = np.where(ok, corr[d][np.maximum(k, 0)], -1)
        ec = corr[enq]
        at, found = value_at_key(ec[ec >= 0], start[enq][ec >= 0], corr_d)
        t[cann] = np.where((corr_d >= 0) & found, at, -1)
    mrows = np.flatnonzero((tid == main) & is_cpu)
    pos_of = np.full(len(ops), -1, dtype=np.int64)
    pos_of[mrows] = np.arange(len(mrows))
    par = ops["parent"].to_numpy()[mrows]
    local = innermost_ops(start[mrows], start[mrows] + dur[mrows],
                          np.where(par >= 0, pos_of[np.maximum(par, 0)], -1), t)
    return np.where(local >= 0, mrows[np.maximum(local, 0)], -1)


def memory_tables(out_dir: str, sym: SymbolTable, meta: ProfileMeta, ops: pd.DataFrame) -> dict:
    """mem_allocs from operator_memory.csv and mem_records from memory_record.csv, when present."""
    tables = {}
    p = os.path.join(out_dir, "operator_memory.csv")
    m = read_operator_memory(p, meta.warnings) if os.path.isfile(p) else None
    if m is not None:
        meta.files.append(p)
        tables["mem_allocs"] = make_table(
            "mem_allocs", len(m["bytes"]), name=intern(sym, m["name"]), bytes=m["bytes"], alloc_ns=m["alloc_ns"],
            release_ns=m["release_ns"], device=m["device"], op=alloc_ops(ops, sym, m["name"], m["alloc_ns"]))
    p = os.path.join(out_dir, "memory_record.csv")
    r = read_memory_record(p, meta.warnings) if os.path.isfile(p) else None
    if r is not None:
        meta.files.append(p)
        tables["mem_records"] = make_table(
            "mem_records", len(r["ts_ns"]), ts_ns=r["ts_ns"], component=intern(sym, r["component"]),
            device=r["device"], allocated_bytes=r["allocated_bytes"], reserved_bytes=r["reserved_bytes"],
            active_bytes=r["active_bytes"])
    return tables
