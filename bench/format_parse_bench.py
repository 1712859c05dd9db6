"""Cold parse of the 500 MB inputs of each Ascend-family format, interleaved (issue 17: an msprof
CANN export and a MindSpore export must parse within 1.5x the time of an Ascend PyTorch text export).

    python -m bench.format_parse_bench [--runs 5] [--out DIR] [--json FILE]

Inputs (generated once under DIR, default $TB_COMPARE_BENCH_DIR or /tmp/tb_compare_bench):
``ascend-text`` npu_500mb/baseline (``bench.gen_traces --sizes npu500mb``), ``msprof-cann``
msprof_500mb (``bench.gen_msprof --mb 500``), ``mindspore-text`` mindspore_500mb
(``bench.gen_mindspore --mb 500``).  Each run is a fresh interpreter (``bench.measure_child load``,
no derived cache: TB_COMPARE_CACHE_DIR points at an empty folder) timed from outside: whole-process
wall time and peak RSS, and the process's own user + system CPU time (less sensitive than the wall
to other jobs on a shared machine).  Round r runs the three inputs in a rotated order, so a change in the
machine's load (it is shared) hits each format alike; the ratios are taken per round (each format
against the ascend-text run of the same round) and their median is reported with the medians of
the walls.  The page cache is warm (each input is read once before the first round).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from . import gen_mindspore, gen_msprof, gen_traces, proc
from .measure_child import read_all

ROOT = Path(__file__).resolve().parent.parent
REF = "ascend-text"


def inputs(out: Path) -> dict:
    man = gen_traces.ensure("npu500mb", out)
    return {REF: Path(man["folder"]) / man["sides"]["baseline"]["path"],
            "msprof-cann": gen_msprof.generate(500, out).parent,
            "mindspore-text": gen_mindspore.generate(500, out)}


def _mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _load_avg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.format_parse_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="rounds (each parses every input once; default 5)")
    ap.add_argument("--out", type=Path, default=None, help="where the inputs are generated / found")
    ap.add_argument("--only", default="", help="comma list of formats besides ascend-text (default: all)")
    ap.add_argument("--json", type=Path, default=None, help="also write the samples and summary here")
    ap.add_argument("--timeout", type=float, default=900)
    a = ap.parse_args(argv)
    ins = inputs(a.out or gen_traces.default_out())
    if a.only:
        ins = {k: v for k, v in ins.items() if k == REF or k in a.only.split(",")}
    fmts = list(ins)
    for p in ins.values():
        read_all(p)                                   # warm page cache for every input
    env = dict(os.environ, TB_COMPARE_CACHE_DIR=tempfile.mkdtemp(prefix="tbc_fmt_bench_cache_"))
    samples: dict = {f: [] for f in fmts}
    loads = []
    print(f"{'round':>5} {'format':<15} {'wall s':>8} {'CPU s':>7} {'peak MB':>8}  load avg", flush=True)
    for r in range(a.runs):
        order = fmts[r % len(fmts):] + fmts[:r % len(fmts)]
        for f in order:
            la = _load_avg()
            loads.append(la)
            res = proc.run([sys.executable, "-m", "bench.measure_child", "load", f, str(ins[f])], a.timeout,
                           16000, cwd=str(ROOT), env=env)
            c = res.child
            if not c.get("ok"):
                print(f"{f}: failed: {c.get('error') or res.killed or res.stderr[-300:]}", file=sys.stderr)
                return 1
            peak = c.get("peak_rss_mb") if res.rss_source != "time" else res.peak_rss_mb
            samples[f].append({"round": r, "proc_wall_s": round(res.wall_s, 2), "load_s": round(c["wall_s"], 2),
                               "cpu_s": round(c.get("cpu_s") or float("nan"), 2),
                               "peak_rss_mb": round(peak, 0), "loadavg": la, "counts": c.get("counts")})
            print(f"{r:>5} {f:<15} {res.wall_s:>8.2f} {c.get('cpu_s', 0):>7.2f} {peak:>8.0f}  {la}", flush=True)
    summary = {}
    for f in fmts:
        walls = [s["proc_wall_s"] for s in samples[f]]
        row = {"mb": round(_mb(ins[f]), 1), "wall_median_s": statistics.median(walls),
               "cpu_median_s": statistics.median(s["cpu_s"] for s in samples[f]),
               "peak_rss_median_mb": statistics.median(s["peak_rss_mb"] for s in samples[f]), "walls": walls}
        if f != REF:
            pair = [s["proc_wall_s"] / q["proc_wall_s"] for s, q in zip(samples[f], samples[REF])]
            row["ratio_median"] = round(statistics.median(pair), 3)
            row["ratio_of_medians"] = round(row["wall_median_s"] / statistics.median(
                q["proc_wall_s"] for q in samples[REF]), 3)
            row["ratios"] = [round(x, 3) for x in pair]
            row["cpu_ratio_of_medians"] = round(row["cpu_median_s"] / statistics.median(
                q["cpu_s"] for q in samples[REF]), 3)
        summary[f] = row
    print()
    for f, row in summary.items():
        extra = (f"  /{REF}: median of per-round ratios {row['ratio_median']:.2f} "
                 f"(ratio of medians {row['ratio_of_medians']:.2f}; CPU {row['cpu_ratio_of_medians']:.2f})"
                 ) if f != REF else ""
        print(f"{f:<15} {row['mb']:>6.0f} MB  wall median {row['wall_median_s']:.2f} s  "
              f"CPU median {row['cpu_median_s']:.2f} s  peak RSS median {row['peak_rss_median_mb']:.0f} MB{extra}")
    print(f"load average during the runs: {min(loads)} .. {max(loads)}")
    if a.json:
        a.json.write_text(json.dumps({"inputs": {k: str(v) for k, v in ins.items()}, "summary": summary,
                                      "samples": samples, "when": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
