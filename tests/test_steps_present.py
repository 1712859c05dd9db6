"""Where the step comparison shows, outside the tab: the ``compare/steps`` route, ``"steps"`` in
``tb-compare --json``, the ``--steps`` table, the StepCompare / Efficiency sheets and the
overview's step hints all carry the same figures, on samples/ and on real corpus runs; failures
are one line.  Each pair is parsed once per module (the CLI's parsed-profile cache is the
session's TB_COMPARE_CACHE_DIR, which the plugin shares)."""
from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import openpyxl
import pytest

from conftest import CORPUS, SAMPLES, needs_corpus
from test_plugin_routes import PREFIX, make_client, post_until_done

from tb_compare_plugin import cli

SAMPLE_IDS = {"baseline": "baseline_gpu/worker0", "target": "target_npu/rank0_ascend_pt"}
SAMPLE_PATHS = (SAMPLES / "baseline_gpu/worker0.pt.trace.json", SAMPLES / "target_npu/rank0_ascend_pt")
GPU_RUN = "gpu/kineto_resnet50_num_workers_0"
GPU_FILES = ("worker0.1623143089861.pt.trace.json.gz", "worker0.1623143566756.pt.trace.json.gz")
NPU_RUN = "npu/alexnet_ddp_2rank_level1"


def run_cli(*args) -> tuple[int, str, str]:
    """``tb-compare`` in a subprocess: (exit code, stdout, stderr)."""
    r = subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", *map(str, args), "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def one_line_error(code: int, err: str) -> str:
    assert code == cli.EXIT_FAIL, err
    err = err.strip()
    assert err.startswith("tb-compare: error:") and len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


class Pair:
    """One pair seen through every front door: the route's answer, the CLI's JSON and --steps
    text, and the workbook the CLI wrote."""

    def __init__(self, logdir, ids: dict, paths: tuple, tmp) -> None:
        c = make_client(logdir)
        self.route = post_until_done(c, "/compare/steps", ids)
        self.overall = post_until_done(c, "/compare/overall", ids)
        xlsx, out = tmp / "cmp.xlsx", tmp / "cmp.json"
        code, self.text, err = run_cli(*paths, "--json", out, "--xlsx", xlsx, "--steps", "-q")
        assert code == 0, err
        self.cli = json.loads(out.read_text())
        self.book = openpyxl.load_workbook(xlsx, read_only=True)
        self.xlsx = xlsx


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return Pair(SAMPLES, SAMPLE_IDS, SAMPLE_PATHS, tmp_path_factory.mktemp("samples"))


@pytest.fixture(scope="module")
def corpus_gpu(tmp_path_factory):
    if not CORPUS.is_dir():
        pytest.skip("no corpus")
    ids = {"baseline": f"{GPU_RUN}/{GPU_FILES[0].split('.pt.trace')[0]}",
           "target": f"{GPU_RUN}/{GPU_FILES[1].split('.pt.trace')[0]}"}
    paths = tuple(CORPUS / GPU_RUN / f for f in GPU_FILES)
    return Pair(CORPUS / GPU_RUN, _ids_in(CORPUS / GPU_RUN, ids), paths, tmp_path_factory.mktemp("gpu"))


@pytest.fixture(scope="module")
def corpus_npu(tmp_path_factory):
    if not CORPUS.is_dir():
        pytest.skip("no corpus")
    run = CORPUS / NPU_RUN
    ids = {"baseline": "rank0_ascend_pt", "target": "rank1_ascend_pt"}
    paths = (run / "rank0_ascend_pt", run / "rank1_ascend_pt")
    return Pair(run, _ids_in(run, ids), paths, tmp_path_factory.mktemp("npu"))


def _ids_in(logdir, want: dict) -> dict:
    """The worker ids the plugin lists under ``logdir`` whose names end as ``want`` says."""
    c = make_client(logdir)
    import time
    for _ in range(200):
        runs = json.loads(c.get(PREFIX + "/runs").get_data())
        ids = [w["id"] for r in runs["runs"] for w in r["workers"]]
        got = {k: next((i for i in ids if i.endswith(v.rsplit("/", 1)[-1])), None) for k, v in want.items()}
        if all(got.values()):
            return got
        time.sleep(0.05)
    raise AssertionError(f"workers {want} not listed under {logdir}: {ids}")


