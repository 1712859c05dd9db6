"""The fast Ascend trace_view.json path (numba byte scanner, loaders/ascend_fast.py) gives the same
profile as the general decoder: every table, column, symbol and warning (but the one saying the
general decoder was used), on every corpus and sample trace_view.json, in one chunk and in many;
a chunk it refuses goes to the general decoder and the warnings say so.  Skipped only where numba
cannot be installed (it is an install requirement where it has wheels)."""
from __future__ import annotations

import json

import pytest

from conftest import CORPUS, ROOT
from tb_compare_plugin.loaders import ascend_fast, ascend_text, ascend_trace
from profile_diff import profile_diff

pytestmark = pytest.mark.skipif(not ascend_fast.available(),
                                reason=f"numba is not installed: {ascend_fast.unavailable_reason()}")

TRACES = sorted([*(CORPUS.glob("npu/**/trace_view.json") if CORPUS.is_dir() else []),
                 *ROOT.glob("samples/**/trace_view.json")])


def _export(tv):
    """The export folder of a trace_view.json (``*_ascend_pt`` / ``*_ascend_ms``, else its ASCEND_PROFILER_OUTPUT)."""
    out = tv.parent
    return out.parent if out.parent.name.endswith(("_ascend_pt", "_ascend_ms")) else out


def _notes(p) -> list[str]:
    return [w for w in p.meta.warnings if "not the fast scanner" in w]


def _same(a, b) -> list[str]:
    """What differs between two profiles (the general-decoder notes aside)."""
    return profile_diff(a, b, 'not the fast scanner')


def _load(root, fast: bool, monkeypatch, chunk: int | None = None):
    with monkeypatch.context() as m:
        m.setenv("TB_COMPARE_FAST_ASCEND", "1" if fast else "0")
        if chunk:
            m.setattr(ascend_fast, "FAST_CHUNK", chunk)
            m.setattr(ascend_trace, "CHUNK_BYTES", chunk)
        spy = {}
        real = ascend_trace.Trace.__init__

        def init(self, col):
            spy.update(fast=col.n_fast, general=sum(col.fallbacks.values()))
            real(self, col)
        m.setattr(ascend_trace.Trace, "__init__", init)
        return ascend_text.load(str(root)), spy


@pytest.mark.parametrize("tv", TRACES, ids=[str(p.parent.parent.name) + "/" + p.parent.parent.parent.name
                                           for p in TRACES])
def test_fast_equals_general(tv, monkeypatch):
    fast, used = _load(_export(tv), True, monkeypatch)
    assert used["fast"] >= 1 and used["general"] == 0          # the scanner took every chunk
    general, _ = _load(_export(tv), False, monkeypatch)
    assert _same(fast, general) == []


@pytest.mark.skipif(not CORPUS.is_dir(), reason="no corpus")
def test_fast_equals_general_in_small_chunks(monkeypatch):
    """Many chunks on both sides: what one chunk carries over (texts decoded once, vocabularies,
    process roles from metadata) is the same."""
    root = CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"
    fast, used = _load(root, True, monkeypatch, chunk=40_000)
    assert used["fast"] > 20 and used["general"] == 0
    assert _same(fast, _load(root, False, monkeypatch, chunk=40_000)[0]) == []


def _events(n=60):
    evs = [{"name": "process_name", "pid": 7, "tid": 0, "args": {"name": "Python"}, "ph": "M"}]
    for i in range(n):
        evs.append({"ph": "X", "name": f"aten::op{i % 7}", "pid": 7, "tid": 3, "ts": f"{1000 + 10 * i}.125",
                    "dur": 1.5 + i / 3, "cat": "cpu_op",
                    "args": {"Sequence number": i, "Input Dims": "[2, 3]\r\n", "Call stack": "a.py(1): f\u00e9"}})
        evs.append({"ph": "C", "name": "HBM", "pid": 9, "tid": 0, "ts": f"{1000 + 10 * i}.000",
                    "args": {"Read": [1, {"x": None}]}})
    return evs


