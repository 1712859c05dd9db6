"""One measurement, run in a fresh interpreter so its peak RSS is its own.

    python -m bench.measure_child io   PATH          # read every byte (gunzip .gz): the I/O floor
    python -m bench.measure_child load FMT PATH      # tb_compare_plugin.loaders.load(FMT, PATH)

Prints one JSON line: ``ok``, ``status`` ("ok" | "unavailable" | "error"), ``error``,
``import_s`` (loader module import), ``wall_s`` (the timed call only), ``rss_before_mb``
(after imports, before the call), ``peak_rss_mb`` (this process, VmHWM),
``data_bytes`` and, for loads, ``cpu_s`` (user + system CPU of the whole process), ``counts`` (rows per profile table) and ``warnings``.
The parent also measures the process from outside (wall incl. start-up, wait4 peak RSS).
"""
from __future__ import annotations

import gzip
import importlib
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOADER_MODULE = {"trace-json": "kineto_json", "ascend-text": "ascend_text", "mindspore-text": "ascend_text",
                 "ascend-db": "ascend_db", "mindspore-db": "ascend_db", "msprof-cann": "msprof_cann"}


def _rss_mb() -> float:
    """Peak RSS of this program in 10^6 bytes: VmHWM (getrusage would include the RSS of the
    process image exec replaced, i.e. the benchmark parent's; see bench/proc.py)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def _files(path: Path) -> list:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


def read_all(path: Path) -> int:
    """Read every byte the loader could need; .gz files are decompressed (streamed)."""
    n = 0
    for p in _files(path):
        opener = gzip.open if p.name.endswith(".gz") else open
        with opener(p, "rb") as f:
            while True:
                block = f.read(16 << 20)
                if not block:
                    break
                n += len(block)
    return n


def _io(path: Path) -> dict:
    t0 = time.perf_counter()
    n = read_all(path)
    return {"ok": True, "status": "ok", "wall_s": time.perf_counter() - t0, "data_bytes": n}


def _load(fmt: str, path: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    t0 = time.perf_counter()
    try:
        from tb_compare_plugin import loaders
        mod = LOADER_MODULE.get(fmt)
        if mod:
            importlib.import_module(f"tb_compare_plugin.loaders.{mod}")
    except ImportError as e:
        return {"ok": False, "status": "unavailable", "error": f"loader unavailable: {e}"}
    import_s = time.perf_counter() - t0
    rss_before = _rss_mb()
    t0 = time.perf_counter()
    try:
        prof = loaders.load(fmt, str(path))
    except ImportError as e:
        return {"ok": False, "status": "unavailable", "error": f"loader unavailable: {e}"}
    except Exception as e:  # noqa: BLE001 - any failure is a result to report
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return {"ok": False, "status": "error", "import_s": import_s, "wall_s": time.perf_counter() - t0,
                "error": f"{type(e).__name__}: {e} (at {Path(tb.filename).name}:{tb.lineno})"[:500]}
    wall = time.perf_counter() - t0
    tables = getattr(prof, "tables", {}) or {}
    meta = getattr(prof, "meta", None)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"ok": True, "status": "ok", "import_s": import_s, "wall_s": wall, "rss_before_mb": rss_before,
            "cpu_s": ru.ru_utime + ru.ru_stime,     # the whole process, start-up included

            "counts": {k: int(len(v)) for k, v in tables.items()},
            "warnings": list(getattr(meta, "warnings", []) or [])[:20]}


def main(argv: list) -> int:
    phase = argv[0] if argv else ""
    if phase == "io" and len(argv) == 2:
        res = _io(Path(argv[1]))
    elif phase == "load" and len(argv) == 3:
        res = _load(argv[1], Path(argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    res["peak_rss_mb"] = _rss_mb()
    res["pid"] = os.getpid()
    sys.stdout.write("\n" + json.dumps(res) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
