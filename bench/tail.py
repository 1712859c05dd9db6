"""The CPU time of the CLI's tail (both sides in -> process gone), A/B, on a shared machine.

    python -m bench.tail --pair gpu_1gb --runs 3                      # sides from a warm cache
    python -m bench.tail --pair gpu_1gb --runs 3 --ab TB_COMPARE_XLSX_SPLIT=0
    python -m bench.tail --pair gpu_1gb --runs 2 --no-cache            # sides parsed (slow)

Each run is ``tb-compare B T --json --xlsx`` as the program (``cli.main()``), in a fresh
process whose marks (``timing.mark``) are wrapped to note this process's CPU time too.  By
default both sides come from a cache folder kept between runs (``--cache``; filled by the first
run), so a run is ~1-2 s of CPU and the tail is most of it; ``--no-cache`` parses them as the
bench does (the exit then frees the hand-off's shared pages too).  Printed per run: the tail's
wall time (``cli: comparison made``, just after both sides are in and their warm-up threads
ended -> the process reaped), the CLI process's CPU from there to ``leaving``, its CPU after ``leaving`` (the exit: hooks and the kernel's
teardown, from ``wait4``), and the CPU of the processes it forked and reaped in the tail (the
workbook's writer).  ``--ab K=V``: runs alternate between the environment as it is and with K=V
(interleaved, so the machine's drift hits both alike).  CPU times are what compare on a machine
other processes share; the wall figures only on a quiet one.
``TBC_TAIL_PROFILE=F`` / ``TBC_TAIL_CHILD_PROFILE=F``:
a cProfile of the CLI's main thread in the tail / of the workbook's writer child into F.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START = "cli: comparison made"   # right after both sides are in and the first side's warm-up joined
BENCH_DIR = Path(os.environ.get("TB_COMPARE_BENCH_DIR", "/tmp/tb_compare_bench"))


def _rss() -> str:
    """This process's RSS split (anon / file / shmem, MB) from /proc/self/status."""
    try:
        with open("/proc/self/status") as f:
            kv = dict(line.split(":", 1) for line in f)
        return " ".join(f"{k[3:].lower()} {int(kv[k].split()[0]) // 1024}" for k in ("RssAnon", "RssFile", "RssShmem"))
    except (OSError, KeyError, ValueError):
        return ""


def _child(report: str, argv: list) -> None:
    """In the measured process: wrap the marks, run the program."""
    from tb_compare_plugin import timing
    marks: list = []
    real = timing.mark
    prof = None
    if os.environ.get("TBC_TAIL_PROFILE"):      # cProfile of the main thread's tail into that file
        import cProfile
        prof = cProfile.Profile()
    child_prof = None
    if os.environ.get("TBC_TAIL_CHILD_PROFILE"):    # cProfile of the workbook's writer child into that file
        import cProfile
        child_prof = cProfile.Profile()

    def mark(label: str) -> None:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        marks.append((label, time.time(), time.process_time(), ru.ru_utime + ru.ru_stime, _rss()))
        real(label)
        if prof is not None and label == START:
            prof.enable()
        if child_prof is not None and label == START:      # the next fork is the writer's
            os.register_at_fork(after_in_child=child_prof.enable)
        if label == "xlsx child: sheets written":    # the workbook's forked writer: its CPU since the fork
            if child_prof is not None:
                child_prof.disable()
                child_prof.dump_stats(os.environ["TBC_TAIL_CHILD_PROFILE"])
            with open(report + ".child", "w") as f:
                json.dump([time.process_time(), [m[:3] for m in marks if m[0].startswith("xlsx child")]], f)
        if label == "cli: leaving":
            if prof is not None:
                prof.disable()
                prof.dump_stats(os.environ["TBC_TAIL_PROFILE"])
            with open(report, "w") as f:
                json.dump(marks, f)
    timing.mark = mark
    sys.argv = ["tb-compare", *argv]
    from tb_compare_plugin import cli
    sys.exit(cli.main())


