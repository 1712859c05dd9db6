"""A real `tensorboard` process: the plugin is found through its entry point, lists the
sample runs, survives a broken run, and never writes into the logdir."""
from __future__ import annotations

import json
import os
import urllib.error
import shutil
import stat
import subprocess
import sys

import pytest

from conftest import SAMPLES
from tbserver import TensorBoard, wait_for

pytestmark = pytest.mark.skipif(not (SAMPLES / "README.md").exists(), reason="samples/ not generated yet")


def _snapshot(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.stat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


def _make_readonly(root):
    for d, dirs, files in os.walk(root):
        for f in files:
            os.chmod(os.path.join(d, f), stat.S_IRUSR | stat.S_IRGRP)
        os.chmod(d, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)


def _installed_entry_point(cwd) -> bool:
    """Whether a Python started in ``cwd`` (not this one: ``python -m pytest`` puts the source
    tree on sys.path) sees the plugin's entry point."""
    code = ("from importlib.metadata import entry_points; e = entry_points(); "
            "g = e.select(group='tensorboard_plugins') if hasattr(e, 'select') else e.get('tensorboard_plugins', ()); "
            "print(any(p.value == 'tb_compare_plugin.loader:ProfileCompareLoader' for p in g))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=60)
    return r.stdout.strip() == "True"


def test_real_tensorboard_lists_samples(tmp_path, monkeypatch):
    """TensorBoard starts in a folder of its own, so it finds the plugin as installed (its
    entry point), never through a build/ or egg-info some other step left in the source tree."""
    assert _installed_entry_point(tmp_path), "tb-compare-plugin is not installed: run `pip install -e .`"
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    logdir = tmp_path / "logdir"
    shutil.copytree(SAMPLES, logdir)
    broken = logdir / "broken_run"
    broken.mkdir()
    (broken / "w.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1')
    _make_readonly(logdir)
    before = _snapshot(logdir)
    try:
        with TensorBoard(logdir, cwd=tmp_path) as tb:
            listing = tb.get_json("/data/plugins_listing")
            assert "profile_compare" in listing
            body = wait_for(lambda: (lambda b: b if len(b["runs"]) >= 4 else None)(
                tb.get_json("/data/plugin/profile_compare/runs")))
            names = {r["name"] for r in body["runs"]}
            assert {"baseline_gpu", "target_npu", "broken_run"} <= names
            bad = [w for r in body["runs"] for w in r["workers"] if r["name"] == "broken_run"][0]
            try:
                tb.post_json("/data/plugin/profile_compare/worker", {"id": bad["id"]})
                raise AssertionError("a truncated trace must not load")
            except urllib.error.HTTPError as e:
                assert e.code == 422 and "w.pt.trace.json" in json.loads(e.read())["error"]
            q = "baseline=baseline_gpu/worker0&target=target_npu/rank0_ascend_pt"
            try:
                tb.get_json("/data/plugin/profile_compare/compare/overall?" + q)
                raise AssertionError("a GET must not start parsing")
            except urllib.error.HTTPError as e:
                assert e.code == 409 and json.loads(e.read())["status"] == "not_loaded"
            over = tb.post_json("/data/plugin/profile_compare/compare/overall",
                                {"baseline": "baseline_gpu/worker0", "target": "target_npu/rank0_ascend_pt"})
            assert any(m["name"] == "E2E Time" for m in over["overall_metrics"])
            static = os.path.join(os.path.dirname(__file__), "..", "tb_compare_plugin", "static", "index.js")
            if os.path.exists(static):
                status, js = tb.get("/data/plugin/profile_compare/static/index.js")
                assert status == 200 and b"render" in js
            assert tb.alive()
        assert _snapshot(logdir) == before
    finally:
        for d, dirs, files in os.walk(logdir):
            os.chmod(d, 0o755)
