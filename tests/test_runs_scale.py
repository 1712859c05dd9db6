"""Issue 21 §2 and §7 (second bullet): the suggested pairs of the runs listing are ranked and
bounded (the best few per run, a cap on the whole), so a logdir of a thousand runs answers a
small listing; runs that differ by a version are suggested within one device and across
devices, among them the samples' ``target_npu`` -> ``target_npu_v2``. No timings: the bounds are
on counts and bytes."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from bench.runs_route import make_logdir
from tb_compare_plugin.presenters.runs_json import suggest_pairs, suggest_pairs_counted

from conftest import SAMPLES, needs_samples
from test_suggest_pairs import _run, runs_route


def _per_run(pairs: list[dict]) -> Counter:
    return Counter(n for p in pairs for n in (p["baseline"], p["target"]))


def test_a_thousand_versions_give_a_bounded_ranked_list():
    runs = [_run(f"run_{i:04d}", "GPU") for i in range(1000)]
    pairs, left_off = suggest_pairs_counted(runs)
    assert 0 < len(pairs) <= 100, len(pairs)                     # today: 499,500
    assert max(_per_run(pairs).values()) <= 4
    assert left_off > 0                                          # what the bounds left off is counted
    # the nearest versions first, the earlier one the baseline
    assert (pairs[0]["baseline"], pairs[0]["target"]) == ("run_0000", "run_0001")
    assert all(p["baseline"] < p["target"] for p in pairs)
    assert all("version-like" in p["reason"] for p in pairs)


def test_thousands_of_gpu_and_npu_runs_in_one_folder_pair_by_name():
    runs = [_run(f"gpu_{i:04d}", "GPU") for i in range(1500)] + [_run(f"npu_{i:04d}", "NPU") for i in range(1500)]
    pairs, left_off = suggest_pairs_counted(runs)
    assert len(pairs) <= 100 and max(_per_run(pairs).values()) <= 4 and left_off > 0
    # each GPU run's first partner is the NPU run of the same name but for the device
    first = {}
    for p in pairs:
        first.setdefault(p["baseline"], p["target"])
    assert all(t == b.replace("gpu", "npu") for b, t in first.items()), first


def test_versions_within_one_device_and_across_devices():
    runs = [_run("exp/bert_gpu", "GPU"), _run("exp/bert_npu", "NPU"), _run("exp/bert_npu_v2", "NPU")]
    got = [(p["baseline"], p["target"]) for p in suggest_pairs(runs)]
    assert got == [("exp/bert_gpu", "exp/bert_npu"), ("exp/bert_gpu", "exp/bert_npu_v2"),
                   ("exp/bert_npu", "exp/bert_npu_v2")], got
    # a version across devices is one suggestion, GPU first (not also the other way round)
    got = [(p["baseline"], p["target"]) for p in suggest_pairs([_run("exp/v2", "GPU"), _run("exp/v1", "NPU")])]
    assert got == [("exp/v2", "exp/v1")], got
    # the earlier version is the baseline: numbers as numbers, old before new
    for a, b in (("exp/v9", "exp/v10"), ("exp/old", "exp/new"), ("exp/before", "exp/after"),
                 ("resnet_run", "resnet_run_v2")):
        p, = suggest_pairs([_run(b, "NPU"), _run(a, "NPU")])
        assert (p["baseline"], p["target"]) == (a, b), p
    # a version added to one of two sibling trees
    p, = suggest_pairs([_run("base/bert", "NPU"), _run("base_v2/bert", "NPU")])
    assert (p["baseline"], p["target"]) == ("base/bert", "base_v2/bert") and "version" in p["reason"], p
    # still not versions: two ranks, or names that differ by more than a version
    assert suggest_pairs([_run("job/rank0", "NPU"), _run("job/rank1", "NPU")]) == []
    assert suggest_pairs([_run("exp/bert_v1", "NPU"), _run("exp/gpt_v2", "NPU")]) == []
    assert suggest_pairs([_run("exp/a_b", "NPU"), _run("exp/a-b", "NPU")]) == []


@needs_samples
def test_samples_suggest_the_new_software_version():
    body = runs_route(SAMPLES)
    got = [(p["baseline"], p["target"]) for p in body["pairs"]]
    assert got[0] == ("baseline_gpu", "target_npu"), got                 # the tab still opens this one
    assert ("target_npu", "target_npu_v2") in got, got                   # today: missing
    p = body["pairs"][got.index(("target_npu", "target_npu_v2"))]
    assert (p["baseline_worker"], p["target_worker"]) == ("target_npu/rank0_ascend_pt", "target_npu_v2/rank0_ascend_pt")
    assert {("baseline_gpu", "target_npu_v2"), ("graph_mode/base", "graph_mode/target"),
            ("msprof_tf/baseline", "msprof_tf/target")} <= set(got), got
    assert body["pairs_left_off"] == 0


@pytest.fixture(scope="module")
def thousand_runs(tmp_path_factory):
    return make_logdir(tmp_path_factory.mktemp("runs"), 1000)


def test_runs_route_on_a_thousand_run_folders_is_small(thousand_runs):
    body = runs_route(thousand_runs)
    size = len(json.dumps(body))
    assert len(body["runs"]) == 1000
    assert size < 1_000_000, size                                        # today: 86 MB
    assert len(body["pairs"]) <= 100 and max(_per_run(body["pairs"]).values()) <= 4
    assert body["pairs_left_off"] > 0
    p = body["pairs"][0]
    assert (p["baseline"], p["target"]) == ("run_0000", "run_0001")
    assert (p["baseline_worker"], p["target_worker"]) == ("run_0000/worker0", "run_0001/worker0")
