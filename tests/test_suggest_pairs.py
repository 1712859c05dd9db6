"""Suggested baseline -> target pairs of the runs listing: same folder, and across sibling
trees (`gpu/X` with `npu/X`), each opening workers of matching rank. The logdirs are built in
tmp_path from corpus files (symlinks), laid out as a user would."""
from __future__ import annotations

import argparse
import json
import os

from werkzeug.test import Client

from tensorboard.backend import application
from tensorboard.plugins import base_plugin

from tb_compare_plugin.loader import ProfileCompareLoader
from tb_compare_plugin.presenters.runs_json import suggest_pairs

from conftest import needs_corpus, CORPUS, track_plugin

PREFIX = "/data/plugin/profile_compare"


def runs_route(logdir) -> dict:
    ctx = base_plugin.TBContext(logdir=str(logdir), flags=argparse.Namespace(profile_compare_scan_interval=1.0))
    c = Client(application.TensorBoardWSGI([track_plugin(ProfileCompareLoader().load(ctx))]))
    r = c.get(PREFIX + "/runs")
    assert r.status_code == 200, r.get_data()[:300]
    return json.loads(r.get_data())


def link(src, dst) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(src, dst)


def gpu_run(root, ranks=(0, 1)) -> None:
    for r in ranks:
        link(CORPUS / "gpu" / "hta_2rank" / f"rank{r}.pt.trace.json.gz", root / f"rank{r}.pt.trace.json.gz")


def npu_run(root, ranks=(0, 1)) -> None:
    for r in ranks:
        link(CORPUS / "npu" / "alexnet_ddp_2rank_level0" / f"rank{r}_ascend_pt", root / f"rank{r}_ascend_pt")


@needs_corpus
def test_gpu_and_npu_sibling_trees_are_suggested(tmp_path):
    gpu_run(tmp_path / "logs" / "gpu" / "alexnet")
    npu_run(tmp_path / "logs" / "npu" / "alexnet")
    npu_run(tmp_path / "logs" / "npu" / "other", ranks=(0,))        # another model: no pair with gpu/alexnet
    body = runs_route(tmp_path)
    assert [r["name"] for r in body["runs"]] == ["logs/gpu/alexnet", "logs/npu/alexnet", "logs/npu/other"]
    pairs = [(p["baseline"], p["target"]) for p in body["pairs"]]
    assert pairs == [("logs/gpu/alexnet", "logs/npu/alexnet")], body["pairs"]
    p = body["pairs"][0]
    assert p["baseline_worker"] == "logs/gpu/alexnet/rank0" and p["target_worker"] == "logs/npu/alexnet/rank0_ascend_pt"
    assert "gpu/" in p["reason"] and "npu/" in p["reason"], p["reason"]


@needs_corpus
def test_sibling_trees_open_the_matching_rank(tmp_path):
    gpu_run(tmp_path / "gpu" / "alexnet", ranks=(1,))                # only rank 1 profiled on the GPU
    npu_run(tmp_path / "npu" / "alexnet")
    body = runs_route(tmp_path)
    assert len(body["pairs"]) == 1, body["pairs"]
    p = body["pairs"][0]
    assert (p["baseline"], p["target"]) == ("gpu/alexnet", "npu/alexnet")
    assert p["baseline_worker"] == "gpu/alexnet/rank1" and p["target_worker"] == "npu/alexnet/rank1_ascend_pt"


@needs_corpus
def test_per_rank_folders_pair_rank_with_rank(tmp_path):
    """One run per rank (`gpu/alexnet/rank0/...`): each GPU rank with the NPU run of the same
    rank, never rank 0 with rank 1, and the ranks of one device are not suggested as versions."""
    for r in (0, 1):
        gpu_run(tmp_path / "gpu" / "alexnet" / f"rank{r}", ranks=(r,))
        npu_run(tmp_path / "npu" / "alexnet" / f"rank{r}", ranks=(r,))
    body = runs_route(tmp_path)
    pairs = sorted((p["baseline"], p["target"]) for p in body["pairs"])
    assert pairs == [("gpu/alexnet/rank0", "npu/alexnet/rank0"), ("gpu/alexnet/rank1", "npu/alexnet/rank1")], pairs


def _run(name: str, device: str, ranks=(0,), status="ok") -> dict:
    return {"name": name, "workers": [{"id": f"{name}/w{r}", "rank": r, "device": device, "status": status}
                                      for r in ranks]}


def test_same_folder_pairs_come_first_then_sibling_trees():
    runs = [_run("exp/gpu_base", "GPU"), _run("exp/npu_new", "NPU"),
            _run("gpu/bert", "GPU"), _run("npu/bert", "NPU"), _run("npu/resnet", "NPU")]
    got = [(p["baseline"], p["target"]) for p in suggest_pairs(runs)]
    assert got == [("exp/gpu_base", "exp/npu_new"), ("gpu/bert", "npu/bert")], got


def test_version_like_sibling_trees_and_readable_workers():
    runs = [_run("v1/resnet", "GPU", ranks=(0, 1)), _run("v2/resnet", "GPU", ranks=(0, 1))]
    runs[1]["workers"][0]["status"] = "error"                         # rank 0 of v2 cannot be read
    p, = suggest_pairs(runs)
    assert (p["baseline"], p["target"]) == ("v1/resnet", "v2/resnet")
    assert (p["baseline_worker"], p["target_worker"]) == ("v1/resnet/w1", "v2/resnet/w1")
    # unrelated folders (two parts differ) are not suggested
    assert suggest_pairs([_run("gpu/a/x", "GPU"), _run("npu/b/x", "NPU")]) == []
