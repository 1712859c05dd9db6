"""Generate (once) the large benchmark inputs from the real corpus, into a cache outside the repo.

    python -m bench.gen_traces [--sizes 200mb,500mb,1gb,npu500mb] [--out DIR] [--force]

Sizes: ``<N>mb`` / ``<N>gb`` is a GPU Kineto pair (baseline from the HTA ``control``
trace, target from ``test``); ``npu<N>mb`` an Ascend ``*_ascend_pt`` pair (baseline from
AlexNet level1 rank0, target from rank1).  Each size lands in ``<out>/<kind>_<size>/``
with a ``manifest.json`` written last; a size whose manifest matches this generator's
version is not regenerated.  Output is deterministic (same corpus -> same bytes).
The default ``<out>`` is ``$TB_COMPARE_BENCH_DIR`` or ``/tmp/tb_compare_bench``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

GEN_VERSION = 1
ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TB_COMPARE_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
DEFAULT_SIZES = "200mb,500mb,1gb,npu500mb"

GPU_SOURCES = {"baseline": "gpu/hta_trace_diff/control/control.pt.trace.json.gz",
               "target": "gpu/hta_trace_diff/test/test.pt.trace.json.gz"}
NPU_SOURCES = {"baseline": "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt",
               "target": "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt"}


def default_out() -> Path:
    return Path(os.environ.get("TB_COMPARE_BENCH_DIR", "/tmp/tb_compare_bench"))


def parse_size(spec: str) -> tuple:
    """'200mb' -> ('gpu', 200_000_000, 'gpu_200mb'); 'npu500mb' -> ('npu', 500_000_000, 'npu_500mb')."""
    m = re.fullmatch(r"(npu|gpu)?(\d+)(mb|gb)", spec.strip().lower())
    if not m:
        raise ValueError(f"bad size {spec!r}: use e.g. 200mb, 1gb, npu500mb")
    kind = m.group(1) or "gpu"
    n = int(m.group(2)) * (10 ** 9 if m.group(3) == "gb" else 10 ** 6)
    return kind, n, f"{kind}_{m.group(2)}{m.group(3)}"


def _log(msg: str) -> None:
    print(f"[gen] {msg}", file=sys.stderr, flush=True)


def _manifest_ok(folder: Path) -> dict | None:
    try:
        man = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    if man.get("generator_version") != GEN_VERSION:
        return None
    if not all((folder / side["path"]).exists() for side in man["sides"].values()):
        return None
    return man


def _gen_gpu(folder: Path, target: int) -> dict:
    from .gen_kineto import KinetoSource
    sides = {}
    for side, rel in GPU_SOURCES.items():
        src_path = CORPUS / rel
        t0 = time.perf_counter()
        src = KinetoSource(src_path)
        copies = src.copies_for(target)
        name = src_path.name[:-3] if src_path.name.endswith(".gz") else src_path.name
        out = folder / side / name
        out.parent.mkdir(parents=True, exist_ok=True)
        size = src.write(out, copies)
        sides[side] = {"source": rel, "path": f"{side}/{name}", "fmt": "trace-json", "copies": copies,
                       "bytes": size, "events_in_source": src.n_events,
                       "events": src.n_events + (copies - 1) * src.n_repeated,
                       "steps": src.n_steps * copies, "shift_ns": src.shifts.shift_ns,
                       "id_stride": src.shifts.id_stride, "seconds": round(time.perf_counter() - t0, 1)}
        _log(f"{out}: {copies} copies, {size / 1e6:.0f} MB in {sides[side]['seconds']} s")
        del src
    return sides


def _gen_npu(folder: Path, target: int) -> dict:
    from .gen_ascend import AscendSource
    sides = {}
    for side, rel in NPU_SOURCES.items():
        src_dir = CORPUS / rel
        t0 = time.perf_counter()
        src = AscendSource(src_dir)
        copies = src.copies_for(target)
        out = folder / side / src_dir.name
        out.parent.mkdir(parents=True, exist_ok=True)
        size = src.write(out, copies)
        sides[side] = {"source": rel, "path": f"{side}/{src_dir.name}", "fmt": "ascend-text",
                       "copies": copies, "bytes": size,
                       "events": src.trace.n_events + (copies - 1) * src.trace.n_repeated,
                       "shift_ns": src.shifts.shift_ns,
                       "id_stride": src.shifts.id_stride, "step_stride": src.shifts.step_stride,
                       "seconds": round(time.perf_counter() - t0, 1)}
        _log(f"{out}: {copies} copies, {size / 1e6:.0f} MB in {sides[side]['seconds']} s")
        del src
    return sides


def ensure(spec: str, out: Path | None = None, force: bool = False) -> dict:
    """Make sure the inputs for one size exist; returns the manifest (with ``folder``)."""
    kind, target, name = parse_size(spec)
    folder = (out or default_out()) / name
    man = None if force else _manifest_ok(folder)
    if man is None:
        if not CORPUS.is_dir():
            raise FileNotFoundError(f"real corpus not found at {CORPUS}: cannot generate {name}")
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        need, free = 2.2 * target, shutil.disk_usage(folder).free
        if free < need:
            raise OSError(f"not enough disk for {name}: {free / 1e9:.1f} GB free, ~{need / 1e9:.1f} GB needed")
        _log(f"generating {name} in {folder}")
        t0 = time.perf_counter()
        sides = _gen_gpu(folder, target) if kind == "gpu" else _gen_npu(folder, target)
        man = {"generator_version": GEN_VERSION, "name": name, "kind": kind, "target_bytes": target,
               "sides": sides, "seconds": round(time.perf_counter() - t0, 1),
               "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
        (folder / "manifest.json").write_text(json.dumps(man, indent=2))
        _log(f"{name} done in {man['seconds']} s")
    man["folder"] = str(folder)
    return man


def verify(man: dict) -> list:
    """Parse every generated trace (msgspec, events kept raw) and compare its event count with
    the manifest's; returns problems (empty when all is well).  Needs ~1.5x the file in RAM."""
    import msgspec

    kineto = msgspec.defstruct("Kineto", [("traceEvents", list[msgspec.Raw])])

    problems = []
    for side, info in man["sides"].items():
        path = Path(man["folder"]) / info["path"]
        if path.is_dir():
            path = path / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
        try:
            data = path.read_bytes()
            n = len(msgspec.json.decode(data, type=kineto).traceEvents if man["kind"] == "gpu"
                     else msgspec.json.decode(data, type=list[msgspec.Raw]))
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as e:
            problems.append(f"{path}: {e}")
            continue
        finally:
            data = None
        if "events" in info and n != info["events"]:
            problems.append(f"{path}: {n} events, manifest says {info['events']}")
        _log(f"verified {path}: {n} events")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gen_traces", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help=f"comma list (default {DEFAULT_SIZES})")
    ap.add_argument("--out", type=Path, default=None, help="cache folder (default $TB_COMPARE_BENCH_DIR "
                    "or /tmp/tb_compare_bench)")
    ap.add_argument("--force", action="store_true", help="regenerate even when present")
    ap.add_argument("--verify", action="store_true", help="parse the outputs and check event counts")
    args = ap.parse_args(argv)
    problems = []
    for spec in [s for s in args.sizes.split(",") if s.strip()]:
        man = ensure(spec, args.out, args.force)
        if args.verify:
            problems += verify(man)
        for side, info in man["sides"].items():
            print(f"{man['name']:>12} {side:<8} {info['bytes'] / 1e6:8.1f} MB  x{info['copies']:<4} "
                  f"{Path(man['folder']) / info['path']}")
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
