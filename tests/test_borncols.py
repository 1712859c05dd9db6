"""Columns born in the hand-off (``borncols``): a Kineto parse writing the model's columns into the
hand-off's files gives the same profile, and the same hand-off entry byte for byte, as one
copying them into buffers; a constant column stays a value, a wider piece sends a column back to
memory, and nothing is left in the hand-off folder."""
from __future__ import annotations

import filecmp
import json
import os

import numpy as np
import pytest

from tb_compare_plugin import borncols, constcols, loaders
from tb_compare_plugin.borncols import BornColumns, Growing
from tb_compare_plugin.loaders import kineto_json
from tb_compare_plugin.service import parsepool
from tb_compare_plugin.service.handoff import handoff_cache

from conftest import CORPUS, SAMPLES

GPU = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
NCCL = CORPUS / "gpu" / "hta_nccl" / "nccl.pt.trace.json.gz"


def _npy_bytes(arr: np.ndarray, tmp_path) -> bytes:
    np.save(tmp_path / "want.npy", arr, allow_pickle=False)
    return (tmp_path / "want.npy").read_bytes()


def _grow(tmp_path, dtype, pieces, n=None):
    if (tmp_path / "col.npy").exists():
        (tmp_path / "col.npy").unlink()
    g = Growing(str(tmp_path / "col.npy"), dtype)
    at = 0
    for p in pieces:
        g.add(at, np.asarray(p))
        at += len(p)
    return g, g.finish(at if n is None else n)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.float64, np.bool_])
def test_a_column_file_is_what_np_save_writes(tmp_path, dtype):
    rng = np.random.default_rng(1)
    pieces = [rng.integers(0, 50, k).astype(dtype) for k in (0, 5, 1000, 0, 77)]
    g, (arr, value) = _grow(tmp_path, dtype, pieces)
    want = np.concatenate(pieces)
    assert value is None and arr.dtype == want.dtype and arr.tobytes() == want.tobytes()
    assert not arr.flags.writeable
    assert (tmp_path / "col.npy").read_bytes() == _npy_bytes(want, tmp_path)


def test_a_narrower_piece_is_cast(tmp_path):
    g, (arr, _) = _grow(tmp_path, np.int64, [np.arange(3, dtype=np.int64), np.array([7, 8], np.int32)])
    assert arr.tolist() == [0, 1, 2, 7, 8]


def test_a_constant_column_is_a_value(tmp_path, monkeypatch):
    monkeypatch.setattr(constcols, "_MIN_BYTES", 0)
    for value, dtype in ((3113936, np.int64), (0, np.int32), (np.nan, np.float64)):
        g, (arr, got) = _grow(tmp_path, dtype, [np.full(k, value, dtype) for k in (4, 0, 9, 2)])
        assert got == np.full(1, value, dtype).tobytes()
        assert arr.tobytes() == np.full(15, value, dtype).tobytes() and not arr.flags.writeable
        assert not (tmp_path / "col.npy").exists()


def test_a_small_constant_column_is_written(tmp_path):
    g, (arr, value) = _grow(tmp_path, np.int64, [np.full(5, 7, np.int64)] * 3)
    assert value is None and arr.tolist() == [7] * 15
    assert (tmp_path / "col.npy").read_bytes() == _npy_bytes(np.full(15, 7, np.int64), tmp_path)


@pytest.mark.parametrize("where", ["first piece", "later piece", "last row"])
def test_a_constant_that_ends_is_written_out(tmp_path, monkeypatch, where):
    monkeypatch.setattr(borncols, "_BLOCK", 64)         # the rows held as one value go out in blocks
    pieces = [np.full(k, -1, np.int64) for k in (30, 41, 25)]
    if where == "first piece":
        pieces[0][3] = 5
    elif where == "later piece":
        pieces[1][0] = 5
    else:
        pieces[2][-1] = 5
    g, (arr, value) = _grow(tmp_path, np.int64, pieces)
    want = np.concatenate(pieces)
    assert value is None and arr.tobytes() == want.tobytes()
    assert (tmp_path / "col.npy").read_bytes() == _npy_bytes(want, tmp_path)
    # a NaN of another payload, and -0.0 against 0.0, are other values
    for a, b in ((np.nan, -np.nan), (0.0, -0.0)):
        g, (arr, value) = _grow(tmp_path, np.float64, [np.full(3, a), np.full(3, b)])
        assert value is None and arr.tobytes() == np.concatenate([np.full(3, a), np.full(3, b)]).tobytes()


def test_a_wider_piece_sends_the_column_to_memory(tmp_path):
    """The collector's rule (as ``np.concatenate`` of the pieces): the column widens, in a buffer."""
    born = BornColumns(str(tmp_path / "born"))
    os.mkdir(born.folder)
    col = kineto_json._Collector(str(GPU), fast=False, born=born)
    col._put("ops", 3, start_ns=np.arange(3, dtype=np.int64), seq=np.full(3, -1, np.int64))
    assert set(col.growing) == {("ops", "start_ns"), ("ops", "seq")}
    col._put("ops", 2, start_ns=np.array([0.5, 1.5]), seq=np.full(2, -1, np.int64))
    assert set(col.growing) == {("ops", "seq")} and not os.path.exists(born.folder + "/ops.start_ns.npy")
    got = col.columns("ops")
    assert got["start_ns"].dtype == np.float64 and got["start_ns"].tolist() == [0, 1, 2, 0.5, 1.5]
    assert got["seq"].tolist() == [-1] * 5
    born.close()
    assert not os.path.exists(born.folder)


