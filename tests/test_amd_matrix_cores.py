"""AMD matrix cores count as Cube / tensor-core work, as NVIDIA's tensor-core kernels do.

The corpus holds the same two models profiled on an NVIDIA H100 and an AMD MI300X
(``gpu/tracelens_h100`` / ``gpu/tracelens_mi300``). Their matmuls run cuBLAS ``sm90_xmma_gemm``
/ CUTLASS tensor-op kernels on one side and hipBLASLt ``Cijk_..._MI16x16x1_...`` MFMA kernels on
the other; attention runs FlashAttention's ``flash_fwd_kernel`` on one side and AOTriton's
``attn_fwd`` on the other. Each named kernel must land in the same Cube row of the overview on
both sides, and count as tensor-core time in the efficiency figures. In reference-compat mode the
reference's own rule (name mask only) still leaves the AMD kernels in Vector.
"""
from __future__ import annotations

import pytest

from tb_compare_plugin import loaders
from tb_compare_plugin.engines import kernel_classes as kc
from tb_compare_plugin.engines.efficiency import side_efficiency
from tb_compare_plugin.engines.overall import BUCKETS, breakdown

from conftest import CORPUS

QWEN = "Qwen_Qwen1.5-0.5B-Chat__1016005.pt.trace.json.gz"
TIMESFORMER = "facebook_timesformer-base-finetuned-k400__1016002.pt.trace.json.gz"
LEAF = [k for k, v in BUCKETS.items() if len(v) == 1]

# (model, bucket, H100 kernel name prefix, MI300X kernel name prefix): each named kernel's calls are
# in that Cube bucket (or the plain Cube row), on both sides
EXPECT = [
    (QWEN, "mm_cube", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
     "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1"),
    (QWEN, "mm_cube", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
     "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x224x64_MI16x16x1"),
    (QWEN, "fa_fwd_cube", "void pytorch_flash::flash_fwd_kernel<", "attn_fwd"),
    (TIMESFORMER, "mm_cube", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
     "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1"),
    (TIMESFORMER, "mm_cube", "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_nn_align1>",
     "Cijk_Ailk_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x256x32_MI16x16x1"),
    (TIMESFORMER, "conv_fwd_cube", "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop",
     "igemm_fwd_gtcx3_nhwc_bf16"),
]

_P: dict = {}


def _side(gpu: str, model: str):
    path = CORPUS / "gpu" / f"tracelens_{gpu}" / model
    if not path.exists():
        pytest.skip(f"{path} not here")
    if path not in _P:
        _P[path] = loaders.load("trace-json", str(path))
    return _P[path]


_B: dict = {}


def _buckets(gpu: str, model: str, compat: bool = False) -> dict:
    """bucket -> {kernel name: calls} over every kernel of the capture."""
    key = (gpu, model, compat)
    if key not in _B:
        sb = breakdown(_side(gpu, model), reference_compat=compat, top=100000)
        _B[key] = {b: {n: c for n, _, c in sb.metrics[b].kernels} for b in LEAF}
    return _B[key]


def _calls(buckets: dict, prefix: str) -> dict:
    """bucket -> calls of the kernels whose name starts with ``prefix``."""
    out = {}
    for b, ks in buckets.items():
        n = sum(c for name, c in ks.items() if name.startswith(prefix))
        if n:
            out[b] = n
    return out


@pytest.mark.parametrize("model,bucket,nv,amd", EXPECT)
def test_matmul_and_attention_kernels_are_cube_on_both_vendors(model, bucket, nv, amd):
    for gpu, prefix in (("h100", nv), ("mi300", amd)):
        where = _calls(_buckets(gpu, model), prefix)
        # launched under the matching host op: that op's Cube row; launched outside any cube op
        # (no External id: the trace's warm-up tail): the plain Cube row. Never a Vector row.
        assert bucket in where and set(where) <= {bucket, "cube"}, (gpu, prefix, where)


@pytest.mark.parametrize("model", [QWEN, TIMESFORMER])
def test_cube_rows_match_across_vendors(model):
    """The same model puts the same number of kernels in Matmul (Cube) on both GPUs, and no
    MFMA kernel is left in a Vector row."""
    h, m = _buckets("h100", model), _buckets("mi300", model)
    assert sum(h["mm_cube"].values()) == sum(m["mm_cube"].values()) > 0
    for b in ("mm_vec", "vec_notrans", "vec_trans", "fa_fwd_vec", "conv_fwd_vec"):
        assert not [n for n in m[b] if n.startswith("Cijk_") or n == "attn_fwd"], b
    assert sum(h["fa_fwd_cube"].values()) == sum(m["fa_fwd_cube"].values())


def test_reference_compat_keeps_the_reference_rule():
    """msprof-analyze's GPU cube mask knows no MFMA kernel: its figures put them in Vector."""
    where = _calls(_buckets("mi300", QWEN, compat=True), "Cijk_")
    assert "mm_cube" not in where and where.get("mm_vec")


@pytest.mark.parametrize("model", [QWEN, TIMESFORMER])
def test_tensor_core_ratio_counts_matrix_cores(model):
    h, m = side_efficiency(_side("h100", model)), side_efficiency(_side("mi300", model))
    assert h["tensor_core_ratio"] > 0.05 and m["tensor_core_ratio"] > 0.05
    assert m["tensor_core_ratio_ttp"] == 0.0          # the plugin's 2021 list knows no AMD kernel


@pytest.mark.parametrize("name,mfma", [
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1", True),
    ("Cijk_Ailk_Bljk_SB_MT64x64x8_SE_K1", False),                     # a Tensile kernel without MFMA
    ("attn_fwd", True), ("bwd_kernel_dk_dv", True),
    ("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<>>(x)", True),
    ("void ck_tile::kentry<64, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<>>>(x)", True),
    ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1", True),
    ("void at::native::elementwise_kernel<128, 4>(int)", False),
])
def test_matrix_core_names(name, mfma):
    assert kc.is_matrix_core_name(name.lower()) is mfma
    assert kc.is_tensor_core_name(name) is mfma
