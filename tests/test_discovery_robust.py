"""One bad file is that file's problem, never the listing's (issue 21, item 1).

Real files damaged as users' machines produce them: a ``.json.gz`` whose gzip header is valid
and whose data is damaged (under any name), FIFOs, a socket and a device named like profile
files, a link to a file that is gone, a profiler_info nested too deeply to decode, a link to
``/`` and to a folder holding the logdir.  Discovery lists every good run, makes each bad one a
worker whose error names the file, never blocks, and rescans re-list only what changed; the
runs route of a real TensorBoard and the real CLI (a subprocess, with a timeout) say the same.
"""
from __future__ import annotations

import gzip
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import SAMPLES
from tbserver import TensorBoard

from tb_compare_plugin.discovery import find_runs

GPU = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
NPU = SAMPLES / "target_npu" / "rank0_ascend_pt"
GOOD = {"baseline_gpu/worker0", "target_npu/rank0_ascend_pt"}


def _good_runs(logdir: Path) -> None:
    (logdir / "baseline_gpu").mkdir(parents=True)
    shutil.copy(GPU, logdir / "baseline_gpu" / GPU.name)
    shutil.copytree(NPU, logdir / "target_npu" / NPU.name)


def _damaged_gz(dst: Path) -> Path:
    """A gzip'd copy of a real trace: valid header, data damaged 2 KB in (zlib Error -3)."""
    data = bytearray(gzip.compress(GPU.read_bytes()))
    for i in range(2000, 2050):
        data[i] ^= 0x5A
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(bytes(data))
    return dst


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _unblock(logdir: Path) -> None:
    """Open each FIFO under ``logdir`` for writing and close it: a reader blocked on it (the
    code under test, when it fails) gets end-of-file and goes on."""
    for p in logdir.rglob("*"):
        try:
            if p.is_fifo():
                os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def _walk(logdir: Path, timeout: float = 30) -> dict:
    """{worker id: spec} of one discovery walk, failing (not hanging) when it blocks."""
    box: dict = {}
    t = threading.Thread(target=lambda: box.setdefault("runs", find_runs(str(logdir))), daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        _unblock(logdir)
        t.join(10)
        pytest.fail(f"discovery of {logdir} blocked for {timeout:.0f} s")
    return {w.id: w for r in box["runs"] for w in r.workers}


def test_damaged_gzip_under_any_name_is_that_workers_error(tmp_path):
    _good_runs(tmp_path)
    any_name = _damaged_gz(tmp_path / "bad" / "notes.json.gz")
    trace = _damaged_gz(tmp_path / "bad2" / "w.pt.trace.json.gz")
    ws = _walk(tmp_path)
    assert GOOD <= set(ws) and all(ws[i].error is None for i in GOOD)
    for wid, path in (("bad/notes", any_name), ("bad2/w", trace)):
        assert wid in ws, f"{path} is not listed"
        err = ws[wid].error
        assert err.startswith(f"{path}: ") and "gzip data" in err and "\n" not in err, err


def test_special_and_unreadable_files_named_like_profiles(tmp_path, monkeypatch):
    _good_runs(tmp_path)
    bad = tmp_path / "bad"
    fifo_trace = _fifo(bad / "fifo.pt.trace.json")
    (bad / "dev.pt.trace.json").symlink_to("/dev/null")
    (bad / "gone.pt.trace.json").symlink_to(tmp_path / "no-such-file.pt.trace.json")
    monkeypatch.chdir(bad)                      # AF_UNIX paths are short: bind by relative name
    sock = socket.socket(socket.AF_UNIX)
    sock.bind("sock.pt.trace.json")
    # Ascend workers: a FIFO where the rank is read from, one where the steps are read from,
    # and a profiler_info nested too deeply for a JSON decoder
    w1 = tmp_path / "npu_fifo_info" / "rank1_ascend_pt"
    shutil.copytree(NPU, w1)
    (w1 / "profiler_info_0.json").unlink()
    info_fifo = _fifo(w1 / "profiler_info_0.json")
    w2 = tmp_path / "npu_fifo_steps" / "rank2_ascend_pt"
    shutil.copytree(NPU, w2)
    steps_fifo = w2 / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    steps_fifo.unlink()
    _fifo(steps_fifo)
    w3 = tmp_path / "npu_deep_info" / "rank3_ascend_pt"
    shutil.copytree(NPU, w3)
    (w3 / "profiler_info_0.json").write_text("[" * 200_000)
    try:
        ws = _walk(tmp_path)
    finally:
        sock.close()
    assert GOOD <= set(ws) and all(ws[i].error is None for i in GOOD)
    expect = {
        "bad/fifo": (fifo_trace, "not a regular file (a FIFO)"),
        "bad/sock": (bad / "sock.pt.trace.json", "not a regular file (a socket)"),
        "bad/dev": (bad / "dev.pt.trace.json", "not a regular file (a character device)"),
        "bad/gone": (bad / "gone.pt.trace.json", "does not exist"),
        "npu_fifo_info/rank1_ascend_pt": (info_fifo, "not a regular file (a FIFO)"),
        "npu_fifo_steps/rank2_ascend_pt": (steps_fifo, "not a regular file (a FIFO)"),
        "npu_deep_info/rank3_ascend_pt": (w3 / "profiler_info_0.json", "nested too deeply"),
    }
    for wid, (path, problem) in expect.items():
        assert wid in ws, f"{path} is not listed"
        err = ws[wid].error or ""
        assert err.startswith(f"{path}: ") and problem in err, (wid, err)


def test_walk_is_bounded_and_rescans_relist_only_what_changed(tmp_path, monkeypatch):
    from tb_compare_plugin.discovery import walk
    logdir = tmp_path / "logs"
    _good_runs(logdir)
    elsewhere = tmp_path / "elsewhere" / "linked_run"
    elsewhere.mkdir(parents=True)
    shutil.copy(GPU, elsewhere / "w.pt.trace.json")
    (logdir / "linked_run").symlink_to(elsewhere)            # runs linked in: listed, as always
    (logdir / "root").symlink_to("/")                        # never walked
    (logdir / "up").symlink_to(tmp_path)                     # holds the logdir: never walked
    (logdir / "loop").mkdir()
    (logdir / "loop" / "back").symlink_to(logdir)            # a loop: cut
    old = time.time() - 600                                   # folders last changed 10 min ago
    for d in [logdir, elsewhere, *(p for p in logdir.rglob("*") if p.is_dir() and not p.is_symlink())]:
        os.utime(d, (old, old), follow_symlinks=False)
    walker = walk.Walker(str(logdir))
    runs = walker.runs()
    assert {w.id for r in runs for w in r.workers} == GOOD | {"linked_run/w"}
    assert any(n.startswith(f"{logdir / 'root'}: not walked") for n in walker.notes), walker.notes
    assert any(n.startswith(f"{logdir / 'up'}: not walked") for n in walker.notes), walker.notes
    # nothing outside the logdir and the linked run was listed
    assert all(f.startswith(str(logdir)) for f in walker._listings), sorted(walker._listings)
    # a rescan of an unchanged logdir lists no folder again ...
    before = dict(walker._listings)
    assert walker.runs() == runs
    assert all(walker._listings[f] is before[f] for f in before)
    # ... and after a change, only the folder that changed
    shutil.copy(GPU, logdir / "baseline_gpu" / "worker1.pt.trace.json")
    ids = {w.id for r in walker.runs() for w in r.workers}
    assert "baseline_gpu/worker1" in ids
    changed = {f for f in before if walker._listings[f] is not before[f]}
    assert changed == {str(logdir / "baseline_gpu")}
    # an entry budget bounds the walk, and the notes say so
    monkeypatch.setattr(walk, "MAX_ENTRIES", 3)
    walker.runs()
    assert any("the walk stopped after 3 entries" in n for n in walker.notes), walker.notes


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_runs_route_lists_good_runs_beside_bad_files_and_stays_cheap(tmp_path):
    logdir = tmp_path / "logs"
    _good_runs(logdir)
    _damaged_gz(logdir / "bad" / "any_name.json.gz")
    w = logdir / "npu_fifo" / "rank1_ascend_pt"
    shutil.copytree(NPU, w)
    (w / "profiler_info_0.json").unlink()
    _fifo(w / "profiler_info_0.json")
    (logdir / "root").symlink_to("/")
    try:
        with TensorBoard(logdir, "--profile_compare_scan_interval", "0.5") as tb:
            t0 = time.monotonic()
            workers: dict = {}
            while time.monotonic() - t0 < 30:
                body = tb.get_json("/data/plugin/profile_compare/runs", timeout=30)
                workers = {x["id"]: x for r in body["runs"] for x in r["workers"]}
                if GOOD <= set(workers):
                    break
                time.sleep(0.2)
            listed_after = time.monotonic() - t0
            assert GOOD <= set(workers), f"good runs not listed after {listed_after:.1f} s: {body}"
            assert all(workers[i]["status"] != "error" for i in GOOD), workers
            assert workers["bad/any_name"]["status"] == "error"
            assert "bad/any_name.json.gz: the gzip data is damaged" in workers["bad/any_name"]["error"]
            assert "profiler_info_0.json: not a regular file (a FIFO)" in \
                workers["npu_fifo/rank1_ascend_pt"]["error"]
            assert any("root: not walked" in n for n in body["notes"]), body["notes"]
            # idle: ~10 rescans of a logdir holding a link to / cost next to nothing
            c0 = _cpu_seconds(tb.proc.pid)
            time.sleep(5)
            idle = _cpu_seconds(tb.proc.pid) - c0
            body = tb.get_json("/data/plugin/profile_compare/runs", timeout=30)
            assert GOOD <= {x["id"] for r in body["runs"] for x in r["workers"]}  # still listed
            print(f"good runs listed {listed_after:.2f} s after start; idle CPU {idle:.2f} s over 5 s")
            assert idle < 1.5, f"TensorBoard used {idle:.2f} s of CPU in 5 idle seconds"
    finally:
        _unblock(logdir)


def _cli(*args: str, env: dict, timeout: float = 90):
    """The real CLI in its own process group; on timeout the whole group is killed."""
    proc = subprocess.Popen([sys.executable, "-m", "tb_compare_plugin.cli", *args, "--no-progress", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"tb-compare {' '.join(args)} did not end within {timeout:.0f} s")
    return proc.returncode, out, err


def test_cli_names_the_bad_file_in_one_line(tmp_path):
    env = {**os.environ, "TB_COMPARE_CACHE_DIR": str(tmp_path / "cache")}
    # a folder holding a good trace and a damaged .json.gz: the good one is compared, the bad
    # one is named on one warning line
    folder = tmp_path / "gpu"
    folder.mkdir()
    shutil.copy(GPU, folder / GPU.name)
    bad = _damaged_gz(folder / "other.json.gz")
    rc, _, err = _cli(str(folder), str(SAMPLES / "target_npu"), env=env)
    assert rc == 0, err
    lines = [ln for ln in err.splitlines() if str(bad) in ln]
    assert len(lines) == 1 and lines[0].startswith(f"warning: {bad}: the gzip data is damaged"), err
    # an Ascend worker whose profiler_info is a FIFO: one error line naming it, no hang
    w = tmp_path / "npu" / "rank0_ascend_pt"
    shutil.copytree(NPU, w)
    (w / "profiler_info_0.json").unlink()
    fifo = _fifo(w / "profiler_info_0.json")
    try:
        rc, _, err = _cli(str(w), str(SAMPLES / "target_npu"), env=env, timeout=60)
    finally:
        _unblock(tmp_path)
    assert rc == 1
    assert err.splitlines() == [f"tb-compare: error: {fifo}: not a regular file (a FIFO); "
                                "tb-compare reads only regular files"], err
