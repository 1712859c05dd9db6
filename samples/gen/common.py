"""Constants of the synthetic job (model sizes, runs and their variants, kernel names per
kind and format) and the small deterministic helpers every part of the generator uses."""
from __future__ import annotations

import zlib


MIB = 1 << 20
B, T, C, NH, V = 4, 512, 1024, 16, 32000          # batch, sequence, width, heads, vocabulary
D, N, F32 = C // NH, B * T, 4
NSTEPS = 6                                        # ProfilerStep#1 .. #NSTEPS on every side
GAP = (3, 5)                                      # µs: device gap in front of a task, jittered in [3, 5]
LEAD = (300, 340)                                 # µs: host DataLoader end -> first device task of a step
DATALOADER_US = (150, 420)                        # µs: the DataLoader __next__ of a step, before any stall
NCCL_US, CAST_US, TRANSDATA_US = 1000, 10, 25
STALL_US = 3000                                   # planted #8: the target's DataLoader __next__ is longer by this
OPT_EXTRA_US = {"fe_mul": 225, "fe_lerp": 375, "fe_addcmul": 375, "fe_addcdiv": 525}  # planted #9: +1500 µs a step
MEMCPY_SLOT = 16                                  # µs: the HtoD copy ends this long after its gap, whatever it lasts
# planted #10, noise only: the labels HtoD copy of each step (µs), jittered independently per run
MEMCPY_US = {"baseline_gpu": (10, 13, 9, 12, 8, 11), "target_npu": (12, 9, 11, 8, 13, 11),
             "target_npu_v2": (9, 12, 10, 13, 11, 9)}