def one_run(base: Path, target: Path, cache: Path | None, env_extra: dict, extra: list) -> dict:
    d = Path(tempfile.mkdtemp(prefix="tbc-tail-"))
    try:
        report = d / "marks.json"
        env = dict(os.environ, **env_extra)
        if cache is not None:
            env["TB_COMPARE_CACHE_DIR"] = str(cache)
        else:
            env["TB_COMPARE_CACHE_DIR"] = str(d / "cache")
        argv = [str(base), str(target), "--no-progress", "--quiet", "--json", str(d / "o.json"),
                "--xlsx", str(d / "o.xlsx")] + (["--no-cache"] if cache is None else []) + extra
        code = f"import sys; from bench.tail import _child; _child({str(report)!r}, {argv!r})"
        t0 = time.time()
        p = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=str(Path(__file__).parent.parent))
        _, status, ru = os.wait4(p.pid, 0)
        t_end = time.time()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0 or not report.exists():
            return {"rc": p.returncode}
        marks = json.loads(report.read_text())
        at = {label: (w, c, k) for label, w, c, k, _ in marks}
        w_in, c_in, k_in = at[START]
        w_out, c_out, k_out = at["cli: leaving"]
        total = ru.ru_utime + ru.ru_stime
        child = Path(str(report) + ".child")
        child_cpu, child_marks = json.loads(child.read_text()) if child.exists() else (0.0, [])  # (starts at 0)
        out = {"rc": 0, "wall": t_end - w_in, "cpu": c_out - c_in, "exit_cpu": total - c_out,
               "forked_cpu": k_out - k_in, "child_cpu": child_cpu, "marks": {label: (w - w_in, c - c_in, rss) for label, w, c, _, rss in marks
                                                     if w >= w_in - 1.0}}
        out["marks"].update({label: (w - w_in, c, "(the writer's own CPU)") for label, w, c in child_marks})
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="gpu_1gb")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "tbc-tail-cache",
                    help="the cache folder the sides are read from (filled by the first run)")
    ap.add_argument("--no-cache", action="store_true", help="parse both sides in every run")
    ap.add_argument("--ab", action="append", default=[], metavar="K=V",
                    help="alternate runs with this environment variable set (B) and as is (A)")
    ap.add_argument("--marks", action="store_true", help="print each run's tail marks")
    ap.add_argument("extra", nargs="*", help="more tb-compare options (after --)")
    a = ap.parse_args(argv)
    base, target = BENCH_DIR / a.pair / "baseline", BENCH_DIR / a.pair / "target"
    cache = None if a.no_cache else a.cache
    envs = {"A": {}}
    if a.ab:
        envs["B"] = dict(kv.split("=", 1) for kv in a.ab)
    if cache is not None and not (cache / ".filled").exists():
        one_run(base, target, cache, {}, a.extra)
        cache.mkdir(parents=True, exist_ok=True)
        (cache / ".filled").touch()
    got: dict = {k: [] for k in envs}
    for i in range(a.runs):
        for k, env in envs.items():
            r = one_run(base, target, cache, env, a.extra)
            got[k].append(r)
            if r["rc"] != 0:
                print(f"run {i + 1}{k}: rc={r['rc']}")
                continue
            print(f"run {i + 1}{k}: tail wall {r['wall']:.2f} s, cpu {r['cpu']:.2f} + exit {r['exit_cpu']:.2f}"
                  f" + forked {r['forked_cpu']:.2f} s, xlsx child {r['child_cpu']:.2f} s, load {os.getloadavg()[0]:.1f}")
            if a.marks:
                for label, (w, c, rss) in sorted(r["marks"].items(), key=lambda kv: kv[1][0]):
                    print(f"    {w:6.3f} s  cpu {c:6.3f}  {label:40s} {rss}")
    for k, rs in got.items():
        rs = [r for r in rs if r["rc"] == 0]
        if rs:
            med = {f: statistics.median(r[f] for r in rs) for f in ("wall", "cpu", "exit_cpu", "forked_cpu", "child_cpu")}
            print(f"{k} {envs[k] or ''}: medians over {len(rs)}: tail wall {med['wall']:.2f} s, cpu "
                  f"{med['cpu']:.2f} + exit {med['exit_cpu']:.2f} + forked {med['forked_cpu']:.2f} s, xlsx child "
                  f"{med['child_cpu']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
