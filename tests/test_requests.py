"""Requests against a real TensorBoard on 127.0.0.1 (issue 21 §6): a bad parameter is a 400 that
names the parameter and the valid choices, on every route, every time (never a 500, never a job's
stored 422); a path with a NUL byte is a 404; a method a route does not take is a 405 with an
``Allow`` header, on every route the plugin serves.

One TensorBoard for the module, on a logdir of links to the samples' runs plus ``pair``: two GPU
ranks (the sample trace and a copy saying rank 1), the smallest run the cluster routes take.
The NPU pair and the cluster run are computed once, up front."""
from __future__ import annotations

import argparse
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import SAMPLES, track_plugin
from tbserver import TensorBoard, wait_for

pytestmark = pytest.mark.skipif(not (SAMPLES / "README.md").exists(), reason="samples/ not generated yet")

P = "/data/plugin/profile_compare"
BASE, TARGET = "target_npu/rank0_ascend_pt", "target_npu_v2/rank0_ascend_pt"
STEPS = [1, 2, 3, 4, 5, 6]
CLUSTER = "pair"

# every route of get_plugin_apps: (a path that reaches it, the methods it takes)
ROUTES = {
    "/runs": ("/runs", {"GET"}),
    "/worker": ("/worker", {"GET", "POST"}),
    "/load": ("/load", {"POST"}),
    "/analyses": ("/analyses", {"GET"}),
    "/compare/overall": ("/compare/overall", {"GET", "POST"}),
    "/compare/memory_curve": ("/compare/memory_curve", {"GET", "POST"}),
    "/compare/xlsx": ("/compare/xlsx", {"GET", "POST"}),
    "/export": ("/export", {"POST"}),
    "/compare/communication": ("/compare/communication", {"GET", "POST"}),
    "/compare/steps": ("/compare/steps", {"GET", "POST"}),
    "/compare/timeline": ("/compare/timeline", {"GET", "POST"}),
    "/compare/timeline/item": ("/compare/timeline/item", {"GET", "POST"}),
    "/compare/timeline/range": ("/compare/timeline/range", {"GET", "POST"}),
    "/compare/timeline/find": ("/compare/timeline/find", {"GET", "POST"}),
    "/compare/match_candidates": ("/compare/match_candidates", {"GET", "POST"}),
    "/compare/matching": ("/compare/matching", {"GET", "POST"}),
    "/name_maps": ("/name_maps", {"GET"}),
    "/name_maps/save": ("/name_maps/save", {"POST"}),
    "/name_maps/remove": ("/name_maps/remove", {"POST"}),
    "/name_maps/edit": ("/name_maps/edit", {"POST"}),
    "/compare/*": ("/compare/operator", {"GET", "POST"}),
    "/cluster": ("/cluster", {"GET", "POST"}),
    "/cluster/xlsx": ("/cluster/xlsx", {"GET", "POST"}),
    "/static/*": ("/static/index.js", {"GET"}),
}


def call(tb, method: str, path: str, query: dict | None = None, body: dict | None = None):
    """(status, headers, JSON body or raw bytes) of one request; never raises on an HTTP error."""
    url = tb.url + P + path + ("?" + urllib.parse.urlencode(query) if query else "")
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            status, headers, raw = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, headers, raw = e.code, e.headers, e.read()
    try:
        return status, headers, json.loads(raw) if raw else None
    except ValueError:
        return status, headers, raw


def until_done(tb, path: str, body: dict, timeout: float = 300):
    """POST ``body`` until the route stops answering 202."""
    end = time.time() + timeout
    while time.time() < end:
        got = call(tb, "POST", path, body=body)
        if got[0] != 202:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{path} still 202 after {timeout}s")


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    base = tmp_path_factory.mktemp("requests")
    logdir = base / "logdir"
    logdir.mkdir()
    for run in ("baseline_gpu", "target_npu", "target_npu_v2"):
        os.symlink(SAMPLES / run, logdir / run)
    pair = logdir / CLUSTER
    pair.mkdir()
    trace = (SAMPLES / "baseline_gpu" / "worker0.pt.trace.json").read_text()
    os.symlink(SAMPLES / "baseline_gpu" / "worker0.pt.trace.json", pair / "worker0.pt.trace.json")
    (pair / "worker1.pt.trace.json").write_text(trace.replace('"rank": 0, "world_size": 2', '"rank": 1, "world_size": 2', 1))
    with TensorBoard(logdir, env={"TB_COMPARE_CACHE_DIR": str(base / "cache")}, cwd=base) as server:
        wait_for(lambda: len(call(server, "GET", "/runs")[2]["runs"]) == 4, timeout=60)
        got = until_done(server, "/compare/overall", {"baseline": BASE, "target": TARGET})
        assert got[0] == 200, got
        got = until_done(server, "/cluster", {"run": CLUSTER})
        assert got[0] == 200, got
        yield server