PAIRS = ["samples", pytest.param("corpus_gpu", marks=needs_corpus), pytest.param("corpus_npu", marks=needs_corpus)]


@pytest.fixture
def pair(request):
    return request.getfixturevalue(request.param)


# ----------------------------------------------------------------------------- one object everywhere

@pytest.mark.parametrize("pair", PAIRS, indirect=True)
def test_route_json_is_the_cli_json(pair):
    assert pair.route == pair.cli["steps"]
    for key in ("baseline", "target", "metrics", "noise_test", "top_differences", "notes"):
        assert key in pair.route
    names = [m["name"] for m in pair.route["metrics"]]
    assert names[0] == "step_time" and "phases.iteration_gap" in names and "breakdown.kernel" in names
    for side in ("baseline", "target"):
        s = pair.route[side]
        assert s["steps"], side
        for st in s["steps"]:
            assert set(st["breakdown_ms"]) >= {"kernel", "memcpy", "memset", "communication", "runtime",
                                               "dataloader", "cpu_exec", "other"}
            assert set(st["phases_ms"]) >= {"iteration_gap", "fwd_bwd", "tail"}
        assert set(s["efficiency"]) >= {"gpu_utilization", "sm_efficiency", "achieved_occupancy",
                                        "tensor_core_ratio", "ai_core_utilization"}


@pytest.mark.parametrize("pair", PAIRS, indirect=True)
def test_steps_table_shows_every_metric_in_the_ranked_order(pair):
    steps = pair.route
    lines = pair.text.splitlines()
    assert lines[0].startswith(f"Steps: baseline {len(steps['baseline']['steps'])}, "
                               f"target {len(steps['target']['steps'])}")
    head = next(i for i, line in enumerate(lines) if line.startswith("Metric"))
    shown = [line.split()[0] for line in lines[head + 2:] if line.strip() and not line.startswith(("*", "Eff", "note"))]
    top = steps["top_differences"]
    assert shown[:len(top)] == top
    assert sorted(shown) == sorted(m["name"] for m in steps["metrics"])
    marks = {"~": True, "*": False, "?": None}
    by_name = {m["name"]: m for m in steps["metrics"]}
    for line in lines[head + 2:]:
        parts = line.split()
        if parts and parts[0] in by_name:
            m = by_name[parts[0]]
            assert marks[parts[-1]] is m["within_noise"], line
            assert f"({m['baseline']['n']})" in line and f"({m['target']['n']})" in line
    assert sum(line.startswith(("Efficiency baseline:", "Efficiency target:")) for line in lines) == 2
    assert all(len(line) <= 80 for line in lines if not line.startswith("note"))


def test_one_step_per_side_says_noise_unknown(corpus_npu):
    steps = corpus_npu.route
    if min(len(steps["baseline"]["steps"]), len(steps["target"]["steps"])) != 1:
        pytest.skip("this run has more than one step per side now")
    assert all(m["within_noise"] is None for m in steps["metrics"])
    assert any("noise unknown" in n for n in steps["notes"])
    assert "noise unknown" in corpus_npu.text


# ----------------------------------------------------------------------------- failures: one line

def test_unknown_run_is_one_line(tmp_path):
    code, out, err = run_cli(tmp_path / "nope", SAMPLE_PATHS[1], "--steps")
    assert "no such file" in one_line_error(code, err)
    assert out == ""


def test_broken_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 1')
    code, out, err = run_cli(bad, SAMPLE_PATHS[0], "--steps", "--json", tmp_path / "o.json")
    assert "bad.pt.trace.json" in one_line_error(code, err)
    assert not (tmp_path / "o.json").exists()


def test_route_errors(samples):
    c = make_client(SAMPLES)
    r = c.get(PREFIX + "/compare/steps?baseline=baseline_gpu/worker0&target=nope/x")
    assert r.status_code == 404 and "unknown worker" in json.loads(r.get_data())["error"]
    r = c.get(PREFIX + "/compare/steps?baseline=baseline_gpu/worker0")
    assert r.status_code == 400
