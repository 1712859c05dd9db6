"""Side files of an Ascend text export: the CSVs and small JSONs beside trace_view.json.

Owns reading ``kernel_details.csv``, ``operator_memory.csv``, ``memory_record.csv``,
``communication.json``, ``profiler_info_*.json`` and ``profiler_metadata.json`` into
plain column dicts / dicts.  Joining them onto trace data is ascend_text's job.

CSV conventions handled here: timestamp cells end with a TAB, some files use CRLF,
missing cells are "" or "N/A".  Every cell is read as a string (pandas C engine) and
converted per column: times exactly via :mod:`model.timeconv`, numbers via
``pd.to_numeric`` (junk -> NaN).  A missing *required* column raises LoadError; a
missing optional one adds a warning naming file and column.
"""
from __future__ import annotations

import json
import os
from typing import Iterable

import numpy as np
import pandas as pd

from ..model import timeconv
from .errors import LoadError

NA_STRINGS = ("", "N/A", "NA", "nan", "NaN", "None", "null")


def read_csv(path: str, required: Iterable[str], optional: Iterable[str],
             warnings: list[str], aliases: dict[str, tuple[str, ...]] | None = None) -> pd.DataFrame:
    """Read the wanted columns of ``path`` as strings (headers stripped).

    ``aliases`` maps a canonical column to alternative header spellings (e.g. "Step Id"
    -> ("Step ID",)); the frame uses the canonical name.  Absent optional columns are
    simply missing from the frame (and warned about).
    """
    required, optional = list(required), list(optional)
    aliases = aliases or {}
    want: dict[str, str] = {}           # header as written (stripped) -> canonical
    for col in required + optional:
        for spelling in (col,) + tuple(aliases.get(col, ())):
            want[spelling] = col
    try:
        if os.path.getsize(path) == 0:
            raise LoadError(path, "the file is empty (0 bytes)")
        df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                         usecols=lambda c: c.strip() in want, engine="c")
    except LoadError:
        raise
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
    name = os.path.basename(path)
    for col in required:
        if col not in df.columns:
            raise LoadError(path, f"required column {col!r} is missing from {name}")
    for col in optional:
        if col not in df.columns:
            warnings.append(f"{name}: column {col!r} is missing")
    return df


def num(df: pd.DataFrame, col: str) -> np.ndarray:
    """Float column (NaN for missing / 'N/A' / junk / absent column)."""
    if col not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[col].str.strip(), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def ns(df: pd.DataFrame, col: str) -> np.ndarray:
    """Exact int64 ns from a µs string column; -1 for missing cells or an absent column."""
    if col not in df.columns:
        return np.full(len(df), -1, dtype=np.int64)
    return timeconv.us_str_column_to_ns(df[col].to_numpy(dtype=object))


def text(df: pd.DataFrame, col: str) -> np.ndarray:
    """String column as an object array, missing markers ("", "N/A") -> None."""
    if col not in df.columns:
        return np.full(len(df), None, dtype=object)
    s = df[col].astype(object)
    return s.where(~s.isin(NA_STRINGS) & s.notna(), None).to_numpy(dtype=object)


