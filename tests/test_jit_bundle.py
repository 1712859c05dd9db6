"""model.jit_bundle: the Ascend and Kineto scanners, the quick plan and the model's kernels read back
without importing numba.

Each run is a fresh Python process (:data:`_RUN`) that loads the four kernel modules the way the
parsers do (``ascend_fast.available``, ``kineto_scan.available``, ``kineto_plan.warm``,
``jit.kernels``), answers a fixed set of calls (the model's kernels on seeded inputs, the Ascend
scanner over a corpus ``trace_view.json`` or its own test chunk, a corpus Kineto trace loaded by
the scanner and its quick plan) and says whether numba was imported and why a bundle was not used.  The bundles go to a
scratch folder (``TB_COMPARE_JIT_BUNDLE_DIR``); numba's own cache is the suite's.
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tb_compare_plugin.loaders import ascend_fast
from tb_compare_plugin.model import jit, jit_bundle

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
CORPUS_TRACE = CORPUS / "npu" / "alexnet_ddp_2rank_level1" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
GPU_TRACE = CORPUS / "gpu" / "kineto_resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"
ASCEND = "tb_compare_plugin.loaders._ascend_scan_jit"
SWEEPS = "tb_compare_plugin.model._sweeps_jit"
KSCAN = "tb_compare_plugin.loaders._kineto_scan_jit"
KPLAN = "tb_compare_plugin.loaders._kineto_plan_jit"
ALL = {ASCEND: None, SWEEPS: None, KSCAN: None, KPLAN: None}

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bundles are read on Linux only"),
    pytest.mark.skipif(not ascend_fast.available() or jit.kernels(jit.IMPORT_ROWS) is None,
                       reason=f"numba cannot run here: {ascend_fast.unavailable_reason() or jit.unavailable_reason()}"),
]

_RUN = r"""
import dataclasses, hashlib, json, os, sys
import numpy as np
from tb_compare_plugin.loaders import ascend_fast, kineto_json, kineto_plan, kineto_scan
from tb_compare_plugin.model import jit, jit_bundle
assert ascend_fast.available(), ascend_fast.unavailable_reason()
assert kineto_scan.available(), kineto_scan.unavailable_reason()
kineto_plan.warm()
k = jit.kernels(jit.IMPORT_ROWS)
out = []
rng = np.random.default_rng(7)
n = 5000
start = np.sort(rng.integers(0, 10**6, n)).astype(np.int64)
end = start + rng.integers(0, 5000, n)
order = np.arange(n, dtype=np.int64)
parent = np.where(rng.random(n) < 0.2, -1, np.maximum(order - rng.integers(1, 50, n), -1)).astype(np.int64)
out.append(k.longer_first(order.copy(), start, end))
out.append(k.bucket_order(order, parent, -1, n))
out.append(k.child_sums(parent, end - start))
out.append(k.window_overlap(start, end, start[::7].copy(), end[::7].copy()))
out.append(k.level_segments(start, rng.random(n)))
out.append(k.outermost(rng.random(n) < 0.5, parent))
out.append(k.group_extreme(order % 97, end, 97, -1, True))
out.extend(k.id_range(order.astype(np.int32)))
ro = start.copy(); ro.flags.writeable = False            # (a read-only column: one compiled form)
out.append(k.union_sorted(ro, end, order))
if os.environ.get("ODD_ARGS"):                            # types no bundle holds: numba's own
    out.append(k.id_range(order[::2]))                    # (not contiguous)
def walk(x):
    if isinstance(x, np.ndarray):
        yield x
    elif dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            yield from walk(getattr(x, f.name))
    elif isinstance(x, dict):
        for key in sorted(x, key=repr):
            yield repr(key)
            yield from walk(x[key])
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from walk(v)
    elif hasattr(x, "to_csv"):                              # (a DataFrame)
        yield x.to_csv()
    elif hasattr(x, "intern_many"):                         # (the symbol table)
        yield repr(x._strings)
    else:
        yield repr(x)
if os.path.exists(sys.argv[2]):                           # the Kineto scanner, its quick plan, the kernels
    out.extend(walk(kineto_json.load(sys.argv[2], fast=True)))
data = open(sys.argv[1], "rb").read() if os.path.exists(sys.argv[1]) else \
    b'[{"ph": "X", "ts": "1.000", "name": "a", "args": {"Task Id": 1, "x": [{}]}}]'
s = ascend_fast.Scanner()
status, rows = s._scan(np.frombuffer(bytearray(data), np.uint8))
out += [status, rows, s.K[:rows], s.V[:rows], s.DV[:rows], repr(s.texts).encode()]
h = hashlib.sha1()
for x in out:
    h.update(np.ascontiguousarray(x).tobytes() if isinstance(x, np.ndarray) else repr(x).encode())
print(json.dumps({"answers": h.hexdigest(), "rows": int(rows), "numba": "numba" in sys.modules,
                  "why": {m: jit_bundle.why_not(m) for m in NAMES},
                  "bundled": hasattr(ascend_fast._jit, "__bundle_engine__")}))
