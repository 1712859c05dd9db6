"""Where one end-to-end ``tb-compare`` run spends its wall time: the phase marks
(``tb_compare_plugin.timing``) of the CLI, the fork server and the parser processes, per run.

    python -m bench.phases --pair gpu_1gb --runs 3        # a generated pair (bench.gen_traces)
    python -m bench.phases --baseline B --target T          # any two profiles

Each run is ``tb-compare B T --no-cache --json --xlsx`` with an empty cache folder, like the
``cli`` phase of ``run_bench``; the inputs are read once first (a warm page cache) and the package's
modules byte-compiled (as an installed package is).  Prints, per
run, the wall time, the summed peak RSS of the process tree and every mark as seconds after
launch, then the median of each mark over the runs.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from . import proc
from .run_bench import _compile_package, _warm_page_cache

BENCH_DIR = Path(os.environ.get("TB_COMPARE_BENCH_DIR", "/tmp/tb_compare_bench"))


def one_run(base: Path, target: Path, extra: list) -> tuple:
    d = Path(tempfile.mkdtemp(prefix="tbc-phases-"))
    try:
        marks = d / "marks.log"
        env = dict(os.environ, TB_COMPARE_CACHE_DIR=str(d / "cache"), TB_COMPARE_TIMING=str(marks))
        cmd = [sys.executable, "-m", "tb_compare_plugin.cli", str(base), str(target), "--no-cache",
               "--no-progress", "--quiet", "--json", str(d / "o.json"), "--xlsx", str(d / "o.xlsx")] + extra
        t0 = time.time()
        r = proc.run(cmd, 1200, 16000, cwd=str(d), env=env)
        rows, names = [], {}
        for line in (marks.read_text().splitlines() if marks.exists() else []):
            t, pid, label = line.split(" ", 2)
            who = names.setdefault(pid, f"p{len(names)}")
            rows.append((float(t) - t0, who, label))
        return r, rows
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="gpu_1gb", help="a generated pair under the bench folder")
    ap.add_argument("--baseline", type=Path)
    ap.add_argument("--target", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("extra", nargs="*", help="more tb-compare options (after --)")
    a = ap.parse_args(argv)
    base = a.baseline or BENCH_DIR / a.pair / "baseline"
    target = a.target or BENCH_DIR / a.pair / "target"
    _warm_page_cache(base, target)
    _compile_package()
    walls, by_label = [], {}
    for i in range(a.runs):
        r, rows = one_run(base, target, a.extra)
        walls.append(r.wall_s)
        print(f"run {i + 1}: rc={r.rc} wall {r.wall_s:.2f} s, summed peak RSS {r.peak_tree_rss_mb:.0f} MB, "
              f"load {os.getloadavg()[0]:.1f}")
        seen = {}
        for t, who, label in rows:
            print(f"  {t:6.2f}  {who:>3} {label}")
            n = seen[label] = seen.get(label, 0) + 1
            by_label.setdefault(f"{label}#{n}" if n > 1 else label, []).append(t)
        if r.rc != 0:
            print("  stderr:", r.stderr.strip()[-400:])
    print(f"median wall {statistics.median(walls):.2f} s over {len(walls)} runs; median mark times:")
    for label, ts in sorted(by_label.items(), key=lambda kv: statistics.median(kv[1])):
        print(f"  {statistics.median(ts):6.2f}  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