def test_refused_chunk_goes_to_the_general_decoder(tmp_path, monkeypatch):
    """A chunk with a value the scanner does not read (a 4-decimal ts) is parsed by the general
    decoder, the profile's warnings say so (from 4 MB parsed that way on; here from 0), and the
    profile is otherwise the same."""
    monkeypatch.setattr(ascend_fast, "FALLBACK_NOTE_BYTES", 0)
    evs = _events()
    evs[41]["ts"] = "1200.0625"                           # an X event (C events: ts unread)
    tv = tmp_path / "trace_view.json"
    tv.write_text(json.dumps(evs))
    fast, used = _load(tv, True, monkeypatch, chunk=2000)
    assert used["general"] == 1 and used["fast"] > 1
    assert [w.split(" (")[0] for w in _notes(fast)] == ["trace_view.json: 1 of %d chunks" % (used["fast"] + 1)]
    assert "an X event value of another type (1)" in _notes(fast)[0]
    assert _same(fast, _load(tv, False, monkeypatch, chunk=2000)[0]) == []


def test_on_for_big_traces_and_said_when_numba_cannot_run(tmp_path, monkeypatch):
    tv = tmp_path / "trace_view.json"
    tv.write_text(json.dumps(_events(5)))
    monkeypatch.delenv("TB_COMPARE_FAST_ASCEND", raising=False)
    assert not ascend_fast.wanted(1 << 20) and ascend_fast.wanted(ascend_fast.FAST_MIN_BYTES)
    monkeypatch.setattr(ascend_fast, "FAST_MIN_BYTES", 1)
    assert _notes(ascend_text.load(str(tv))) == []
    monkeypatch.setattr(ascend_fast, "_jit", None)
    monkeypatch.setattr(ascend_fast, "_import_error", "numba unavailable (ImportError: no numba here)")
    assert _notes(ascend_text.load(str(tv))) == [
        "trace_view.json: parsed with the general decoder, not the fast scanner (numba unavailable "
        "(ImportError: no numba here)): the same tables, slower"]
    monkeypatch.setenv("TB_COMPARE_FAST_ASCEND", "0")          # turned off: nothing to say
    assert _notes(ascend_text.load(str(tv))) == []


@pytest.mark.skipif(not CORPUS.is_dir(), reason="no corpus")
def test_late_role_change_decodes_again_with_the_scanner(monkeypatch):
    """Wrong role hints make the scanned chunks keep the wrong args too: the second pass (every
    field kept) gives the same tables as the general decoder."""
    root = CORPUS / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"
    real = ascend_trace._role_hints
    passes = []
    init = ascend_trace._Collector.use_scanner

    def spy(self):
        passes.append(self.full)
        init(self)
    with monkeypatch.context() as m:
        m.setattr(ascend_trace, "_role_hints", lambda p: {k: 1 for k in real(p)})
        m.setattr(ascend_trace._Collector, "use_scanner", spy)
        fast, used = _load(root, True, monkeypatch, chunk=64 << 10)
    assert passes == [False, True] and used["general"] == 0
    assert _same(fast, _load(root, False, monkeypatch, chunk=64 << 10)[0]) == []


def test_durations_read_from_their_text(tmp_path, monkeypatch):
    """Durations the scanner does not read exactly itself (more digits than a double holds, an
    exponent, a minus) are read from their text by numpy's cast: the doubles msgspec reads."""
    monkeypatch.setattr(ascend_fast, "FALLBACK_NOTE_BYTES", 0)
    evs = _events()
    hard = [0.44999999999999996, 2.1500000000000004, 53.74106250000001, 1.2345678901234567e3, -0.30000000000000004,
            123456789.12345678, 9007199254740993.5, 4.9e-324]
    for k, d in enumerate(hard):
        evs[1 + 2 * k]["dur"] = d
    text = json.dumps(evs).replace('"dur": 1234.5678901234567', '"dur": 1.2345678901234567e3')
    tv = tmp_path / "trace_view.json"
    tv.write_text(text)
    fast, used = _load(tv, True, monkeypatch, chunk=2000)
    assert used["general"] == 0 and used["fast"] > 1
    assert _same(fast, _load(tv, False, monkeypatch, chunk=2000)[0]) == []


def test_a_text_msgspec_refuses_is_left_to_the_general_decoder(tmp_path, monkeypatch):
    """A name with an escape msgspec does not read (a lone UTF-16 surrogate) sends its chunk to the
    general decoder, which reports the malformed JSON as it does without the scanner (the
    scanner's check of the chunk's texts once failed on a missing attribute)."""
    evs = _events(20)
    tv = tmp_path / "trace_view.json"
    tv.write_text(json.dumps(evs).replace("aten::op3", "\\udc00", 1))
    errors = []
    for fast in (True, False):
        with pytest.raises(ascend_text.LoadError) as e:
            _load(tv, fast, monkeypatch)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "surrogate" in errors[0]
