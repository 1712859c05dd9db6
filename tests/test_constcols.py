"""Constant columns in the parser processes' hand-off: found bit for bit, recorded by their value
instead of written, and made back as read-only arrays equal to what was handed over."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tb_compare_plugin import constcols, loaders
from tb_compare_plugin.cache import ProfileCache
from tb_compare_plugin.service.handoff import handoff_cache

from conftest import SAMPLES

GPU = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
N = 300_001                         # not a whole number of the repeated file's periods


def test_constant_of_is_bit_for_bit():
    assert constcols.constant_of(np.full(N, 7, np.int64)) == np.int64(7).tobytes()
    assert constcols.constant_of(np.full(N, np.nan)) == np.float64(np.nan).tobytes()
    assert constcols.constant_of(np.zeros(1 << 21, bool)) == b"\x00"
    signed = np.zeros(N)
    signed[12345] = -0.0                            # equal as numbers, not as bytes
    assert constcols.constant_of(signed) is None
    for at in (1, 4092, N // 2 + 1, N - 1):         # off the sample's stride, and the last row
        a = np.full(N, -1, np.int32)
        a[at] = 0
        assert constcols.constant_of(a) is None, at
    assert constcols.constant_of(np.full(1000, 3, np.int64)) is None      # under 1 MB: written
    assert constcols.constant_of(np.full((N, 2), 3, np.int64)) is None     # not a plain column


@pytest.mark.parametrize("value,dtype", [(3113936, np.int64), (-1, np.int64), (np.nan, np.float64),
                                         (0, np.int32), (False, np.bool_), (5, np.int16)])
@pytest.mark.parametrize("repeated", [True, False])
def test_constant_column_equals_the_full_column(value, dtype, repeated, monkeypatch):
    if not repeated:                                # where the repeated mapping is not available
        monkeypatch.setattr(constcols, "_repeated", lambda *a: (_ for _ in ()).throw(OSError("no")))
    want = np.full(N, value, dtype)
    got = constcols.constant_column(want[:1].tobytes(), want.dtype, N)
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    assert got.tobytes() == want.tobytes()
    assert not got.flags.writeable
    with pytest.raises(ValueError):
        got[0] = want[0]
    assert constcols.constant_column(want[:1].tobytes(), want.dtype, 0).shape == (0,)


def test_repeated_mapping_is_released():
    got = constcols.constant_column(np.int64(9).tobytes(), np.int64, N)
    if not isinstance(got.base, constcols._Repeated):
        pytest.skip("no repeated mapping on this system")
    del got
    with open("/proc/self/maps") as f:
        assert "tbc-constant" not in f.read()


def _meta(entry: str) -> dict:
    with open(os.path.join(entry, "meta.json"), "rb") as f:
        return json.loads(f.read().split(b"\n", 1)[1])


def test_hand_off_records_constant_columns_by_value(tmp_path, monkeypatch):
    """The hand-off (``compact_constants``) writes no file for a constant column and reads back
    the same profile; the cache proper still writes every column."""
    from test_cache import same_profile
    monkeypatch.setattr(constcols, "_MIN_BYTES", 0)     # the sample's columns are small
    prof = loaders.load("trace-json", str(GPU))
    handoff = handoff_cache(str(tmp_path / "h"))
    entry = handoff.put(("handoff", "p"), prof)
    consts = _meta(entry)["constants"]
    assert "ops.pid" in consts
    for name in consts:
        assert not os.path.exists(os.path.join(entry, name + ".npy"))
    got = handoff.get(("handoff", "p"))
    same_profile(prof, got)
    for name, (dtype, n, _) in consts.items():
        table, col = name.split(".", 1)
        arr = got.tables[table][col].to_numpy()
        assert arr.dtype == np.dtype(dtype) and len(arr) == n and not arr.flags.writeable
    cache = ProfileCache(str(tmp_path / "c"))
    entry = cache.put(("k",), prof)
    assert "constants" not in _meta(entry)
    assert os.path.exists(os.path.join(entry, "ops.pid.npy"))
    same_profile(prof, cache.get(("k",)))


def test_values_beyond_the_kept_files_still_map(monkeypatch):
    """Past the kept in-memory files (one per distinct value), each column gets a file of its
    own, closed once mapped."""
    monkeypatch.setattr(constcols, "_PATTERNS", {})
    monkeypatch.setattr(constcols, "_MAX_PATTERNS", 1)
    got = [constcols.constant_column(np.int64(v).tobytes(), np.int64, N) for v in (11, 12, 13, 11)]
    for v, a in zip((11, 12, 13, 11), got):
        assert (a == v).all()
    assert len(constcols._PATTERNS) <= 1


def test_spilled_op_tree_records_constant_arrays_by_value(tmp_path, monkeypatch):
    """The op tree a parser process spills: constant arrays go by value, ``node_of_op`` not at
    all (made when first read); mapped back, the tree equals one built in place."""
    import pickle
    from tb_compare_plugin.engines import side_work
    from tb_compare_plugin.engines.optree import tree_of
    from tb_compare_plugin.service.parsepool import _spill, _unspill
    monkeypatch.setattr(constcols, "_MIN_BYTES", 0)
    child, parent, plain = (loaders.load("trace-json", str(GPU)) for _ in range(3))
    spilled = _spill(side_work.compute(child, (("tree", ()),)), str(tmp_path / "v"))
    (sp,) = spilled.values()
    assert sp.constants and "node_of_op" not in sp.arrays
    for name in sp.constants:
        assert not os.path.exists(os.path.join(sp.folder, name + ".npy"))
    side_work.seed(parent, _unspill(pickle.loads(pickle.dumps(spilled)), parent))
    got, want = tree_of(parent), tree_of(plain)
    assert "node_of_op" not in vars(got)
    for name in got._ARRAYS + ("node_of_op",):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert got.dev.equals(want.dev) and list(got.dev.dtypes) == list(want.dev.dtypes)


def test_sparse_columns_round_trip():
    a = np.zeros(N, np.int64)
    a[[0, 17, 4096, N - 1]] = [5, -3, 1 << 40, 7]
    rows, values = constcols.sparse_of(a)
    got = constcols.sparse_column(rows, values, a.dtype, N)
    assert got.dtype == a.dtype and got.tobytes() == a.tobytes() and not got.flags.writeable
    f = np.zeros(N)
    f[9] = -0.0                                     # not zero as bytes: kept
    rows, values = constcols.sparse_of(f)
    assert rows.tolist() == [9] and constcols.sparse_column(rows, values, f.dtype, N).tobytes() == f.tobytes()
    dense = np.zeros(N, np.int32)
    dense[::8] = 1                                  # one row in 8: written as it is
    assert constcols.sparse_of(dense) is None
    assert constcols.sparse_of(np.zeros(1000, np.int64)) is None        # under 1 MB
    assert constcols.sparse_column(rows[:0], values[:0], np.int64, 0).shape == (0,)


def test_spilled_sparse_array(tmp_path, monkeypatch):
    """A nearly-all-zero tree array (``comm_ns`` on a big GPU trace) goes pickled by its rows that
    are not zero, and comes back equal."""
    from tb_compare_plugin.engines import side_work
    from tb_compare_plugin.engines.optree import tree_of
    from tb_compare_plugin.service.parsepool import _spill, _unspill
    monkeypatch.setattr(constcols, "_MIN_BYTES", 0)
    monkeypatch.setattr(constcols, "_SPARSE_SHARE", 1)      # any array with a zero in the sample
    monkeypatch.setattr(constcols, "_SAMPLE", 1)
    child, parent, plain = (loaders.load("trace-json", str(GPU)) for _ in range(3))
    (sp,) = _spill(side_work.compute(child, (("tree", ()),)), str(tmp_path / "v")).values()
    assert sp.sparse
    for name in sp.sparse:
        assert not os.path.exists(os.path.join(sp.folder, name + ".npy"))
    side_work.seed(parent, _unspill({"optree": sp}, parent))
    got, want = tree_of(parent), tree_of(plain)
    for name in got._ARRAYS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert got.dev.equals(want.dev) and list(got.dev.dtypes) == list(want.dev.dtypes)
