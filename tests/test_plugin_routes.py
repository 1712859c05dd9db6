"""The plugin's routes through TensorBoard's real WSGI app (no server): listing, worker
summary, errors as JSON, refusal of malformed and hostile requests."""
from __future__ import annotations

import argparse
import json
import time

import pytest
from werkzeug.test import Client

from tensorboard.backend import application
from tensorboard.plugins import base_plugin

from tb_compare_plugin.loader import ProfileCompareLoader

from conftest import SAMPLES, needs_corpus, CORPUS, track_plugin

PREFIX = "/data/plugin/profile_compare"


def make_client(logdir) -> Client:
    ctx = base_plugin.TBContext(logdir=str(logdir),
                                flags=argparse.Namespace(profile_compare_scan_interval=1.0))
    plugin = track_plugin(ProfileCompareLoader().load(ctx))       # stopped after the test
    return Client(application.TensorBoardWSGI([plugin]))


def post_until_done(c, path, body):
    """POST ``body`` to ``path`` until it stops answering 202; the 200 answer's JSON."""
    for _ in range(2400):
        r = c.post(PREFIX + path, data=json.dumps(body), content_type="application/json")
        if r.status_code != 202:
            assert r.status_code == 200, (path, r.status_code, r.get_data()[:500])
            return json.loads(r.get_data())
        time.sleep(0.05)
    raise AssertionError(f"{path} never finished")


def run_worker_ids(c, run: str, n: int) -> list:
    """The sorted worker ids of ``run``, once the plugin's first scan lists ``n`` of them."""
    ids = []
    for _ in range(200):
        runs = json.loads(c.get(PREFIX + "/runs").get_data())
        ids = sorted(w["id"] for r in runs["runs"] for w in r["workers"] if r["name"] == run)
        if len(ids) == n:
            break
        time.sleep(0.05)
    return ids


def get_json(c, path, code=200):
    r = c.get(PREFIX + path)
    assert r.status_code == code, (path, r.status_code, r.get_data()[:500])
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.headers.get("X-Content-Type-Options") == "nosniff"
    return json.loads(r.get_data())


def test_listing_has_plugin(tmp_path):
    c = make_client(tmp_path)
    listing = json.loads(c.get("/data/plugins_listing").get_data())
    assert "profile_compare" in listing
    assert listing["profile_compare"]["tab_name"] == "PROFILE COMPARE"
    assert listing["profile_compare"]["loading_mechanism"]["type"] == "IFRAME"


def test_empty_logdir(tmp_path):
    body = get_json(make_client(tmp_path), "/runs")
    assert body["runs"] == [] and body["pairs"] == []


def test_bad_requests(tmp_path):
    c = make_client(tmp_path)
    get_json(c, "/worker", 400)
    for wid in ("../../etc/passwd", "/etc/passwd", "nosuchrun/w", "a" * 5000):
        assert c.get(PREFIX + "/worker", query_string={"id": wid}).status_code in (400, 404)
    r = c.post(PREFIX + "/load", data="{}", content_type="text/plain")
    assert r.status_code == 415
    r = c.get(PREFIX + "/load")
    assert r.status_code == 405
    r = c.post(PREFIX + "/load", data="[1]", content_type="application/json")
    assert r.status_code == 400
    r = c.post(PREFIX + "/load", data="{bad", content_type="application/json")
    assert r.status_code == 400
    for name in ("../setup.py", ".hidden.js", "x.py", "nope.js"):
        assert c.get(PREFIX + "/static/" + name).status_code == 404


@needs_corpus
def test_corpus_workers_load_ok(tmp_path):
    c = make_client(CORPUS)
    runs = get_json(c, "/runs")["runs"]
    ids = [w["id"] for r in runs for w in r["workers"]]
    # every worker discovery finds (tests/test_discovery.py checks that listing by name)
    from tb_compare_plugin.discovery import find_runs
    assert sorted(ids) == sorted(w.id for r in find_runs(str(CORPUS)) for w in r.workers)
    assert len(ids) >= 18
    # loaded through the routes: one worker of each corpus folder (every format, device and
    # exporter; tests/test_loader_*.py load every corpus worker), and the two checked below --
    # more than the store keeps, so the LRU eviction is exercised too
    some = {}
    for wid in ids:
        some.setdefault(tuple(wid.split("/")[:2]), wid)
    ids = sorted(set(some.values()) | {"gpu/hta_cpu_only/rank34", "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt"})
    assert len(ids) > 6
    r = c.post(PREFIX + "/load", data=json.dumps({"workers": ids}), content_type="application/json")
    assert r.status_code == 200
    for wid in ids:
        body = get_json(c, "/worker?id=" + wid)
        assert body["status"] == "ok", (wid, body.get("error"))
        s = body["summary"]
        if wid.startswith("npu/"):
            assert s["device"] == "NPU"
        elif wid == "gpu/hta_cpu_only/rank34":
            assert s["device"] == "CPU"
        else:
            assert s["device"] == "GPU"
    listing = {w["id"]: w for r in get_json(c, "/runs")["runs"] for w in r["workers"]}
    # loaded workers beyond the LRU bound are evicted (not_loaded again), never errors
    assert all(w["status"] in ("ok", "not_loaded") for w in listing.values())
    assert listing["gpu/hta_cpu_only/rank34"]["device"] == "CPU"
    assert listing["npu/alexnet_ddp_2rank_level1/rank1_ascend_pt"]["steps"] == [50]


