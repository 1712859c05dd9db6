"""The planted regressions of samples/ show in the overview with their planted sizes, and
the route's JSON equals the CLI's JSON for the same pair."""
from __future__ import annotations

import functools
import json

import pytest

from cli_inproc import run_cli
from conftest import SAMPLES
from test_plugin_routes import PREFIX, make_client

EXPECTED = json.loads((SAMPLES / "expected.json").read_text())
RUNS = {"baseline_gpu": ("baseline_gpu/worker0", SAMPLES / "baseline_gpu/worker0.pt.trace.json"),
        "target_npu": ("target_npu/rank0_ascend_pt", SAMPLES / "target_npu/rank0_ascend_pt"),
        "target_npu_v2": ("target_npu_v2/rank0_ascend_pt", SAMPLES / "target_npu_v2/rank0_ascend_pt")}


@functools.lru_cache(maxsize=None)
def _cli_stdout(base, target, *extra) -> str:
    r = run_cli(RUNS[base][1], RUNS[target][1], "--json", "-", *extra)
    assert r.returncode == 0, r.stderr
    return r.stdout


def cli_json(base, target, *extra):
    """The CLI's JSON for the pair: the command's ``main`` in this process (cli_inproc), run once
    per pair and options for the module (the tests read the same pairs), parsed afresh for each
    caller."""
    return json.loads(_cli_stdout(base, target, *extra))


def rows(payload):
    return {m["name"]: m for m in payload["overall_metrics"]}


@pytest.mark.parametrize("planted", EXPECTED["planted"], ids=lambda p: f"{p['id']}-{p['overview_row']}")
def test_planted_time_regressions(planted):
    target, base = (s.strip() for s in planted["pair"].split(" vs "))
    payload = cli_json(base, target)
    r = rows(payload)
    if planted["overview_row"] == "Mem Usage":
        mem = payload["memory"]
        diff_gb = mem["target"]["peak_reserved_gb"] - mem["baseline"]["peak_reserved_gb"]
        assert diff_gb * 1024 ** 3 == pytest.approx(planted["peak_bytes"], rel=0.02)
        return
    name = planted["overview_row"].split(" / ")[0]
    assert r[name]["diff_ms"] == pytest.approx(planted["capture_us"] / 1000, rel=0.02)
    if "wait_capture_us" in planted:
        wait = r["Wait"]
        assert wait["diff_ms"] == pytest.approx(planted["wait_capture_us"] / 1000, rel=0.02)


def test_route_equals_cli():
    c = make_client(SAMPLES)
    q = f"baseline={RUNS['baseline_gpu'][0]}&target={RUNS['target_npu'][0]}"
    r = c.post(PREFIX + "/compare/overall", data=json.dumps({"baseline": RUNS["baseline_gpu"][0],
                                                            "target": RUNS["target_npu"][0]}),
               content_type="application/json")
    assert r.status_code == 200, r.get_data()[:300]
    route = json.loads(r.get_data())
    cli = cli_json("baseline_gpu", "target_npu")
    assert route["overall_metrics"] == cli["overall_metrics"]
    assert route["communication"] == cli["communication"]
    assert route["notes"] == cli["notes"]
    assert route["baseline"] == cli["baseline"] and route["target"] == cli["target"]



def test_reference_compat_route_equals_cli_and_says_so():
    """The same switch on the route (``reference_compat=1``) and the CLI (``--reference-compat``)
    gives the same figures, marked in the JSON; it is part of the cache keys (the default
    figures, asked for first, are not served again)."""
    c = make_client(SAMPLES)
    body = {"baseline": RUNS["baseline_gpu"][0], "target": RUNS["target_npu"][0]}
    ours = c.post(PREFIX + "/compare/overall", data=json.dumps(body), content_type="application/json")
    assert ours.status_code == 200, ours.get_data()[:300]
    ours = json.loads(ours.get_data())
    r = c.post(PREFIX + "/compare/overall", data=json.dumps({**body, "reference_compat": 1}),
               content_type="application/json")
    assert r.status_code == 200, r.get_data()[:300]
    route = json.loads(r.get_data())
    cli = cli_json("baseline_gpu", "target_npu", "--reference-compat")
    assert route["reference_compat"] is True and cli["reference_compat"] is True
    assert ours["reference_compat"] is False
    assert route["overall_metrics"] == cli["overall_metrics"] and route["notes"] == cli["notes"]
    # the reference pairs no GPU group with an NPU group (docs/deviations.md): the rows differ
    assert [m["name"] for m in route["overall_metrics"]] != [m["name"] for m in ours["overall_metrics"]]
    assert any("Reference-compatible" in n for n in route["notes"])
    bad = c.get(PREFIX + "/compare/overall", query_string={**body, "reference_compat": "yes"})
    assert bad.status_code == 400

def test_parts_add_up_to_e2e():
    for base, target in (("baseline_gpu", "target_npu"), ("target_npu", "target_npu_v2")):
        r = rows(cli_json(base, target))
        for side in ("baseline", "target"):
            parts = sum(r[n][side]["duration_ms"] for n in ("Computing Time", "Uncovered Communication Time",
                                                            "Free Time") if n in r)
            parts += r["Lccl"][side]["duration_ms"] if "Lccl" in r else 0.0
            assert parts == pytest.approx(r["E2E Time"][side]["duration_ms"], abs=1e-6)


@pytest.mark.parametrize("step", [1, 2, 6])
def test_step_figures_match_expected(step):
    """One step on each side: E2E runs until the next step's device work begins (the gap is
    that step's Free time), on GPU as on NPU; the last step ends at its last task."""
    payload = cli_json("baseline_gpu", "target_npu", "--base-step", str(step), "--target-step", str(step))
    r = rows(payload)
    for side, run in (("baseline", "baseline_gpu"), ("target", "target_npu")):
        fig = EXPECTED["runs"][run]["figures"][str(step)]
        for name, key in (("E2E Time", "e2e_ms"), ("Computing Time", "computing_ms"), ("Free Time", "free_ms")):
            assert r[name][side]["duration_ms"] == pytest.approx(fig[key], abs=1e-6), (side, name)
