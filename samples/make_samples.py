#!/usr/bin/env python3
"""Generator of samples/: the project's own synthetic demo logdir and the engines' ground truth.

One tiny transformer ("TinyLM": embedding, two blocks, final LayerNorm, lm head, cross-entropy;
DDP on 2 ranks, rank 0 written) traced for two training steps on three "machines":

* ``baseline_gpu/worker0.pt.trace.json``       PyTorch Profiler (Kineto) JSON, NVIDIA A100;
* ``target_npu/rank0_ascend_pt/``              Ascend PyTorch Profiler text export, Level1;
* ``target_npu_v2/rank0_ascend_pt/``           the same NPU job on a newer software stack.

Beside it, ``msprof_tf/baseline/`` and ``msprof_tf/target/``: an msprof CANN export of a
TensorFlow-like job (``gen/msprof_cann.py``); ``graph_mode/`` (``gen/graph_mode.py``); ``mindspore/baseline/`` and
``mindspore/target/``: a MindSpore 2.x text export pair (``gen/mindspore.py``, figures in ``mindspore_expected.json``).

Every byte is produced here, deterministically (no clock, no randomness):
``python samples/make_samples.py [--out DIR]`` rewrites everything under samples/ except this
script, gen/ and README.md.  The planted regressions (README.md) are exact; the expected figures are
computed from the generator's own timeline and written to ``expected.json``.

The generator itself lives in ``gen/`` beside this script, one module per concern and one writer
per format (see ``gen/__init__.py``); this script only runs it.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True          # samples/ is a logdir: leave no __pycache__ in it
sys.path.insert(0, str(HERE))

from gen.ascend_text import NpuExport  # noqa: E402 - after the path set-up above
from gen.expected import METRICS, build, expected  # noqa: E402
from gen.graph_mode import write_graph_pair  # noqa: E402
from gen.kineto import write_gpu  # noqa: E402
from gen.mindspore import write_mindspore_pair  # noqa: E402
from gen.msprof_cann import write_all as write_msprof  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: the samples/ folder)")
    args = ap.parse_args(argv)
    out = args.out
    runs = build()
    write_gpu(runs["baseline_gpu"], out / "baseline_gpu" / "worker0.pt.trace.json")
    for name in ("target_npu", "target_npu_v2"):
        NpuExport(runs[name]).write(out / name / "rank0_ascend_pt")
    write_msprof(out)
    exp = expected(runs)
    (out / "expected.json").write_text(json.dumps(exp, indent=1) + "\n", encoding="utf-8", newline="")
    graph = write_graph_pair(out)       # the graph-mode pair (gen/graph_mode.py) and its own figures
    (out / "graph_expected.json").write_text(json.dumps(graph, indent=1) + "\n", encoding="utf-8", newline="")
    ms = write_mindspore_pair(out)      # the MindSpore pair (gen/mindspore.py) and its own figures
    (out / "mindspore_expected.json").write_text(json.dumps(ms, indent=1) + "\n", encoding="utf-8", newline="")
    print(f"{'figure (ms, capture)':28s}" + "".join(f"{k:>16s}" for k in runs))
    for m in METRICS:
        print(f"{m:28s}" + "".join(f"{runs[k].figs['total'][m + '_ms']:16.3f}" for k in runs))
    for m in ("peak_allocated_mb", "peak_reserved_mb"):
        print(f"{m:28s}" + "".join(f"{runs[k].memfig[m]:16.3f}" for k in runs))
    return exp


if __name__ == "__main__":
    main()
