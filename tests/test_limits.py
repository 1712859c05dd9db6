"""Hostile sizes, interrupted runs, stale caches and ignored options: the resource side of
"no silent wrong answers".  Every input is generated in tmp_path."""
from __future__ import annotations

import subprocess
import sys

from conftest import SAMPLES

GPU_SAMPLE = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"


def tbc(*args, env=None, timeout=300):
    cmd = [sys.executable, "-m", "tb_compare_plugin.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def test_gpu_flow_cat_is_not_accepted():
    """The option changed nothing (the loader links kernels by correlation id, then through the
    flow events of every Kineto category), so it is gone rather than silently ignored."""
    r = tbc(GPU_SAMPLE, GPU_SAMPLE, "--gpu-flow-cat", "ac2g", "--no-cache")
    assert r.returncode == 2
    assert "--gpu-flow-cat" in r.stderr
