"""The `tb-compare` command as a user runs it: a real subprocess, real files, exit codes
and one-line errors, JSON output equal to the plugin route's."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS, SAMPLES, needs_corpus


def tbc(*args, cwd=None):
    cmd = [sys.executable, "-m", "tb_compare_plugin.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300)


def one_line_error(r):
    assert r.returncode != 0
    err = r.stderr.strip()
    assert err.startswith("tb-compare: error:"), err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in r.stderr
    return err


def test_missing_path(tmp_path):
    err = one_line_error(tbc(tmp_path / "nope", tmp_path / "nope2"))
    assert "nope" in err and "no such file" in err


def test_unknown_format(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    err = one_line_error(tbc(f, f))
    assert "notes.txt" in err


def test_corrupt_trace(tmp_path):
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "k", "ts": 1')
    err = one_line_error(tbc(bad, bad))
    assert "bad.pt.trace.json" in err


def test_usage_error():
    r = tbc()
    assert r.returncode == 2


@needs_corpus
def test_run_folder_needs_rank():
    run = CORPUS / "npu/alexnet_ddp_2rank_level1"
    err = one_line_error(tbc(run, run))
    assert "--base-rank" in err
    r = tbc(run, run, "--base-rank", 0, "--target-rank", 1, "--json", "-")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["baseline"]["worker"] == "rank0_ascend_pt" and out["target"]["worker"] == "rank1_ascend_pt"


@needs_corpus
def test_gz_and_plain_json_agree(tmp_path):
    # a small trace (10 MB unzipped, NCCL included): the point is gz against plain, not size
    src = CORPUS / "gpu/hta_nccl/nccl.pt.trace.json.gz"
    plain = tmp_path / "nccl.pt.trace.json"
    with gzip.open(src, "rb") as f, open(plain, "wb") as g:
        shutil.copyfileobj(f, g)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    r1 = tbc(src, src, "--json", a, "-q")
    r2 = tbc(plain, plain, "--json", b, "-q")
    assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr, r2.stderr)
    ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ja["overall_metrics"] == jb["overall_metrics"]
    assert all(abs(m["diff_ms"]) < 1e-9 for m in ja["overall_metrics"])


@needs_corpus
def test_table_fits_80_columns():
    r = tbc(CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt",
            CORPUS / "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt")
    assert r.returncode == 0, r.stderr
    assert "E2E Time" in r.stdout and "Computing Time" in r.stdout
    assert max(len(l) for l in r.stdout.splitlines()) <= 80
