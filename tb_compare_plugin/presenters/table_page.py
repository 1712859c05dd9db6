"""Server-side sort, search, filter and paging of a comparison table.

Engines return whole tables as DataFrames; the routes send the browser one page of
them, never the whole (tables reach 100k rows).  A :class:`ColumnSpec` list says how
each column is labelled and formatted by the UI.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..analyses.registry import Column

MAX_LIMIT = 1000


ColumnSpec = Column          # how a column is labelled and formatted (analyses.registry.Column)


def page(df: pd.DataFrame, columns: list[ColumnSpec], *, sort: str | None = None, order: str = "desc",
         q: str | None = None, search_cols: tuple = ("name",), min_diff: float | None = None,
         diff_col: str = "diff", offset: int = 0, limit: int = 100, summary: dict | None = None,
         extra_cols: tuple = (), status: str | None = None) -> dict:
    """One page of ``df`` as the route's JSON object.

    ``sort`` must be one of the column keys (else ValueError); ``q`` is a case-insensitive
    substring over ``search_cols``; ``min_diff`` keeps rows with |diff| >= it.  The columns of an
    ``optional`` group are left out when ``df`` holds no value in any of them.
    """
    held = {c.optional for c in columns if c.optional and c.key in df.columns and df[c.key].notna().any()}
    columns = [c for c in columns if not c.optional or c.optional in held]
    keys = {c.key for c in columns}
    total_all = len(df)
    view = df
    if q:
        ql = q.lower()
        mask = np.zeros(len(view), dtype=bool)
        for c in search_cols:
            if c in view.columns:
                mask |= view[c].astype(str).str.lower().str.contains(ql, regex=False).to_numpy()
        view = view[mask]
    if status:
        if status not in ("both", "baseline_only", "target_only"):
            raise ValueError("status must be both, baseline_only or target_only")
        if "status" in view.columns:
            view = view[view["status"] == status]
    if min_diff is not None and diff_col in view.columns:
        view = view[view[diff_col].abs().fillna(0) >= min_diff]
    if sort:
        if sort not in keys:
            raise ValueError(f"cannot sort by {sort!r}; columns are {', '.join(sorted(keys))}")
        asc = order == "asc"
        col = view[sort]
        if col.dtype.kind in "fiu":
            keyed = col.abs() if sort == diff_col and False else col
            view = view.assign(_k=keyed).sort_values("_k", ascending=asc, na_position="last",
                                                     kind="stable").drop(columns="_k")
        else:
            view = view.sort_values(sort, ascending=asc, na_position="last", kind="stable",
                                    key=lambda s: s.astype(str).str.lower())
    limit = max(1, min(int(limit), MAX_LIMIT))
    offset = max(0, int(offset))
    chunk = view.iloc[offset: offset + limit]
    wanted = [c.key for c in columns] + [c for c in extra_cols if c in chunk.columns]
    present = list(dict.fromkeys(c for c in wanted if c in chunk.columns))
    rows = chunk[present].to_dict(orient="records")
    return {
        "columns": [{"key": c.key, "label": c.label, "type": c.type} for c in columns],
        "rows": rows,
        "total": int(len(view)),
        "total_unfiltered": int(total_all),
        "offset": offset,
        "limit": limit,
        "sort": sort,
        "order": order if sort else None,
        "diff_col": diff_col,
        "summary": summary or {},
    }
