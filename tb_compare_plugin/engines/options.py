"""What a comparison is asked to do: :class:`Options`, everything that changes a comparison's
numbers (part of every cache key).  Lives with the engines, which read it; the service, the CLI
and the routes build it."""
from __future__ import annotations

from dataclasses import dataclass, asdict


@dataclass(frozen=True)
class Options:
    """Everything that changes a comparison's numbers (part of the cache key)."""
    base_step: int | None = None
    target_step: int | None = None
    per_step: bool | None = None          # None: automatic (per-step when step counts differ)
    op_name_map: tuple = ()               # ((from, to), ...)
    use_input_shape: bool = False
    max_kernel_num: int | None = None
    disable_details: bool = False
    disable_module: bool = False          # operator sheets even when both sides have modules
    reference_compat: bool = False        # overall figures as msprof-analyze compare makes them

    def key(self) -> tuple:
        return tuple(sorted(asdict(self).items()))