def pair(**extra) -> dict:
    return {"baseline": BASE, "target": TARGET, **extra}


def pair_routes(tb) -> list[str]:
    """Every route that compares a pair: the fixed ones and compare/<name> for each listed analysis."""
    names = [a["name"] for a in call(tb, "GET", "/analyses")[2]["analyses"]]
    assert "kernel" in names and "operator" in names
    return (["/compare/overall", "/compare/memory_curve", "/compare/communication", "/compare/steps",
             "/compare/xlsx"] + [f"/compare/{n}" for n in names])


def assert_bad(got, parameter: str, choices=None, words: str = ""):
    status, _, body = got
    assert status == 400, got
    assert isinstance(body, dict) and body.get("parameter") == parameter, body
    assert repr(parameter) in body["error"] and words in body["error"], body
    if choices is not None:
        assert body.get("choices") == choices, body


# -- §6: a step that does not exist ---------------------------------------------------------------

def test_route_table_is_the_plugins():
    """This module covers every route the plugin serves (a new route must be added to ROUTES)."""
    from tensorboard.plugins import base_plugin
    from tb_compare_plugin.loader import ProfileCompareLoader
    ctx = base_plugin.TBContext(logdir=str(SAMPLES), flags=argparse.Namespace(profile_compare_scan_interval=60.0))
    plugin = track_plugin(ProfileCompareLoader().load(ctx))
    assert set(plugin.get_plugin_apps()) == set(ROUTES)


@pytest.mark.parametrize("step", ["99", "-1", "0"])
@pytest.mark.parametrize("side", ["base_step", "target_step"])
def test_missing_step_is_400_naming_the_steps_every_time(tb, side, step):
    """A step the worker does not hold: 400 naming the parameter and the worker's steps, on every
    pair route, by GET and by POST, the same each time (today: 500, then a stored 422; -1 on the
    Kernel view: 200 with the kernels of no step)."""
    for path in pair_routes(tb):
        for method in ("GET", "GET", "POST", "GET"):
            got = call(tb, method, path, **({"query": pair(**{side: step})} if method == "GET"
                                          else {"body": pair(**{side: int(step)})}))
            assert_bad(got, side, STEPS, f"step {step} is not in the")
    got = call(tb, "POST", "/export", body=pair(**{side: int(step)}))
    assert_bad(got, side, STEPS)


def test_a_good_step_still_answers_after_bad_ones(tb):
    """Bad steps leave nothing behind: the same pair with a step it holds is answered."""
    for step in ("99", "-1"):
        call(tb, "GET", "/compare/overall", query=pair(target_step=step))
    got = until_done(tb, "/compare/overall", pair(base_step=2, target_step=2))
    assert got[0] == 200 and got[2]["target"]["step"] == 2, got
    got = until_done(tb, "/compare/kernel", pair(target_step=2, base_step=2))
    assert got[0] == 200 and got[2]["rows"], got
    assert_bad(call(tb, "GET", "/compare/overall", query=pair(target_step="99")), "target_step", STEPS)


# -- bad worker ids and values that are not numbers -----------------------------------------------

@pytest.mark.parametrize("bad", ["nosuchrun/worker0", "target_npu/nosuchworker", "../../etc/passwd", "a\x00b"])
def test_unknown_worker_is_400_naming_the_parameter(tb, bad):
    """baseline / target / id / workers naming no listed worker: 400 naming the parameter and the
    listed ids (today: 404, or 400 without the choices)."""
    listed = sorted(w["id"] for r in call(tb, "GET", "/runs")[2]["runs"] for w in r["workers"])
    for path in pair_routes(tb):
        for role in ("baseline", "target"):
            q = dict(pair(), **{role: bad})
            assert_bad(call(tb, "GET", path, query=q), role, listed)
            assert_bad(call(tb, "POST", path, body=q), role, listed)
    assert_bad(call(tb, "POST", "/export", body=dict(pair(), target=bad)), "target", listed)
    assert_bad(call(tb, "GET", "/worker", query={"id": bad}), "id", listed)
    assert_bad(call(tb, "POST", "/worker", body={"id": bad}), "id", listed)
    assert_bad(call(tb, "POST", "/load", body={"workers": [BASE, bad]}), "workers", listed)
    assert_bad(call(tb, "GET", "/analyses", query=pair(target=bad)), "target", listed)


