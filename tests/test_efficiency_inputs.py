"""What the efficiency figures read: the Kineto kernel args (grid, block, registers per thread,
shared memory, blocks per SM, est. achieved occupancy %) and ``deviceProperties`` in the model, the
Ascend PMU ratio columns, and a warning naming the file for every value that could not be read."""
from __future__ import annotations

import csv
import gzip
import json

import numpy as np
import pytest

from tb_compare_plugin import loaders
from tb_compare_plugin.loaders import kineto_json

from conftest import CORPUS

H100 = CORPUS / "gpu/tracelens_h100/Qwen_Qwen1.5-0.5B-Chat__1016005.pt.trace.json.gz"
MI300 = CORPUS / "gpu/tracelens_mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.pt.trace.json.gz"
ARGS = ("grid", "block", "registers per thread", "shared memory", "blocks per SM", "est. achieved occupancy %")


def _need(path):
    if not path.exists():
        pytest.skip(f"{path} not here")
    return path


def test_kernel_args_are_read_as_written():
    path = _need(H100)
    p = loaders.load("trace-json", str(path))
    raw = [e for e in json.load(gzip.open(path))["traceEvents"] if str(e.get("cat", "")).lower() == "kernel"]
    k = p.kernels[p.kernels["kind"].isin([0, 3]).to_numpy()]
    assert len(k) == len(raw)
    by_key = {(round(e["ts"] * 1000), e["name"]): e["args"] for e in raw}
    names = p.symbols.strings(k["name"].to_numpy())
    for i in range(0, len(k), 37):
        a = by_key[(int(k["start_ns"].iloc[i]), names[i])]
        assert [k[c].iloc[i] for c in ("grid_x", "grid_y", "grid_z")] == a["grid"]
        assert [k[c].iloc[i] for c in ("block_x", "block_y", "block_z")] == a["block"]
        assert k["registers"].iloc[i] == a["registers per thread"]
        assert k["shared_mem"].iloc[i] == a["shared memory"]
        assert k["blocks_per_sm"].iloc[i] == pytest.approx(a["blocks per SM"])
        assert k["occupancy_pct"].iloc[i] == pytest.approx(a["est. achieved occupancy %"])
    mem = p.kernels[p.kernels["kind"].isin([1, 2]).to_numpy()]
    assert (mem["grid_x"] == -1).all() and mem["blocks_per_sm"].isna().all()
    props = p.meta.device_props
    assert props[0]["numSms"] == 132 and props[0]["name"] == "NVIDIA H100 80GB HBM3"
    assert not p.meta.warnings


def test_rocm_kernels_have_no_estimates_and_props_written_after_the_events():
    """The TraceLens traces write deviceProperties after traceEvents; ROCm kernels carry no
    CUPTI estimates (and, for this roctracer, no grid either on the kernels without an op)."""
    p = loaders.load("trace-json", str(_need(MI300)))
    k = p.kernels
    assert k["blocks_per_sm"].isna().all() and k["occupancy_pct"].isna().all() and (k["registers"] == -1).all()
    assert p.meta.device_props[0]["numSms"] == 304 and p.meta.device_props[0]["warpSize"] == 64
    assert (k["grid_x"] > 0).any() and not p.meta.warnings


def _trace(tmp_path, args: list[str]) -> str:
    evs = []
    for i, a in enumerate(args):
        evs.append(f'{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": 7, "ts": {10 * i}, "dur": 5, '
                   f'"args": {{"device": 0, "stream": 7, "correlation": {i + 1}{a}}}}}')
    f = tmp_path / "t.pt.trace.json"
    f.write_text('{"traceEvents": [' + ",".join(evs) + '], "deviceProperties": [{"id": 0, "name": "G", "numSms": 8}]}')
    return str(f)


def test_unreadable_and_negative_args_are_unknown_with_a_warning(tmp_path):
    path = _trace(tmp_path, [
        ', "blocks per SM": 2.5, "est. achieved occupancy %": 50, "registers per thread": 32, "grid": [4, 1, 1]',
        ', "blocks per SM": "many", "est. achieved occupancy %": -3, "registers per thread": "x"',
        ', "blocks per SM": "1.5", "shared memory": 1024',
        ', "grid": [1, 2], "block": "wide"',
    ])
    p = kineto_json.load(path)
    k = p.kernels
    assert k["blocks_per_sm"].tolist()[0] == 2.5 and np.isnan(k["blocks_per_sm"].iloc[1])
    assert k["blocks_per_sm"].iloc[2] == 1.5                     # numeric text is a number
    assert k["occupancy_pct"].iloc[0] == 50 and np.isnan(k["occupancy_pct"].iloc[1])
    assert k["registers"].tolist()[:2] == [32, -1] and k["shared_mem"].iloc[2] == 1024
    assert k["grid_x"].tolist() == [4, -1, -1, -1]               # a 2-d grid is dropped, not guessed
    w = " | ".join(p.meta.warnings)
    assert "1 GPU kernel events have a 'blocks per SM' arg that is not a number" in w
    assert "1 GPU kernel events have a 'registers per thread' arg that is not a number" in w
    assert "1 GPU kernel events have a negative 'est. achieved occupancy %'" in w
    assert "1 GPU kernel events have a 'grid' arg that is not a list of three integers" in w
    assert "1 GPU kernel events have a 'block' arg that is not a list of three integers" in w
    assert len(k) == 4


@pytest.mark.parametrize("fmt,rel", [("ascend-text", "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"),
                                     ("ascend-db", "npu/alexnet_ddp_2rank_db_level1/rank0_ascend_pt")])
def test_npu_pmu_ratio_columns(fmt, rel):
    p = loaders.load(fmt, str(_need(CORPUS / rel)))
    k = p.kernels
    have = k["aic_mac_ratio"].notna() & (k["aicore_time_us"] > 0)
    assert have.sum() > 10
    # the profiler's ratio is its mac time over its aicore time (rounded to 3 decimals)
    calc = k["aic_mac_time_us"][have] / k["aicore_time_us"][have]
    assert np.allclose(calc, k["aic_mac_ratio"][have], atol=2e-3)
    v = k["aiv_vec_ratio"].notna() & (k["aiv_time_us"] > 0)
    assert np.allclose(k["aiv_vec_time_us"][v] / k["aiv_time_us"][v], k["aiv_vec_ratio"][v], atol=2e-3)


def test_junk_pmu_cells_are_warned_about(tmp_path):
    src = CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"
    _need(src)
    import shutil
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(src, dst)
    kd = dst / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    with open(kd, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    col = rows[0].index("aic_mac_ratio")
    conv = next(i for i, r in enumerate(rows) if i and r[rows[0].index("Type")] == "Conv2D")
    rows[conv][col] = "oops"
    with open(kd, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    p = loaders.load("ascend-text", str(dst))
    assert any("kernel_details.csv: 1 row(s) without a readable 'aic_mac_ratio'" in w for w in p.meta.warnings)
