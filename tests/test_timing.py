"""The phase marks bench/phases.py reads (tb_compare_plugin.timing): a real CLI run with
TB_COMPARE_TIMING set writes the CLI's, the fork server's and both parser processes' marks to
that file, in order; without it nothing is written and the answer is the same."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import SAMPLES


def _run(tmp_path, env_extra):
    env = dict(os.environ, TB_COMPARE_CACHE_DIR=str(tmp_path / "cache"), **env_extra)
    cmd = [sys.executable, "-m", "tb_compare_plugin.cli", str(SAMPLES / "baseline_gpu"),
           str(SAMPLES / "target_npu"), "--no-cache", "--no-progress", "--quiet",
           "--json", str(tmp_path / "o.json")]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return (tmp_path / "o.json").read_text()


def test_marks_from_every_process(tmp_path):
    marks = tmp_path / "marks.log"
    with_marks = _run(tmp_path, {"TB_COMPARE_TIMING": str(marks)})
    rows = [line.split(" ", 2) for line in marks.read_text().splitlines()]
    labels = [r[2] for r in rows]
    times = [float(r[0]) for r in rows]
    assert labels[0] == "cli: start" and labels[-1] == "cli: leaving"
    for want in ("cli: both sides in", "cli: comparison made", "cli: json written", "parent: side 0 in",
                 "parent: side 1 in"):
        assert want in labels, labels
    assert sum(label.startswith("child: parsed") for label in labels) == 2, labels
    assert len({r[1] for r in rows}) >= 3              # the CLI and two parser processes
    assert times[-1] >= times[0]
    without = _run(tmp_path, {"TB_COMPARE_TIMING": ""})
    assert without == with_marks
