"""What the timeline costs on the server for a cached 1 GB pair: first paint of a step, then each
zoom / pan.

    python -m bench.timeline_bench                      # gpu_1gb, 5 first paints, 20 zoom/pan windows each
    python -m bench.timeline_bench --pair gpu_200mb --repeat 3 --px 1500

The pair is ``$TB_COMPARE_BENCH_DIR/<pair>/{baseline,target}`` (default /tmp/tb_compare_bench;
``python -m bench.gen_traces --sizes 1gb`` makes gpu_1gb).  Its parsed profiles live in a cache
folder of their own (``--cache-dir``, default ``<bench dir>/timeline_bench_cache``), filled once
(parser processes) when it does not hold both sides.

Each run is a fresh interpreter (imports excluded from the times), page cache warm:

* ``first paint``: both profiles opened from the cache (``load_pair``) and the first window
  answered (``service.timeline.timeline_answer``: the first common step, whole, at ``--px``
  pixels) while the full lanes are not built: it reads each side's lanes cut to that window
  (``engines.timeline_lanes.window_lanes``: the kernel classes, device, communication and free
  lanes in full, the host ops of the window only): what a first ``compare/timeline`` request costs
  the server once its profiles are parsed;
* ``full lanes``: then both sides' full lanes (``service.timeline.both_lanes``), what the service
  builds in the background after answering the first paint;
* ``zoom/pan``: then ``--windows`` further windows of that step and around it, each answered as
  the route does (lanes built): zooming in by halves down to ~20 µs, panning by half a window
  either way, zooming out to the whole capture, and a range selection (``range_answer``).

Prints the medians (and the worst zoom/pan) over ``--repeat`` runs, wall time and CPU time (all the
process's threads: what the work costs when the machine is shared; the load average is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .proc import bench_dir, cache_env

ROOT = Path(__file__).resolve().parent.parent

RUN = r"""
import json, sys, time
from tb_compare_plugin.cli import resolve
from tb_compare_plugin.cache import ProfileCache
from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.engines.timeline_lanes import side_lanes
from tb_compare_plugin.service.loading import load_pair
from tb_compare_plugin.service.timeline import Query, both_lanes, range_answer, timeline_answer
import tb_compare_plugin.engines.overall, tb_compare_plugin.engines.timeline_lod  # imports outside the times
base, target = resolve(sys.argv[1], None, "baseline"), resolve(sys.argv[2], None, "target")
px, n_windows = int(sys.argv[3]), int(sys.argv[4])
cache = ProfileCache()
if not (cache.has(base.fingerprint) and cache.has(target.fingerprint)):
    print("MISS"); sys.exit(0)
c0, t0 = time.process_time(), time.perf_counter()
pb, pt = load_pair(base, target, backends=(cache, None))
c1, t1 = time.process_time(), time.perf_counter()
cmp = Comparison(pb, pt)
first = timeline_answer(cmp, Query(px=px))        # the full lanes not built: read from lanes cut to the window
c3, t3 = time.process_time(), time.perf_counter()
both_lanes(cmp)                                   # what the service builds next, in the background
c4, t4 = time.process_time(), time.perf_counter()
step = first["step"]
lo, hi = first["extent"]["start_ms"], first["extent"]["end_ms"]
origin = first["baseline"]["origin_ns"]
size = len(json.dumps(first))
del first                                          # as the server does once it has sent an answer
windows = []
a, b = lo, hi
while len(windows) < n_windows // 2 and b - a > 0.04:          # zoom in by halves around the middle third
    mid = a + (b - a) / 3
    a, b = mid - (b - a) / 4, mid + (b - a) / 4
    windows.append((a, b))
w = b - a
for k in range(n_windows - len(windows) - 2):                    # pan by half a window, both ways
    sgn = 1 if k % 2 == 0 else -1
    a, b = a + sgn * w / 2 * (k + 1), b + sgn * w / 2 * (k + 1)
    windows.append((a, b))
span = side_lanes(pb).span
windows.append(((span[0] - origin) / 1e6, (span[1] - origin) / 1e6))   # the whole capture
times, cpu, items = [], [], []
for a, b in windows:
    c, s = time.process_time(), time.perf_counter()
    ans = timeline_answer(cmp, Query(step=step, start_ms=a, end_ms=b, px=px))
    times.append(time.perf_counter() - s)
    cpu.append(time.process_time() - c)
    items.append(ans["baseline"]["items"] + ans["target"]["items"])
    del ans