@pytest.mark.skipif(not (SAMPLES / "README.md").exists(), reason="samples/ not generated yet")
def test_samples_listing():
    body = get_json(make_client(SAMPLES), "/runs")
    devices = {r["name"]: {w["device"] for w in r["workers"]} for r in body["runs"]}
    assert devices.get("baseline_gpu") == {"GPU"}
    assert devices.get("target_npu") == {"NPU"}
    assert any(p["baseline"] == "baseline_gpu" and p["target"] == "target_npu" for p in body["pairs"])


def test_oversized_and_hostile_requests(tmp_path):
    c = make_client(tmp_path)
    big = '{"workers": [' + ",".join('"x"' for _ in range(40000)) + "]}"
    r = c.post(PREFIX + "/load", data=big, content_type="application/json")
    assert r.status_code == 413
    r = c.post(PREFIX + "/load", data=json.dumps({"workers": ["a/b"] * 65}), content_type="application/json")
    assert r.status_code == 400
    r = c.post(PREFIX + "/compare/overall", data="baseline=a/b&target=c/d",
               content_type="application/x-www-form-urlencoded")      # what a cross-site form can send
    assert r.status_code == 415
    for q in ("baseline=a/b&target=c/d&limit=99999", "baseline=a/b&target=c/d&base_step=x",
              "baseline=a/b&target=c/d&order=sideways", "baseline=a/b&target=c/d&min_diff=nan"):
        assert c.get(PREFIX + "/compare/operator?" + q).status_code in (400, 404)


def test_operator_default_order_is_the_device_difference(tmp_path, monkeypatch):
    """compare/operator without `sort`: by the total device difference (diff_ms, also its
    min |diff| column), descending -- the slower optimizer (samples #9), then the all-reduce's
    AccumulateGrad before the planted matmul, as on the overview's top hint. The compute-only
    order is one `sort` away."""
    if not (SAMPLES / "baseline_gpu").is_dir():
        pytest.skip("samples not generated")
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    c = make_client(SAMPLES)
    pair = {"baseline": "baseline_gpu/worker0", "target": "target_npu/rank0_ascend_pt", "limit": 1000}

    def page(**extra):
        for _ in range(600):
            r = c.post(PREFIX + "/compare/operator", data=json.dumps({**pair, **extra}), content_type="application/json")
            if r.status_code != 202:
                assert r.status_code == 200, r.get_data()[:500]
                return json.loads(r.get_data())
            time.sleep(0.1)
        raise AssertionError("compare/operator still 202")

    body = page()
    assert body["sort"] == "diff_ms" and body["order"] == "desc" and body["diff_col"] == "diff_ms"
    diffs = [row["diff_ms"] for row in body["rows"]]
    assert len(diffs) == body["total"] > 2
    assert diffs == sorted(diffs, reverse=True) and diffs[0] > diffs[-1]
    big = [d for d in diffs if abs(d) > 0.01]        # (the HtoD copy differs by a few µs of noise, #10)
    assert [abs(d) for d in big] == sorted((abs(d) for d in big), reverse=True)   # no improvement here
    names = [r["name"] for r in body["rows"]]
    assert names[0] == "Optimizer.step#AdamW.step" and "AccumulateGrad" in names[1] and names[2] == "aten::linear"
    compute = page(sort="diff_compute_ms")["rows"]
    assert [r["name"] for r in compute[:2]] == ["Optimizer.step#AdamW.step", "aten::linear"]
    # min |diff| filters on the default column: the all-reduce's row (comm only) stays
    assert "AccumulateGrad" in page(min_diff=0.5)["rows"][1]["name"]
