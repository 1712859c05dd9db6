"""What a request's parameters may name, checked before any job starts: the steps each parsed
side holds (``base_step`` / ``target_step``).  A bad value is :class:`~.errors.BadParameter`
(the routes' 400, naming the parameter and the valid choices), the same answer every time."""
from __future__ import annotations

from .errors import BadParameter

MAX_LISTED = 20          # choices spelled out in the message (the answer's ``choices`` hold more)
MAX_CHOICES = 200        # choices carried in the answer


def choices_text(choices, listed: int = MAX_LISTED) -> str:
    """``1, 2, 3`` or ``1, 2, ... (500 in all)``; ``none`` when there are none."""
    items = [str(c) for c in choices]
    if not items:
        return "none"
    if len(items) <= listed:
        return ", ".join(items)
    return ", ".join(items[:listed]) + f", ... ({len(items)} in all)"


def bad_parameter(name: str, problem: str, choices, what: str = "valid values") -> BadParameter:
    """A BadParameter whose message names ``name`` and the choices, e.g.
    ``parameter 'target_step': step 99 is not in target X (valid steps: 1, 2)``."""
    choices = list(choices)
    return BadParameter(name, f"parameter {name!r}: {problem} ({what}: {choices_text(choices)})",
                        choices[:MAX_CHOICES])


def check_step(profile, step: int | None, parameter: str, role: str, worker_id: str) -> None:
    """``step`` (None: the whole capture) must be one of the steps ``profile`` holds."""
    if step is None:
        return
    valid = profile.step_ids()
    if int(step) not in valid:
        raise bad_parameter(parameter, f"step {step} is not in the {role} {worker_id}", valid,
                            "valid steps")


def check_steps(base_profile, target_profile, options, base_id: str, target_id: str) -> None:
    """Both sides' step options against what each parsed side holds."""
    check_step(base_profile, options.base_step, "base_step", "baseline", base_id)
    check_step(target_profile, options.target_step, "target_step", "target", target_id)
