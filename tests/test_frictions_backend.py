"""Issue 14, item 9 (backend): profiler levels are not versions in the suggested pairs; a
``--target-rank`` pick from a run folder keeps the run's name; the Communication view says why
its Notify_Wait totals dwarf the overview's Wait."""
from __future__ import annotations


import pytest

from tb_compare_plugin.presenters.runs_json import suggest_pairs

from conftest import CORPUS, needs_corpus
from test_cli import tbc
from test_plugin_routes import make_client, post_until_done, run_worker_ids
from test_suggest_pairs import _run


def test_profiler_levels_are_not_called_versions():
    runs = [_run("npu/alexnet_ddp_2rank_level0", "NPU", ranks=(0, 1)),
            _run("npu/alexnet_ddp_2rank_level1", "NPU", ranks=(0, 1))]
    p, = suggest_pairs(runs)
    assert (p["baseline"], p["target"]) == ("npu/alexnet_ddp_2rank_level0", "npu/alexnet_ddp_2rank_level1")
    assert "version" not in p["reason"] and "profiler level (level0 and level1)" in p["reason"], p["reason"]
    p, = suggest_pairs([_run("exp/v1", "GPU"), _run("exp/v2", "GPU")])
    assert "version-like" in p["reason"]
    p, = suggest_pairs([_run("level0/bert", "NPU"), _run("level1/bert", "NPU")])
    assert "version" not in p["reason"] and "profiler level" in p["reason"], p["reason"]


@needs_corpus
def test_rank_picked_from_a_run_folder_keeps_the_run_name():
    run = CORPUS / "npu/alexnet_ddp_2rank_level1"
    r = tbc(run, run, "--base-rank", 0, "--target-rank", 1, "--no-progress", "--no-cache")
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[:2]
    assert head[0].startswith("Baseline: alexnet_ddp_2rank_level1/rank0_ascend_pt"), head
    assert head[1].startswith("Target:   alexnet_ddp_2rank_level1/rank1_ascend_pt"), head


@pytest.fixture(scope="module")
def npu_pair(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path_factory.mktemp("frictions")))
    c = make_client(CORPUS / "npu")
    ids = run_worker_ids(c, "alexnet_ddp_2rank_level1", 2)
    yield c, {"baseline": ids[0], "target": ids[1]}
    mp.undo()


@needs_corpus
def test_communication_view_explains_notify_wait_against_the_overview_wait(npu_pair):
    c, pair = npu_pair
    comm = post_until_done(c, "/compare/communication", pair)
    waits = [t for r in comm["rows"] for t in r.get("tasks") or [] if t["name"] == "Notify_Wait"]
    assert waits and max(t["baseline"]["total_ms"] for t in waits) > 100
    note = [n for n in comm["notes"] if n.startswith("Notify_Wait here")]
    assert len(note) == 1 and "overview's Wait" in note[0] and "Not Overlapped" in note[0]
