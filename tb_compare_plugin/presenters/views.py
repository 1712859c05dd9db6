"""Table views of a Comparison for the UI: which engine DataFrame each view pages, with
which columns, search fields and diff column.  The routes call :func:`view_page`."""
from __future__ import annotations

from .table_page import ColumnSpec as C, page


def _kernel(cmp):
    return cmp.kernels(), [
        C("kernel", "Kernel"), C("input_shape", "Input Shape"),
        C("b_total_us", "Base Total (us)", "us"), C("b_calls", "Base Calls", "count"),
        C("t_total_us", "Target Total (us)", "us"), C("t_calls", "Target Calls", "count"),
        C("b_avg_us", "Base Avg (us)", "us"), C("t_avg_us", "Target Avg (us)", "us"),
        C("diff_us", "Diff (us)", "us"), C("diff_total_ratio", "Ratio", "ratio"),
    ], "diff_us", ("kernel", "input_shape")


def _api(cmp):
    return cmp.api(), [
        C("name", "API"),
        C("b_total_ms", "Base Total (ms)", "ms"), C("b_self_ms", "Base Self (ms)", "ms"),
        C("b_calls", "Base Calls", "count"),
        C("t_total_ms", "Target Total (ms)", "ms"), C("t_self_ms", "Target Self (ms)", "ms"),
        C("t_calls", "Target Calls", "count"),
        C("diff_ms", "Diff (ms)", "ms"), C("diff_total_ratio", "Ratio", "ratio"),
    ], "diff_ms", ("name",)


VIEWS = {"kernel": _kernel, "api": _api}


def view_page(cmp, view: str, **params) -> dict:
    """One page of ``view`` (KeyError for an unknown view)."""
    df, cols, diff_col, search = VIEWS[view](cmp)
    sort = params.pop("sort", None) or diff_col
    return page(df, cols, sort=sort, diff_col=diff_col, search_cols=search,
                extra_cols=("status", "name", "path", "depth", "b_call_stack", "t_call_stack"), **params)
