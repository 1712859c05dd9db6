"""The fast Kineto path (numba byte scanner, loaders/kineto_fast.py) gives the same profile as the
general decoder: every table, column, symbol and warning (but the one saying the general decoder
was used), on every corpus GPU trace; and the CLI's --json is the same with it on and off.  Skipped
only where numba cannot be installed (it is an install requirement where it has wheels)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, ROOT, needs_corpus
from tb_compare_plugin.loaders import kineto_build, kineto_json, kineto_scan
from profile_diff import profile_diff

pytestmark = pytest.mark.skipif(not kineto_scan.available(),
                                reason=f"numba is not installed: {kineto_scan.unavailable_reason()}")

TRACES = sorted(CORPUS.glob("gpu/**/*.pt.trace.json*")) if CORPUS.is_dir() else []


def _notes(p) -> list[str]:
    """The warnings saying the general decoder parsed (some of) the trace."""
    return [w for w in p.meta.warnings if "not the fast parser" in w]


def _same(a, b) -> list[str]:
    """What differs between two profiles (the general-decoder notes aside)."""
    return profile_diff(a, b, 'not the fast parser')


@needs_corpus
@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(CORPUS)) for p in TRACES])
def test_fast_equals_general(path):
    # the same chunks on both sides: symbols are numbered in the order a chunk's fields are met, so
    # the chunk size (the fast path reads 16 MB at a time, the general decoder 1 MB) changes their
    # numbering, never the strings a column holds (test_cli_json_same_with_fast_path)
    fast = kineto_json.load(str(path), fast=True)
    general = kineto_json.load(str(path), fast=False, chunk_bytes=kineto_json.FAST_CHUNK)
    assert _same(fast, general) == []


@needs_corpus
def test_fast_equals_general_in_small_chunks():
    """Many chunks on both sides: what one chunk carries over to the next (interned strings,
    categories, (grid, block) codes, NCCL kernel names) is the same."""
    path = CORPUS / "gpu/hta_2rank/rank0.pt.trace.json.gz"
    fast = kineto_json.load(str(path), fast=True, chunk_bytes=300_000)
    assert _same(fast, kineto_json.load(str(path), fast=False, chunk_bytes=300_000)) == []


def test_refused_chunk_goes_to_the_general_decoder(tmp_path, monkeypatch):
    """A chunk with a value the scanner does not read (a 4-decimal ts) is parsed by the general
    decoder, the profile's warnings say so (from 4 MB parsed that way on; here from 0), and the
    profile is otherwise the same."""
    monkeypatch.setattr(kineto_build, "FALLBACK_NOTE_BYTES", 0)
    evs = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10 + i, "dur": 1,
            "args": {"External id": i}} for i in range(50)]
    evs.append({"ph": "X", "cat": "kernel", "name": "k\\u00e9", "pid": 0, "tid": "stream 7", "ts": 12.0005,
                "dur": 2, "args": {"correlation": 3, "stream": 7, "device": 0, "grid": [1, 1, 1],
                                   "block": [32, 1, 1]}})
    p = tmp_path / "t.pt.trace.json"
    p.write_text(json.dumps({"traceEvents": evs}))
    fast = kineto_json.load(str(p), fast=True)
    assert _notes(fast) == ["1 of 1 chunks parsed with the general decoder, not the fast parser ('ts' values "
                            "that are not numbers of at most 3 decimals (1)): the same tables, slower"]
    assert _same(fast, kineto_json.load(str(p), fast=False)) == []


def test_on_by_default_and_said_when_numba_cannot_run(tmp_path, monkeypatch):
    p = tmp_path / "t.pt.trace.json"
    p.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                              "ts": 1, "dur": 2, "args": {"stream": 7, "device": 0}}]}))
    monkeypatch.delenv("TB_COMPARE_FAST_KINETO", raising=False)
    assert kineto_scan.wanted()
    # by default only big traces take the scanner (its set-up costs more than a small parse)
    assert not kineto_scan.wanted(1 << 20, "t.json") and not kineto_scan.wanted(4 << 20, "t.json.gz")
    assert kineto_scan.wanted(kineto_scan.FAST_MIN_BYTES, "t.json")
    assert kineto_scan.wanted(kineto_scan.FAST_MIN_BYTES // 8, "t.json.gz")
    monkeypatch.setattr(kineto_scan, "FAST_MIN_BYTES", 1)      # this tiny trace counts as big
    assert _notes(kineto_json.load(str(p))) == []
    monkeypatch.setattr(kineto_scan, "_scan", None)
    monkeypatch.setattr(kineto_scan, "_import_error", "numba unavailable (ImportError: no numba here)")
    assert _notes(kineto_json.load(str(p))) == [
        "parsed with the general decoder, not the fast parser (numba unavailable (ImportError: no numba "
        "here)): the same tables, several times slower"]
    monkeypatch.setenv("TB_COMPARE_FAST_KINETO", "0")        # turned off: nothing to say
    assert not kineto_scan.wanted()
    assert _notes(kineto_json.load(str(p))) == []
    monkeypatch.setenv("TB_COMPARE_FAST_KINETO", "1")        # asked for: any size
    monkeypatch.setattr(kineto_scan, "FAST_MIN_BYTES", 1 << 40)
    assert kineto_scan.wanted(10, "t.json")
    assert _notes(kineto_json.load(str(p))) != []


@needs_corpus
def test_cli_json_same_with_fast_path(tmp_path):
    base, target = (CORPUS / "gpu/hta_trace_diff/control", CORPUS / "gpu/hta_trace_diff/test")
    outs = []
    for flag in ("1", "0"):
        env = dict(os.environ, TB_COMPARE_FAST_KINETO=flag, PYTHONPATH=str(ROOT))
        out = tmp_path / f"out{flag}.json"
        subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", str(base), str(target), "--no-cache",
                        "--json", str(out)], check=True, env=env, cwd=tmp_path, capture_output=True)
        outs.append(json.loads(out.read_text()))
    assert outs[0] == outs[1]


@needs_corpus
@pytest.mark.parametrize("name", ["gpu/hta_2rank/rank0.pt.trace.json.gz",
                                  "gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"])
def test_quick_plan_equals_the_careful_path(name, monkeypatch):
    """The quick plan (kineto_plan: one numba pass, one value table for the load) takes every chunk
    of these traces (text tids included) and gives the profile the careful path (kineto_fast._plan)
    gives, chunk by chunk (small chunks: what carries over from one chunk to the next is the same)."""
    from tb_compare_plugin.loaders import kineto_plan
    path = str(CORPUS / name)
    taken = []
    take = kineto_plan.take
    monkeypatch.setattr(kineto_plan, "take", lambda *a: taken.append(take(*a)) or taken[-1])
    quick = kineto_json.load(path, fast=True, chunk_bytes=300_000)
    assert len(taken) > 3 and all(taken)
    monkeypatch.setattr(kineto_plan, "_usable", False)
    careful = kineto_json.load(path, fast=True, chunk_bytes=300_000)
    assert len(taken) > 3 and _same(quick, careful) == []


@needs_corpus
def test_quick_plan_in_tiny_blocks_equals_the_careful_path(monkeypatch):
    """The scan and the plan go block by block (kineto_plan.BLOCK events): with blocks of 7 events
    and output room for 3 rows a group at first, the pauses, the texts decoded between blocks and
    the output's growth all happen many times a chunk, and the profile is the careful path's."""
    from tb_compare_plugin.loaders import kineto_plan
    path = str(CORPUS / "gpu/hta_2rank/rank0.pt.trace.json.gz")
    taken = []
    take = kineto_plan.take
    monkeypatch.setattr(kineto_plan, "take", lambda *a: taken.append(take(*a)) or taken[-1])
    monkeypatch.setattr(kineto_plan, "BLOCK", 7)
    monkeypatch.setattr(kineto_plan, "EVENT_BYTES", 1 << 40)
    monkeypatch.setattr(kineto_plan, "MIN_ROOM", 3)
    quick = kineto_json.load(path, fast=True, chunk_bytes=300_000)
    assert len(taken) > 3 and all(taken)
    monkeypatch.setattr(kineto_plan, "_usable", False)
    careful = kineto_json.load(path, fast=True, chunk_bytes=300_000)
    assert _same(quick, careful) == []


def test_scan_plan_cache_follows_the_scanner():
    """numba's cache of ``scan_plan`` is checked against ``_kineto_plan_jit.py`` only, but holds the
    scanner's compiled code: the file names the scanner sources it goes with (their sha1), so a
    scanner change must change it too, or a cached ``scan_plan`` keeps running the old scanner."""
    import hashlib
    import re
    d = os.path.join(ROOT, "tb_compare_plugin", "loaders")
    data = b"".join(open(os.path.join(d, f), "rb").read() for f in ("_kineto_scan_jit.py", "kineto_scan_codes.py"))
    text = open(os.path.join(d, "_kineto_plan_jit.py"), encoding="utf-8").read()
    named = re.search(r'^SCANNER_SHA1 = "([0-9a-f]{40})"', text, re.M)
    assert named, "_kineto_plan_jit.py names no SCANNER_SHA1"
    assert named.group(1) == hashlib.sha1(data).hexdigest(), (
        "the scanner changed: set SCANNER_SHA1 in _kineto_plan_jit.py to "
        f"{hashlib.sha1(data).hexdigest()} (so numba recompiles scan_plan with the new scanner)")
