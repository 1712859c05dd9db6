"""Kernel categorisation for the overall breakdown (spec b.1).

Owns the bucket codes (Flash Attention / Conv / Matmul fwd-bwd x Cube-Vector, Paged
Attention, Vector trans / no-trans, other Cube, SDMA tensor move, MC2) and the
vectorised walk that gives every device kernel its bucket:

1. (NPU) paged attention, tensor move and MC2 kernels by name / op type;
2. the kernel's host launch time (flow start) is looked up among the time-sorted
   "cube" torch ops (matmul / flash-attention / conv masks): the earliest-starting such op
   still running at launch time decides the bucket (fwd/bwd from the op, cube/vector from
   the kernel);
3. (NPU) fallback on the kernel's op Type (flashattention / conv* / matmul);
4. otherwise Cube (cube kernel), Vector (Trans) or Vector (No Trans).

The reference walks kernels sorted by flow start with a forward-only pointer over the
start-sorted cube ops; that pointer always rests on the first op whose end is >= the flow
start, i.e. ``searchsorted`` over the running maximum of op ends, so the whole walk is a
handful of numpy operations.
"""
from __future__ import annotations

import re

import numpy as np

from ..model.keys import id_bounds, id_kernels, lut_fits, lut_take

# bucket codes ---------------------------------------------------------------------------------
NONE = 0
FA_FWD_CUBE, FA_FWD_VEC, FA_BWD_CUBE, FA_BWD_VEC = 1, 2, 3, 4
CONV_FWD_CUBE, CONV_FWD_VEC, CONV_BWD_CUBE, CONV_BWD_VEC = 5, 6, 7, 8
MM_CUBE, MM_VEC = 9, 10
PA = 11
VEC_TRANS, VEC_NOTRANS = 12, 13
CUBE_OTHER = 14
SDMA_TM = 15
MC2 = 16
N_CODES = 17

# masks (the reference's compare_config.ini) ---------------------------------------------------
FA_MASK = ("flash_attention", "fusion_attention", "flashattn", "xformers_flash", "efficient_attention",
           "flash2attn")
CONV_MASK = ("aten::conv",)
# also the backward ops whose names lack "aten::conv" (CudnnConvolutionBackward,
# aten::cudnn_convolution_backward*, ConvolutionBackward0): docs/deviations.md
CONV_MASK_WIDE = ("aten::conv", "convolution")
MM_MASK = ("aten::addmm", "aten::bmm", "aten::mm", "aten::matmul")
GPU_CUBE_MASK = ("gemm", "conv", "cutlass", "wgrad", "gemvx")
TRANS_MASK = ("cast", "transdata", "transpose")
# AMD matrix cores (is_matrix_core_name): Tensile's MFMA tile, CK / MIOpen XDLOPS / WMMA and FMHA
# kernel words, AOTriton's attention kernels
_MFMA_TILE = re.compile(r"_mi\d+x\d+x\d+")
AMD_MATRIX_WORDS = ("_xdl", "xdlops", "ck::kernel_gemm_wmma", "gridwise_gemm_wmma", "fmha_fwd", "fmha_bwd",
                    "fmhafwd", "fmhabwd", "_gtcx")
TRITON_ATTENTION = frozenset({"attn_fwd", "_attn_fwd", "attn_bwd", "_attn_bwd", "bwd_kernel_dk_dv",
                              "bwd_kernel_dq", "_bwd_kernel_dk_dv", "_bwd_kernel_dq"})
# the PyTorch Profiler plugin 0.4.3's TC_Allowlist (tensor_core.py), substrings of the kernel name
TTP_TC_ALLOWLIST = ("h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
                    "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
                    "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm",
                    "c1688")
# NVIDIA tensor-core kernel families that allowlist predates (lower-cased substrings)
NVIDIA_TC_WORDS = ("tensorop", "wmma", "flash_fwd", "flash_bwd", "fmha", "gmma", "xmma")
MC2_KERNELS = frozenset({"allgathermatmul", "matmulreducescatter", "matmulallreduce"})
BWD_WORDS = ("bwd", "backward", "back", "grad")