RUNS = {  # run -> variant; only the keys below differ between the three runs
    "baseline_gpu": dict(dev="GPU"),
    "target_npu": dict(dev="NPU", fc1_b1=2.0, ln=1.0, hcom=1500, waits=(400, 600), extra=256 * MIB,
                       stall=STALL_US, opt_extra=OPT_EXTRA_US),
    "target_npu_v2": dict(dev="NPU", fc1_b1=1.0, ln=1.5, hcom=1200, waits=(100, 300), extra=256 * MIB,
                          stall=STALL_US, opt_extra=OPT_EXTRA_US),
}
# per-step kernel jitter, ± µs by kind; the same draw for the same kernel of the same step on every side, so
# every kernel both sides run keeps equal durations (and every planted difference its exact size) step by step
KERNEL_JITTER = {"addmm": 6, "mm": 6, "mm_head": 10, "bmm": 3, "gather": 1, "ln": 1, "div": 1, "softmax": 2, "add": 1,
                 "gelu": 2, "logsm": 4, "nll": 1, "fill": 0, "nll_bwd": 1, "logsm_bwd": 4, "ln_bwd_x": 1,
                 "ln_bwd_gb": 1, "sum": 1, "gelu_bwd": 2, "softmax_bwd": 2, "emb_bwd": 1, "fe_mul": 2, "fe_lerp": 2,
                 "fe_addcmul": 2, "fe_addcdiv": 3, "nccl": 25, "cast": 0, "transdata": 0, "memcpy": 0}
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
DATALOADER_FRAMES = ("torch/utils/data/dataloader.py(701): __next__", "torch/utils/data/dataloader.py(757): _next_data")
MATMUL_KINDS = {"addmm", "mm", "mm_head", "bmm"}
# kind: (GPU kernel name, NPU aclnn api, NPU impl, NPU Type, Accelerator Core)
_EW = "void at::native::vectorized_elementwise_kernel<4, "
_MT = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
KINDS = {
    "gather": ("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2,"
               " true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float const,"
               " unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int,"
               " unsigned int, long)", "aclnnEmbedding", "GatherV2AiCore", "GatherV2", "AI_VECTOR_CORE"),
    "ln": ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float"
           " const*, float const*, float const*, float*, float*, float*)",
           "aclnnLayerNorm", "LayerNormV3AiCore", "LayerNormV3", "AI_VECTOR_CORE"),
    "addmm": ("ampere_sgemm_128x64_tn", "aclnnAddmm", "MatMulCommon", "MatMulV2", "AI_CORE"),
    "mm": ("ampere_sgemm_128x128_nn", "aclnnMm", "MatMulCommon", "MatMulV2", "AI_CORE"),
    "mm_head": ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4"
                "_execute_kernel_trt", "aclnnMm", "MatMulV3Common", "MatMulV3", "AI_CORE"),
    "bmm": ("ampere_sgemm_64x64_nn", "aclnnBatchMatMul", "BatchMatMulV2Common", "BatchMatMulV2", "AI_CORE"),
    "div": (_EW + "at::native::BUnaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >,"
            " at::detail::Array<char*, 2> >(int, at::native::BUnaryFunctor<float, float, float,"
            " at::native::binary_internal::DivFunctor<float> >, at::detail::Array<char*, 2>)",
            "aclnnDivs", "RealDivAiCore", "RealDiv", "AI_VECTOR_CORE"),
    "softmax": ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>(float*, float"
                " const*, int, int, int, bool const*, int, bool)", "aclnnSoftmax", "SoftmaxV2AiCore", "SoftmaxV2",
                "AI_VECTOR_CORE"),
    "add": (_EW + "at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int,"
            " at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
            "aclnnAdd", "AddAiCore", "Add", "AI_VECTOR_CORE"),
    "gelu": (_EW + "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}"
             "::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>"
             " >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}"
             "::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
             "aclnnGelu", "GeluAiCore", "Gelu", "AI_VECTOR_CORE"),
    "logsm": ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float,"
              " at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
              "aclnnLogSoftmax", "LogSoftmaxV2AiCore", "LogSoftmaxV2", "AI_VECTOR_CORE"),
    "nll": ("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>"
            "(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)",
            "aclnnNLLLoss", "NLLLossAiCore", "NLLLoss", "MIX_AIV"),
    "fill": (_EW + "at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int,"
             " at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
             "aclnnInplaceOne", "OnesLikeAiCore", "OnesLike", "AI_VECTOR_CORE"),
    "nll_bwd": ("void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*,"
                " float const*, long const*, float const*, float const*, bool, int, int, long, long)",
                "aclnnNLLLossBackward", "NLLLossGradAiCore", "NLLLossGrad", "AI_VECTOR_CORE"),
    "logsm_bwd": ("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float,"
                  " at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float"
                  " const*, long)", "aclnnLogSoftmaxBackward", "LogSoftmaxGradAiCore", "LogSoftmaxGrad",
                  "AI_VECTOR_CORE"),
    "ln_bwd_x": ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(float const*,"
                 " float const*, float const*, float const*, float const*, float*, int)", "aclnnLayerNormBackward",
                 "LayerNormXBackpropV3AiCore", "LayerNormXBackpropV3", "AI_VECTOR_CORE"),
    "ln_bwd_gb": ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(long, long,"
                  " float const*, float const*, float const*, float const*, float*, float*)",
                  "aclnnLayerNormBackward", "LayerNormBetaGammaBackpropV2AiCore", "LayerNormBetaGammaBackpropV2",
                  "AI_VECTOR_CORE"),
    "sum": ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float,"
            " at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>,"
            " unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float,"
            " at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>,"
            " unsigned int, float, 4>)", "aclnnReduceSum", "ReduceSumOpAiCore", "ReduceSum", "MIX_AIV"),
    "gelu_bwd": (_EW + "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
                 "::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1},"
                 " at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&,"
                 " at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const"
                 "::{lambda(float, float)#1}, at::detail::Array<char*, 3>)",
                 "aclnnGeluBackward", "GeluGradAiCore", "GeluGrad", "AI_VECTOR_CORE"),
    "softmax_bwd": ("void (anonymous namespace)::softmax_warp_backward<float, float, float, 9, false, false>(float*,"
                    " float const*, float const*, int, int, int, bool const*)",
                    "aclnnSoftmaxBackward", "SoftmaxGradAiCore", "SoftmaxGrad", "AI_VECTOR_CORE"),
    "emb_bwd": ("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>(long"
                " const*, float const*, float*, int, long, int)", "aclnnEmbeddingDenseBackward",
                "EmbeddingDenseGradV2AiCore", "EmbeddingDenseGradV2", "AI_VECTOR_CORE"),
    "fe_mul": (_MT + "TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>,"
               " std::multiplies<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<1>,"
               " at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>,"
               " float)", "aclnnForeachMulScalarV2", "ForeachMulScalarV2", "ForeachMulScalar", "AI_VECTOR_CORE"),
    "fe_lerp": (_MT + "TensorListMetadata<2>, at::native::(anonymous namespace)::TernaryOpScalarFunctor<float, 2, 2,"
                " 0>, at::native::LerpFunctor<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>,"
                " at::native::(anonymous namespace)::TernaryOpScalarFunctor<float, 2, 2, 0>,"
                " at::native::LerpFunctor<float>, float)", "aclnnForeachLerpScalar", "ForeachLerpScalar",
                "ForeachLerpScalar", "AI_VECTOR_CORE"),
    "fe_addcmul": (_MT + "TensorListMetadata<3>, at::native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3,"
                   " 3, 0>, std::multiplies<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<3>,"
                   " at::native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3, 3, 0>,"
                   " std::multiplies<float>, float)", "aclnnForeachAddcmulScalarV2", "ForeachAddcmulScalarV2",
                   "ForeachAddcmulScalar", "AI_VECTOR_CORE"),
    "fe_addcdiv": (_MT + "TensorListMetadata<3>, at::native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3,"
                   " 3, 0>, std::divides<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<3>,"
                   " at::native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3, 3, 0>,"
                   " std::divides<float>, float)", "aclnnForeachAddcdivScalarV2", "ForeachAddcdivScalarV2",
                   "ForeachAddcdivScalar", "AI_VECTOR_CORE"),
    "cast": (None, "aclnnCast", "CastAiCore", "Cast", "AI_VECTOR_CORE"),
    "transdata": (None, "TransData", None, "TransData", "AI_VECTOR_CORE"),
    "nccl": ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "HcclAllreduce",
             None, "hcom_allReduce_", "HCCL"),
    "memcpy": ("Memcpy HtoD (Pinned -> Device)", "acl_memcpy_host_to_device", None, "MEMCPY_ASYNC", "PCIE_DMA_SQE"),
}
NPU_ONLY = {"cast", "transdata"}
SRC = {"TinyLM": "tinylm.py(88): forward", "Block": "tinylm.py(61): forward", "Attention": "tinylm.py(34): forward",
       "MLP": "tinylm.py(49): forward", "Linear": "torch/nn/modules/linear.py(125): forward",
       "LayerNorm": "torch/nn/modules/normalization.py(217): forward",
       "Embedding": "torch/nn/modules/sparse.py(190): forward", "GELU": "torch/nn/modules/activation.py(734): forward",
       "CrossEntropyLoss": "torch/nn/modules/loss.py(1295): forward"}
