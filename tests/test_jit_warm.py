"""loaders.jit_warm: the fork server loads the numba scanners only when the inputs hold a trace
the scanners will read (a file of FAST_MIN_BYTES or more), never for small inputs, and the
scanners' size rule is the same constant."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_compare_plugin.loaders import ascend_fast, jit_warm, kineto_scan
from tb_compare_plugin.service import parsepool

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture(autouse=True)
def _auto(monkeypatch):
    monkeypatch.delenv("TB_COMPARE_FAST_KINETO", raising=False)
    monkeypatch.delenv("TB_COMPARE_FAST_ASCEND", raising=False)


def _sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)                 # no disk blocks: only the size is read
    return path


def test_one_threshold_for_both_scanners():
    assert kineto_scan.FAST_MIN_BYTES == ascend_fast.FAST_MIN_BYTES == jit_warm.FAST_MIN_BYTES


def test_small_inputs_do_not_warm():
    assert not jit_warm.worth_it([SAMPLES])


def test_a_big_trace_in_a_folder_warms(tmp_path):
    small = _sparse(tmp_path / "a" / "small.pt.trace.json", 1 << 20)
    big = _sparse(tmp_path / "b" / "r0" / "deep" / "trace_view.json", jit_warm.FAST_MIN_BYTES)
    assert not jit_warm.worth_it([small])
    assert jit_warm.worth_it([tmp_path / "a", tmp_path / "b"])
    assert jit_warm.worth_it([big])
    gz = _sparse(tmp_path / "c" / "t.pt.trace.json.gz", jit_warm.FAST_MIN_BYTES // 8)
    assert jit_warm.worth_it([gz])                      # a .gz counts at 8x, as the scanner counts it


def test_settings_force_or_forbid(tmp_path, monkeypatch):
    big = _sparse(tmp_path / "t.json", jit_warm.FAST_MIN_BYTES)
    monkeypatch.setenv("TB_COMPARE_FAST_KINETO", "0")
    monkeypatch.setenv("TB_COMPARE_FAST_ASCEND", "off")
    assert not jit_warm.worth_it([big])
    monkeypatch.setenv("TB_COMPARE_FAST_KINETO", "1")
    assert jit_warm.worth_it([SAMPLES])


def test_odd_entries_neither_fail_nor_stall(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    os.symlink("/", tmp_path / "root")                  # a link to / is not walked
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    assert not jit_warm.worth_it([tmp_path, tmp_path / "missing"])
    for i in range(50):
        (tmp_path / f"d{i}").mkdir()
    assert not jit_warm.worth_it([tmp_path], max_entries=10)


def test_the_preload_names_the_warm_module_only_when_asked():
    assert "tb_compare_plugin.loaders.jit_preload" not in parsepool._preload()
    warm = parsepool._preload(True)     # after the loaders, before the freeze that ends the preload
    assert warm[-2:] == ["tb_compare_plugin.loaders.jit_preload", "tb_compare_plugin.service.forkserver_ready"]
    from tb_compare_plugin.loaders import jit_preload    # importing it loads the scanners here too
    jit_preload.warm()


def test_the_preload_loads_without_the_refresh_only_while_it_loads():
    from numba.core.caching import Cache
    from tb_compare_plugin.loaders import jit_preload
    own = Cache.__dict__["load_overload"]
    with jit_preload._cache_loads_without_refresh():
        assert Cache.__dict__["load_overload"] is not own
    assert Cache.__dict__["load_overload"] is own


_AFTER_PRELOAD = r"""
import sys
import numpy as np
import tb_compare_plugin.service.forkserver_preload
import tb_compare_plugin.loaders.jit_preload
import tb_compare_plugin.service.forkserver_ready
from tb_compare_plugin.loaders import ascend_fast, kineto_scan
from tb_compare_plugin.model import jit
assert kineto_scan.available() and ascend_fast.available() and jit.kernels(jit.IMPORT_ROWS) is not None
status, n = kineto_scan.scan(np.frombuffer(b'[{"ph": "X", "ts": 2, "dur": 3}, {"ph": "i"}]', np.uint8))[:2]
assert (status, n) == (kineto_scan.OK, 2), (status, n)
import numba                       # a function compiled after the preload: numba's refresh runs then
@numba.njit
def f(a):
    d = {}
    for x in np.unique(a):
        d[x] = np.sqrt(np.cumsum(np.sort(a)[::-1])[-1] * 1.0)
    return len(d) + d[a[0]]
