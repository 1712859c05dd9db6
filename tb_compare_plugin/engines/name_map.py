"""Operator name mapping: the user's ``--op_name_map`` plus a built-in GPU <-> NPU alias table.

A matching key is built per operator name: the user map (exact full-name lookup, either side,
spec c.3) is applied first, then, only when the two profiles come from different devices, the
built-in alias table folds names that mean the same operation on the two platforms into one
key (``aten::_fused_adamw_`` and ``npu::npu_apply_adam_w`` both become ``~adamw``); the
same when the two profiles come from different frameworks (MindSpore's op types such as
``MatMul``, ``Conv2D``, ``Conv2DBackpropInput`` join the groups of the matching aten ops).  The user
map can extend the table: mapping a name onto any member of a group puts it in the group.

Module paths use the user map too (spec f.12: the reference computes the replacement and
discards it); there it is a substring replacement inside the path.

Engines take the parsed map (``Options.op_name_map``: ((from, to), ...)); reading it from a file
or an inline literal is the callers' business (``name_map_input``).
"""
from __future__ import annotations

from typing import Iterable

# canonical key -> spellings on either platform.  Data, not code: extend freely.  A group added
# for another framework (MindSpore op types: MatMul, Conv2D, ...) names one PyTorch spelling, so
# it never folds two distinct PyTorch ops together in a PyTorch GPU <-> NPU pair.
BUILTIN_ALIASES: dict[str, tuple[str, ...]] = {
    "~matmul": ("MatMul", "MatMulV2", "Dense", "aten::mm", "aten::matmul", "aten::addmm", "aten::linear",
                "npu::npu_linear", "aten::npu_linear", "aten::npu_matmul", "npu::npu_matmul",
                "npu::npu_mm", "aten::npu_mm"),
    "~bmm": ("BatchMatMul", "BatchMatMulV2", "aten::bmm", "aten::baddbmm", "npu::npu_bmmV2", "aten::npu_bmmV2", "npu::npu_bmm"),
    "~attention": ("FlashAttentionScore", "PromptFlashAttention", "IncreFlashAttention", "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
                   "aten::_scaled_dot_product_efficient_attention",
                   "aten::_scaled_dot_product_cudnn_attention", "aten::_flash_attention_forward",
                   "aten::_efficient_attention_forward", "flash_attn::_flash_attn_forward",
                   "npu::npu_fusion_attention", "aten::npu_fusion_attention",
                   "npu::npu_flash_attention", "aten::npu_flash_attention"),
    "~attention_backward": ("FlashAttentionScoreGrad", "aten::_scaled_dot_product_flash_attention_backward",
                            "aten::_scaled_dot_product_efficient_attention_backward",
                            "aten::_scaled_dot_product_cudnn_attention_backward",
                            "aten::_flash_attention_backward", "aten::_efficient_attention_backward",
                            "flash_attn::_flash_attn_backward", "npu::npu_fusion_attention_grad",
                            "aten::npu_fusion_attention_grad", "npu::npu_flash_attention_grad"),
    "~adamw": ("AdamW", "AdamWeightDecay", "aten::_fused_adamw_", "aten::_fused_adamw", "npu::npu_apply_adam_w",
               "aten::npu_apply_adam_w"),
    "~adam": ("Adam", "ApplyAdam", "aten::_fused_adam_", "aten::_fused_adam", "npu::npu_apply_adam", "aten::npu_apply_adam"),
    "~layer_norm": ("LayerNorm", "LayerNormV3", "aten::native_layer_norm", "npu::npu_layer_norm", "aten::npu_layer_norm",
                    "npu::npu_layer_norm_eval", "aten::npu_layer_norm_eval"),
    "~layer_norm_backward": ("LayerNormGrad", "LayerNormGradV3", "LayerNormBetaGammaBackprop", "LayerNormXBackprop", "aten::native_layer_norm_backward", "npu::npu_layer_norm_backward",
                             "aten::npu_layer_norm_backward"),
    "~rms_norm": ("RmsNorm", "aten::rms_norm", "aten::_fused_rms_norm", "npu::npu_rms_norm", "aten::npu_rms_norm"),
    "~rms_norm_backward": ("RmsNormGrad", "aten::_fused_rms_norm_backward", "npu::npu_rms_norm_backward",
                           "aten::npu_rms_norm_backward"),
    "~cast": ("Cast", "aten::_to_copy", "npu::npu_dtype_cast", "aten::npu_dtype_cast",
              "npu::_npu_dtype_cast", "aten::_npu_dtype_cast"),
    "~gelu": ("GeLU", "Gelu", "FastGelu", "aten::gelu", "npu::npu_gelu", "aten::npu_gelu"),
    "~gelu_backward": ("GeLUGrad", "GeluGrad", "FastGeluGrad", "aten::gelu_backward", "npu::npu_gelu_backward", "aten::npu_gelu_backward"),
    "~silu": ("SiLU", "Swish", "aten::silu", "npu::npu_silu", "aten::npu_silu"),
    "~dropout": ("Dropout", "DropoutDoMask", "DropOutDoMask", "DropOutGenMask", "DropoutGenMask", "aten::native_dropout", "npu::npu_dropout", "aten::npu_dropout",
                 "npu::_npu_dropout", "aten::_npu_dropout"),
    "~dropout_backward": ("DropoutGrad", "aten::native_dropout_backward", "npu::npu_dropout_backward",
                          "aten::npu_dropout_backward"),
    "~softmax": ("Softmax", "aten::_softmax", "npu::npu_softmax", "aten::npu_softmax"),
    "~conv2d": ("aten::conv2d", "Conv2D"),
    "~conv2d_backward": ("autograd::engine::evaluate_function: ConvolutionBackward0",
                         "autograd::engine::evaluate_function: CudnnConvolutionBackward0",
                         "Conv2DBackpropInput", "Conv2DBackpropFilter",
                         "Conv2DBackpropInputD", "Conv2DBackpropFilterD"),
    "~batch_norm": ("aten::batch_norm", "BatchNorm", "BNTrainingReduce", "BNTrainingUpdate",
                    "BNInfer"),
    "~batch_norm_backward": ("autograd::engine::evaluate_function: CudnnBatchNormBackward0",
                             "BatchNormGrad", "BNTrainingUpdateGrad", "BNTrainingReduceGrad"),
    "~relu": ("aten::relu", "ReLU", "ReLUV2", "ReluV2"),
    "~relu_backward": ("autograd::engine::evaluate_function: ReluBackward0", "ReluGrad", "ReluGradV2"),
    "~max_pool": ("aten::max_pool2d", "MaxPool", "MaxPoolWithArgmax"),
    "~avg_pool": ("aten::adaptive_avg_pool2d", "AvgPool", "ReduceMean"),
    "~add": ("aten::add", "Add", "TensorAdd", "AddN"),
    "~mul": ("aten::mul", "Mul"),
    "~div": ("aten::div", "RealDiv", "Div"),
    "~sum": ("aten::sum", "ReduceSum"),
    "~bias_add": ("BiasAdd",),
    "~embedding": ("aten::embedding", "GatherV2", "Gather"),
    "~embedding_backward": ("aten::embedding_backward", "UnsortedSegmentSum"),
    "~cross_entropy": ("aten::cross_entropy_loss", "SoftmaxCrossEntropyWithLogits",
                       "SparseSoftmaxCrossEntropyWithLogits"),
    "~all_reduce": ("c10d::allreduce_", "AllReduce", "HcomAllReduce"),
    "~all_gather": ("c10d::allgather_", "AllGather", "HcomAllGather"),
    "~reduce_scatter": ("c10d::reduce_scatter_", "ReduceScatter", "HcomReduceScatter"),
    "~rotary": ("npu::npu_rotary_mul", "aten::npu_rotary_mul", "apex::fused_rope",
                "flash_attn::rotary"),
}
_ALIAS_OF = {name: key for key, names in BUILTIN_ALIASES.items() for name in names}


