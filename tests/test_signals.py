"""A stopped run leaves nothing half done (issue 21 §4): real SIGINT / SIGTERM / SIGKILL sent to
a real CLI process group (what a terminal's Ctrl-C and a service manager's stop do) at the
moments that used to go wrong, and to a real TensorBoard while it parses.

Each moment is found by watching what the run makes -- its scratch folder
``/dev/shm/tbc-pool-<pid>-*``, the parse's progress file in it, progress written there -- never
by sleeping.  What a run leaves is judged by name: every entry a run makes in /dev/shm carries
its pid (docs/files.md), so entries of other processes on the machine do not count.  The tests
remove only what they made in /dev/shm."""
from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import SAMPLES
from repeated_traces import repeated_traces
from tbserver import TensorBoard

SHM = "/dev/shm"
GPU_SAMPLE = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
EXIT_BOUND = 2.0          # seconds from the signal to the exit: a behaviour check, not a benchmark

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.isdir(SHM),
                                reason="needs Linux and /dev/shm")


@pytest.fixture(scope="module")
def big_pair(tmp_path_factory):
    """Two different traces (the GPU sample's events, repeated) that take seconds to parse."""
    folder = tmp_path_factory.mktemp("big")
    return repeated_traces(GPU_SAMPLE, folder, {"base": 80, "target": 81})


# -- watching a run ---------------------------------------------------------------------------
def owned(pid: int) -> list[str]:
    """What process ``pid`` has in /dev/shm: its scratch folders and semaphores."""
    return sorted(n for n in os.listdir(SHM) if n.startswith((f"tbc-pool-{pid}-", f"sem.mp-tbc{pid}-")))


def progress(pid: int) -> list[float]:
    """The progress files of ``pid``'s parses under way (0.0 for one not written yet)."""
    out = []
    for f in glob.glob(f"{SHM}/tbc-pool-{pid}-*/tmp*"):
        try:
            with open(f) as fh:
                out.append(float(fh.read() or 0))
        except (OSError, ValueError):
            continue
    return out


MOMENTS = {
    # the pool's scratch folder exists: the fork server and the parser processes are starting
    "starting": lambda pid: bool(glob.glob(f"{SHM}/tbc-pool-{pid}-*")),
    # a parse has its progress file: its parser process is being forked and set up
    "parsers_begin": lambda pid: bool(progress(pid)),
    # a parser process has reported progress: mid-parse
    "mid_parse": lambda pid: any(x > 0.02 for x in progress(pid)),
}


def wait_until(proc, ready, pid: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ready(pid):
        assert proc.poll() is None, f"the run ended ({proc.returncode}) before the moment came"
        assert time.monotonic() < deadline, "the moment never came"
        time.sleep(0.005)


def _stat(pid: int):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[2])       # state, ppid, pgid
    except (OSError, IndexError, ValueError):
        return None


def group(pgid: int) -> dict[int, int]:
    """The live processes of process group ``pgid``: pid -> parent pid."""
    out = {}
    for d in glob.glob("/proc/[0-9]*"):
        st = _stat(int(d[6:]))
        if st and st[2] == pgid and st[0] != b"Z":
            out[int(d[6:])] = st[1]
    return out


def _cmdline(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return None


def parser_processes(root: int, members: dict[int, int]) -> set[int]:
    """The parser processes among ``members``: the children of ``root``'s fork server (a
    ``multiprocessing.forkserver`` interpreter, or a fork of ``root`` itself: the CLI's, with
    ``root``'s command line)."""
    own = _cmdline(root)
    servers = set()
    for pid, ppid in members.items():
        if ppid == root:
            cmd = _cmdline(pid)
            if cmd is not None and (b"forkserver" in cmd or cmd == own):
                servers.add(pid)
    return {pid for pid, ppid in members.items() if ppid in servers}


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] != b"Z"