assert f(np.array([3, 1, 3, 2])) == 3 + 3.0
from numba.core import config             # numba's settings file, read when there is one
print("ok", config.DISABLE_PERFORMANCE_WARNINGS)
"""


@pytest.mark.parametrize("numba_settings", [False, True])
def test_after_the_preload_the_loaded_functions_run_and_numba_still_compiles(tmp_path, numba_settings):
    import subprocess
    import sys
    if numba_settings:
        (tmp_path / ".numba_config.yaml").write_text("disable_performance_warnings: 1\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_PERFORMANCE_WARNINGS"}
    r = subprocess.run([sys.executable, "-c", _AFTER_PRELOAD], capture_output=True, text=True, timeout=300,
                       env={**env, "TB_COMPARE_TIMING": ""}, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.split() == ["ok", "1" if numba_settings else "0"], r.stderr[-2000:]


def test_only_the_scanners_the_big_files_use_are_named(tmp_path, monkeypatch):
    kineto = _sparse(tmp_path / "gpu" / "w0.pt.trace.json", jit_warm.FAST_MIN_BYTES)
    ascend = _sparse(tmp_path / "npu" / "r0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json",
                     jit_warm.FAST_MIN_BYTES)
    csv = _sparse(tmp_path / "csv" / "ASCEND_PROFILER_OUTPUT" / "operator_details.csv", jit_warm.FAST_MIN_BYTES)
    _sparse(tmp_path / "npu" / "r0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv",
            jit_warm.FAST_MIN_BYTES)
    assert jit_warm.parts([kineto]) == {"kineto", "model"}
    assert jit_warm.parts([tmp_path / "gpu", tmp_path / "gpu"]) == {"kineto", "model"}
    assert jit_warm.parts([tmp_path / "npu"]) == {"ascend", "model"}      # its big CSV: no scanner
    assert jit_warm.parts([csv]) == {"model"}            # no scanner reads it; the side work's kernels do
    assert jit_warm.parts([tmp_path / "gpu", tmp_path / "npu"]) == jit_warm.ALL
    assert jit_warm.parts([SAMPLES]) == frozenset() and not jit_warm.worth_it([SAMPLES])
    monkeypatch.setenv("TB_COMPARE_FAST_ASCEND", "0")    # a scanner turned off is never loaded
    assert jit_warm.parts([tmp_path / "npu"]) == {"model"}
    monkeypatch.setenv("TB_COMPARE_FAST_KINETO", "1")    # one forced on: all, as before
    assert jit_warm.parts([SAMPLES]) == jit_warm.ALL


def test_the_parts_reach_the_fork_server_through_its_environment_only(monkeypatch):
    monkeypatch.delenv(jit_warm.PRELOAD_ENV, raising=False)
    assert jit_warm.wanted_parts() == jit_warm.ALL       # unset (the plugin, older callers): all
    with parsepool._jit_parts_named(frozenset({"kineto", "model"})):
        assert os.environ[jit_warm.PRELOAD_ENV] == "kineto,model"
        assert jit_warm.wanted_parts() == {"kineto", "model"}
    assert jit_warm.PRELOAD_ENV not in os.environ
    with parsepool._jit_parts_named(True):
        assert jit_warm.PRELOAD_ENV not in os.environ


_PARTS_PRELOAD = r"""
import tb_compare_plugin.service.forkserver_preload
import tb_compare_plugin.loaders.jit_preload
from tb_compare_plugin.loaders import ascend_fast, kineto_scan
from tb_compare_plugin.model import jit
print(kineto_scan._scan is not None, ascend_fast._jit is not None, jit._mod is not None)
"""


@pytest.mark.parametrize("wanted, loaded", [("kineto,model", "True False True"), ("ascend,model", "False True True")])
def test_the_preload_loads_the_parts_named(wanted, loaded):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _PARTS_PRELOAD], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TB_COMPARE_TIMING": "", jit_warm.PRELOAD_ENV: wanted})
    assert r.returncode == 0 and r.stdout.split() == loaded.split(), r.stderr[-2000:]


_RUNTIME = r"""
import os, sys
import numpy as np
import numba
from numba.core.registry import cpu_target
from numba.core.runtime import nrtdynmod, rtsys
from tb_compare_plugin.loaders import jit_preload
own = nrtdynmod.compile_nrt_functions
with jit_preload._runtime_from_cache(sys.argv[1]):
    rtsys.initialize(cpu_target.target_context)
