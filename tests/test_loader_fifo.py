"""A profile file replaced by a FIFO after discovery listed it fails the parse at once, naming
the file (issue 21 §1): the loaders open files through ``loaders.regular.open_regular`` only.

The real CLI runs in its own process (with a timeout: on the old code its parse blocked forever
in ``open`` on the FIFO); discovery is wrapped so that the file is swapped for a FIFO right after
the worker was listed, as a user's script replacing it at the wrong moment would.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLES

from tb_compare_plugin.loaders import LoadError
from tb_compare_plugin.loaders.regular import open_regular

GPU = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
NPU = SAMPLES / "target_npu" / "rank0_ascend_pt"

# the CLI, with discovery's classify_path wrapped: after it lists the workers, $SWAP becomes a FIFO
_RUN = """
import os, sys
import tb_compare_plugin.discovery as discovery
from tb_compare_plugin import cli
listed = discovery.classify_path
def classify_then_swap(path):
    workers = listed(path)
    victim = os.environ["SWAP"]
    if os.path.isfile(victim):
        os.unlink(victim)
        os.mkfifo(victim)
    return workers
discovery.classify_path = classify_then_swap
sys.exit(cli.main(sys.argv[1:]))
"""


def _cli_swapping(victim: Path, *args: str, tmp_path: Path, timeout: float = 60):
    env = {**os.environ, "TB_COMPARE_CACHE_DIR": str(tmp_path / "cache"), "SWAP": str(victim)}
    proc = subprocess.Popen([sys.executable, "-c", _RUN, *args, "--no-progress", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"tb-compare {' '.join(args)} did not end within {timeout:.0f} s "
                    f"after {victim.name} became a FIFO")
    finally:
        _unblock(victim)
    return proc.returncode, out, err


def _unblock(fifo: Path) -> None:
    """A reader blocked on the FIFO (the old code) gets end-of-file and goes on."""
    if fifo.is_fifo():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass


@pytest.mark.parametrize("side", ["gpu-trace", "npu-kernel-csv"])
def test_cli_fails_fast_naming_a_file_replaced_by_a_fifo(tmp_path, side):
    if side == "gpu-trace":            # the trace streamed by the JSON reader (bytesource)
        (tmp_path / "gpu").mkdir()
        victim = tmp_path / "gpu" / GPU.name
        shutil.copy(GPU, victim)
        args = (str(victim), str(NPU))
    else:                              # a CSV of an Ascend text export (ascend_csv)
        w = tmp_path / "npu" / NPU.name
        shutil.copytree(NPU, w)
        victim = w / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
        args = (str(GPU), str(w))
    rc, _, err = _cli_swapping(victim, *args, tmp_path=tmp_path)
    assert victim.is_fifo()            # the swap did happen after discovery
    assert rc == 1, err
    assert f"{victim}: not a regular file (a FIFO)" in err, err
    assert "Traceback" not in err, err


def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "t.pt.trace.json"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(LoadError) as e:
            open_regular(path)
        assert e.value.path == str(path) and "not a regular file" in e.value.problem
    with pytest.raises(FileNotFoundError):         # a missing file keeps its own OSError
        open_regular(tmp_path / "gone.json")
    ok = tmp_path / "ok.csv"
    ok.write_text("a,b\n", encoding="utf-8")
    with open_regular(ok, "r", encoding="utf-8", newline="") as f:
        assert f.read() == "a,b\n"
