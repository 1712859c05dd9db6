"""The per-step choice of a comparison: whether its figures are per step, and what each side is
divided by.  One decision (:func:`decide`) that the overview and every table (kernel, API,
operator, module, memory) and the workbook follow, so no view adds up six steps against one.

A side's step count is the number of steps it covers: 1 when a step was chosen, else the
number of distinct steps its steps table holds (at least 1).  A side without step markers
covers an unknown number of steps and is never divided.  ``per_step``: None = automatic
(per step when the two counts differ and both sides have markers; raw in reference-compatible
mode, as the reference never divides), True = divide each marked side, False = raw.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepScale:
    per_step: bool
    base_steps: int
    target_steps: int
    base_marked: bool = True
    target_marked: bool = True
    automatic: bool = True              # the choice was made by the rule, not asked for

    @property
    def base_div(self) -> int:
        return self.base_steps if self.per_step and self.base_marked else 1

    @property
    def target_div(self) -> int:
        return self.target_steps if self.per_step and self.target_marked else 1

    @property
    def divisors(self) -> tuple[int, int]:
        return self.base_div, self.target_div

    def note(self) -> str:
        """What the tables' figures are, in one line the tab and the workbook show."""
        if self.per_step:
            return (f"Per step: baseline ÷{self.base_div}, target ÷{self.target_div} "
                    "(totals divided by each side's step count; counts are averages).")
        why = ""
        if self.base_steps != self.target_steps:
            unmarked = [w for w, m in (("baseline", self.base_marked), ("target", self.target_marked)) if not m]
            why = (f" ({' and '.join(unmarked)} without step markers)" if unmarked and self.automatic
                   else f" (baseline {self.base_steps} steps, target {self.target_steps})")
        return f"Raw: whole-capture totals, not divided by the step count{why}."

    def to_dict(self) -> dict:
        return {"per_step": self.per_step,
                "divisor": {"baseline": self.base_div, "target": self.target_div},
                "steps_count": {"baseline": self.base_steps, "target": self.target_steps},
                "note": self.note()}


def side_steps(profile, step: int | None) -> tuple[int, bool]:
    """(steps covered, has step markers) of one side, as the overall breakdown counts them."""
    if step is not None:
        return 1, True
    steps = profile.tables["steps"]
    n = int(steps["step"].nunique()) if len(steps) else 0
    return max(1, n), n > 0


def decide(base_steps: int, base_marked: bool, target_steps: int, target_marked: bool,
           per_step: bool | None, reference_compat: bool = False) -> StepScale:
    """THE per-step rule (see the module docstring)."""
    automatic = per_step is None
    if per_step is None:
        per_step = (not reference_compat and base_steps != target_steps
                    and base_marked and target_marked)
    return StepScale(bool(per_step), base_steps, target_steps, base_marked, target_marked, automatic)


def step_scale(base, target, options) -> StepScale:
    """The per-step choice for two profiles under ``options`` (engines.options.Options)."""
    return decide(*side_steps(base, options.base_step), *side_steps(target, options.target_step),
                  options.per_step, options.reference_compat)


def divided(values, div: float):
    """``values`` / ``div``; unchanged (an int count stays an int) when ``div`` is 1."""
    return values if div == 1 else values / float(div)
