"""Table views of a Comparison for the UI: which engine DataFrame each view pages, with
which columns, search fields and diff column.  The routes call :func:`view_page`."""
from __future__ import annotations

from .table_page import ColumnSpec as C, page


class ViewUnavailable(Exception):
    """The view does not apply to this pair (said to the user as a 404 with this text)."""


def _kernel(cmp):
    df = cmp.kernels()
    if df.attrs.get("reason"):
        raise ViewUnavailable(f"kernel comparison not available: {df.attrs['reason']}")
    return df, [
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


def _operator(cmp):
    return cmp.operators().stats, [
        C("name", "Operator"),
        C("b_compute_ms", "Base Compute (ms)", "ms"), C("b_comm_ms", "Base Comm (ms)", "ms"),
        C("b_count", "Base Count", "count"),
        C("t_compute_ms", "Target Compute (ms)", "ms"), C("t_comm_ms", "Target Comm (ms)", "ms"),
        C("t_count", "Target Count", "count"),
        C("diff_compute_ms", "Compute Diff (ms)", "ms"), C("diff_comm_ms", "Comm Diff (ms)", "ms"),
        C("diff_ms", "Device Diff (ms)", "ms"), C("diff_ratio", "Ratio", "ratio"),
    ], "diff_compute_ms", ("name",)


def _operator_pairs(cmp):
    return cmp.operators().pairs, [
        C("b_name", "Base Operator"), C("b_input_shape", "Base Input Shape"),
        C("b_compute_us", "Base Compute (us)", "us"), C("b_comm_us", "Base Comm (us)", "us"),
        C("t_name", "Target Operator"), C("t_input_shape", "Target Input Shape"),
        C("t_compute_us", "Target Compute (us)", "us"), C("t_comm_us", "Target Comm (us)", "us"),
        C("diff_compute_us", "Compute Diff (us)", "us"), C("diff_us", "Device Diff (us)", "us"),
        C("diff_ratio", "Ratio", "ratio"),
    ], "diff_compute_us", ("b_name", "t_name")


def _module(cmp):
    return cmp.modules().stats, [
        C("path", "Module / Operator"), C("kind", "Kind"),
        C("b_total_compute_ms", "Base Total (ms)", "ms"), C("b_self_compute_ms", "Base Self (ms)", "ms"),
        C("b_number", "Base Calls", "count"),
        C("t_total_compute_ms", "Target Total (ms)", "ms"), C("t_self_compute_ms", "Target Self (ms)", "ms"),
        C("t_number", "Target Calls", "count"),
        C("diff_total_compute_ms", "Total Diff (ms)", "ms"), C("diff_self_compute_ms", "Self Diff (ms)", "ms"),
        C("diff_total_comm_ms", "Comm Diff (ms)", "ms"), C("diff_ratio", "Ratio", "ratio"),
    ], "diff_self_compute_ms", ("path", "name")


def _memory(cmp):
    return cmp.memory().stats, [
        C("name", "Operator"),
        C("b_memory_mb", "Base Allocated (MB)", "mb"), C("b_count", "Base Count", "count"),
        C("t_memory_mb", "Target Allocated (MB)", "mb"), C("t_count", "Target Count", "count"),
        C("diff_mb", "Diff (MB)", "mb"), C("diff_ratio", "Ratio", "ratio"),
    ], "diff_mb", ("name",)


def _memory_peak(cmp):
    return cmp.memory_peak(), [
        C("name", "Held at peak by"), C("kind", "Kind"),
        C("b_bytes", "Base at Peak", "bytes"), C("t_bytes", "Target at Peak", "bytes"),
        C("diff_bytes", "Diff", "bytes"),
    ], "diff_bytes", ("name",)


VIEWS = {"kernel": _kernel, "api": _api, "operator": _operator, "operator_pairs": _operator_pairs,
         "module": _module, "memory": _memory, "memory_peak": _memory_peak}


# views whose natural order is the engine's (a tree): unsorted unless the user sorts
TREE_VIEWS = {"module"}


def view_page(cmp, view: str, **params) -> dict:
    """One page of ``view`` (KeyError for an unknown view).  Default order: by the diff column,
    descending (regressions first), except tree views, which keep the tree order."""
    df, cols, diff_col, search = VIEWS[view](cmp)
    sort = params.pop("sort", None) or (None if view in TREE_VIEWS else diff_col)
    return page(df, cols, sort=sort, diff_col=diff_col, search_cols=search,
                extra_cols=("status", "name", "path", "depth", "b_call_stack", "t_call_stack"), **params)