class NameMapper:
    """Matching keys for operator names and module paths of one comparison."""

    def __init__(self, pairs: Iterable = (), cross_device: bool = False) -> None:
        self.pairs = tuple(pairs or ())
        self.user = dict(self.pairs)
        self.cross_device = cross_device
        self._cache: dict[str, str] = {}

    @classmethod
    def for_profiles(cls, base, target, pairs: Iterable = ()) -> "NameMapper":
        return cls(pairs, cross_device=(base.meta.device != target.meta.device
                                        or base.meta.framework != target.meta.framework))

    def key(self, name: str) -> str:
        k = self._cache.get(name)
        if k is None:
            k = self.user.get(name, name)
            if self.cross_device:
                k = _ALIAS_OF.get(k, k)
            self._cache[name] = k
        return k

    def keys(self, names: Iterable[str]) -> list[str]:
        return [self.key(n) for n in names]

    def module_key(self, path: str) -> str:
        for old, new in self.pairs:
            path = path.replace(old, new)
        return path

    def user_key(self, name: str) -> str:
        """The key from the user map alone (no alias table): how the statistics by name merge
        a baseline name with a target name the user paired."""
        return self.user.get(name, name)

    def folds(self, a: str, b: str) -> bool:
        """Whether names ``a`` and ``b`` get the same matching key (and so may be paired)."""
        return self.key(a) == self.key(b)
