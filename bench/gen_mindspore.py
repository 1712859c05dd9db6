"""Generate (once) a large MindSpore 2.x text export (``*_ascend_ms``, format ``mindspore-text``)
for the parse benchmark, from the samples' target run (``samples/mindspore/target``, made by
``samples/gen/mindspore.py`` in MindSpore's layout): the run repeated by :class:`bench.gen_ascend.
AscendSource`, the same replicator ``bench.gen_traces --sizes npu500mb`` uses for the Ascend PyTorch
text pair (trace_view.json events and CSV rows repeated with exact time shifts, steps renumbered,
statistics scaled), until the folder holds about ``--mb`` MB.  Deterministic.

    python -m bench.gen_mindspore [--mb 500] [--out DIR]   (default DIR: $TB_COMPARE_BENCH_DIR or
                                                           /tmp/tb_compare_bench, into mindspore_500mb/)
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from .gen_ascend import AscendSource
from .gen_traces import default_out

ROOT = Path(__file__).resolve().parent.parent
SRC = next((ROOT / "samples" / "mindspore" / "target").glob("*_ascend_ms"))


def generate(mb: int, out: Path) -> Path:
    """The ``*_ascend_ms`` folder of ``out/mindspore_<mb>mb`` (written unless its manifest exists)."""
    folder = out / f"mindspore_{mb}mb"
    dst = folder / SRC.name
    if (folder / "manifest.json").is_file() and dst.is_dir():
        return dst
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    src = AscendSource(SRC)
    copies = src.copies_for(mb * 1_000_000)
    size = src.write(dst, copies)
    man = {"name": folder.name, "source": str(SRC.relative_to(ROOT)), "fmt": "mindspore-text",
           "path": SRC.name, "copies": copies, "bytes": size, "shift_ns": src.shifts.shift_ns,
           "step_stride": src.shifts.step_stride, "seconds": round(time.perf_counter() - t0, 1)}
    (folder / "manifest.json").write_text(json.dumps(man, indent=2))
    print(f"[gen] {dst}: {copies} copies, {size / 1e6:.0f} MB in {man['seconds']} s", file=sys.stderr)
    return dst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gen_mindspore", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    print(generate(a.mb, a.out or default_out()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
