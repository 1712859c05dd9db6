"""The in-memory LRU: opening many workers one after another keeps at most the bound in
memory (older ones are dropped and reload from the disk cache on demand)."""
from __future__ import annotations

import gc
import weakref

from tb_compare_plugin.discovery import find_runs
from tb_compare_plugin.service.loading import ProfileStore

from conftest import CORPUS, SAMPLES, needs_corpus


def _workers(root):
    return [w for r in find_runs(str(root)) for w in r.workers if not w.error]


@needs_corpus
def test_ten_workers_one_after_another_stay_bounded():
    specs = (_workers(CORPUS) + _workers(SAMPLES))[:10]
    assert len(specs) == 10
    store = ProfileStore(max_profiles=3)
    alive = []
    for spec in specs:
        prof = store.get(spec, timeout=120)
        alive.append(weakref.ref(prof))
        del prof
        assert len(store.cache._done) <= 3
    gc.collect()
    live = sum(1 for r in alive if r() is not None)
    assert live <= 3, f"{live} profiles still in memory"
    # an evicted worker comes back on demand
    again = store.get(specs[0], timeout=120)
    assert again.summary()["counts"] == store.get(specs[0]).summary()["counts"]