def gone_within(pids, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [p for p in pids if alive(p)]


def half_written(cache_dir) -> list[str]:
    """Temporary entries in the cache (a writer's folder or file not yet renamed into place:
    dot-names), and profile entries (folders named by their 32-hex-digit key) without their
    meta.json."""
    bad = []
    for dirpath, dirs, files in os.walk(cache_dir):
        bad += [os.path.join(dirpath, d) for d in dirs if d.startswith(".")]
        bad += [os.path.join(dirpath, f) for f in files if f.startswith(".tmp")]
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if re.fullmatch(r"[0-9a-f]{32}", os.path.basename(dirpath)) and "meta.json" not in files:
            bad.append(dirpath)
    return bad


def start_cli(args, tmp_path, **env):
    err = open(tmp_path / "stderr.txt", "wb")
    e = {**os.environ, "TB_COMPARE_CACHE_DIR": str(tmp_path / "cache"), **env}
    e.pop("TB_COMPARE_SCRATCH_DIR", None)
    e.pop("TB_COMPARE_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "tb_compare_plugin.cli", *map(str, args), "-q"],
                            stdout=subprocess.DEVNULL, stderr=err, env=e, start_new_session=True)
    err.close()
    return proc


def stop_group(proc) -> None:
    """Whatever is left of a test's own process group (a failed test) is killed."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


# -- Ctrl-C and SIGTERM -----------------------------------------------------------------------
@pytest.mark.parametrize("sig,moment", [
    (signal.SIGINT, "starting"), (signal.SIGINT, "parsers_begin"), (signal.SIGINT, "mid_parse"),
    (signal.SIGTERM, "starting"), (signal.SIGTERM, "parsers_begin"), (signal.SIGTERM, "mid_parse"),
], ids=lambda v: v.name if isinstance(v, signal.Signals) else v)
def test_stopped_cli_exits_at_once_and_leaves_nothing(tmp_path, big_pair, sig, moment):
    proc = start_cli(big_pair, tmp_path)
    try:
        wait_until(proc, MOMENTS[moment], proc.pid)
        members = group(proc.pid)
        parsers = parser_processes(proc.pid, members)
        if moment == "mid_parse":
            assert parsers, members
        t0 = time.monotonic()
        os.killpg(proc.pid, sig)
        proc.wait(timeout=30)
        took = time.monotonic() - t0
        err = (tmp_path / "stderr.txt").read_text()
        assert proc.returncode == 128 + sig, err
        assert took < EXIT_BOUND, f"{took:.2f} s to exit"
        assert "Traceback" not in err and "retrying" not in err, err
        assert err.splitlines() == [f"tb-compare: interrupted ({sig.name})"], err
        assert owned(proc.pid) == []
        assert gone_within(parsers, 2.0) == [], "parser processes outlived the run"
        assert half_written(tmp_path / "cache") == []
    finally:
        stop_group(proc)


# -- SIGKILL: the next run removes what the killed one left ---------------------------------------
def test_next_run_removes_what_a_killed_run_left(tmp_path, big_pair):
    live_folder = os.path.join(SHM, f"tbc-pool-{os.getpid()}-testlive")
    live_sem = os.path.join(SHM, f"sem.mp-tbc{os.getpid()}-testlive")
    proc = start_cli(big_pair, tmp_path)
    try:
        wait_until(proc, MOMENTS["mid_parse"], proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        left = owned(proc.pid)
        assert any(n.startswith("tbc-pool-") for n in left), left        # SIGKILL cannot be helped
        assert any(n.startswith("sem.") for n in left), left
        # a live process's entries (ours: this test's pid) look the same and must stay
        os.mkdir(live_folder)
        open(live_sem, "wb").close()
        r = subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", str(GPU_SAMPLE), str(GPU_SAMPLE),
                            "-q"], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "TB_COMPARE_CACHE_DIR": str(tmp_path / "cache2")})
        assert r.returncode == 0, r.stderr
        assert owned(proc.pid) == []
        assert os.path.isdir(live_folder) and os.path.exists(live_sem)
    finally:
        stop_group(proc)
        for n in owned(proc.pid):            # the killed run's, if the sweep failed
            p = os.path.join(SHM, n)
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
        shutil.rmtree(live_folder, ignore_errors=True)
        if os.path.exists(live_sem):
            os.unlink(live_sem)


# -- TensorBoard ------------------------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGTERM], ids=["SIGTERM"])
def test_tensorboard_stopped_while_parsing_leaves_nothing(tmp_path, big_pair, sig):
    logdir = tmp_path / "logdir"
    for run, src in zip(("a", "b"), big_pair):
        (logdir / run).mkdir(parents=True)
        try:
            os.link(src, logdir / run / src.name)
        except OSError:
            shutil.copy(src, logdir / run / src.name)
    cache = tmp_path / "cache"
    env = {"TB_COMPARE_CACHE_DIR": str(cache), "TB_COMPARE_SCRATCH_DIR": ""}
    with TensorBoard(logdir, env=env, cwd=tmp_path) as tb:
        pid = tb.proc.pid
        deadline = time.monotonic() + 60
        while True:
            runs = tb.get_json("/data/plugin/profile_compare/runs")["runs"]
            if len(runs) >= 2:
                break
            assert time.monotonic() < deadline, runs
            time.sleep(0.1)
        ids = [w["id"] for r in runs for w in r["workers"]]

        def ask():
            try:
                tb.post_json("/data/plugin/profile_compare/compare/overall",
                             {"baseline": ids[0], "target": ids[1]}, timeout=60)
            except Exception:  # noqa: BLE001 - TensorBoard goes away meanwhile
                pass
        threading.Thread(target=ask, daemon=True).start()
        wait_until(tb.proc, MOMENTS["mid_parse"], pid)
        parsers = parser_processes(pid, group(os.getpgid(pid)))
        assert parsers
        t0 = time.monotonic()
        tb.proc.send_signal(sig)
        # the parses are stopped, not waited for (they would take many seconds more) ...
        assert gone_within(parsers, EXIT_BOUND) == [], "TensorBoard waited for its parses"
        # ... and TensorBoard exits (its own teardown takes a second or two on a busy machine)
        tb.proc.wait(timeout=30)
        took = time.monotonic() - t0
        out = "".join(tb.lines)
        assert took < 10, f"{took:.2f} s to exit"
        assert "Traceback" not in out and "retrying" not in out, out
        assert owned(pid) == []
        assert half_written(cache) == []
