"""engines/side_work.py: the per-side reductions a parser process computes after its parse land
in the derived-data cache under the keys the engines read, and the comparison built on those
values is the one built without them (same overview, steps, API and kernel tables)."""
from __future__ import annotations

import pickle

import pytest

from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.engines import side_work
from tb_compare_plugin.engines.api import side_api_stats
from tb_compare_plugin.engines.kernel import side_kernel_stats
from tb_compare_plugin.engines.overall import side_breakdown
from tb_compare_plugin.engines.steps import steps_of
from tb_compare_plugin.loaders import load
from tb_compare_plugin.model.derived import DERIVED
from tb_compare_plugin.presenters.json_encode import encode
from tb_compare_plugin.service import compare as service

from conftest import SAMPLES

GPU = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
JOBS = (("breakdown", (None, False)), ("steps", ()), ("api", (None,)), ("kernels", (None,)))


@pytest.fixture(scope="module")
def three():
    """The same worker loaded three times: the parser's copy, its hand-back, a plain one."""
    return [load("trace-json", str(GPU)) for _ in range(3)]


def test_compute_gives_values_under_the_accessors_keys(three):
    child, parent, _ = three
    values = pickle.loads(pickle.dumps(side_work.compute(child, JOBS)))   # as they cross the pipe
    assert set(values) == {side_work.key(n, a) for n, a in JOBS}
    side_work.seed(parent, values)
    assert side_breakdown(parent, None, False) is values[side_work.key("breakdown", (None, False))]
    assert steps_of(parent) is values[side_work.key("steps")]
    assert side_api_stats(parent, None) is values[side_work.key("api", (None,))]
    assert side_kernel_stats(parent, None) is values[side_work.key("kernels", (None,))]


def test_a_failing_job_is_left_to_the_receiver(three):
    child = load("trace-json", str(GPU))
    values = side_work.compute(child, (("api", (987654,)), ("kernels", (None,))))
    assert set(values) == {side_work.key("kernels", (None,))}     # no such step: not sent


def test_seeded_comparison_equals_the_plain_one(three):
    child, parent, plain = three
    side_work.seed(parent, pickle.loads(pickle.dumps(side_work.compute(child, JOBS))))
    answers = []
    for prof in (parent, plain):
        cmp = Comparison(prof, prof)
        answers.append(encode({"overview": service.overview(cmp), "steps": service.steps(cmp),
                               "api": cmp.api().to_dict("records"),
                               "kernels": cmp.kernels().to_dict("records")}))
    assert answers[0] == answers[1]
    assert DERIVED.peek(plain, side_work.key("api", (None,))) is not None   # built there on demand


def test_the_op_tree_crosses_as_mapped_files(three, tmp_path):
    """A child's op tree goes back as .npy files (parsepool._spill / _unspill): the tree mapped
    onto the parent's copy gives the same operator table as one built there."""
    from tb_compare_plugin.engines.optree import tree_of
    from tb_compare_plugin.service.parsepool import _spill, _unspill
    child = load("trace-json", str(GPU))
    parent, plain = load("trace-json", str(GPU)), load("trace-json", str(GPU))
    spilled = pickle.loads(pickle.dumps(_spill(side_work.compute(child, (("tree", ()),)), str(tmp_path / "v"))))
    values = _unspill(spilled, parent)
    assert not list(tmp_path.iterdir())                      # the files are gone, the mappings stay
    side_work.seed(parent, values)
    got, want = tree_of(parent), tree_of(plain)
    assert got is values["optree"] and got.profile is parent
    for name in got._ARRAYS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and (a == b).all(), name
    assert got.dev.equals(want.dev) and list(got.dev.dtypes) == list(want.dev.dtypes)
    from tb_compare_plugin.presenters.views import operator_table
    tables = [encode(operator_table(Comparison(p, p))) for p in (parent, plain)]
    assert tables[0] == tables[1]


def test_the_module_forests_cross_without_their_tree(corpus, tmp_path):
    """The modules job (built before the tree job, as the CLI orders them) is pickled back without
    its op tree; on the parent's copy, with the tree mapped back, the module sheets are the ones
    built there."""
    from tb_compare_plugin.engines.module import compare_modules
    from tb_compare_plugin.service.parsepool import _spill, _unspill
    from tb_compare_plugin.presenters.reference_rows import module_compare_rows, module_compare_statistic_rows
    root = str(corpus / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt")
    child, parent, plain = (load("ascend-text", root) for _ in range(3))
    jobs = (("modules", (None,)), ("tree", ()))
    assert set(side_work.compute(child, jobs)) == {"modules:None", "optree"}
    spilled = pickle.loads(pickle.dumps(_spill(side_work.compute(child, jobs), str(tmp_path / "v"))))
    assert spilled["modules:None"].tree is None
    side_work.seed(parent, _unspill(spilled, parent))
    got, want = compare_modules(parent, parent), compare_modules(plain, plain)
    for rows in (module_compare_rows, module_compare_statistic_rows):
        assert encode(rows(got)) == encode(rows(want))
    assert DERIVED.peek(parent, "modules:None").tree is DERIVED.peek(parent, "optree")


def test_the_allocation_places_cross_as_values(corpus):
    """The placement job's frame (pickled back) is the one the memory engine builds itself: the
    same memory comparison on the seeded copy as on a plain one."""
    root = str(corpus / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt")
    child, parent, plain = (load("ascend-text", root) for _ in range(3))
    values = pickle.loads(pickle.dumps(side_work.compute(child, (("placement", ()),))))
    assert set(values) == {"placement"}
    side_work.seed(parent, values)
    got = [Comparison(p, p).memory() for p in (parent, plain)]
    assert encode(got[0].pairs.to_dict("records")) == encode(got[1].pairs.to_dict("records"))
    assert DERIVED.peek(parent, "placement") is values["placement"]
