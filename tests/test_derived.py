"""model/derived.py: derived data (op trees, placed memory) is built once per profile whoever
asks, kept outside the Profile, and goes away with its profile."""
from __future__ import annotations

import gc
import threading
import weakref

import pytest

from tb_compare_plugin.engines.memory import placed_op_rows
from tb_compare_plugin.engines.optree import tree_of
from tb_compare_plugin.loaders import load
from tb_compare_plugin.model import Profile, ProfileMeta, SymbolTable
from tb_compare_plugin.model.derived import DERIVED, DerivedCache

from conftest import SAMPLES


def _profile():
    return Profile(SymbolTable(), ProfileMeta(path="p"))


def test_built_once_across_threads():
    cache, p, calls = DerivedCache(), _profile(), []
    gate = threading.Event()

    def build():
        calls.append(1)
        gate.wait(5)
        return object()
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get(p, "x", build))) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(g) for g in got}) == 1
    assert cache.peek(p, "x") is got[0] and cache.peek(p, "y") is None
    assert cache.peek(_profile(), "x") is None                  # keyed by profile identity


def test_a_failed_build_is_remembered():
    cache, p = DerivedCache(), _profile()
    with pytest.raises(ZeroDivisionError):
        cache.get(p, "x", lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        cache.get(p, "x", lambda: 1)
    cache.forget(p, "x")
    assert cache.get(p, "x", lambda: 1) == 1


def test_entries_go_with_their_profile():
    cache, p = DerivedCache(), _profile()
    cache.get(p, "x", lambda: [1, 2])
    assert cache.profiles() == 1
    del p
    gc.collect()
    assert cache.profiles() == 0 and not cache._slots


def test_tree_and_placed_memory_live_in_the_cache_not_on_the_profile():
    p = load("ascend-text", str(SAMPLES / "target_npu" / "rank0_ascend_pt"))
    before = set(vars(p))
    tree = tree_of(p)
    rows = placed_op_rows(p, tree)
    assert set(vars(p)) == before                               # nothing stashed on the profile
    assert tree_of(p) is tree and DERIVED.peek(p, "optree") is tree
    assert DERIVED.peek(p, "placed_op_rows") is rows and placed_op_rows(p) is rows
    assert tree.profile is p
    ref, key = weakref.ref(p), id(p)
    del p, tree, rows
    gc.collect()
    assert ref() is None                                        # the tree did not keep it alive
    assert key not in DERIVED._slots                            # and its entries went with it
