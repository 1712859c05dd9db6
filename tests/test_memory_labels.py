"""The two peak memories say what they are (issue 14, item 4).

The overview's Peak reserved memory (Mem Usage, 2.064 GB on alexnet rank0) is the max over every
memory component, reached by APP (the whole process); the Memory view shows PTA (the PyTorch
caching allocator: 1,452.0 MB reserved at its peak).  Both answers now name the component and say
what it measures, and the Memory view's answer carries a note on why the figures differ.
"""
from __future__ import annotations


import pytest

from conftest import CORPUS, needs_corpus
from test_plugin_routes import make_client, post_until_done, run_worker_ids

pytestmark = needs_corpus


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path_factory.mktemp("memlabels")))
    c = make_client(CORPUS / "npu")
    ids = run_worker_ids(c, "alexnet_ddp_2rank_level1", 2)
    pair = {"baseline": next(i for i in ids if "rank0" in i), "target": next(i for i in ids if "rank1" in i)}
    yield post_until_done(c, "/compare/overall", pair), post_until_done(c, "/compare/memory_curve", pair)
    mp.undo()


def test_overview_peak_reserved_names_its_component(answers):
    ov, _ = answers
    m = ov["memory"]["baseline"]
    assert m["peak_reserved_gb"] == pytest.approx(2.064, abs=5e-4)
    assert m["peak_reserved_component"] == "APP"
    assert "APP" in m["peak_reserved_label"] and "whole process" in m["peak_reserved_label"]


def test_memory_view_names_its_component_and_says_why_it_differs(answers):
    ov, curve = answers
    side = curve["baseline"]
    assert side["component"] == "PTA" and "PyTorch caching allocator" in side["component_label"]
    assert side["peak"]["reserved_mb"] == pytest.approx(1452.0)
    assert side["peak_reserved_component"] == "APP"
    assert side["peak_reserved_gb"] == pytest.approx(ov["memory"]["baseline"]["peak_reserved_gb"], rel=1e-12)
    notes = [n for n in curve["notes"] if n.startswith("baseline:")]
    assert len(notes) == 1 and "2.064 GB" in notes[0] and "APP" in notes[0] and "PTA" in notes[0]
