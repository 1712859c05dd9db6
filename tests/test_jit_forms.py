"""One compiled form per numba function: read-only inputs (a trace decompressed into ``bytes``, a
column mapped read-only from the cache) reach the scanner and the model's kernels as
writable-typed views of the same memory (``model.jit.writable_view``), so numba never compiles,
caches and loads a second, read-only form of them (~30 s of CPU each on a machine's first run)."""
from __future__ import annotations

import numpy as np
import pytest

from tb_compare_plugin.model import jit

numba = pytest.importorskip("numba")


def _readonly(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def test_writable_view_shares_memory_and_keeps_it_alive():
    a = _readonly(np.arange(1000, dtype=np.int64))
    v = jit.writable_view(a)
    assert v.flags.writeable and v.ctypes.data == a.ctypes.data and v.dtype == a.dtype
    del a
    assert int(v.sum()) == 999 * 1000 // 2                 # the memory is still there
    w = np.arange(3)
    assert jit.writable_view(w) is w and jit.writable_view(None) is None


def test_kernels_see_only_writable_arrays():
    k = jit.kernels(1 << 20)
    if k is None:
        pytest.skip(f"numba kernels unavailable: {jit.unavailable_reason()}")
    parent = np.array([-1, 0, 0, 1], np.int64)
    value = np.array([1, 2, 3, 4], np.int64)
    assert np.array_equal(k.child_sums(_readonly(parent), _readonly(value)), k.child_sums(parent, value))
    from tb_compare_plugin.model import _sweeps_jit
    for sig in _sweeps_jit.child_sums.signatures:
        assert all(getattr(t, "mutable", True) for t in sig), sig


def test_the_scanner_sees_only_writable_buffers(tmp_path):
    import gzip
    from tb_compare_plugin.loaders import kineto_json, kineto_scan
    if kineto_scan.unavailable_reason():
        pytest.skip(kineto_scan.unavailable_reason())
    events = ",".join('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, '
                      f'"ts": {i * 10}, "dur": 5}}' for i in range(50))
    text = '{"traceEvents": [' + events + ']}'
    plain = tmp_path / "a.pt.trace.json"
    plain.write_text(text)
    packed = tmp_path / "b.pt.trace.json.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    a = kineto_json.load(str(plain), fast=True)
    b = kineto_json.load(str(packed), fast=True)
    assert a.tables["ops"]["dur_ns"].tolist() == b.tables["ops"]["dur_ns"].tolist()
    from tb_compare_plugin.loaders import _kineto_scan_jit
    for sig in _kineto_scan_jit.scan.signatures:
        assert sig[0].mutable, sig