assert nrtdynmod.compile_nrt_functions is own
@numba.njit
def f(n):
    a = np.arange(n)                # arrays the runtime allocates and frees, linked with the runtime
    return len(a[a % 3 == 0]) - 1 + np.cumsum(a)[-1]     # (no typed dict: its compile is ~6 s a run)
print(f(10), *sorted(os.listdir(sys.argv[1])))
"""


def test_the_runtime_is_read_back_from_its_object_code(tmp_path):
    import subprocess
    import sys

    def run():
        r = subprocess.run([sys.executable, "-c", _RUNTIME, str(tmp_path)], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "TB_COMPARE_TIMING": "",
                                             jit_warm.PRELOAD_ENV: "none"})    # (its import loads nothing)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout.split()
    first = run()                       # compiled, then written
    assert first[0] == "48" and len(first) == 2 and first[1].startswith("tbc-nrt-"), first
    path = tmp_path / first[1]
    written = path.read_bytes()
    os.utime(path, (1, 1))
    assert run() == first and path.stat().st_mtime == 1      # read back, not written again
    path.write_bytes(b"not a pickle")
    assert run() == first and path.read_bytes() == written   # a bad file: compiled and written again


_MODULE = r"""
import numba


@numba.njit(cache=True)
def g(a):
    t = 0
    for x in a:
        t += x * x
    return t


@numba.njit(cache=True)
def h(a):
    return g(a) * 2
"""

_SYMBOLS = r"""
import hashlib, os, sys
import numpy as np
import numba
from numba.core.registry import cpu_target
from tb_compare_plugin.loaders import jit_preload
import m
with jit_preload._cache_loads_without_refresh(), jit_preload._libraries_with_known_symbols(sys.argv[1]):
    x = m.h(np.array([3, 1, 3, 2]))
engine = cpu_target.target_context.codegen()._engine
names = hashlib.sha1(repr(sorted(engine._defined_symbols)).encode()).hexdigest()
kinds = sorted(type(cr.library).__module__ for d in (m.g, m.h) for cr in d.overloads.values())
@numba.njit
def k(a):                       # compiled now: links the loaded h's module (parsed on first use)
    return m.h(a) + 1
y = k(np.array([3, 1, 3, 2]))
parsed = sum("_tbc_shared" in cr.library.__dict__ for cr in m.h.overloads.values())    # by k's link
print(x, y, names, parsed, *kinds, *sorted(f for f in os.listdir(sys.argv[1]) if f.startswith("tbc-")))
"""


def test_loaded_libraries_get_their_symbols_from_the_index(tmp_path):
    import subprocess
    import sys
    (tmp_path / "m.py").write_text(_MODULE)
    index = tmp_path / "index"
    index.mkdir()
    env = {**os.environ, "TB_COMPARE_TIMING": "", "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           jit_warm.PRELOAD_ENV: "none",    # (importing jit_preload loads nothing)
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parent.parent)])}

    def run():
        r = subprocess.run([sys.executable, "-c", _SYMBOLS, str(index)], capture_output=True, text=True,
                           timeout=300, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout.split()
    compiled = run()                    # compiled (nothing cached yet): no index written
    assert compiled[:2] == ["46", "47"] and compiled[3:] == ["0"] + ["numba.core.codegen"] * 2, compiled
    own = run()                         # h read back by numba's own code; the index written
    assert own[:2] == compiled[:2] and own[3:5] == ["0", "numba.core.codegen"], own
    assert own[5].startswith("tbc-syms-"), own
    fast = run()                        # from the index: the same symbols; h's linking module parsed for k
    assert fast[:3] == own[:3] and fast[3:] == ["1", "tb_compare_plugin.loaders.jit_preload", own[5]], fast
    (index / own[5]).write_bytes(b"not a pickle")
    assert run() == own                 # a bad index: numba's own loads (and written again)