# host cube-op kinds
OP_FA, OP_CONV, OP_MM = 1, 2, 3


def distinct_ids(ids: np.ndarray) -> np.ndarray:
    """Sorted distinct symbol ids, in O(n) (bincount, or with numba one pass marking the ids
    seen; no sort of the rows)."""
    ids = np.asarray(ids)
    if len(ids) == 0:
        return np.zeros(0, dtype=np.int64)
    k = id_kernels(ids)
    if k is not None:
        lo, hi = id_bounds(ids, k)
        if lut_fits(lo, hi, len(ids)):
            seen = np.zeros(hi + 1, bool)
            k.mark_seen(ids, seen)
            return np.flatnonzero(seen)
    return np.flatnonzero(np.bincount(ids.astype(np.int64)))


def text_flags(symbols, ids: np.ndarray, predicate) -> np.ndarray:
    """Evaluate ``predicate(lower-cased string)`` once per distinct symbol id; bool per row."""
    ids = np.asarray(ids)
    if len(ids) == 0:
        return np.zeros(0, dtype=bool)
    uniq = distinct_ids(ids)
    lut = np.zeros(int(uniq[-1]) + 1, dtype=bool)
    lut[uniq] = np.fromiter((bool(predicate(s.lower())) for s in symbols.strings(uniq)), dtype=bool,
                            count=len(uniq))
    return lut_take(lut, ids, id_kernels(ids))


def _has_any(words):
    return lambda s: any(w in s for w in words)


def cube_op_kind(symbols, name_ids: np.ndarray, compat: bool = False) -> np.ndarray:
    """OP_FA / OP_CONV / OP_MM (0 = not a cube op) for host op names, in the reference's order.

    ``compat`` uses the reference's conv mask ("aten::conv" only)."""
    conv_mask = CONV_MASK if compat else CONV_MASK_WIDE

    def kind(low: str) -> int:
        if any(m in low for m in FA_MASK):
            return OP_FA
        if any(m in low for m in conv_mask):
            return OP_CONV
        if any(m in low for m in MM_MASK):
            return OP_MM
        return 0
    ids = np.asarray(name_ids)
    if len(ids) == 0:
        return np.zeros(0, dtype=np.int8)
    uniq = distinct_ids(ids)
    lut = np.zeros(int(uniq[-1]) + 1, dtype=np.int8)
    lut[uniq] = [kind(s.lower()) for s in symbols.strings(uniq)]
    return lut_take(lut, ids, id_kernels(ids))


def is_backward_name(symbols, name_ids: np.ndarray) -> np.ndarray:
    return text_flags(symbols, name_ids, _has_any(BWD_WORDS))


