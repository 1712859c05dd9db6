"""The persistent profile cache and the parser processes: round trip, invalidation, corrupt
entries, the size bound, never inside the logdir, and a parser process that dies."""
from __future__ import annotations

import gzip
import os
import shutil

import numpy as np
import pytest

from tb_compare_plugin import loaders
from tb_compare_plugin.cache import ProfileCache, key_of
from tb_compare_plugin.discovery import classify_path
from tb_compare_plugin.loaders.errors import LoadError
from tb_compare_plugin.service.parsepool import ParsePool
from tb_compare_plugin.service.loading import load_profile

from conftest import SAMPLES, kill_children_while

GPU = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
NPU = SAMPLES / "target_npu" / "rank0_ascend_pt"


def same_profile(a, b):
    assert a.symbols.to_list() == b.symbols.to_list()
    assert a.meta.to_dict() == b.meta.to_dict()
    for name, df in a.tables.items():
        other = b.tables[name]
        assert list(df.columns) == list(other.columns), name
        for c in df.columns:
            np.testing.assert_array_equal(df[c].to_numpy(), other[c].to_numpy(), err_msg=f"{name}.{c}")


def test_round_trip(tmp_path):
    cache = ProfileCache(str(tmp_path))
    for fmt, path in (("trace-json", GPU), ("ascend-text", NPU)):
        prof = loaders.load(fmt, str(path))
        assert cache.put(("k", fmt), prof)
        same_profile(prof, cache.get(("k", fmt)))


def test_cached_columns_are_mapped_one_thread_at_a_time(tmp_path, monkeypatch):
    """np.load parses .npy headers with ast.literal_eval, which CPython 3.11.7 cannot run from two
    threads at once ("AST constructor recursion depth mismatch"): a good entry was dropped as
    unreadable, and a parse hand-off failed with "could not be read back", when two sides were
    read back together.  Reading a column through np.load takes the cache's one mapping lock (the
    plain columns the cache writes are mapped without np.load: that path is switched off here)."""
    import threading
    from tb_compare_plugin import cache as cache_mod
    cache = ProfileCache(str(tmp_path))
    prof = loaders.load("ascend-text", str(NPU))
    assert cache.put(("k",), prof)
    monkeypatch.setattr(cache_mod, "_map_plain_npy", lambda path: None)
    got = []
    with cache_mod._NPY_HEADER_LOCK:
        reader = threading.Thread(target=lambda: got.append(cache.get(("k",))))
        reader.start()
        reader.join(0.5)
        assert reader.is_alive() and not got       # waits for the lock
    reader.join(30)
    same_profile(prof, got[0])


def test_plain_columns_mapped_as_np_load_maps_them(tmp_path):
    """The columns the cache writes (1-D, little-endian or byte types, empty ones too) are mapped
    without np.load's header parsing: the same dtype, shape, values, read-only; anything else
    (2-D, big-endian, a damaged header or size) is left to np.load."""
    import numpy as np
    from tb_compare_plugin import cache as cache_mod
    arrays = {"i8": np.arange(-3, 1000, dtype=np.int64), "i4": np.arange(7, dtype=np.int32),
              "f8": np.array([1.5, np.nan, -0.0]), "b1": np.array([True, False, True]),
              "i1": np.array([-1, 2], np.int8), "u2": np.array([1, 65535], np.uint16),
              "empty": np.zeros(0, np.int64), "emptyf": np.zeros(0, np.float64)}
    for name, a in arrays.items():
        path = str(tmp_path / f"{name}.npy")
        np.save(path, a)
        got, ref = cache_mod._map_plain_npy(path), np.load(path, mmap_mode="r")
        assert got is not None and got.dtype == ref.dtype and got.shape == ref.shape, name
        assert not got.flags.writeable and np.array_equal(got, ref, equal_nan=True), name
        assert got.tobytes() == ref.tobytes(), name
    for name, a in {"2d": np.zeros((2, 3)), "big": np.arange(3, dtype=">i8"),
                    "str": np.array(["a", "bc"])}.items():
        path = str(tmp_path / f"{name}.npy")
        np.save(path, a)
        assert cache_mod._map_plain_npy(path) is None, name
        assert np.array_equal(cache_mod._load_npy(path), a), name
    cut = tmp_path / "cut.npy"                      # shorter than its header says: np.load's error
    np.save(str(cut), np.arange(10))
    cut.write_bytes(cut.read_bytes()[:-8])
    assert cache_mod._map_plain_npy(str(cut)) is None


