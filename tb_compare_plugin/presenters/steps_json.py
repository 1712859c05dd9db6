"""The step comparison as JSON: the ``"steps"`` object of issue 15, which the route
``compare/steps`` answers and ``tb-compare --json`` writes under ``"steps"`` (schema in
docs/api.md), and the ranking of step-level differences every presenter shows in one order.

The object is :meth:`engines.steps.StepsComparison.to_dict` plus, added here:

* ``"top_differences"``: the ranked step-level differences (names of ``metrics``), by the rule of
  :func:`ranked` (the engine's ``top_differences`` when it has one);
* ``"hints"``: the overview's step-level hints (:func:`step_hints`);
* ``"notes"``: each side's notes (what could not be computed, and why) as ``"baseline: ..."`` /
  ``"target: ..."``, how ``within_noise`` is decided, and that noise is unknown when a side has
  fewer than two steps.
"""
from __future__ import annotations

# the leaf phases the ranking ranks; step_time, phases.tail and breakdown.* overlap them
RANKED = ("phases.iteration_gap", "phases.fwd_bwd", "phases.tail_compute", "phases.tail_communication")

NOISE_UNKNOWN = "noise unknown (one step per side)"

# what each ranked step-level difference is, for hints
HINT_LABELS = {"phases.iteration_gap": "Iteration gap (waiting for data)",
               "phases.fwd_bwd": "Forward+backward",
               "phases.tail_compute": "Iteration tail: optimizer / gradient refresh",
               "phases.tail_communication": "Iteration tail: communication not covered by compute"}
HINT_MIN_SHARE = 0.005        # a step-level hint moves at least 0.5% of the longer mean step time
HINT_MAX = 3


def _name(m) -> str:
    return m if isinstance(m, str) else (m.get("name") if isinstance(m, dict) else m.name)


def ranked(sc, n: int | None = None) -> list:
    """The step-level differences of ``sc`` (a StepsComparison), biggest first: the leaf phase
    metrics (``RANKED``) by |diff_ms|, leaving out those ``within_noise`` and those with no or
    a zero difference.  The engine's ``top_differences(n)`` when it has one."""
    by_name = {m.name: m for m in sc.metrics}
    own = getattr(sc, "top_differences", None)
    if callable(own):
        return [by_name[_name(m)] for m in own(n) if _name(m) in by_name]
    out = [m for m in sc.metrics if m.name in RANKED and m.within_noise is not True
           and m.diff_ms is not None and m.diff_ms != 0]
    out.sort(key=lambda m: -abs(m.diff_ms))
    return out if n is None else out[:n]


def noise_word(within_noise) -> str:
    """How a metric's noise verdict reads: ``within noise``, ``beyond noise``, ``noise unknown``."""
    return {True: "within noise", False: "beyond noise"}.get(within_noise, "noise unknown")


def steps_notes(sc) -> list[str]:
    notes = []
    for who, side in (("baseline", sc.baseline), ("target", sc.target)):
        notes += [f"{who}: {n}" for n in side.notes]
        if not side.steps:
            notes.append(f"{who}: no steps (no ProfilerStep#N or Ascend step id): no step-level figures")
    nb, nt = len(sc.baseline.steps), len(sc.target.steps)
    if min(nb, nt) == 1:
        notes.append(f"{NOISE_UNKNOWN[:-1]}: the baseline has {nb} step{'s' * (nb != 1)}, the target "
                     f"{nt}; two or more on each side are needed to tell a difference from step-to-step "
                     "variation, so within_noise is null")
    if sc.noise_test:
        notes.append(f"within_noise: {sc.noise_test}")
    return notes


def step_hints(steps: dict) -> list[dict]:
    """The overview's step-level hints from a steps answer: its ``top_differences`` (never one
    within noise), at most ``HINT_MAX``, each moving at least ``HINT_MIN_SHARE`` of the longer
    mean step time; ``noise`` says "beyond noise" or, with one step on a side, "noise unknown
    (one step per side)"."""
    by_name = {m["name"]: m for m in steps.get("metrics") or []}
    st = by_name.get("step_time") or {}
    scale = max([(st.get(s) or {}).get("mean_ms") or 0.0 for s in ("baseline", "target")])
    out = []
    for name in steps.get("top_differences") or []:
        m = by_name.get(name)
        if m is None or m.get("within_noise") is True or m.get("diff_ms") is None:
            continue
        if scale and abs(m["diff_ms"]) < HINT_MIN_SHARE * scale:
            continue
        noise = NOISE_UNKNOWN if m.get("within_noise") is None else noise_word(m["within_noise"])
        out.append({"metric": name, "label": HINT_LABELS.get(name, name), "diff_ms": m["diff_ms"],
                    "ratio": m.get("ratio"), "within_noise": m.get("within_noise"), "noise": noise,
                    "n": {s: (m.get(s) or {}).get("n") for s in ("baseline", "target")}})
        if len(out) >= HINT_MAX:
            break
    return out


def steps_payload(cmp) -> dict:
    """The ``"steps"`` object of ``cmp`` (a Comparison)."""
    sc = cmp.steps()
    out = sc.to_dict()
    out["top_differences"] = [m.name for m in ranked(sc)]
    out["notes"] = list(out.get("notes") or []) + steps_notes(sc)
    out["hints"] = step_hints(out)
    from .host_overhead_json import host_overhead_steps
    out["host_overhead"] = host_overhead_steps(cmp)      # graph mode: the three host parts per step
    return out
