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