@pytest.mark.parametrize("name, value, choices", [
    ("base_step", "one", STEPS), ("target_step", "2.5", STEPS),
    ("per_step", "maybe", ["0", "1", "auto"]), ("reference_compat", "2", ["0", "1"]),
])
def test_bad_pair_option_is_400(tb, name, value, choices):
    """A pair option that is not one of its values: 400 naming it (and its choices) on every pair route."""
    for path in pair_routes(tb):
        assert_bad(call(tb, "GET", path, query=pair(**{name: value})), name, choices)


@pytest.mark.parametrize("name, value, choices", [
    ("order", "sideways", ["asc", "desc"]), ("status", "neither", ["both", "baseline_only", "target_only"]),
    ("limit", "ten", None), ("limit", "0", None), ("offset", "-1", None), ("min_diff", "nan", None),
    ("min_diff", "lots", None), ("sort", "no_such_column", None),
])
def test_bad_table_parameter_is_400(tb, name, value, choices):
    got = call(tb, "GET", "/compare/kernel", query=pair(**{name: value}))
    assert_bad(got, name, choices)
    if name == "sort":
        assert "diff_us" in got[2]["choices"], got
    assert call(tb, "GET", "/compare/kernel", query=pair(**{name: value}))[0] == 400


def test_cluster_parameters_are_400(tb):
    """run / against naming no cluster run, a step no rank holds, a step that is not a number:
    400 naming the parameter, every time, by POST and by GET (today: 404, and a stored 422)."""
    for route in ("/cluster", "/cluster/xlsx"):
        for q, param in (({"run": "nosuchrun"}, "run"), ({"run": CLUSTER, "against": "nosuchrun"}, "against")):
            assert_bad(call(tb, "GET", route, query=q), param, [CLUSTER])
            assert_bad(call(tb, "POST", route, body=q), param, [CLUSTER])
        assert_bad(call(tb, "GET", route, query={"run": CLUSTER, "step": "x"}), "step")
    for _ in range(2):
        assert_bad(until_done(tb, "/cluster", {"run": CLUSTER, "step": 99}), "step", STEPS, "no rank has step 99")
    assert_bad(call(tb, "GET", "/cluster", query={"run": CLUSTER, "step": "99"}), "step", STEPS)
    assert_bad(until_done(tb, "/cluster/xlsx", {"run": CLUSTER, "step": 99}), "step", STEPS)
    got = until_done(tb, "/cluster", {"run": CLUSTER, "step": 3})
    assert got[0] == 200 and {r["step"] for r in got[2]["ranks"]} == {3}, got


# -- §6: NUL bytes and methods ------------------------------------------------------------------

def test_nul_byte_in_a_static_path_is_404(tb):
    """Today: 500 "embedded null byte"."""
    status, _, body = call(tb, "GET", "/static/index.js%00.js")
    assert status == 404 and isinstance(body, dict) and "error" in body, (status, body)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_methods_a_route_does_not_take_are_405(tb, route):
    """PUT, DELETE, PATCH, TRACE and OPTIONS: 405 naming what the route takes in ``Allow`` (today
    the runs route and the static files answer 200); a GET on a POST-only route too."""
    path, takes = ROUTES[route]
    allow = set(takes) | ({"HEAD"} if "GET" in takes else set())
    for method in ("PUT", "DELETE", "PATCH", "TRACE", "OPTIONS") + (() if "GET" in takes else ("GET", "HEAD")):
        status, headers, body = call(tb, method, path)
        assert status == 405, (route, method, status, body)
        assert {m.strip() for m in (headers.get("Allow") or "").split(",")} == allow, (route, method, headers)
        if method != "HEAD":
            assert method in body["error"], body


def test_get_and_head_still_answer(tb):
    assert call(tb, "HEAD", "/runs")[0] == 200
    assert call(tb, "HEAD", "/static/index.js")[0] == 200
    assert call(tb, "GET", "/static/index.js")[0] == 200
    assert call(tb, "HEAD", "/compare/overall", query=pair())[0] == 200
