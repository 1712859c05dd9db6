"""What reopening a cached pair costs: the cache open alone, and a whole cached ``tb-compare`` run.

    python -m bench.cache_verify                       # the gpu_1gb pair, 5 runs of each
    python -m bench.cache_verify --pair gpu_200mb --repeat 7 --phases open
    python -m bench.cache_verify --python /path/to/other/venv/bin/python   # interleaved with another install

The pair is ``$TB_COMPARE_BENCH_DIR/<pair>/{baseline,target}`` (default /tmp/tb_compare_bench;
``python -m bench.gen_traces --sizes 1gb`` makes gpu_1gb).  Its parsed profiles live in a cache
folder of their own (``--cache-dir``, default ``<bench dir>/cache_verify_cache``); a first
``tb-compare`` run fills it when it does not hold both sides (the cache is keyed by the code, so
that happens once after every change of the loaders or the cache).

Phases, each run in a fresh interpreter, page cache warm (the entries were just read):

* ``open``: ``service.loading.load_pair`` of both sides from the cache, as the CLI does it (two
  threads, no parser process): mapping every column and checking the entries' checksums.  The
  time is measured inside the process, imports excluded.
* ``cli``:  ``tb-compare BASELINE TARGET --quiet --no-progress``, whole process (wall time).
* ``checksum``: the candidates for the entries' checksum over the pair's cached column files
  (this interpreter's entries), in this process, one thread: GB/s of each.

Prints the median and every run of each phase.  ``--python`` adds interpreters (other installs
of the package, e.g. a venv of an older commit): their runs are interleaved with this one's, run
by run, and each fills the cache with its own entries first (the key covers the code).  The
children run outside the source tree, so each interpreter imports the package it has installed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .proc import bench_dir, cache_env


OPEN = r"""
import sys, time
from tb_compare_plugin.cli import resolve
from tb_compare_plugin.cache import ProfileCache
from tb_compare_plugin.service.loading import load_pair
base, target = resolve(sys.argv[1], None, "baseline"), resolve(sys.argv[2], None, "target")
cache = ProfileCache()
if not (cache.has(base.fingerprint) and cache.has(target.fingerprint)):
    print("MISS"); sys.exit(0)
t = time.perf_counter()
pb, pt = load_pair(base, target, backends=(cache, None))
dt = time.perf_counter() - t
rows = sum(len(df) for p in (pb, pt) for df in p.tables.values())
print(f"{dt:.4f}\t{rows}")
"""


CHECKSUM = r"""
import glob, hashlib, json, mmap, os, sys, time, zlib
from tb_compare_plugin.cli import resolve
from tb_compare_plugin.cache import ProfileCache, checksum_bytes
cache = ProfileCache()
files = []
for p, role in ((sys.argv[1], "baseline"), (sys.argv[2], "target")):
    files += glob.glob(os.path.join(cache.entry_path(resolve(p, None, role).fingerprint), "*.npy"))
total = sum(os.path.getsize(f) for f in files)
ways = {"wsum64 (ours)": checksum_bytes, "zlib.crc32": zlib.crc32, "zlib.adler32": zlib.adler32,
        "sha1": lambda m: hashlib.sha1(m).digest(), "blake2b": lambda m: hashlib.blake2b(m).digest()}
for name, fn in ways.items():
    t = time.perf_counter()
    for f in files:
        with open(f, "rb") as fh:
            m = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            fn(m)
            m.close()
    dt = time.perf_counter() - t
    print(f"{name}\t{dt:.3f}\t{total / dt / 2 ** 30:.2f}")
"""

OUTSIDE = tempfile.gettempdir()      # not the source tree: each interpreter imports its own install


def _open_once(py: str, base: Path, target: Path, env: dict) -> str:
    out = subprocess.run([py, "-c", OPEN, str(base), str(target)], env=env, cwd=OUTSIDE,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _cli_once(py: str, base: Path, target: Path, env: dict) -> float:
    t = time.perf_counter()
    subprocess.run([py, "-m", "tb_compare_plugin.cli", str(base), str(target), "--quiet",
                    "--no-progress"], env=env, cwd=OUTSIDE, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="gpu_1gb")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--phases", default="open,cli,checksum")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--python", action="append", default=[],
                    help="another interpreter to measure, interleaved (repeatable)")
    args = ap.parse_args(argv)
    pair = bench_dir() / args.pair
    base, target = pair / "baseline", pair / "target"
    if not base.is_dir() or not target.is_dir():
        print(f"{pair} is missing: python -m bench.gen_traces --sizes {args.pair.split('_', 1)[-1]}",
              file=sys.stderr)
        return 2
    cache_dir = Path(args.cache_dir) if args.cache_dir else bench_dir() / "cache_verify_cache"
    env = cache_env(cache_dir)
    pythons = [sys.executable] + args.python
    for py in pythons:
        if _open_once(py, base, target, env) == "MISS":
            print(f"{py}: filling the cache {cache_dir} (one uncached run) ...", file=sys.stderr)
            _cli_once(py, base, target, env)
            if _open_once(py, base, target, env) == "MISS":
                print("the cache still misses a side (is the cache writable and big enough?)", file=sys.stderr)
                return 1
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    for phase in phases:
        if phase == "checksum":
            out = subprocess.run([sys.executable, "-c", CHECKSUM, str(base), str(target)], env=env,
                                 cwd=OUTSIDE, capture_output=True, text=True, check=True).stdout
            for line in out.strip().splitlines():
                name, secs, rate = line.split("\t")
                print(f"{args.pair} checksum {name}: {secs} s over both sides' columns, {rate} GB/s")
            continue
        if phase not in ("open", "cli"):
            raise SystemExit(f"unknown phase {phase!r} (open, cli, checksum)")
        times: dict = {py: [] for py in pythons}
        for _ in range(args.repeat):
            for py in pythons:
                if phase == "open":
                    times[py].append(float(_open_once(py, base, target, env).split("\t")[0]))
                else:
                    times[py].append(_cli_once(py, base, target, env))
        for py in pythons:
            runs = " ".join(f"{t:.3f}" for t in times[py])
            print(f"{args.pair} {phase} [{py}]: median {statistics.median(times[py]):.3f} s over "
                  f"{len(times[py])} runs ({runs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
