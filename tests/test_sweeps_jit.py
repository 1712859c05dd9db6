"""model/jit.py: the numba kernels of the nesting, its sort, the op tree's pre-order and the loader's
thread ids give exactly what their numpy forms give (on random intervals full of ties, and on real
traces: the whole profile and op tree), and the numpy forms are used when numba is turned off."""
from __future__ import annotations

import numpy as np
import pytest

from tb_compare_plugin.engines.api import api_stats
from tb_compare_plugin.engines.kernel import kernel_rows, kernel_stats
from tb_compare_plugin.engines.optree import OpTree, preorder
from tb_compare_plugin.engines.step_breakdown import _outermost, group_reduce
from tb_compare_plugin.engines.steps import side_steps
from tb_compare_plugin.loaders import load
from tb_compare_plugin.loaders.kineto_build import _group_ids
from tb_compare_plugin.model import intervals, jit

from conftest import SAMPLES

if jit.kernels(1 << 30) is None:
    pytest.skip(f"numba cannot run here: {jit.unavailable_reason()}", allow_module_level=True)


@pytest.fixture
def both(monkeypatch):
    """Call ``f(*args)`` with the kernels (any size) and with numba turned off."""
    def run(f, *args):
        monkeypatch.setattr(jit, "MIN_ROWS", 0)
        monkeypatch.delenv("TB_COMPARE_JIT", raising=False)
        assert jit.kernels(1) is not None
        with_jit = f(*args)
        monkeypatch.setenv("TB_COMPARE_JIT", "0")
        assert jit.kernels(1 << 30) is None
        without = f(*args)
        monkeypatch.delenv("TB_COMPARE_JIT")
        return with_jit, without
    return run


def _same(a, b):
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def _intervals(seed: int, n: int, groups: int, tmax: int):
    """Random intervals with many equal starts (and equal lengths), some of zero length."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, tmax, n).astype(np.int64)
    e = s + rng.integers(0, tmax // 4 + 1, n)
    g = rng.integers(-groups // 2, groups - groups // 2, n).astype(np.int64)
    return s, e, g


@pytest.mark.parametrize("seed,n,groups,tmax", [(1, 1, 1, 5), (2, 50, 1, 10), (3, 3000, 4, 200),
                                                (4, 5000, 40, 100000), (5, 4000, 2, 3)])
def test_nest_and_its_order(both, seed, n, groups, tmax):
    s, e, g = _intervals(seed, n, groups, tmax)      # tmax 3: runs of ~700 equal starts
    _same(*both(intervals.sweep_order, s, e, g))
    _same(*both(intervals.nest, s, e, g))
    _same(*both(intervals.nest, s, e, None))
    _same(*both(intervals.nest, s, e, g * 10 ** 12))        # groups too sparse to bucket


@pytest.mark.parametrize("seed,n,tmax", [(6, 2000, 50), (7, 3000, 4)])
def test_preorder(both, seed, n, tmax):
    s, e, g = _intervals(seed, n, 3, tmax)
    parent, _ = intervals.nest(s, e, g)
    _same(*both(preorder, parent, s, e - s))


@pytest.mark.parametrize("seed,tmax", [(8, 100000), (9, 30)])
def test_union_outermost_group_reduce(both, seed, tmax):
    s, e, g = _intervals(seed, 4000, 5, tmax)
    e = e - (np.arange(len(e)) % 7 == 0) * (tmax // 3)     # some intervals end before they start
    _same(*both(intervals.union, s, e))
    parent, _ = intervals.nest(s, e, g)
    mask = np.random.default_rng(seed).random(len(s)) < 0.6
    _same(*both(_outermost, mask, parent))
    idx = np.abs(g) % 3
    for uf, fill in ((np.minimum, np.iinfo(np.int64).max), (np.maximum, np.iinfo(np.int64).min)):
        _same(*both(group_reduce, uf, idx, e, 4, fill))


@pytest.mark.parametrize("distinct", [3, 300])              # 300: more threads than the kernel keeps
def test_group_ids(both, distinct):
    rng = np.random.default_rng(distinct)
    pid = rng.integers(0, 3, 5000).astype(np.int64) * 10 ** 9
    tid = rng.integers(-(distinct // 6), distinct // 3, 5000).astype(np.int64)
    _same(*both(_group_ids, pid, tid))


@pytest.mark.parametrize("path", [SAMPLES / "baseline_gpu" / "worker0.pt.trace.json",
                                  "gpu/hta_trace_diff/control/control.pt.trace.json.gz"])
def test_profile_and_op_tree(both, request, path):
    if isinstance(path, str):
        path = request.getfixturevalue("corpus") / path

    def build():
        prof = load("trace-json", str(path))
        tree = OpTree(prof)
        return (prof, tree.to_arrays()[1], api_stats(prof), kernel_stats(kernel_rows(prof), prof.symbols),
                side_steps(prof).to_dict())
    (p1, t1, a1, k1, s1), (p2, t2, a2, k2, s2) = both(build)
    assert p1.tables.keys() == p2.tables.keys()
    for name in p1.tables:
        assert p1.tables[name].equals(p2.tables[name]), name
    assert t1.keys() == t2.keys()
    for k in t1:
        _same(t1[k], t2[k])
    assert a1.equals(a2) and k1.equals(k2) and s1 == s2
