"""Run one child process and measure it from outside: wall time, peak RSS, limits.

Peak RSS pitfall: Linux carries the RSS high-water mark of the process image an
``execve`` replaces into the new program's ``ru_maxrss``.  A child spawned from a
500 MB parent therefore reports >= 500 MB through ``getrusage`` (its own RUSAGE_SELF,
the parent's ``wait4`` and RUSAGE_CHILDREN alike), however little it uses.  So the
command runs under GNU ``/usr/bin/time -f %M`` (a ~2 MB process: the inherited floor is
negligible) and its figure is the peak RSS; ``/proc/self/status`` VmHWM, which the
Python children report themselves, is exact too.  Without ``/usr/bin/time`` the wait4
figure is used and flagged.  A watchdog kills the process group when it passes a time
limit or an RSS limit (this machine is shared).
"""
from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


@dataclass
class ProcResult:
    rc: int | None
    wall_s: float
    peak_rss_mb: float            # 10^6 bytes
    rss_source: str = "time"      # "time" (/usr/bin/time %M) or "wait4" (floored by our own RSS)
    killed: str = ""              # "" or why the watchdog killed it
    peak_tree_rss_mb: float = 0.0  # max over time of the summed RSS of the process and its children
    stdout: str = ""
    stderr: str = ""
    child: dict = field(default_factory=dict)   # the child's JSON line, when it printed one


def _vm_rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _tree_rss_kb(pid: int) -> int:
    """VmRSS of ``pid`` and all its descendants (the command under /usr/bin/time, its helpers)."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _vm_rss_kb(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total


def _last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return {}


def run(cmd: list, timeout_s: float, max_rss_mb: float, cwd: str | None = None,
        env: dict | None = None) -> ProcResult:
    """Run ``cmd``; never raises for the child's own failures."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("w+", suffix=".rss") as rss_file:
        full = ([GNU_TIME, "-f", "%M", "-o", rss_file.name] + list(cmd)) if GNU_TIME else list(cmd)
        t0 = time.perf_counter()
        p = subprocess.Popen(full, stdout=out, stderr=err, cwd=cwd, env=env, start_new_session=True)
        done = threading.Event()
        why: list = []
        tree_peak = [0.0]

        def watch():
            while not done.wait(0.1):
                rss_mb = _tree_rss_kb(p.pid) * 1024 / 1e6
                tree_peak[0] = max(tree_peak[0], rss_mb)
                over = time.perf_counter() - t0 > timeout_s
                if over or rss_mb > max_rss_mb:
                    why.append(f"timeout after {timeout_s:.0f} s" if over
                               else f"RSS {rss_mb:.0f} MB above the {max_rss_mb:.0f} MB limit")
                    try:
                        os.killpg(p.pid, signal.SIGKILL)   # its own session: the child and its helpers
                    except OSError:
                        pass
                    return

        w = threading.Thread(target=watch, daemon=True)
        w.start()
        try:
            os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)   # exited, not yet reaped: pid still ours
        except BaseException:                                      # Ctrl-C / SIGTERM: take the child down too
            done.set()
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise
        wall = time.perf_counter() - t0
        done.set()
        w.join()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
        peak, source = ru.ru_maxrss * 1024 / 1e6, "wait4"
        if GNU_TIME:
            try:
                peak, source = int(Path(rss_file.name).read_text().split()[-1]) * 1024 / 1e6, "time"
            except (OSError, ValueError, IndexError):
                pass                   # killed before time could write: keep wait4's figure
    return ProcResult(rc=p.returncode, wall_s=wall, peak_rss_mb=peak, rss_source=source,
                      peak_tree_rss_mb=max(tree_peak[0], peak),
                      killed=why[0] if why else "", stdout=stdout[-20000:], stderr=stderr[-20000:],
                      child=_last_json(stdout))


def machine_info() -> dict:
    info = {"nproc": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    except OSError:
        info["cpu"] = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = next(int(ln.split()[1]) for ln in f if ln.startswith("MemTotal:"))
        info["mem_gb"] = round(kb / 1024 / 1024, 1)
    except (OSError, StopIteration):
        pass
    try:
        info["loadavg"] = os.getloadavg()
    except OSError:
        pass
    return info


def bench_dir() -> Path:
    """Where the generated bench inputs live: $TB_COMPARE_BENCH_DIR, else /tmp/tb_compare_bench."""
    return Path(os.environ.get("TB_COMPARE_BENCH_DIR") or "/tmp/tb_compare_bench")


def cache_env(cache_dir: Path) -> dict:
    """This process's environment with tb-compare's parse cache in ``cache_dir``, unbounded and on."""
    env = dict(os.environ)
    env["TB_COMPARE_CACHE_DIR"] = str(cache_dir)
    env.pop("TB_COMPARE_CACHE", None)
    env.pop("TB_COMPARE_CACHE_MAX_MB", None)
    return env
