"""Discovery on the real corpus and on odd folders: classification, ranks, errors."""
from __future__ import annotations

import gzip
import os
import shutil

import pytest

from tb_compare_plugin.discovery import classify_path, find_runs, split_worker_id

from conftest import needs_corpus, CORPUS


def _index(runs):
    return {w.id: w for r in runs for w in r.workers}


@needs_corpus
def test_corpus_runs_are_classified():
    ws = _index(find_runs(str(CORPUS)))
    expect = {
        "gpu/hta_trace_diff/control/control": ("trace-json", "GPU"),
        "gpu/hta_trace_diff/test/test": ("trace-json", "GPU"),
        "gpu/kineto_resnet50_num_workers_0/worker0.1623143089861": ("trace-json", "GPU"),
        "gpu/hta_cpu_only/rank34": ("trace-json", "CPU"),
        "npu/alexnet_ddp_2rank_level0/rank0_ascend_pt": ("ascend-text", "NPU"),
        "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt": ("ascend-text", "NPU"),
        "npu/alexnet_ddp_2rank_db_level1/rank0_ascend_pt": ("ascend-db", "NPU"),
        "npu/mstt_advisor_sample/ASCEND_PROFILER_OUTPUT": ("ascend-text", "NPU"),
    }
    for wid, (fmt, dev) in expect.items():
        assert wid in ws, f"{wid} not discovered; found {sorted(ws)}"
        assert ws[wid].format == fmt
        if dev != "CPU":  # CPU-only is only certain after parsing (peek may tell earlier)
            assert ws[wid].device == dev
        assert ws[wid].error is None, ws[wid].error
    for lvl in ("level0", "level1", "db_level0", "db_level1"):
        for r in (0, 1):
            assert ws[f"npu/alexnet_ddp_2rank_{lvl}/rank{r}_ascend_pt"].rank == r
    assert ws["gpu/hta_2rank/rank0"].rank == 0 and ws["gpu/hta_2rank/rank1"].rank == 1
    # nothing else is taken for a profile: the whole listing, by name (the corpus README lists
    # every run; npu/mindspore_*/profiler: one mindspore-legacy worker per device id of the
    # MindInsight files; each PROF_* folder a run of one mindspore-msprof worker, its device_N)
    tracelens = {f"gpu/tracelens_{gpu}/{model}" for gpu in ("h100", "mi300")
                 for model in ("Qwen_Qwen1.5-0.5B-Chat__1016005",
                               "facebook_timesformer-base-finetuned-k400__1016002")}
    npu = {f"npu/alexnet_ddp_2rank_{lvl}/rank{r}_ascend_pt"
           for lvl in ("level0", "level1", "db_level0", "db_level1") for r in (0, 1)}
    assert set(ws) == set(expect) | tracelens | npu | {
        "gpu/hta_2rank/rank0", "gpu/hta_2rank/rank1", "gpu/hta_amd_mi250/mi250", "gpu/hta_nccl/nccl",
        "gpu/kineto_resnet50_num_workers_0/worker0.1623143566756",
        "npu/mindspore_legacy_run1/profiler/device_1", "npu/mindspore_msprof_2dev/profiler/device_0",
        "npu/mindspore_msprof_2dev/profiler/device_10",
        *(f"npu/mindspore_msprof_2dev/profiler/{d.parent.name}/msprof_{d.name}"
          for d in (CORPUS / "npu/mindspore_msprof_2dev/profiler").glob("PROF_*/device_*"))}


def test_worker_id_split():
    assert split_worker_id("a/b/c") == ("a/b", "c")
    for bad in ("", "noslash", "/x", "x/"):
        with pytest.raises(ValueError):
            split_worker_id(bad)


def test_odd_folders(tmp_path):
    (tmp_path / "empty_run").mkdir()
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    (tmp_path / "list.json").write_text("[1, 2]")
    bad = tmp_path / "broken" / "x_ascend_pt"
    bad.mkdir(parents=True)
    (tmp_path / "named.pt.trace.json").mkdir()          # a folder named like a trace
    loop = tmp_path / "loop"
    loop.mkdir()
    os.symlink(str(tmp_path), str(loop / "back"))         # symlink loop
    gz = tmp_path / "g" / "w.json.gz"
    gz.parent.mkdir()
    with gzip.open(gz, "wt") as f:
        f.write('{"traceEvents": []}')
    ws = _index(find_runs(str(tmp_path)))
    assert "broken/x_ascend_pt" in ws and "no trace_view.json" in ws["broken/x_ascend_pt"].error
    assert "g/w" in ws and ws["g/w"].format == "trace-json"
    assert not any(k.endswith("notes") or k.endswith("list") for k in ws)


@needs_corpus
def test_classify_cli_paths():
    w = classify_path(str(CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"))
    assert len(w) == 1 and w[0].format == "ascend-text"
    w = classify_path(str(CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"))
    assert len(w) == 1 and w[0].format == "ascend-text"
    db = CORPUS / "npu/alexnet_ddp_2rank_db_level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db"
    w = classify_path(str(db))
    assert len(w) == 1 and w[0].format == "ascend-db" and w[0].root == str(db)
    w = classify_path(str(CORPUS / "npu/alexnet_ddp_2rank_level1"))
    assert sorted(x.name for x in w) == ["rank0_ascend_pt", "rank1_ascend_pt"]
    w = classify_path(str(CORPUS / "gpu/hta_trace_diff/control/control.pt.trace.json.gz"))
    assert w[0].format == "trace-json"
    with pytest.raises(FileNotFoundError):
        classify_path(str(CORPUS / "does-not-exist"))


@needs_corpus
def test_db_wins_over_text(tmp_path):
    w = tmp_path / "run" / "rank0_ascend_pt"
    shutil.copytree(CORPUS / "npu/alexnet_ddp_2rank_db_level1/rank0_ascend_pt", w)
    shutil.copy(CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                w / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    (spec,) = [x for r in find_runs(str(tmp_path)) for x in r.workers]
    assert spec.format == "ascend-db"
