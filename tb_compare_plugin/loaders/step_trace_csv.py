"""Reader of the Ascend text export's ``step_trace_time.csv`` (one row per step: Computing,
Communication(Not Overlapped), Overlapped, Communication, Free, Stage, Bubble,
Communication(Not Overlapped and Exclude Receive), Preparing; microseconds).

:func:`read_step_trace` returns plain columns in nanoseconds; cells that are empty or not numbers
become NaN and are reported in the returned warnings, naming the file, column and count.  Rows
whose Step is not an integer are dropped (also reported).  Used by the cluster summaries and by
anything else that wants the profiler's own per-step breakdown.
"""
from __future__ import annotations

import csv
import math

from .regular import open_regular

# header in the file -> our column name
COLUMNS = {
    "Computing": "computing",
    "Communication(Not Overlapped)": "communication_not_overlapped",
    "Overlapped": "overlapped",
    "Communication": "communication",
    "Free": "free",
    "Stage": "stage",
    "Bubble": "bubble",
    "Communication(Not Overlapped and Exclude Receive)": "communication_not_overlapped_and_exclude_receive",
    "Preparing": "preparing",
}


def _us_to_ns(text: str) -> float:
    x = float(text)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(text)
    return x * 1000.0


def read_step_trace(path: str, max_bytes: int = 64 << 20) -> tuple[dict, list]:
    """``({"step": [int], <column>: [float ns or NaN], ...}, warnings)`` of ``path``.

    A column absent from the header is all NaN (one warning).  The Step cell may be empty when
    the run was not split into steps: such a file's single row gets step -1."""
    warnings: list = []
    with open_regular(path, "r", encoding="utf-8-sig", errors="replace", newline="") as f:
        text = f.read(max_bytes)
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if not header:
        return {"step": [], **{c: [] for c in COLUMNS.values()}}, [f"{path}: empty file"]
    header = [h.strip() for h in header]
    index = {h: i for i, h in enumerate(header)}
    if "Step" not in index:
        warnings.append(f"{path}: no Step column; every row taken as step -1")
    missing = [h for h in COLUMNS if h not in index]
    if missing:
        warnings.append(f"{path}: no column {', '.join(missing)} (left empty)")
    out: dict = {"step": [], **{c: [] for c in COLUMNS.values()}}
    bad: dict = {}
    dropped = 0
    for row in reader:
        if not row or not any(cell.strip() for cell in row):
            continue
        step_cell = row[index["Step"]].strip() if "Step" in index and index["Step"] < len(row) else ""
        if step_cell == "":
            step = -1
        else:
            try:
                step = int(float(step_cell))
            except (ValueError, OverflowError):     # not a number, or inf
                dropped += 1
                continue
            if not -(1 << 62) < step < (1 << 62):      # no step id fits int64's column as this
                dropped += 1
                continue
        out["step"].append(step)
        for head, col in COLUMNS.items():
            i = index.get(head)
            cell = row[i].strip() if i is not None and i < len(row) else ""
            try:
                out[col].append(_us_to_ns(cell))
            except ValueError:
                out[col].append(math.nan)
                if i is not None:
                    bad[head] = bad.get(head, 0) + 1
    if dropped:
        warnings.append(f"{path}: {dropped} row(s) dropped: Step is not a number")
    for head, n in bad.items():
        warnings.append(f"{path}: {n} {head} cell(s) empty or not a number (left empty)")
    return out, warnings
