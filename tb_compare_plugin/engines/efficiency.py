"""Device efficiency of one profile: GPU Utilization, Est. SM Efficiency, Est. Achieved
Occupancy and the tensor-core kernel-time ratio as the PyTorch Profiler plugin defines them, and
on NPUs the AI Core busy ratio (and cube/vector utilisation from the PMU columns).  Pure.
"""
from __future__ import annotations

EFFICIENCY = ("gpu_utilization", "sm_efficiency", "achieved_occupancy", "tensor_core_ratio",
              "ai_core_utilization")


def side_efficiency(profile) -> dict:
    """``{key: value or None}`` for every key of ``steps.EFFICIENCY`` (skeleton: all None)."""
    return {k: None for k in EFFICIENCY}
