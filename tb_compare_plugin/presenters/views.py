"""Table pages of the registered analyses for the UI (``compare/<name>``): the analysis's
table from the Comparison, paged by :func:`table_page.page` under the analysis's columns."""
from __future__ import annotations

from ..analyses import Unavailable, get, missing_inputs
from .table_page import page
from .view_notes import cross_framework_note, empty_side_notes

ViewUnavailable = Unavailable            # the older name, kept for callers

EXTRA_COLS = ("status", "name", "path", "depth", "b_call_stack", "t_call_stack")


def table_of(cmp, name: str):
    """(analysis, its whole table) for this pair; KeyError for an unknown name,
    :class:`Unavailable` when the pair lacks what it needs."""
    a = get(name)
    missing = missing_inputs(a, cmp.base, cmp.target)
    if missing:
        raise Unavailable(f"{a.label} not available for this pair: neither profile holds "
                          f"{' or '.join(missing)}")
    return a, cmp.analysis(name)


def view_page(cmp, view: str, **params) -> dict:
    """One page of ``view``.  Default order: by the diff column, descending (regressions
    first), except tree analyses, which keep the tree order."""
    a, df = table_of(cmp, view)
    sort = params.pop("sort", None) or (None if a.tree else a.diff_col)
    out = page(df, list(a.columns), sort=sort, diff_col=a.diff_col or "diff", search_cols=a.search,
                extra_cols=EXTRA_COLS, **params)
    # what the totals are: per step (each side divided by its steps) or raw, as on the overview
    out["figures"] = cmp.step_scale().to_dict() if a.per_step else None
    if df.attrs.get("note"):                # what the table is made of, when it is not the usual
        out["note"] = df.attrs["note"]
    notes = empty_side_notes(cmp, view, df) + cross_framework_note(cmp, view, df)   # why rows stand alone
    if notes:
        out["notes"] = notes
    return out


def operator_table(cmp) -> dict:
    """The Operator view's rows (statistics by name) whole, in the route's default order, as
    ``tb-compare --json`` writes them under ``"operators"``: {"columns": [keys], "rows": [...]}
    (``null`` when the pair has no operators to compare)."""
    try:
        p = view_page(cmp, "operator", offset=0, limit=10 ** 9)
    except Unavailable:
        return None
    return {"columns": [c["key"] for c in p["columns"]], "rows": p["rows"], "total": p["total"]}
