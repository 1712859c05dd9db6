"""Workbook sheets of registered analyses (``outputs`` holds "sheet"): one sheet per analysis,
its columns as headers in the registry's order, from the table the Comparison memoises.

The layout follows our sheets' conventions: ``b_*`` columns under the baseline banner, ``t_*``
columns under the target's, ``diff*`` columns red / green by sign, ratios red above 1.
"""
from __future__ import annotations

import math
import re

from .xlsx_style import Layout, SheetData

_KIND = {"text": "text", "ms": "ms3", "us": "float", "count": "id", "ratio": "rratio", "bytes": "id",
         "mb": "float", "kb": "float"}


def sheet_name(label: str, taken: set) -> str:
    """An Excel sheet name (≤ 31 characters, none of []:*?/\\) unique among ``taken``."""
    base = re.sub(r"[\[\]:*?/\\]", "_", label).strip("'") or "Analysis"
    name, n = base[:31], 2
    while name.lower() in {t.lower() for t in taken}:
        suffix = f" ({n})"
        name, n = base[:31 - len(suffix)] + suffix, n + 1
    return name


def _span(cols, prefix: str, default: int) -> tuple:
    idx = [i for i, c in enumerate(cols) if c.key.startswith(prefix)]
    return (min(idx), max(idx)) if idx else (default, default)


def layout_of(analysis, name: str) -> Layout:
    cols = analysis.columns
    kinds = tuple("diff" if c.key.startswith("diff") and c.type != "ratio" else _KIND.get(c.type, "text")
                  for c in cols)
    if kinds and kinds[0] == "text":
        kinds = ("name",) + kinds[1:]
    widths = tuple(max(10, min(50, len(c.label) + 4)) if i else 40 for i, c in enumerate(cols))
    base = _span(cols, "b_", 0)
    target = _span(cols, "t_", min(1, len(cols) - 1))
    return Layout(name, tuple(c.label for c in cols), kinds, widths, base, target)


def _cell(v):
    if v is None:
        return None
    if hasattr(v, "item"):                   # numpy scalar
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def analysis_sheet(analysis, df, taken: set) -> SheetData:
    name = sheet_name(analysis.label, taken)
    keys = [c.key for c in analysis.columns]
    rows = [[_cell(r.get(k)) for k in keys] for r in df.to_dict(orient="records")]
    return SheetData(layout_of(analysis, name), rows)
