"""The step engine on samples/ (6 steps a side, planted step-level differences; samples/README.md,
samples/expected.json "steps"): every step's duration, phases, DataLoader and memcpy equal the
generator's figures; on the demo pair the data-loader stall (phases.iteration_gap) and the slower
optimizer (phases.tail_compute) are the top two step-level differences at their planted sizes
(±2%), beyond noise; the noise-only metric is within noise; every planted verdict holds.
One parse per sample run (module fixture).
"""
from __future__ import annotations

import json

import pytest

from conftest import SAMPLES
from tb_compare_plugin.engines.steps import compare_steps, side_steps
from tb_compare_plugin.loaders import load

EXPECTED = json.loads((SAMPLES / "expected.json").read_text())
STEPS = EXPECTED.get("steps")
pytestmark = pytest.mark.skipif(not STEPS, reason="samples/expected.json has no 'steps' section yet")

RUNS = {"baseline_gpu": ("trace-json", SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"),
        "target_npu": ("ascend-text", SAMPLES / "target_npu" / "rank0_ascend_pt"),
        "target_npu_v2": ("ascend-text", SAMPLES / "target_npu_v2" / "rank0_ascend_pt")}
PAIRS = {"target_npu vs baseline_gpu": ("baseline_gpu", "target_npu"),
         "target_npu_v2 vs target_npu": ("target_npu", "target_npu_v2")}
TOL_MS = 1e-3


@pytest.fixture(scope="module")
def profiles():
    return {r: load(fmt, str(path)) for r, (fmt, path) in RUNS.items()}


@pytest.mark.parametrize("run", list(RUNS))
def test_every_step_equals_the_generators_figures(run, profiles):
    side = side_steps(profiles[run])
    want = STEPS["runs"][run]["steps"]
    assert [r.step for r in side.steps] == [w["step"] for w in want]
    for row, w in zip(side.steps, want):
        got = {"duration_ms": row.duration_ns / 1e6,
               **{f"{k}_ms": v / 1e6 for k, v in row.phases_ns.items()},
               "dataloader_ms": row.breakdown_ns["dataloader"] / 1e6,
               "memcpy_ms": row.breakdown_ns["memcpy"] / 1e6}
        for key, value in got.items():
            if key in w:
                assert value == pytest.approx(w[key], abs=TOL_MS), (run, row.step, key)
        assert sum(row.breakdown_ns.values()) == row.duration_ns


def test_stall_and_optimizer_are_the_top_two_differences(profiles):
    sc = compare_steps(profiles["baseline_gpu"], profiles["target_npu"])
    top = sc.top_differences(2)
    planted = {p["metric"]: p for p in STEPS["planted"]
               if p["pair"] == "target_npu vs baseline_gpu" and p.get("rank") in (1, 2)}
    assert [m.name for m in top] == ["phases.iteration_gap", "phases.tail_compute"]
    for m in top:
        size = planted[m.name]["per_step_ms"]
        assert m.diff_ms == pytest.approx(size, rel=0.02), m.name
        assert m.within_noise is False
    ranking = STEPS["diffs"]["target_npu - baseline_gpu"]["leaf_phase_ranking"]
    assert [m.name for m in sc.top_differences()] == ranking


def test_noise_only_metric_is_within_noise_and_every_planted_verdict_holds(profiles):
    done = 0
    for p in STEPS["planted"]:
        pairs = ([("baseline_gpu", "target_npu"), ("baseline_gpu", "target_npu_v2"), ("target_npu", "target_npu_v2")]
                 if p["pair"] == "every pair" else [PAIRS[p["pair"]]])
        for a, b in pairs:
            m = compare_steps(profiles[a], profiles[b]).metric(p["metric"])
            assert m.within_noise is p["within_noise"], (p["pair"], a, b, p["metric"], m.p_value)
            if p.get("per_step_ms") is not None:
                assert m.diff_ms == pytest.approx(p["per_step_ms"], abs=0.02 * abs(p["per_step_ms"]) + TOL_MS)
            done += 1
    assert done >= 8
