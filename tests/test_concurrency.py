"""Concurrency: 50 simultaneous requests for the same uncached comparison cause one parse per
worker and one computation, and all get the same answer; other routes are served meanwhile; a
parser process that dies is reported, not hung on."""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tb_compare_plugin import comparison
from tb_compare_plugin.formats import registry

from conftest import SAMPLES, kill_children_while
from test_plugin_routes import PREFIX, make_client

LISTING_PAUSE = 0.05        # seconds between two runs listings while the comparison is computed
LISTINGS_MAX = 400
BODY = {"baseline": "baseline_gpu/worker0", "target": "target_npu/rank0_ascend_pt"}


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TB_COMPARE_PROCESSES", "0")      # count parses in this process


def test_fifty_identical_requests_one_computation(fresh_cache, monkeypatch):
    parses, builds = [], []
    real_load, real_init = registry.load, comparison.Comparison.__init__

    def counting_load(fmt, root, progress=None, options=None):
        parses.append(root)
        return real_load(fmt, root, progress=progress, options=options)

    def counting_init(self, *a, **k):
        builds.append(1)
        real_init(self, *a, **k)
    monkeypatch.setattr(registry, "load", counting_load)      # what the profile store calls
    monkeypatch.setattr(comparison.Comparison, "__init__", counting_init)
    c = make_client(SAMPLES)
    c.get(PREFIX + "/runs")

    def one(_):
        for _ in range(200):
            r = c.post(PREFIX + "/compare/overall", data=json.dumps(BODY), content_type="application/json")
            if r.status_code != 202:
                return r.status_code, r.get_data()
            time.sleep(0.05)
        return 0, b""
    other = []
    stop = threading.Event()

    def keep_listing():
        """A user's tab polling the runs list meanwhile: paced, and bounded in count and time
        (an unpaced loop starves the very requests it watches of the GIL)."""
        deadline = time.monotonic() + 120
        while len(other) < LISTINGS_MAX and time.monotonic() < deadline:
            t = time.perf_counter()
            other.append((c.get(PREFIX + "/runs").status_code, time.perf_counter() - t))
            if stop.wait(LISTING_PAUSE):
                break
    lister = threading.Thread(target=keep_listing)
    lister.start()
    try:
        with ThreadPoolExecutor(50) as ex:
            results = list(ex.map(one, range(50)))
    finally:
        stop.set()
        lister.join()
    assert all(code == 200 for code, _ in results), {code for code, _ in results}
    bodies = {body for _, body in results}
    assert len(bodies) == 1
    assert len(parses) == 2, parses             # one parse per worker
    assert len(builds) == 1                     # one comparison
    assert other and all(code == 200 for code, _ in other)
    print(f"\n50 concurrent identical requests: {len(parses)} parses, {len(builds)} computation; "
          f"{len(other)} runs listings served meanwhile, slowest {max(t for _, t in other):.3f}s")


def test_dead_parser_is_reported(tmp_path, monkeypatch):
    """A parser process killed from outside (as the OOM killer would), twice: the worker answers
    422 in plain words, the plugin keeps serving, and the user's next load parses again."""
    import zlib
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    logdir = tmp_path / "logdir"
    (logdir / "run").mkdir(parents=True)
    evs = json.loads((SAMPLES / "baseline_gpu" / "worker0.pt.trace.json").read_text())["traceEvents"]
    body = json.dumps(evs)[1:-1].encode()          # repeated until a parse takes a while
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(logdir / "run" / "worker0.pt.trace.json.gz", "wb") as f:
        f.write(z.compress(b'{"traceEvents": [' + body))
        for _ in range(150):
            f.write(z.compress(b"," + body))
        f.write(z.compress(b"]}") + z.flush())
    c = make_client(logdir)
    runs = json.loads(c.get(PREFIX + "/runs").get_data())
    assert [w["id"] for r in runs["runs"] for w in r["workers"]] == ["run/worker0"]
    stop, killed = threading.Event(), []
    t = threading.Thread(target=lambda: killed.append(kill_children_while(lambda: not stop.is_set())))
    t.start()
    try:
        c.post(PREFIX + "/load", data=json.dumps({"workers": ["run/worker0"]}), content_type="application/json")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            r = c.post(PREFIX + "/worker", data=json.dumps({"id": "run/worker0"}), content_type="application/json")
            if r.status_code != 202:
                break
            time.sleep(0.2)
    finally:
        stop.set()
        t.join()
    assert r.status_code == 422, r.get_data()
    assert "parser process died" in json.loads(r.get_data())["error"]
    assert killed[0] >= 2                       # the first attempt and its one retry
    assert c.get(PREFIX + "/runs").status_code == 200
    # retried on the user's next explicit load
    r = c.post(PREFIX + "/load", data=json.dumps({"workers": ["run/worker0"]}),
               content_type="application/json")
    assert r.status_code == 200


def test_gc_pauses_from_several_threads_leave_the_collector_as_it_was():
    """Workbooks and in-process parses pause the (process-wide) cyclic collector from request
    threads; whatever order they finish in, it is back on after the last one, off until then."""
    import gc
    import random
    import threading as th
    from tb_compare_plugin.gcpause import gc_paused
    assert gc.isenabled()
    inside, start = [], th.Barrier(8)

    def work(seed):
        start.wait()
        with gc_paused():
            with gc_paused():                         # nested, as a parse inside a request
                time.sleep(random.Random(seed).uniform(0, 0.05))
                inside.append(gc.isenabled())
    threads = [th.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inside == [False] * 8 and gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()                     # it was off: it stays off
    finally:
        gc.enable()