""".replace("NAMES", repr(sorted(ALL)))


def _run(folder: Path, **env) -> dict:
    args = [sys.executable, "-c", _RUN, str(CORPUS_TRACE), str(GPU_TRACE)]
    e = {**os.environ, jit_bundle.DIR_ENV: str(folder), "TB_COMPARE_TIMING": "",
         "NUMBA_CACHE_DIR": jit.cache_dir(), "PYTHONPATH": str(ROOT), **env}
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, env=e, cwd=folder)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _bundles(folder: Path) -> list[Path]:
    return sorted(folder.glob("tbc-bundle-*.bin"))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A folder whose bundles the first run wrote (numba's load), and that run's answers."""
    folder = tmp_path_factory.mktemp("bundles")
    first = _run(folder)
    assert first["numba"], first
    assert [p.name.split("-")[2] for p in _bundles(folder)] == sorted(m.rsplit(".", 1)[1] for m in ALL)
    return folder, first


def test_the_bundle_answers_as_numba_does_without_importing_it(written):
    folder, first = written
    again = _run(folder)
    assert again["why"] == ALL, again
    assert not again["numba"], "numba was imported although both bundles were valid"
    assert again["bundled"] and again["answers"] == first["answers"]
    if CORPUS_TRACE.exists():
        assert again["rows"] > 1000
    off = _run(folder, TB_COMPARE_JIT_BUNDLE="0")
    assert off["numba"] and off["answers"] == first["answers"] and "off" in off["why"][ASCEND]


def test_argument_types_no_bundle_holds_go_to_numba(written):
    folder, _ = written
    odd = _run(folder, ODD_ARGS="1")
    assert odd["numba"] and odd["why"] == ALL
    assert odd["answers"] == _run(folder, ODD_ARGS="1", TB_COMPARE_JIT_BUNDLE="0")["answers"]


def _copy(written, tmp_path) -> Path:
    folder, _ = written
    for p in _bundles(folder):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    return tmp_path


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_damaged_bundle_is_not_used_and_is_written_again(written, tmp_path, damage):
    folder = _copy(written, tmp_path)
    path = next(p for p in _bundles(folder) if "_ascend_scan_jit" in p.name)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x40
    elif damage == "truncate":
        data = data[: len(data) // 3]
    else:
        data = bytearray(b"not a bundle")
    path.write_bytes(bytes(data))
    got = _run(folder)
    assert got["numba"] and got["answers"] == written[1]["answers"]
    assert got["why"] == {**ALL, ASCEND: got["why"][ASCEND]} and got["why"][ASCEND], got
    assert ("checksum" if damage == "flip" else "ValueError") in got["why"][ASCEND]
    assert not _run(folder)["numba"], "the bundle was not written again"


def test_a_stale_bundle_is_not_used(written, tmp_path):
    folder = _copy(written, tmp_path)
    got = _run(folder, NUMBA_TBC_TEST_SETTING="1")      # (every NUMBA_ setting is in the key)
    assert got["numba"] and got["answers"] == written[1]["answers"]
    assert all("FileNotFoundError" in why for why in got["why"].values()), got
    assert len(_bundles(folder)) == 2 * len(ALL)                 # (the others' kept: another installation's)
    assert not _run(folder, NUMBA_TBC_TEST_SETTING="1")["numba"]


def test_a_symbol_that_does_not_resolve_stops_the_link(written, tmp_path):
    folder = _copy(written, tmp_path)
    path = next(p for p in _bundles(folder) if "_sweeps_jit" in p.name)
    import hashlib
    head = len(jit_bundle.MAGIC) + 20
    b = pickle.loads(path.read_bytes()[head:])
    b["undefined"] = b["undefined"] + ["tbc_no_such_symbol"]
    payload = pickle.dumps(b)
    path.write_bytes(jit_bundle.MAGIC + hashlib.sha1(payload).digest() + payload)
    got = _run(folder)
    assert "tbc_no_such_symbol" in got["why"][SWEEPS] and got["why"] == {**ALL, SWEEPS: got["why"][SWEEPS]}
    assert got["answers"] == written[1]["answers"]


def test_argument_keys_match_numba_typeof():
    from numba import typeof
    values = [np.zeros(3, np.int64), np.zeros((2, 3), np.uint8), np.zeros((3, 2), order="F"),
              np.zeros(9, np.int32)[::2], np.zeros(0, np.bool_), 5, -(1 << 63), True, 2.5,
              np.int32(3), np.float64(1.0), np.bool_(False)]
    ro = np.zeros(4, np.float64)
    ro.flags.writeable = False
    values.append(ro)
    for v in values:
        assert jit_bundle._arg_key(v) == jit_bundle._sig_key((typeof(v),))[0], v
    assert jit_bundle._arg_key(1 << 63) is None and jit_bundle._arg_key("x") is None
    assert jit_bundle._sig_key((typeof((1, 2)),)) is None


def test_elf_symbols_of_a_bundle(written):
    folder, _ = written
    path = next(p for p in _bundles(folder) if "_sweeps_jit" in p.name)
    b = pickle.loads(path.read_bytes()[len(jit_bundle.MAGIC) + 20:])
    defined, _ = jit_bundle._elf_symbols(b["nrt"])
    assert "NRT_incref" in defined and "NRT_decref" in defined
    assert all(not s.startswith("NRT_incref") for s in b["undefined"])
    with pytest.raises(ValueError):
        jit_bundle._elf_symbols(b"MZ not an elf object")
