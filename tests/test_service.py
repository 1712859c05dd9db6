"""The comparison service behind the routes: table pages and workbooks are computed on the
service's own threads (a request answers 202 with progress until they are ready, then the
same answer every time), and ``close()`` stops the scanner, the pools and the parser processes."""
from __future__ import annotations

import json
import multiprocessing
import threading
import time

import pytest

from tb_compare_plugin.presenters import views

from conftest import SAMPLES
from test_plugin_routes import PREFIX, make_client

PAIR = {"baseline": "baseline_gpu/worker0", "target": "target_npu/rank0_ascend_pt"}


@pytest.fixture
def plugin_client(tmp_path, monkeypatch):
    if not (SAMPLES / "expected.json").is_file():
        pytest.skip("samples not generated")
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    import argparse
    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client
    from tb_compare_plugin.loader import ProfileCompareLoader
    ctx = base_plugin.TBContext(logdir=str(SAMPLES), flags=argparse.Namespace(profile_compare_scan_interval=1.0))
    before = ({t.ident for t in threading.enumerate()}, {p.pid for p in multiprocessing.active_children()})
    plugin = ProfileCompareLoader().load(ctx)
    plugin.started_with = before                # other tests' plugins may still be alive
    plugin._service.wait_seconds = 0.0          # never wait: every unfinished answer is a 202
    yield plugin, Client(application.TensorBoardWSGI([plugin]))
    plugin.close()


def _until_done(c, path, body, seen: list):
    for _ in range(1200):
        r = c.post(PREFIX + path, data=json.dumps(body), content_type="application/json")
        seen.append(r.status_code)
        if r.status_code != 202:
            return r
        b = json.loads(r.get_data())
        assert b["status"] == "loading" and 0.0 <= b["progress"] <= 1.0
        time.sleep(0.05)
    raise AssertionError("never finished")


def test_tables_and_workbooks_are_computed_off_the_request_thread(plugin_client, monkeypatch):
    plugin, c = plugin_client
    threads = []
    real = views.view_page

    def recording(*a, **k):
        threads.append(threading.current_thread().name)
        return real(*a, **k)
    monkeypatch.setattr(views, "view_page", recording)
    seen = []
    r = _until_done(c, "/compare/operator", PAIR, seen)
    assert r.status_code == 200 and 202 in seen
    assert threads and all(t.startswith("tbc-answer") for t in threads), threads
    first = r.get_data()
    # the same page again: answered from the cache, not computed again
    r = c.post(PREFIX + "/compare/operator", data=json.dumps(PAIR), content_type="application/json")
    assert r.status_code == 200 and r.get_data() == first and len(threads) == 1
    # a bad sort column is a 400 every time it is asked, not a stored 422
    for _ in range(2):
        r = _until_done(c, "/compare/operator", {**PAIR, "sort": "nope"}, [])
        assert r.status_code == 400, r.get_data()
    seen = []
    r = _until_done(c, "/compare/xlsx", PAIR, seen)
    assert r.status_code == 200 and r.get_data()[:2] == b"PK"


def test_close_stops_threads_and_parser_processes(plugin_client):
    plugin, c = plugin_client
    assert c.get(PREFIX + "/runs").status_code == 200
    r = _until_done(c, "/worker", {"id": PAIR["baseline"]}, [])
    assert r.status_code == 200
    plugin.close()
    plugin.close()                                      # idempotent
    old_threads, old_children = plugin.started_with

    def ours():
        return ([t.name for t in threading.enumerate() if t.ident not in old_threads and t.name.startswith("tbc-")],
                [p.pid for p in multiprocessing.active_children() if p.pid not in old_children])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(ours()):
        time.sleep(0.1)
    assert ours() == ([], [])
    # after close, work is refused with a clear answer instead of hanging
    r = c.post(PREFIX + "/load", data=json.dumps({"workers": [PAIR["target"]]}), content_type="application/json")
    assert r.status_code == 422 and "shut down" in json.loads(r.get_data())["error"]
