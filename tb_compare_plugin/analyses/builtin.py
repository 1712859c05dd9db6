"""The built-in table analyses: which memoised engine result each one pages, with which
columns, search fields and diff column.  Shown by ``compare/<name>`` (and listed by
``analyses``); the workbook writes the same engine results in the reference's layouts.
``per_step=True``: the table's totals and counts are divided as the comparison's per-step choice
says (``Comparison.step_scale``), which its answers state under ``figures``."""
from __future__ import annotations

from .registry import Analysis, Column as C, Unavailable, register

ROUTE = frozenset({"route"})


def _kernels(cmp):
    df = cmp.kernels()
    if df.attrs.get("reason"):
        raise Unavailable(f"kernel comparison not available: {df.attrs['reason']}")
    return df


register(Analysis(
    "kernel", "Kernels", _kernels, (
        C("kernel", "Kernel"), C("input_shape", "Input Shape"),
        C("b_total_us", "Base Total (us)", "us"), C("b_calls", "Base Calls", "count"),
        C("t_total_us", "Target Total (us)", "us"), C("t_calls", "Target Calls", "count"),
        C("b_avg_us", "Base Avg (us)", "us"), C("t_avg_us", "Target Avg (us)", "us"),
        C("diff_us", "Diff (us)", "us"), C("diff_total_ratio", "Ratio", "ratio"),
        # GPU only (the PyTorch Profiler plugin's kernel view); left out of NPU pages
        C("b_tensor_cores", "Base Tensor Cores Used", optional="tc"),
        C("t_tensor_cores", "Target Tensor Cores Used", optional="tc"),
        C("b_blocks_per_sm", "Base Mean Blocks per SM", "number", optional="bps"),
        C("t_blocks_per_sm", "Target Mean Blocks per SM", "number", optional="bps"),
        C("b_occupancy_pct", "Base Mean Est. Achieved Occupancy", "percent", optional="occ"),
        C("t_occupancy_pct", "Target Mean Est. Achieved Occupancy", "percent", optional="occ")),
    needs={"kernels"}, diff_col="diff_us", search=("name", "kernel", "input_shape"), outputs=ROUTE,
    per_step=True,
    description="device kernels grouped by name and input shapes; on GPUs also whether they use "
                "tensor / matrix cores and their duration-weighted mean blocks per SM and est. "
                "achieved occupancy"))

register(Analysis(
    "api", "APIs", lambda cmp: cmp.api(), (
        C("name", "API"),
        C("b_total_ms", "Base Total (ms)", "ms"), C("b_self_ms", "Base Self (ms)", "ms"),
        C("b_calls", "Base Calls", "count"),
        C("t_total_ms", "Target Total (ms)", "ms"), C("t_self_ms", "Target Self (ms)", "ms"),
        C("t_calls", "Target Calls", "count"),
        C("diff_ms", "Diff (ms)", "ms"), C("diff_total_ratio", "Ratio", "ratio")),
    diff_col="diff_ms", search=("name",), outputs=ROUTE,
    per_step=True,
    description="host APIs (torch ops) grouped by name"))

register(Analysis(
    "operator", "Operators", lambda cmp: cmp.operators().stats, (
        C("name", "Operator"),
        C("b_compute_ms", "Base Compute (ms)", "ms"), C("b_comm_ms", "Base Comm (ms)", "ms"),
        C("b_count", "Base Count", "count"),
        C("t_compute_ms", "Target Compute (ms)", "ms"), C("t_comm_ms", "Target Comm (ms)", "ms"),
        C("t_count", "Target Count", "count"),
        C("diff_compute_ms", "Compute Diff (ms)", "ms"), C("diff_comm_ms", "Comm Diff (ms)", "ms"),
        C("diff_ms", "Device Diff (ms)", "ms"), C("diff_ratio", "Ratio", "ratio")),
    diff_col="diff_ms", search=("name",), outputs=ROUTE,
    per_step=True,
    description="matched top-level operators, by name"))

register(Analysis(
    "operator_pairs", "Operator pairs", lambda cmp: cmp.operators().pairs, (
        C("b_name", "Base Operator"), C("b_input_shape", "Base Input Shape"),
        C("b_compute_us", "Base Compute (us)", "us"), C("b_comm_us", "Base Comm (us)", "us"),
        C("t_name", "Target Operator"), C("t_input_shape", "Target Input Shape"),
        C("t_compute_us", "Target Compute (us)", "us"), C("t_comm_us", "Target Comm (us)", "us"),
        C("diff_compute_us", "Compute Diff (us)", "us"), C("diff_us", "Device Diff (us)", "us"),
        C("diff_ratio", "Ratio", "ratio")),
    diff_col="diff_compute_us", search=("b_name", "t_name"), outputs=ROUTE,
    description="matched top-level operators, one row per aligned pair"))

register(Analysis(
    "module", "Modules", lambda cmp: cmp.modules().stats, (
        C("path", "Module / Operator"), C("kind", "Kind"),
        C("b_total_compute_ms", "Base Total (ms)", "ms"), C("b_self_compute_ms", "Base Self (ms)", "ms"),
        C("b_number", "Base Calls", "count"),
        C("t_total_compute_ms", "Target Total (ms)", "ms"), C("t_self_compute_ms", "Target Self (ms)", "ms"),
        C("t_number", "Target Calls", "count"),
        C("diff_total_compute_ms", "Total Diff (ms)", "ms"), C("diff_self_compute_ms", "Self Diff (ms)", "ms"),
        C("diff_total_comm_ms", "Comm Diff (ms)", "ms"), C("diff_ratio", "Ratio", "ratio")),
    diff_col="diff_self_compute_ms", search=("path", "name"), tree=True, outputs=ROUTE,
    per_step=True,
    description="the nn.Module tree with the operators under each module"))

register(Analysis(
    "memory", "Memory", lambda cmp: cmp.memory().stats, (
        C("name", "Operator"),
        C("b_memory_mb", "Base Allocated (MB)", "mb"), C("b_count", "Base Count", "count"),
        C("t_memory_mb", "Target Allocated (MB)", "mb"), C("t_count", "Target Count", "count"),
        C("diff_mb", "Diff (MB)", "mb"), C("diff_ratio", "Ratio", "ratio")),
    diff_col="diff_mb", search=("name",), outputs=ROUTE,
    per_step=True,
    description="memory allocated by each matched operator"))

register(Analysis(
    "memory_peak", "Memory at peak", lambda cmp: cmp.memory_peak(), (
        C("name", "Held at peak by"), C("kind", "Kind"),
        C("b_bytes", "Base at Peak", "bytes"), C("t_bytes", "Target at Peak", "bytes"),
        C("diff_bytes", "Diff", "bytes")),
    diff_col="diff_bytes", search=("name",), outputs=ROUTE,
    description="bytes live at each side's memory peak, by module and by operator"))
