"""Environment switches: the one rule for a ``TB_COMPARE_*`` variable that turns a feature off
(``0``, ``false``, ``no`` or ``off``, any case, surrounding spaces ignored; unset or anything else
leaves it on)."""
from __future__ import annotations

import os

OFF = ("0", "false", "no", "off")


def switched_off(name: str) -> bool:
    """Whether the environment variable ``name`` turns its feature off."""
    return os.environ.get(name, "").strip().lower() in OFF