s = time.perf_counter()
range_answer(cmp, Query(step=step))
rng = time.perf_counter() - s
print(json.dumps({"open": t1 - t0, "window": t3 - t1, "first_paint": t3 - t0, "lanes": t4 - t3,
                  "cpu_open": c1 - c0, "cpu_window": c3 - c1, "cpu_first_paint": c3 - c0, "cpu_lanes": c4 - c3,
                  "zoom": times, "cpu_zoom": cpu, "items": items, "range": rng, "first_bytes": size, "step": step,
                  "events": sum(len(df) for p in (pb, pt) for name, df in p.tables.items()
                                if name in ("kernels", "ops", "comm_ops", "comm_tasks"))}))
"""

FILL = r"""
import sys
from tb_compare_plugin.cli import resolve
from tb_compare_plugin.service.loading import load_pair, make_backends
base, target = resolve(sys.argv[1], None, "baseline"), resolve(sys.argv[2], None, "target")
cache, pool = make_backends(workers=2, start=True)
try:
    load_pair(base, target, backends=(cache, pool))
finally:
    if pool is not None:
        pool.shutdown()
"""


def _run(base: Path, target: Path, px: int, windows: int, env: dict):
    out = subprocess.run([sys.executable, "-c", RUN, str(base), str(target), str(px), str(windows)], env=env,
                         cwd=ROOT, capture_output=True, text=True, check=True)
    line = out.stdout.strip().splitlines()[-1]
    return None if line == "MISS" else json.loads(line)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="gpu_1gb")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--px", type=int, default=1500)
    ap.add_argument("--windows", type=int, default=20)
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args(argv)
    pair = bench_dir() / args.pair
    base, target = pair / "baseline", pair / "target"
    if not base.is_dir() or not target.is_dir():
        print(f"{pair} is missing: python -m bench.gen_traces --sizes {args.pair.split('_', 1)[-1]}",
              file=sys.stderr)
        return 2
    cache_dir = Path(args.cache_dir) if args.cache_dir else bench_dir() / "timeline_bench_cache"
    env = cache_env(cache_dir)
    if _run(base, target, args.px, 2, env) is None:
        print(f"filling the cache {cache_dir} (parsing both sides once) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-c", FILL, str(base), str(target)], env=env, cwd=ROOT, check=True)
        if _run(base, target, args.px, 2, env) is None:
            print("the cache still misses a side (is the cache writable and big enough?)", file=sys.stderr)
            return 1
    runs = [_run(base, target, args.px, args.windows, env) for _ in range(args.repeat)]
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    zoom = [t for r in runs for t in r["zoom"]]
    czoom = [t for r in runs for t in r["cpu_zoom"]]
    print(f"{args.pair}: {runs[0]['events']:,} events (host ops, kernels, collectives, tasks), step {runs[0]['step']}, "
          f"px {args.px}, {args.repeat} runs")
    print(f"first paint: median {med('first_paint'):.3f} s (open {med('open'):.3f} + first window "
          f"{med('window'):.3f}); first answer {runs[0]['first_bytes'] / 1024:.0f} KiB")
    print(f"  CPU time (all threads): {med('cpu_first_paint'):.3f} s (open {med('cpu_open'):.3f} + first window "
          f"{med('cpu_window'):.3f}); load average {os.getloadavg()[0]:.1f}")
    print(f"full lanes, built after the first paint (in the background): median {med('lanes'):.3f} s, "
          f"CPU {med('cpu_lanes'):.3f} s")
    print(f"zoom/pan: median {statistics.median(zoom) * 1000:.1f} ms (CPU {statistics.median(czoom) * 1000:.1f} ms), "
          f"worst {max(zoom) * 1000:.1f} ms (CPU {max(czoom) * 1000:.1f} ms) over "
          f"{len(zoom)} windows; items per answer (both sides) max {max(max(r['items']) for r in runs)} "
          f"(budget {2 * 4 * args.px})")
    whole = [r["zoom"][-1] for r in runs]
    cwhole = [r["cpu_zoom"][-1] for r in runs]
    others = [t for r in runs for t in r["cpu_zoom"][:-1]]
    print(f"  the whole capture (the last window): median {statistics.median(whole) * 1000:.1f} ms "
          f"(CPU {statistics.median(cwhole) * 1000:.1f} ms); the others' worst CPU {max(others) * 1000:.1f} ms")
    if os.environ.get("TB_BENCH_VERBOSE"):
        for k in range(len(runs[0]["cpu_zoom"])):
            print(f"  window {k}: CPU " + " ".join(f"{r['cpu_zoom'][k] * 1000:.1f}" for r in runs) + " ms")
    print(f"range selection (one step): median {med('range') * 1000:.1f} ms")
    print("first paint runs: " + " ".join(f"{r['first_paint']:.3f}" for r in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