def categorise(*, device: str, flow_start: np.ndarray, is_cube: np.ndarray,
               name_flags: dict[str, np.ndarray],
               op_start: np.ndarray, op_end: np.ndarray, op_kind: np.ndarray,
               op_bwd: np.ndarray) -> np.ndarray:
    """Bucket code (int8) per kernel.

    ``name_flags`` holds per-kernel booleans computed by the caller from names/types:
    ``pa``, ``tensor_move``, ``mc2``, ``trans`` and, for the NPU Type fallback, ``type_fa``,
    ``type_fa_bwd``, ``type_conv``, ``type_conv_bwd``, ``type_mm`` (absent keys = all False).
    ``op_*`` describe the host cube ops (any order; sorted here stably by start).
    ``flow_start`` < 0 means the kernel has no launch flow.
    """
    n = len(flow_start)
    z = np.zeros(n, dtype=bool)
    f = {k: (np.asarray(v, dtype=bool) if v is not None else z) for k, v in name_flags.items()}
    get = lambda k: f.get(k, z)  # noqa: E731
    code = np.zeros(n, dtype=np.int8)
    todo = np.ones(n, dtype=bool)
    npu = device == "NPU"
    if npu:
        for flag, c in (("pa", PA), ("tensor_move", SDMA_TM), ("mc2", MC2)):
            hit = todo & get(flag)
            code[hit] = c
            todo &= ~hit
    cube = np.asarray(is_cube, dtype=bool)
    # 2. by the enclosing host cube op at launch time
    if len(op_start) and n:
        order = np.argsort(op_start, kind="stable")
        s_sorted = np.asarray(op_start)[order]
        run_end = np.maximum.accumulate(np.asarray(op_end)[order])
        fs = np.asarray(flow_start, dtype=np.int64)
        cand = todo & (fs >= 0)
        idx = np.searchsorted(run_end, fs, side="left")
        ok = cand & (idx < len(order))
        idx_c = np.minimum(idx, len(order) - 1)
        ok &= s_sorted[idx_c] <= fs
        op_rows = order[idx_c]
        kind = np.where(ok, np.asarray(op_kind)[op_rows], 0)
        bwd = np.asarray(op_bwd, dtype=bool)[op_rows]
        for k_val, fwd_pair, bwd_pair in ((OP_FA, (FA_FWD_CUBE, FA_FWD_VEC), (FA_BWD_CUBE, FA_BWD_VEC)),
                                          (OP_CONV, (CONV_FWD_CUBE, CONV_FWD_VEC),
                                           (CONV_BWD_CUBE, CONV_BWD_VEC))):
            hit = kind == k_val
            code[hit & ~bwd & cube] = fwd_pair[0]
            code[hit & ~bwd & ~cube] = fwd_pair[1]
            code[hit & bwd & cube] = bwd_pair[0]
            code[hit & bwd & ~cube] = bwd_pair[1]
        hit = kind == OP_MM
        code[hit & cube] = MM_CUBE
        code[hit & ~cube] = MM_VEC
        todo &= kind == 0
    # 3. NPU fallback on the op Type
    if npu:
        hit = todo & get("type_fa")
        code[hit] = np.where(get("type_fa_bwd")[hit], FA_BWD_CUBE, FA_FWD_CUBE)
        todo &= ~hit
        hit = todo & get("type_conv")
        code[hit] = np.where(get("type_conv_bwd")[hit], CONV_BWD_CUBE, CONV_FWD_CUBE)
        todo &= ~hit
        hit = todo & get("type_mm")
        code[hit] = MM_CUBE
        todo &= ~hit
    # 4. the rest
    code[todo & cube] = CUBE_OTHER
    rest = todo & ~cube
    trans = get("trans") if npu else z
    code[rest & trans] = VEC_TRANS
    code[rest & ~trans] = VEC_NOTRANS
    return code


def npu_name_flags(symbols, name_ids: np.ndarray, type_ids: np.ndarray) -> dict[str, np.ndarray]:
    """The per-kernel name/type booleans ``categorise`` needs for NPU kernels."""
    tflag = lambda pred: text_flags(symbols, type_ids, pred)  # noqa: E731
    nflag = lambda pred: text_flags(symbols, name_ids, pred)  # noqa: E731
    return {
        "pa": tflag(lambda s: "pagedattention" in s),
        "tensor_move": nflag(lambda s: s.startswith("aclnninplacecopy") and "tensormove" in s),
        "mc2": nflag(lambda s: s in MC2_KERNELS),
        "trans": nflag(_has_any(TRANS_MASK)),
        "type_fa": tflag(lambda s: "flashattention" in s or "fusedinferattention" in s),
        "type_fa_bwd": tflag(lambda s: "bwd" in s or "grad" in s),
        "type_conv": tflag(lambda s: s.startswith("conv")),
        "type_conv_bwd": tflag(_has_any(BWD_WORDS)),
        "type_mm": tflag(lambda s: "matmul" in s),
    }


