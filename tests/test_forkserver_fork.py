"""service.forkserver_fork: ``tb-compare`` run as the program starts its fork server as a fork of
itself (after importing the libraries and loaders both need), the parsers are forked from it, and
the answer is the one the usual fork server (a fresh interpreter, ``TB_COMPARE_FORKED_SERVER=0``)
gives; with the numba scanners preloaded too (a forced fast Kineto path).  Told apart by the
phase marks' process ids: the preload's first marks come from the CLI's process when it forked
the fork server, from the fork server's own otherwise."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import SAMPLES


def _run(tmp_path, name: str, env_extra: dict):
    marks = tmp_path / f"{name}.log"
    env = dict(os.environ, TB_COMPARE_CACHE_DIR=str(tmp_path / "cache"), TB_COMPARE_TIMING=str(marks),
               TB_COMPARE_FAST_KINETO="1", **env_extra)
    out = tmp_path / f"{name}.json"
    cmd = [sys.executable, "-m", "tb_compare_plugin.cli", str(SAMPLES / "baseline_gpu"),
           str(SAMPLES / "target_npu"), "--no-cache", "--no-progress", "--quiet", "--json", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    pid = {}
    for line in marks.read_text().splitlines():
        _, p, label = line.split(" ", 2)
        pid.setdefault(label, p)
    return out.read_text(), pid


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the forked fork server is used on Python 3.11 only")
def test_the_cli_forks_its_fork_server_and_answers_the_same(tmp_path):
    forked, f = _run(tmp_path, "forked", {})
    usual, u = _run(tmp_path, "usual", {"TB_COMPARE_FORKED_SERVER": "0"})
    assert forked == usual
    # forked: the CLI imported the fork server's libraries and loaders itself
    assert f["fork server: loaders imported"] == f["cli: start"]
    assert f["fork server: numba loaded"] != f["cli: start"]
    assert f["fork server: preload done"] == f["fork server: numba loaded"]
    # usual: all of the preload in the fork server's own process
    assert u["fork server: loaders imported"] == u["fork server: preload done"] != u["cli: start"]
    for pids in (f, u):                    # the parsers are neither the CLI nor the fork server
        parsers = {p for label, p in pids.items() if label.startswith("child: start")}
        assert len(parsers) >= 1 and not parsers & {pids["cli: start"], pids["fork server: preload done"]}
