"""The reference's console summary ("Model Profiling Time Distribution", spec b.5).

Owns the screen table: one row per side, columns in the reference's order and conditions,
cells formatted as it prints them (seconds with 3 decimals, ``{:.2f}G`` memory, GB/s
bandwidth).  Built from two SideBreakdowns, so it shows our figures; with a result made
in ``reference_compat`` mode it also keeps the reference's quirks (GPU "Other" printed as
0, the target's wait always printed, the "(Not minimal profiling)" suffix).
"""
from __future__ import annotations

TITLE = "Model Profiling Time Distribution"


def _s(ns: float) -> float:
    return ns / 1e9


def _cell(ns: float, n) -> str:
    n = int(n) if float(n).is_integer() else round(n, 3)
    return f"{_s(ns):.3f}s({n})"


def _side_values(sb, scale: float, compat: bool) -> dict:
    m = lambda k: sb.ns(k) * scale  # noqa: E731
    c = lambda k: (sb.metrics[k].count or 0) * scale if k in sb.metrics else 0  # noqa: E731
    mc2_ns = sum(v["total"].duration_ns for v in sb.mc2.values()) * scale
    other = m("other")
    if compat and sb.device != "NPU":
        other = 0.0                       # the reference never computes it on GPU
    wait = sum(g.wait.duration_ns for g in sb.groups) * scale
    return {
        "cube": (m("mm") + m("cube") + mc2_ns, c("mm") + c("cube")),
        "vector": (m("vector"), c("vector")),
        "conv_fwd": (m("conv_fwd"), c("conv_fwd")), "conv_bwd": (m("conv_bwd"), c("conv_bwd")),
        "fa_fwd": (m("fa_fwd"), c("fa_fwd")), "fa_bwd": (m("fa_bwd"), c("fa_bwd")),
        "pa": (m("pa"), c("pa")), "lccl": (m("lccl"), c("lccl")),
        "other": other, "computing": m("computing"), "memory": sb.memory_peak_gb or 0.0,
        "uncovered": m("uncovered"), "wait": wait,
        "rdma": sb.bandwidth.get("rdma_gbps", 0.0), "sdma_bw": sb.bandwidth.get("sdma_gbps", 0.0),
        "sdma": (m("sdma_tm") + m("sdma"), c("sdma_tm") + sb.sdma_stream_count * scale),
        "free": m("free_time"), "e2e": m("e2e"),
    }


def screen_table(result) -> dict:
    """{"title", "headers", "rows": [baseline cells, target cells]} as the reference prints."""
    compat = getattr(result, "reference_compat", False)
    sides = [(result.baseline, 1.0 / result.baseline.steps_count if result.per_step else 1.0),
             (result.target, 1.0 / result.target.steps_count if result.per_step else 1.0)]
    v = [_side_values(sb, sc, compat) for sb, sc in sides]
    headers = [""]
    rows = [[sb.device] for sb, _ in sides]

    def add(header, cells):
        headers.append(header)
        for r, cell in zip(rows, cells):
            r.append(cell)
    if not any(sb.hide_op_details for sb, _ in sides):
        add("Cube Time(Num)", [_cell(*x["cube"]) for x in v])
        add("Vector Time(Num)", [_cell(*x["vector"]) for x in v])
    for key, header in (("conv_fwd", "Conv Time(Forward)(Num)"), ("conv_bwd", "Conv Time(Backward)(Num)"),
                        ("fa_fwd", "Flash Attention Time(Forward)(Num)"),
                        ("fa_bwd", "Flash Attention Time(Backward)(Num)"), ("pa", "Paged Attention Time(Num)"),
                        ("lccl", "Lccl Time(Num)")):
        if any(x[key][0] for x in v):
            add(header, [_cell(*x[key]) for x in v])
    if any(x["other"] for x in v):
        add("Other Time", [f"{_s(x['other']):.3f}s" for x in v])
    add("Computing Time", [f"{_s(x['computing']):.3f}s" for x in v])
    if any(x["memory"] for x in v):
        add("Mem Usage", [f"{x['memory']:.2f}G" for x in v])
    waits = []
    for i, x in enumerate(v):
        show = x["wait"] or (compat and i == 1)       # the reference always prints the target's
        waits.append(f"{_s(x['uncovered']): .3f}s({_s(x['wait']):.3f}s)" if show
                     else f"{_s(x['uncovered']): .3f}s( / )")
    add("Uncovered Communication Time(Wait Time)", waits)
    if any(x["rdma"] for x in v):
        add("RDMA Bandwidth", [f"{x['rdma']:.3f}GB/s" for x in v])
    if any(x["sdma_bw"] for x in v):
        add("SDMA Bandwidth", [f"{x['sdma_bw']:.3f}GB/s" for x in v])
    if any(x["sdma"][0] for x in v):
        add("SDMA Time(Num)", [_cell(*x["sdma"]) for x in v])
    add("Free Time", [f"{_s(x['free']):.3f}s" for x in v])
    npu = any(sb.device == "NPU" for sb, _ in sides)
    add("E2E Time(Not minimal profiling)" if compat and npu else "E2E Time", [f"{_s(x['e2e']):.3f}s" for x in v])
    return {"title": TITLE, "headers": headers, "rows": rows}