def is_matrix_core_name(low: str) -> bool:
    """AMD matrix-core (MFMA) kernels, by their lower-cased name: hipBLASLt / rocBLAS Tensile GEMMs
    ``Cijk_...`` with an MFMA tile ``_MI<m>x<n>x<k>``, Composable Kernel XDL/WMMA kernels and its
    FMHA (flash attention) kernels, MIOpen's XDLOPS implicit GEMMs (``igemm_*_gtcx*``) and
    AOTriton's flash-attention kernels (``attn_fwd``, ``bwd_kernel_dk_dv``, ``bwd_kernel_dq``,
    whose ``tl.dot`` runs on the matrix cores).  Names of these families never occur on NVIDIA
    traces, except Triton attention kernels of the same names, which use tensor cores there."""
    if low.startswith("cijk_") and _MFMA_TILE.search(low):
        return True
    if any(w in low for w in AMD_MATRIX_WORDS):
        return True
    return _base_name(low) in TRITON_ATTENTION


def _base_name(low: str) -> str:
    """'void ns::kern<...>(args)' -> 'kern'; 'attn_fwd' -> 'attn_fwd'."""
    head = low.split("<", 1)[0].split("(", 1)[0].strip()
    return head.rsplit(" ", 1)[-1].rsplit("::", 1)[-1]


def gpu_is_cube(symbols, name_ids: np.ndarray, compat: bool = False) -> np.ndarray:
    """Kernels that run on tensor / matrix cores, for the Cube rows of the overview: the
    reference's name mask (``GPU_CUBE_MASK``) and, outside reference-compat mode, AMD's
    matrix-core kernels (``is_matrix_core_name``), which the reference leaves in Vector."""
    if compat:
        return text_flags(symbols, name_ids, _has_any(GPU_CUBE_MASK))
    return text_flags(symbols, name_ids, lambda s: any(m in s for m in GPU_CUBE_MASK) or is_matrix_core_name(s))


def is_tensor_core_name_ttp(name: str) -> bool:
    """The PyTorch Profiler plugin 0.4.3's test (``TC_Allowlist``): a substring of its list,
    case-sensitive, in the kernel name."""
    return any(p in name for p in TTP_TC_ALLOWLIST)


def is_tensor_core_name(name: str) -> bool:
    """Tensor-core / matrix-core kernels for the tensor-core kernel-time ratio and the kernel
    view: the plugin's allowlist, NVIDIA tensor-core families its 2021 list predates (CUTLASS
    ``tensorop`` / WMMA kernels, FlashAttention, Hopper ``gmma``), and AMD matrix-core kernels."""
    if is_tensor_core_name_ttp(name):
        return True
    low = name.lower()
    return any(w in low for w in NVIDIA_TC_WORDS) or is_matrix_core_name(low)


def tensor_core_flags(symbols, name_ids: np.ndarray, ttp: bool = False) -> np.ndarray:
    """Per kernel: runs on tensor / matrix cores (``ttp``: by the plugin's own allowlist only)."""
    test = is_tensor_core_name_ttp if ttp else is_tensor_core_name
    ids = np.asarray(name_ids)
    if len(ids) == 0:
        return np.zeros(0, dtype=bool)
    uniq = distinct_ids(ids)
    lut = np.zeros(int(uniq[-1]) + 1, dtype=bool)
    lut[uniq] = np.fromiter((test(s) for s in symbols.strings(uniq)), dtype=bool, count=len(uniq))
    return lut[ids]


def mc2_split(k_start: np.ndarray, k_end: np.ndarray, sqe_end: np.ndarray) -> np.ndarray:
    """Communication ns of each MC2 kernel: pairs of C_CORE_SQE tasks ending inside it.

    For the tasks ending in [start, end] (in time order), Σ end(2i+1) − end(2i).
    """
    ends = np.sort(np.asarray(sqe_end, dtype=np.int64))
    out = np.zeros(len(k_start), dtype=np.int64)
    for i, (s, e) in enumerate(zip(np.asarray(k_start).tolist(), np.asarray(k_end).tolist())):
        lo, hi = np.searchsorted(ends, s, "left"), np.searchsorted(ends, e, "right")
        inside = ends[lo:hi]
        m = len(inside) // 2 * 2
        if m:
            out[i] = int((inside[1:m:2] - inside[0:m:2]).sum())
    return out