def test_changed_file_is_a_miss(tmp_path):
    trace = tmp_path / "logdir" / "w.pt.trace.json"
    trace.parent.mkdir()
    shutil.copy(GPU, trace)
    cache = ProfileCache(str(tmp_path / "cache"))
    (spec,) = classify_path(str(trace))
    load_profile(spec, cache=cache)
    assert cache.get(spec.fingerprint) is not None
    os.utime(trace, ns=(1, 1))
    (spec2,) = classify_path(str(trace))
    assert spec2.fingerprint != spec.fingerprint and cache.get(spec2.fingerprint) is None


def test_corrupt_entry_is_dropped(tmp_path):
    cache = ProfileCache(str(tmp_path))
    prof = loaders.load("trace-json", str(GPU))
    path = cache.put("x", prof)
    with open(os.path.join(path, "kernels.dur_ns.npy"), "wb") as f:
        f.write(b"garbage")
    assert cache.get("x") is None
    assert not os.path.exists(path)


def test_size_bound_evicts_least_recent(tmp_path):
    cache = ProfileCache(str(tmp_path), max_bytes=1)
    prof = loaders.load("trace-json", str(GPU))
    cache.put("a", prof)
    cache.put("b", prof)
    assert len(cache.entries()) <= 1


def test_never_inside_logdir(tmp_path):
    with pytest.raises(ValueError):
        ProfileCache(str(tmp_path / "logdir" / "cache"), logdir=str(tmp_path / "logdir"))


def test_parse_pool_and_dead_child(tmp_path):
    cache = ProfileCache(str(tmp_path / "cache"))
    pool = ParsePool(1, cache)
    try:
        (spec,) = classify_path(str(NPU))
        seen = []
        prof = pool.parse(spec.format, spec.root, spec.fingerprint, seen.append)
        same_profile(prof, loaders.load("ascend-text", str(NPU)))
        assert cache.get(spec.fingerprint) is not None
        # a child that takes long (seconds of whitespace to read: 64 gzip members of 16 MB of
        # spaces each; a FIFO is refused at once now), killed from outside, twice: the parse is
        # retried once, then fails in plain words
        fifo = str(tmp_path / "stuck.pt.trace.json")
        member = gzip.compress(b" " * (16 << 20), compresslevel=9)
        with open(fifo, "wb") as f:
            f.write(gzip.compress(b'{"traceEvents": ['))
            for _ in range(64):
                f.write(member)
        fp = ("stuck",)
        half = os.path.join(os.path.dirname(cache.entry_path(fp)), "." + os.path.basename(cache.entry_path(fp)) + ".x")
        os.makedirs(half)                               # as a child killed mid-put leaves it
        out = {}

        def parse():
            try:
                pool.parse("trace-json", fifo, fp, retries=1)
            except LoadError as e:
                out["error"] = str(e)
        import threading
        t = threading.Thread(target=parse)
        t.start()
        assert kill_children_while(t.is_alive) >= 2         # (a parse of an earlier test may die too)
        t.join()
        assert "parser process died" in out["error"] and "stuck.pt.trace.json" in out["error"]
        assert not os.path.exists(half)                 # the dead child's half-written entry is gone
        (gspec,) = classify_path(str(GPU))
        assert pool.parse(gspec.format, gspec.root, gspec.fingerprint) is not None
    finally:
        pool.shutdown()


def test_key_depends_on_files():
    assert key_of(("a", 1)) != key_of(("a", 2))


def test_parse_pool_without_cache_hands_off_through_scratch_files():
    """With no cache, the child leaves the columns in the pool's scratch folder (in memory when
    /dev/shm exists) and the parent maps them: same profile, nothing left behind."""
    pool = ParsePool(1, None)
    scratch = pool._progress_dir
    try:
        (spec,) = classify_path(str(GPU))
        a = pool.parse(spec.format, spec.root, spec.fingerprint)
        b = pool.parse(spec.format, spec.root, spec.fingerprint)      # same worker twice: no clash
        same_profile(a, loaders.load("trace-json", str(GPU)))
        same_profile(b, a)
        left = [os.path.join(d, f) for d, _, fs in os.walk(scratch) for f in fs]
        assert left == []
        # a child killed while writing leaves a half-written entry: the parent deletes it
        entry = ProfileCache(scratch).entry_path(("handoff", "p"))
        os.makedirs(os.path.join(os.path.dirname(entry), "." + os.path.basename(entry) + ".x1"))
        pool._drop_handoff("p")
        assert os.listdir(os.path.dirname(entry)) == []
    finally:
        pool.shutdown()
    assert not os.path.exists(scratch)
