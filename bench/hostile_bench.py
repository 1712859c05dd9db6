"""Hostile sizes: whitespace runs and a gzip bomb, against real events of the same size.

    python -m bench.hostile_bench                  # 256 MB inputs, the 4 GiB bomb, one run each
    python -m bench.hostile_bench --mb 64 --bomb-gib 1

Inputs (gzip, generated once into ``$TB_COMPARE_BENCH_DIR/hostile`` or /tmp/tb_compare_bench/hostile):

* ``events``      the sample GPU trace's events repeated to ~MB expanded bytes (the yardstick);
* ``ws_only``     a ``traceEvents`` array of MB bytes of whitespace and nothing else;
* ``ws_between``  the sample's events with MB bytes of whitespace between two of them;
* ``bomb``        a few MB of gzip expanding to GiB of whitespace: loaded with the default limit
                  (8 GiB: read through) and with ``TB_COMPARE_MAX_EXPANDED_MB=1024`` (refused).

Each load runs in a fresh interpreter (``bench/measure_child.py`` style: wall time and peak RSS
are its own).  Prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "baseline_gpu" / "worker0.pt.trace.json"
MB = 1 << 20

CHILD = r"""
import resource, sys, time
from tb_compare_plugin.loaders import LoadError, kineto_json
t = time.perf_counter()
try:
    p = kineto_json.load(sys.argv[1])
    out = f"{sum(len(t) for t in p.tables.values()):,} rows"
except LoadError as e:
    out = "LoadError: " + e.problem[:60]
print(f"{time.perf_counter() - t:.2f}\t{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}\t{out}")
"""


def _write_gz(path: Path, parts) -> None:
    """parts: bytes, or (byte, count) for a run of ``count`` copies of one byte."""
    tmp = path.with_suffix(".tmp")
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(tmp, "wb") as f:
        for p in parts:
            if isinstance(p, bytes):
                f.write(z.compress(p))
                continue
            block = p[0] * (16 * MB)
            left = p[1]
            while left:
                piece = block if left >= len(block) else block[:left]
                f.write(z.compress(piece))
                left -= len(piece)
        f.write(z.flush())
    os.replace(tmp, path)


def generate(out: Path, mb: int, bomb_gib: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    evs = json.loads(SAMPLE.read_text())["traceEvents"]
    half = len(evs) // 2
    a, b = json.dumps(evs[:half])[1:-1].encode(), json.dumps(evs[half:])[1:-1].encode()
    body = a + b"," + b
    copies = max(1, (mb * MB) // (len(body) + 1))
    files = {
        "events": (out / f"events_{mb}mb.json.gz",
                   [b'{"traceEvents": [', body] + [b"," + body] * (copies - 1) + [b"]}"]),
        "ws_only": (out / f"ws_only_{mb}mb.json.gz", [b'{"traceEvents": [', (b" ", mb * MB), b"]}"]),
        "ws_between": (out / f"ws_between_{mb}mb.json.gz",
                       [b'{"traceEvents": [', a, b",", (b" ", mb * MB), b, b"]}"]),
        "bomb": (out / f"bomb_{bomb_gib}gib.json.gz", [b'{"traceEvents": [', (b" ", bomb_gib << 30), b"]}"]),
    }
    paths = {}
    for name, (path, parts) in files.items():
        if not path.exists():
            print(f"[bench] generating {path.name}", file=sys.stderr, flush=True)
            _write_gz(path, parts)
        paths[name] = path
    return paths


def measure(path: Path, env_extra: dict | None = None) -> tuple[str, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    r = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env,
                       timeout=900)
    if r.returncode:
        return "-", "-", (r.stderr.strip().splitlines() or ["failed"])[-1]
    return tuple(r.stdout.strip().split("\t", 2))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=256, help="expanded size of the events / whitespace inputs")
    ap.add_argument("--bomb-gib", type=int, default=4, help="expanded size of the gzip bomb")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("TB_COMPARE_BENCH_DIR", "/tmp/tb_compare_bench"))
                    / "hostile")
    args = ap.parse_args(argv)
    paths = generate(args.out, args.mb, args.bomb_gib)
    rows = [("events", paths["events"], None), ("ws_only", paths["ws_only"], None),
            ("ws_between", paths["ws_between"], None), ("bomb, default limit", paths["bomb"], None),
            ("bomb, limit 1024 MB", paths["bomb"], {"TB_COMPARE_MAX_EXPANDED_MB": "1024"})]
    print(f"| input | gzip bytes | load s | peak RSS MB | result |\n|---|---:|---:|---:|---|")
    for label, path, env in rows:
        secs, rss, out = measure(path, env)
        print(f"| {label} ({path.name}) | {path.stat().st_size:,} | {secs} | {rss} | {out} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
