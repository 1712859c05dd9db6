"""Alignment benchmark: align 100k vs 100k operator names taken from a real (generated) trace.

    python -m bench.align_bench [--n 100000] [--repeat 3]

Keys are the host-op names of the generated 1 GB HTA pair (control vs test: a real trace and
its modified twin), in time order; the reference's difflib would build a 10^10-cell problem.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from tb_compare_plugin import loaders
from tb_compare_plugin.engines.align import align


def names(path: Path, n: int) -> list[str]:
    prof = loaders.load("trace-json", str(path))
    ops = prof.ops.sort_values("start_ns", kind="stable").head(n)
    return prof.symbols.strings(ops["name"].to_numpy())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    root = Path(os.environ.get("TB_COMPARE_BENCH_DIR", "/tmp/tb_compare_bench")) / "gpu_200mb"
    a = names(root / "baseline" / "control.pt.trace.json", args.n)
    b = names(root / "target" / "test.pt.trace.json", args.n)
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        ra, rb = align(a, b)
        times.append(time.perf_counter() - t)
    matched = int(((ra >= 0) & (rb >= 0)).sum())
    print(f"align {len(a):,} vs {len(b):,} op names: median {statistics.median(times):.2f} s "
          f"over {args.repeat} runs; {matched:,} matched pairs, {len(ra):,} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
