"""The runs route at scale (issue 21, §2): a logdir of N run folders ``run_0000`` ... , each holding
one tiny Kineto trace (hard links to one ~1 KB file, so 10,000 runs cost almost no disk), listed by
a real TensorBoard on 127.0.0.1 (``GET /data/plugin/profile_compare/runs``, the route the tab
calls first).

Per N it reports, for the TensorBoard process: the first answer (TensorBoard started, first scan
waited for), then the median of ``--repeat`` further answers (the scan is done: this is the
listing's own cost, ``runs_payload`` with the suggested pairs, which are kept while their inputs
do not change), the answer's size, its run and
pair counts, and the process's peak RSS (``VmHWM`` of /proc, read before it is stopped). A
watchdog stops TensorBoard above ``--max-rss-mb`` or when an answer takes over ``--timeout`` s
(the machine is shared); such a size is reported as ``failed`` with the reason.

With ``--service`` it also times the presenter alone in this process (``runs_payload`` over a
scanned snapshot: the function the route calls), without HTTP, path rewriting or JSON encoding:
cold (the kept suggestions dropped first), repeated, and the suggestions alone, cold.

    python -m bench.runs_route --runs 100,1000,10000 --repeat 3
    python -m bench.runs_route --runs 5000 --repeat 3 --service
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

ROUTE = "/data/plugin/profile_compare/runs"

# one step, one operator, one kernel: enough for discovery to list a GPU worker of rank 0
TINY_TRACE = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712,
                          "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
    "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
    "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000.0,
         "dur": 100.0, "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1010.0, "dur": 20.0,
         "args": {"External id": 2}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1012.0,
         "dur": 5.0, "args": {"correlation": 3, "External id": 2}},
        {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "pid": 0, "tid": 7, "ts": 1020.0, "dur": 30.0,
         "args": {"correlation": 3, "External id": 2, "device": 0, "stream": 7}},
    ],
}


def make_logdir(root: Path, n: int) -> Path:
    """``root/runs_<n>/run_0000`` ... ``run_<n-1>``, each with ``worker0.pt.trace.json`` hard-linked
    to one file kept beside the logdir (not in it). Reused when already complete."""
    src = root / "tiny.pt.trace.json"
    if not src.exists():
        src.write_text(json.dumps(TINY_TRACE, indent=1))
    logdir = root / f"runs_{n}"
    done = logdir / ".complete"
    if done.exists():
        return logdir
    if logdir.exists():
        shutil.rmtree(logdir)
    logdir.mkdir(parents=True)
    width = max(4, len(str(n - 1)))
    for i in range(n):
        d = logdir / f"run_{i:0{width}d}"
        d.mkdir()
        try:
            os.link(src, d / "worker0.pt.trace.json")
        except OSError:                      # another file system, or no hard links: a symlink
            os.symlink(src, d / "worker0.pt.trace.json")
    done.write_text("")                      # a dot file: discovery skips it
    return logdir


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _get(url: str, timeout: float) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    req = urllib.request.Request(url, headers={"Accept-Encoding": "identity"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
    return time.perf_counter() - t0, body


def measure_tensorboard(logdir: Path, repeat: int, timeout: float, max_rss_mb: float) -> dict:
    from tbserver import TensorBoard
    out: dict = {"runs_on_disk": sum(1 for e in os.scandir(logdir) if e.is_dir())}
    cache = tempfile.mkdtemp(prefix="tbc-runs-bench-cache-")
    tb = TensorBoard(logdir, env={"TB_COMPARE_CACHE_DIR": cache}, cwd=tempfile.gettempdir())
    pid = tb.proc.pid
    killed: list = []
    stop = threading.Event()

    def watch():
        while not stop.wait(0.2):
            if _status_kb(pid, "VmRSS") / 1e3 > max_rss_mb:
                killed.append(f"RSS above {max_rss_mb:.0f} MB")
                tb.proc.kill()
                return
    threading.Thread(target=watch, daemon=True).start()
    try:
        url = tb.url + ROUTE
        t0 = time.perf_counter()
        while True:                                         # first answer that has a finished scan
            _, body = _get(url, timeout)
            if json.loads(body).get("scanned_at"):
                break
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError("no finished scan")
        out["first_answer_s"] = round(time.perf_counter() - t0, 3)
        times = []
        for _ in range(repeat):
            dt, body = _get(url, timeout)
            times.append(dt)
        ans = json.loads(body)
        out.update(route_s_median=round(statistics.median(times), 4), route_s_all=[round(t, 4) for t in times],
                   answer_bytes=len(body), runs=len(ans["runs"]), pairs=len(ans.get("pairs", [])),
                   pairs_left_off=ans.get("pairs_left_off"))
        counts: dict = {}
        for p in ans.get("pairs", []):
            for k in (p["baseline"], p["target"]):
                counts[k] = counts.get(k, 0) + 1
        out["max_pairs_per_run"] = max(counts.values(), default=0)
    except Exception as e:                                  # noqa: BLE001 - reported, the next size runs
        out["failed"] = killed[0] if killed else f"{type(e).__name__}: {e}"
    finally:
        out["peak_rss_mb"] = round(_status_kb(pid, "VmHWM") / 1e3, 1) or None
        stop.set()
        tb.stop()
        shutil.rmtree(cache, ignore_errors=True)
    return out


def measure_service(logdir: Path, repeat: int) -> dict:
    """``runs_payload`` (what the route calls) over one scan of the logdir, in this process:
    cold (the suggestions computed: their kept answer dropped first) and repeated (kept)."""
    from tb_compare_plugin.discovery.scanner import Snapshot
    from tb_compare_plugin.discovery.walk import find_runs
    from tb_compare_plugin.presenters import run_pairs
    from tb_compare_plugin.presenters.runs_json import runs_payload
    from tb_compare_plugin.service.compare import CompareService
    t0 = time.perf_counter()
    snap = Snapshot(find_runs(str(logdir)), time.time())
    scan_s = time.perf_counter() - t0
    svc = CompareService(str(logdir))
    cold, warm, pairs_s = [], [], []
    for _ in range(repeat):
        run_pairs._last = (None, [], 0)
        t0 = time.perf_counter()
        body = runs_payload(snap, svc.profiles)
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        runs_payload(snap, svc.profiles)
        warm.append(time.perf_counter() - t0)
        run_pairs._last = (None, [], 0)
        t0 = time.perf_counter()
        run_pairs.suggest_pairs_counted(body["runs"])
        pairs_s.append(time.perf_counter() - t0)
    svc.close()
    return {"scan_s": round(scan_s, 3), "payload_cold_s_median": round(statistics.median(cold), 4),
            "payload_repeat_s_median": round(statistics.median(warm), 4),
            "suggestions_cold_s_median": round(statistics.median(pairs_s), 4), "pairs": len(body["pairs"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="100,1000,10000", help="comma-separated run counts")
    ap.add_argument("--repeat", type=int, default=3, help="answers timed per size (median)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds an answer may take")
    ap.add_argument("--max-rss-mb", type=float, default=3000.0, help="stop TensorBoard above this RSS")
    ap.add_argument("--dir", default=os.environ.get("TB_COMPARE_BENCH_DIR", "/tmp/tb_compare_bench"),
                    help="where the logdirs are generated")
    ap.add_argument("--service", action="store_true", help="also time runs_payload in this process")
    ap.add_argument("--no-tensorboard", action="store_true", help="only the in-process presenter")
    a = ap.parse_args(argv)
    root = Path(a.dir) / "runs_route"
    root.mkdir(parents=True, exist_ok=True)
    results = []
    for n in [int(x) for x in a.runs.split(",") if x]:
        logdir = make_logdir(root, n)
        row = {"n": n}
        if not a.no_tensorboard:
            row["tensorboard"] = measure_tensorboard(logdir, a.repeat, a.timeout, a.max_rss_mb)
        if a.service or a.no_tensorboard:
            row["service"] = measure_service(logdir, a.repeat)
        print(json.dumps(row), flush=True)
        results.append(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
