"""Big plain traces are decoded in place from a copy-on-write mapping (loaders/bytesource.py)
instead of being streamed through a buffer.  Both ways must give the same profile, or the same
LoadError message, on every malformed trace case and on the real corpus traces.

The mapping normally starts at 8 MB; here ``MAP_MIN`` is lowered so small files take it too.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from conftest import CORPUS
import malformed as mc

from tb_compare_plugin import loaders
from tb_compare_plugin.discovery import find_runs
from tb_compare_plugin.loaders import bytesource, jsonstream
from tb_compare_plugin.loaders.errors import LoadError

JSON_GROUPS = ("trace", "ascend-text")


def _load(fmt: str, root: str, mapped: bool, monkeypatch):
    monkeypatch.setattr(bytesource, "MAP_MIN", 1 if mapped else 1 << 62)
    try:
        return "ok", loaders.load(fmt, root)
    except LoadError as e:
        return "error", str(e)


def _same(a, b) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1] == b[1]
        return
    pa, pb = a[1], b[1]
    assert list(pa.symbols.as_array()) == list(pb.symbols.as_array())
    assert pa.meta.warnings == pb.meta.warnings
    assert set(pa.tables) == set(pb.tables)
    for name in pa.tables:
        pd.testing.assert_frame_equal(pa.tables[name], pb.tables[name], obj=name)


def _workers(folder: Path):
    """Every worker discovery lists, those it rejected by peeking too: the loader is run on
    them directly (as a rescan after a file changed would), and must reject them both ways."""
    return [w for r in find_runs(str(folder)) for w in r.workers]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in mc.CASES
                                  if c.group in JSON_GROUPS and not c.needs_unreadable])
def test_malformed_case_reads_the_same_mapped(case, tmp_path, monkeypatch):
    if case.corpus and not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    case.build(tmp_path)
    workers = _workers(tmp_path)
    assert workers, "discovery lists no worker for this case"
    for w in workers:
        streamed = _load(w.format, w.root, False, monkeypatch)
        _same(streamed, _load(w.format, w.root, True, monkeypatch))
        if w.error:                     # what discovery's peek rejected, the loader rejects too
            assert streamed[0] == "error", (w.error, streamed)


@pytest.mark.parametrize("rel", ["hta_2rank/rank0.pt.trace.json.gz", "hta_nccl/nccl.pt.trace.json.gz",
                                 "kineto_resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz"])
def test_corpus_traces_read_the_same_mapped(corpus, rel, tmp_path, monkeypatch):
    """The corpus ships gzip (never mapped); its plain text, written here, is read both ways."""
    plain = tmp_path / Path(rel).name[:-3]
    plain.write_bytes(gzip.decompress((corpus / "gpu" / rel).read_bytes()))
    _same(_load("trace-json", str(plain), False, monkeypatch), _load("trace-json", str(plain), True, monkeypatch))


def test_mapped_pages_are_given_back(tmp_path, monkeypatch):
    """Pages behind the decoding point are released as it goes (bounded resident memory)."""
    monkeypatch.setattr(bytesource, "MAP_MIN", 1)
    monkeypatch.setattr(bytesource, "DROP_EVERY", 1 << 12)
    ev = '{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": %d, "dur": 1}'
    text = '{"traceEvents": [' + ",\n".join(ev % i for i in range(20000)) + "]}"
    p = tmp_path / "t.pt.trace.json"
    p.write_text(text)
    calls = []
    real = bytesource.drop_behind

    def spy(m, done, upto):
        out = real(m, done, upto)
        calls.append((done, out))
        return out
    monkeypatch.setattr(jsonstream, "drop_behind", spy)
    n = sum(1 for _ in jsonstream.iter_event_chunks(str(p), lambda v: len(v), chunk_bytes=4096))
    assert n > 10
    assert any(out > done for done, out in calls)
