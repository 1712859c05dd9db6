"""Broken workers next to good ones: each broken one gets status "error" with a message naming
its file and the problem; the good ones still load; nothing escapes as an exception."""
from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from conftest import SAMPLES
from test_plugin_routes import PREFIX, get_json, make_client

NPU = SAMPLES / "target_npu" / "rank0_ascend_pt"
GPU = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    good = root / "good"
    good.mkdir()
    shutil.copy(GPU, good / "worker0.pt.trace.json")
    shutil.copytree(NPU, root / "good_npu" / "rank0_ascend_pt")
    bad = root / "bad"
    bad.mkdir()
    data = GPU.read_bytes()
    (bad / "truncated.pt.trace.json").write_bytes(data[: len(data) // 2])
    (bad / "empty.pt.trace.json").write_bytes(b"")
    (bad / "latin1.pt.trace.json").write_bytes(b'{"traceEvents": [{"name": "\xff\xfe", "ph": "X"}]}')
    # a CSV missing a required column
    w = bad / "missing_col_ascend_pt"
    shutil.copytree(NPU, w)
    kd = w / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    lines = kd.read_text().splitlines(keepends=True)
    hdr = lines[0].split(",")
    i = hdr.index("Start Time(us)")
    kd.write_text("".join(",".join(c for j, c in enumerate(l.split(",")) if j != i) for l in lines))
    # non-UTF-8 bytes inside a CSV
    w = bad / "binary_csv_ascend_pt"
    shutil.copytree(NPU, w)
    (w / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_bytes(b"\x89PNG\xff\xfe\x00garbage\n")
    # a .db that is not SQLite
    w = bad / "notsqlite_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    w.mkdir(parents=True)
    (w / "ascend_pytorch_profiler_0.db").write_bytes(b"this is not a database" * 100)
    return root


EXPECT = {
    "bad/truncated": "truncated.pt.trace.json",
    "bad/empty": "empty.pt.trace.json",
    "bad/latin1": "latin1.pt.trace.json",
    "bad/missing_col_ascend_pt": "kernel_details.csv",
    "bad/binary_csv_ascend_pt": "kernel_details.csv",
    "bad/notsqlite_ascend_pt": "ascend_pytorch_profiler_0.db",
}


def test_broken_workers_report_errors(logdir):
    c = make_client(logdir)
    listing = get_json(c, "/runs")
    ids = [w["id"] for r in listing["runs"] for w in r["workers"]]
    for wid in EXPECT:
        assert wid in ids, ids
    c.post(PREFIX + "/load", data=json.dumps({"workers": ids}), content_type="application/json")
    seen = {}
    for wid, fname in EXPECT.items():
        r = c.get(PREFIX + "/worker", query_string={"id": wid})
        assert r.status_code == 422, (wid, r.status_code, r.get_data()[:300])
        msg = json.loads(r.get_data())["error"]
        assert fname in msg, (wid, msg)
        seen[wid] = msg
    for wid in ("good/worker0", "good_npu/rank0_ascend_pt"):
        body = get_json(c, "/worker?id=" + wid)
        assert body["status"] == "ok"
    listing = {w["id"]: w for r in get_json(c, "/runs")["runs"] for w in r["workers"]}
    for wid in EXPECT:
        assert listing[wid]["status"] == "error" and listing[wid]["error"], listing[wid]
    r = c.get(PREFIX + "/compare/overall", query_string={"baseline": "good/worker0", "target": "bad/truncated"})
    assert r.status_code == 422 and "truncated.pt.trace.json" in json.loads(r.get_data())["error"]
    body = get_json(c, "/compare/overall?baseline=good/worker0&target=good_npu/rank0_ascend_pt")
    assert body["overall_metrics"]
    print("\n".join(f"{k}: {v}" for k, v in seen.items()))
