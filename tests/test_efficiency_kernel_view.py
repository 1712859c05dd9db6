"""The kernel view's three GPU columns (the PyTorch Profiler plugin's kernel view): Tensor Cores
Used, Mean Blocks per SM, Mean Est. Achieved Occupancy, per side, in the ``kernel`` analysis and
its page; left out of the page when no kernel of the pair has them (NPU pairs)."""
from __future__ import annotations

import numpy as np
import pytest

from tb_compare_plugin import loaders
from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.presenters.views import view_page

from conftest import CORPUS

GPU_KEYS = ["b_tensor_cores", "t_tensor_cores", "b_blocks_per_sm", "t_blocks_per_sm",
            "b_occupancy_pct", "t_occupancy_pct"]


def _load(fmt, rel):
    path = CORPUS / rel
    if not path.exists():
        pytest.skip(f"{path} not here")
    return loaders.load(fmt, str(path))


@pytest.fixture(scope="module")
def h100_vs_mi300():
    m = "Qwen_Qwen1.5-0.5B-Chat__1016005.pt.trace.json.gz"
    return Comparison(_load("trace-json", f"gpu/tracelens_h100/{m}"), _load("trace-json", f"gpu/tracelens_mi300/{m}"))


def test_gpu_pair_page_has_the_three_columns_per_side(h100_vs_mi300):
    pg = view_page(h100_vs_mi300, "kernel", sort="b_total_us", limit=1000)
    keys = [c["key"] for c in pg["columns"]]
    assert keys[-6:] == GPU_KEYS
    types = {c["key"]: c["type"] for c in pg["columns"]}
    assert types["b_blocks_per_sm"] == "number" and types["b_occupancy_pct"] == "percent"
    rows = {r["kernel"]: r for r in pg["rows"]}
    gemm = next(r for n, r in rows.items() if n.startswith("sm90_xmma_gemm") and r["b_calls"])
    assert gemm["b_tensor_cores"] == "Yes" and 0 < gemm["b_blocks_per_sm"] and gemm["b_occupancy_pct"] is not None
    mfma = next(r for n, r in rows.items() if n.startswith("Cijk_") and r["t_calls"])
    assert mfma["t_tensor_cores"] == "Yes"
    # ROCm has no CUPTI estimates: unknown, not 0
    assert all(r.get("t_blocks_per_sm") is None or np.isnan(r["t_blocks_per_sm"]) for r in pg["rows"])
    ew = next(r for n, r in rows.items() if "elementwise_kernel" in n and r["b_calls"])
    assert ew["b_tensor_cores"] == "No"


def test_mean_blocks_per_sm_is_duration_weighted(h100_vs_mi300):
    p = h100_vs_mi300.base
    df = h100_vs_mi300.kernels()
    k = p.kernels[(p.kernels["kind"] == 0).to_numpy()]
    names = np.array(p.symbols.strings(k["name"].to_numpy()), object)
    row = df[df["b_calls"] > 3].iloc[0]
    # the rows of that (kernel, input shape) group
    from tb_compare_plugin.engines.kernel import kernel_rows
    kr = kernel_rows(p)
    sel = (names == row["kernel"])
    shapes = np.array(p.symbols.strings(kr["input_shape"].to_numpy()), object)
    shapes[kr["input_shape"].to_numpy() == 0] = "N/A"
    sel &= shapes == row["input_shape"]
    d, b = k["dur_ns"].to_numpy()[sel], k["blocks_per_sm"].to_numpy()[sel]
    assert row["b_blocks_per_sm"] == pytest.approx((d * b).sum() / d.sum())


def test_npu_pair_page_leaves_the_gpu_columns_out():
    a = _load("ascend-text", "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt")
    b = _load("ascend-text", "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt")
    pg = view_page(Comparison(a, b), "kernel")
    keys = [c["key"] for c in pg["columns"]]
    assert not set(GPU_KEYS) & set(keys) and "b_total_us" in keys