def _entry_files(entry: str) -> dict:
    out = {}
    for name in sorted(os.listdir(entry)):
        if name == "meta.json":
            with open(os.path.join(entry, name), "rb") as f:
                meta = json.loads(f.read().split(b"\n", 1)[1])
            for k in ("key", "source", "created"):
                meta.pop(k)
            out[name] = meta
        else:
            out[name] = os.path.join(entry, name)
    return out


@pytest.mark.parametrize("path,fast,chunk,small_constants", [
    (GPU, True, None, False), (GPU, True, 1 << 15, True), (GPU, False, None, True), (NCCL, True, 1 << 16, True),
    (NCCL, False, 1 << 18, False)])
def test_born_load_and_hand_off_equal_the_copied_ones(tmp_path, monkeypatch, path, fast, chunk, small_constants):
    from test_cache import same_profile
    if not path.exists():
        pytest.skip("corpus not available")
    if small_constants:                                 # the samples' constant columns count as such
        monkeypatch.setattr(constcols, "_MIN_BYTES", 0)
    handoff = handoff_cache(str(tmp_path / "h"))
    os.makedirs(handoff.root)
    born = BornColumns(str(tmp_path / "h" / "v1" / ".k.born"))
    os.mkdir(born.folder)
    want = kineto_json.load(str(path), fast=fast, chunk_bytes=chunk)
    got = kineto_json.load(str(path), fast=fast, chunk_bytes=chunk, born=born)
    same_profile(want, got)
    assert got.tables["ops"]["start_ns"].to_numpy().base is not None    # a mapping, not a buffer
    a = _entry_files(handoff.put(("handoff", "a"), want))
    b = _entry_files(handoff.put(("handoff", "b"), got, born=born))
    born.close()
    assert sorted(os.listdir(handoff.root)) == sorted({os.path.basename(os.path.dirname(p)) for p in
                                                       list(a.values())[:1] + list(b.values())[:1] if
                                                       isinstance(p, str)})
    assert a.keys() == b.keys() and a["meta.json"] == b["meta.json"]
    for name in a:
        if name != "meta.json":
            assert filecmp.cmp(a[name], b[name], shallow=False), name
    same_profile(want, handoff.get(("handoff", "b")))


def test_the_child_hands_off_born_columns_and_leaves_nothing(tmp_path):
    """``_child_parse`` with a hand-off folder: the entry reads back as the in-process load, the
    born folder is gone; a trace that cannot be read leaves nothing either."""
    from test_cache import same_profile
    root = str(tmp_path / "scratch")
    os.mkdir(root)
    ppath = os.path.join(root, "p0")
    where, prof, values = parsepool._child_parse("trace-json", str(GPU), ("fp",), None, ppath, root)
    assert where == "handoff" and prof is None
    same_profile(loaders.load("trace-json", str(GPU)), handoff_cache(root).get(("handoff", ppath)))
    v1 = os.path.join(root, "v1")
    assert [n for n in os.listdir(v1) if ".born" in n] == []
    handoff_cache(root).discard(("handoff", ppath))
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_bytes(GPU.read_bytes()[: GPU.stat().st_size // 2])
    with pytest.raises(loaders.LoadError):
        parsepool._child_parse("trace-json", str(bad), ("fp2",), None, ppath, root)
    assert os.listdir(v1) == []


def test_no_born_columns_when_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_COMPARE_BORN_COLUMNS", "0")
    assert parsepool._born_columns(str(tmp_path), str(tmp_path / "p")) is None
    monkeypatch.delenv("TB_COMPARE_BORN_COLUMNS")
    born = parsepool._born_columns(str(tmp_path), str(tmp_path / "p"))
    assert os.path.isdir(born.folder) and ".born" in os.path.basename(born.folder)
    born.close()
    assert parsepool._born_columns(None, "p") is None


@pytest.mark.parametrize("fail_at", [0, 40])
def test_a_full_folder_sends_the_columns_back_to_memory(tmp_path, monkeypatch, fail_at):
    """Writing a column file fails (no room left in /dev/shm): the load goes on with buffers for
    every column, the same profile; the hand-off then writes them as before."""
    import errno
    from test_cache import same_profile
    calls = [0]
    real = borncols._pwrite_all

    def pwrite(fd, data, at):
        calls[0] += 1
        if calls[0] > fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, at)
    monkeypatch.setattr(borncols, "_pwrite_all", pwrite)
    monkeypatch.setattr(constcols, "_MIN_BYTES", 0)
    born = BornColumns(str(tmp_path / "born"))
    os.mkdir(born.folder)
    want = kineto_json.load(str(GPU), chunk_bytes=1 << 15)
    got = kineto_json.load(str(GPU), chunk_bytes=1 << 15, born=born)
    same_profile(want, got)
    assert calls[0] > fail_at and os.listdir(born.folder) == []
    handoff = handoff_cache(str(tmp_path / "h"))
    same_profile(want, handoff.get(("handoff", "b")) if handoff.put(("handoff", "b"), got, born=born) else None)
    born.close()


def test_a_column_file_that_cannot_be_mapped_is_read_back(tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise OSError("no mapping")
    monkeypatch.setattr(borncols.mmap, "mmap", refuse)
    g, (arr, value) = _grow(tmp_path, np.int64, [np.arange(5), np.arange(3)])
    assert value is None and arr.tolist() == [0, 1, 2, 3, 4, 0, 1, 2] and not (tmp_path / "col.npy").exists()