def device_index(values: np.ndarray) -> np.ndarray:
    """'NPU:3' -> 3; anything else -> -1."""
    s = pd.Series(values, dtype=object).astype(str).str.extract(r":\s*(\d+)\s*$")[0]
    return pd.to_numeric(s, errors="coerce").fillna(-1).to_numpy(dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# kernel_details.csv

PMU_COLUMNS = {                     # CSV header -> kernels column
    "aicore_time(us)": "aicore_time_us", "mac_time(us)": "mac_time_us",
    "aic_mac_time(us)": "aic_mac_time_us", "aic_mte2_time(us)": "aic_mte2_time_us",
    "aiv_time(us)": "aiv_time_us", "aiv_vec_time(us)": "aiv_vec_time_us",
}
_KD_TEXT = ("Type", "Accelerator Core", "Input Shapes", "Input Data Types", "Input Formats")


def read_kernel_details(path: str, warnings: list[str]) -> tuple[dict, dict]:
    """Columns of kernel_details.csv (raw strings for names) + info about its columns.

    Returns (cols, info): cols has name/type/accel_core/input_* (object arrays),
    start_ns, dur_ns, step, task_id, stream (int64) and the PMU floats;
    info = {"columns": [...header...], "has_pmu": bool, "pmu_columns": [...present...]}.
    """
    wanted_opt = ["Duration(us)", "Step Id", "Task ID", "Stream ID", *_KD_TEXT, *PMU_COLUMNS]
    df = _read_kd(path, wanted_opt, warnings)
    cols: dict = {
        "name": text(df, "Name"),
        "start_ns": ns(df, "Start Time(us)"),
        "dur_us": num(df, "Duration(us)"),
        "step": _int(num(df, "Step Id")),
        "task_id": _int(num(df, "Task ID")),
        "stream": _int(num(df, "Stream ID")),
        "type": text(df, "Type"), "accel_core": text(df, "Accelerator Core"),
        "input_shapes": text(df, "Input Shapes"), "input_dtypes": text(df, "Input Data Types"),
        "input_formats": text(df, "Input Formats"),
    }
    present = [c for c in PMU_COLUMNS if c in df.columns]
    for c, k in PMU_COLUMNS.items():
        cols[k] = num(df, c)
    has_pmu = any(np.isfinite(cols[PMU_COLUMNS[c]]).any()
                  for c in ("aiv_vec_time(us)", "mac_time(us)", "aic_mac_time(us)") if c in present)
    bad = int((cols["start_ns"] < 0).sum())
    if bad:
        warnings.append(f"{os.path.basename(path)}: {bad} row(s) without a readable 'Start Time(us)'")
    return cols, {"columns": list(df.columns), "has_pmu": bool(has_pmu), "pmu_columns": present}


def _read_kd(path: str, optional: list[str], warnings: list[str]) -> pd.DataFrame:
    # Level0 exports legitimately lack most optional columns: only warn for those every level writes.
    quiet: list[str] = []
    df = read_csv(path, ["Name", "Start Time(us)"], optional, quiet,
                  aliases={"Step Id": ("Step ID",), "Task ID": ("Task Id",), "Stream ID": ("Stream Id",)})
    for col in ("Duration(us)", "Type"):
        if col not in df.columns:
            warnings.append(f"{os.path.basename(path)}: column {col!r} is missing")
    return df


def _int(a: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(a), a, -1).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# memory CSVs

def read_operator_memory(path: str, warnings: list[str]) -> dict:
    """operator_memory.csv -> name (object), bytes, alloc_ns, release_ns, device (int64)."""
    df = read_csv(path, ["Name", "Allocation Time(us)"], ["Size(KB)", "Release Time(us)", "Device Type"],
                  warnings)
    kb = num(df, "Size(KB)")
    return {
        "name": text(df, "Name"),
        "bytes": np.where(np.isfinite(kb), np.rint(kb * 1024.0), -1).astype(np.int64),
        "alloc_ns": ns(df, "Allocation Time(us)"),
        "release_ns": ns(df, "Release Time(us)"),
        "device": device_index(text(df, "Device Type")),
        "size_kb": kb,
    }


def read_memory_record(path: str, warnings: list[str]) -> dict:
    """memory_record.csv -> ts_ns, component (object), device, *_bytes (float, NaN when empty)."""
    df = read_csv(path, ["Timestamp(us)"],
                  ["Component", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)", "Device Type"],
                  warnings)
    mb = 1024.0 * 1024.0
    return {
        "ts_ns": ns(df, "Timestamp(us)"),
        "component": text(df, "Component"),
        "device": device_index(text(df, "Device Type")),
        "allocated_bytes": num(df, "Total Allocated(MB)") * mb,
        "reserved_bytes": num(df, "Total Reserved(MB)") * mb,
        "active_bytes": num(df, "Total Active(MB)") * mb,
    }


# ---------------------------------------------------------------------------------------------
# small JSON files

def read_json(path: str):
    """Parse a small JSON file; LoadError on anything unreadable."""
    try:
        with open(path, "rb") as fh:
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
    t = pd.DataFrame({"start": trace_start, "name": pd.Series(trace_names, dtype=object),
                      "trow": np.arange(len(trace_start))})
    c = pd.DataFrame({"start": csv_start, "name": pd.Series(csv_names, dtype=object),
                      "crow": np.arange(len(csv_start))})
    c = c[c["start"] >= 0]
    named = c["name"].notna()
    for cc, keys in ((c[named], ["start", "name"]), (c[~named], ["start"])):
        if not len(cc):
            continue
        tt = t[out[t["trow"].to_numpy()] < 0] if keys == ["start"] else t
        tt = tt.assign(occ=tt.groupby(keys, sort=False).cumcount())
        cc = cc.assign(occ=cc.groupby(keys, sort=False).cumcount())
        m = tt.merge(cc, on=keys + ["occ"], how="inner")
        out[m["trow"].to_numpy()] = m["crow"].to_numpy()
    return out


def innermost_ops(op_start: np.ndarray, op_end: np.ndarray, op_parent: np.ndarray,
                  times: np.ndarray) -> np.ndarray:
    """For each time, the innermost op (row into the given arrays) containing it, or -1.

    The ops are one thread's, nested (``op_parent`` indexes the same arrays).
    """
    out = np.full(len(times), -1, dtype=np.int64)
    if not len(op_start) or not len(times):
        return out
    order = np.lexsort((op_start - op_end, op_start))      # ties: the longer (outer) op first
    pos = np.searchsorted(op_start[order], times, side="right") - 1
    par = op_parent.tolist()
    ends = op_end.tolist()
    for i, (p, t) in enumerate(zip(pos.tolist(), times.tolist())):
        if p < 0 or t < 0:
            continue
        k = int(order[p])
        while k >= 0 and ends[k] < t:
            k = par[k]
        out[i] = k
    return out
