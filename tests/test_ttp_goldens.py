"""The torch-tb-profiler 0.4.3 reference goldens (tests/golden/ttp/) are well formed.

These files are figures written by bench/ttp_reference.py in a separate venv; this test never
imports torch-tb-profiler. It checks keys and internal consistency only: every step's eight parts
add up to the step's duration within 1 us (the plugin's priority rule partitions the step window),
windows are ordered, ratios are in range, and each golden names a source that exists (when the
corpus is present) with the recorded sha256 (so a regenerated sample cannot silently leave a stale
golden behind).  How the figures are defined, and where the plugin is wrong: docs/reference_ttp.md.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT

GOLDEN_DIR = ROOT / "tests" / "golden" / "ttp"
FILES = sorted(p for p in GOLDEN_DIR.rglob("*.json"))
PARTS = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
TOP = {"generator", "plugin", "patches", "source", "source_sha256", "units", "flags", "overview", "gpu",
       "kernel_view", "plugin_warnings"}
STEP = {"name", "step", "host_window_us", "device_extent_us", "matched_device_nodes", "window_us",
        "duration_us", "breakdown_us", "parts_sum_us"}
KROW = {"name", "calls", "total_duration_us", "tensor_cores_used", "mean_blocks_per_sm",
        "mean_est_achieved_occupancy_pct"}


def _load(p: Path) -> dict:
    return json.loads(p.read_text())


def test_there_are_goldens():
    names = {p.name for p in FILES if p.parent == GOLDEN_DIR}
    assert names == {p.name for p in FILES if p.parent.name == "patched"}, "as-is and patched sets differ"
    for must in ("kineto_resnet50_num_workers_0__worker0.1623143089861.json", "hta_nccl__nccl.json",
                 "tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json",
                 "tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json", "samples__baseline_gpu__worker0.json"):
        assert must in names


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(GOLDEN_DIR)))
def test_golden_is_well_formed(path: Path):
    g = _load(path)
    assert TOP <= set(g), TOP - set(g)
    assert g["plugin"]["name"] == "torch-tb-profiler" and g["plugin"]["version"] == "0.4.3"
    # patched/ holds 0.4.3 run with the classification fixes it names; the top level holds 0.4.3 as is
    assert bool(g["patches"]) == (path.parent.name == "patched")
    steps = g["overview"]["steps"]
    assert steps, "no step"
    for s in steps:
        assert STEP <= set(s), STEP - set(s)
        assert set(s["breakdown_us"]) == set(PARTS)
        assert all(v >= 0 for v in s["breakdown_us"].values()), s["breakdown_us"]
        assert str(s["step"]) == s["name"]
        w0, w1 = s["window_us"]
        assert w1 >= w0
        assert abs((w1 - w0) - s["duration_us"]) < 1e-2
        # the priority rule partitions the step window: the eight parts add up to it
        assert abs(sum(s["breakdown_us"].values()) - s["duration_us"]) <= 1.0, (s["name"], s["breakdown_us"])
        assert abs(s["parts_sum_us"] - s["duration_us"]) <= 1.0
    devices = g["gpu"]["devices"]
    for d in devices:
        assert 0.0 <= d["gpu_utilization"] <= 1.0
        for k in ("sm_efficiency", "tensor_core_ratio"):
            assert d[k] is None or 0.0 <= d[k] <= 1.0, (k, d[k])
        assert d["achieved_occupancy_pct"] is None or 0.0 <= d["achieved_occupancy_pct"] <= 100.0
        # SM efficiency counts only busy time, capped at 1 per instant: it cannot exceed utilisation
        if d["sm_efficiency"] is not None:
            assert d["sm_efficiency"] <= d["gpu_utilization"] + 1e-6
    kv = g["kernel_view"]
    if g["flags"]["has_kernel"]:
        assert devices and kv is not None
        assert kv["rows_kept"] == len(kv["rows"]) <= kv["distinct_kernels"]
        for r in kv["rows"]:
            assert KROW <= set(r), KROW - set(r)
            assert r["calls"] >= 1 and r["total_duration_us"] >= 0
        tot = [r["total_duration_us"] for r in kv["rows"]]
        assert tot == sorted(tot, reverse=True)
        assert abs(sum(tot) + kv["total_duration_us_dropped_rows"] - kv["total_duration_us_all"]) < 0.05
    else:
        assert kv is None and not devices


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(GOLDEN_DIR)))
def test_golden_matches_its_source(path: Path):
    g = _load(path)
    src = g["source"]
    if src.startswith("corpus/"):
        if not CORPUS.is_dir():
            pytest.skip(f"corpus not found at {CORPUS}")
        file = CORPUS / src[len("corpus/"):]
    else:
        file = ROOT / src
    assert file.is_file(), file
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    assert digest == g["source_sha256"], (
        f"{path.name} was made from another version of {src}: rerun "
        "`/work/ttp_venv/bin/python -m bench.ttp_reference --out tests/golden/ttp --only <name>`"
        " (tests/golden/ttp/README.md)")
