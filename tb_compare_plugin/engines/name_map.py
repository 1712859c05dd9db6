"""Operator name mapping: the user's ``--op_name_map`` plus a built-in GPU <-> NPU alias table.

A matching key is built per operator name: the user map (exact full-name lookup, either side,
spec c.3) is applied first, then, only when the two profiles come from different devices, the
built-in alias table folds names that mean the same operation on the two platforms into one
key (``aten::_fused_adamw_`` and ``npu::npu_apply_adam_w`` both become ``~adamw``).  The user
map can extend the table: mapping a name onto any member of a group puts it in the group.

Module paths use the user map too (spec f.12: the reference computes the replacement and
discards it); there it is a substring replacement inside the path.

Engines take the parsed map (``Options.op_name_map``: ((from, to), ...)); reading it from a file
or an inline literal is the callers' business (``name_map_input``).
"""
from __future__ import annotations

from typing import Iterable

# canonical key -> spellings on either platform.  Data, not code: extend freely.
BUILTIN_ALIASES: dict[str, tuple[str, ...]] = {
    "~matmul": ("aten::mm", "aten::matmul", "aten::addmm", "aten::linear",
                "npu::npu_linear", "aten::npu_linear", "aten::npu_matmul", "npu::npu_matmul",
                "npu::npu_mm", "aten::npu_mm"),
    "~bmm": ("aten::bmm", "aten::baddbmm", "npu::npu_bmmV2", "aten::npu_bmmV2", "npu::npu_bmm"),
    "~attention": ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
                   "aten::_scaled_dot_product_efficient_attention",
                   "aten::_scaled_dot_product_cudnn_attention", "aten::_flash_attention_forward",
                   "aten::_efficient_attention_forward", "flash_attn::_flash_attn_forward",
                   "npu::npu_fusion_attention", "aten::npu_fusion_attention",
                   "npu::npu_flash_attention", "aten::npu_flash_attention"),
    "~attention_backward": ("aten::_scaled_dot_product_flash_attention_backward",
                            "aten::_scaled_dot_product_efficient_attention_backward",
                            "aten::_scaled_dot_product_cudnn_attention_backward",
                            "aten::_flash_attention_backward", "aten::_efficient_attention_backward",
                            "flash_attn::_flash_attn_backward", "npu::npu_fusion_attention_grad",
                            "aten::npu_fusion_attention_grad", "npu::npu_flash_attention_grad"),
    "~adamw": ("aten::_fused_adamw_", "aten::_fused_adamw", "npu::npu_apply_adam_w",
               "aten::npu_apply_adam_w"),
    "~adam": ("aten::_fused_adam_", "aten::_fused_adam", "npu::npu_apply_adam", "aten::npu_apply_adam"),
    "~layer_norm": ("aten::native_layer_norm", "npu::npu_layer_norm", "aten::npu_layer_norm",
                    "npu::npu_layer_norm_eval", "aten::npu_layer_norm_eval"),
    "~layer_norm_backward": ("aten::native_layer_norm_backward", "npu::npu_layer_norm_backward",
                             "aten::npu_layer_norm_backward"),
    "~rms_norm": ("aten::rms_norm", "aten::_fused_rms_norm", "npu::npu_rms_norm", "aten::npu_rms_norm"),
    "~rms_norm_backward": ("aten::_fused_rms_norm_backward", "npu::npu_rms_norm_backward",
                           "aten::npu_rms_norm_backward"),
    "~cast": ("aten::_to_copy", "npu::npu_dtype_cast", "aten::npu_dtype_cast",
              "npu::_npu_dtype_cast", "aten::_npu_dtype_cast"),
    "~gelu": ("aten::gelu", "npu::npu_gelu", "aten::npu_gelu"),
    "~gelu_backward": ("aten::gelu_backward", "npu::npu_gelu_backward", "aten::npu_gelu_backward"),
    "~silu": ("aten::silu", "npu::npu_silu", "aten::npu_silu"),
    "~dropout": ("aten::native_dropout", "npu::npu_dropout", "aten::npu_dropout",
                 "npu::_npu_dropout", "aten::_npu_dropout"),
    "~dropout_backward": ("aten::native_dropout_backward", "npu::npu_dropout_backward",
                          "aten::npu_dropout_backward"),
    "~softmax": ("aten::_softmax", "npu::npu_softmax", "aten::npu_softmax"),
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
        return cls(pairs, cross_device=base.meta.device != target.meta.device)

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