CALL_IMPL = "torch/nn/modules/module.py(1747): _call_impl"
TRAIN = ["train.py(97): <module>", "train.py(71): train_step"]
GRAD_TOTAL = 362_921_984                         # fp32 bytes of the 90,730,496 parameters
PARAM_STATE = 3 * GRAD_TOTAL                     # params + AdamW exp_avg + exp_avg_sq
PREV_GRADS = [V * C * F32] + [b for _ in range(2) for b in (4096, 4096, 12_582_912, 12_288, 4_194_304, 4096, 4096,
                                                             4096, 16_777_216, 16_384, 16_777_216, 4096)] \
    + [4096, 4096, V * C * F32]


def us(x) -> int:
    """µs (int/float) -> ns int."""
    return int(round(x * 1000))


def jit(path: str, span: int = 900) -> int:
    """Deterministic 'natural looking' sub-µs jitter (ns) keyed by a node path."""
    return zlib.crc32(path.encode()) % span


def spread(key: str, lo: int, hi: int) -> int:
    """A deterministic integer in [lo, hi] keyed by ``key`` (the generator's only source of jitter: no RNG state,
    no clock, the same on every platform)."""
    return lo + zlib.crc32(("spread:" + key).encode()) % (hi - lo + 1)


def kernel_jitter(step: int, kind: str, key: str) -> int:
    """± µs added to a kernel of ``kind`` in ``step``; ``key`` names the kernel the same way on every side."""
    a = KERNEL_JITTER[kind]
    return spread(f"{step}|{key}", -a, a) if a else 0
