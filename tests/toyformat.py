"""A toy input format, added through its descriptor alone (issue 13: "adding a format is one new
module plus its tests"): ``*.toyprof.json``, a JSON object

    {"rank": 0, "steps": [[1, 0, 5000]],
     "ops": [["aten::mm", 0, 2000]], "kernels": [["gemm", 100, 1500, 0]]}

(ops: name, start_us, dur_us; kernels: name, start_us, dur_us, launching op's index or -1;
steps: id, start_us, end_us).  Registered at test time only."""
from __future__ import annotations

import json
import os

import numpy as np

from tb_compare_plugin.discovery.spec import WorkerSpec, file_stat
from tb_compare_plugin.formats import registry
from tb_compare_plugin.formats.base import FormatDescriptor
from tb_compare_plugin.loaders.errors import LoadError
from tb_compare_plugin.model import KIND_COMPUTE, Profile, SymbolTable, make_table

SUFFIX = ".toyprof.json"


class ToyFormat(FormatDescriptor):
    id = "toy"
    device = "GPU"
    capabilities = frozenset({"kernels", "steps", "links"})
    hint = "a *.toyprof.json"

    def recognise(self, path, run=None):
        name = os.path.basename(path)
        if not name.endswith(SUFFIX) or not os.path.isfile(path):
            return None
        if run is None:
            run = os.path.basename(os.path.dirname(path)) or "."
        info = self.peek(path)
        return WorkerSpec(run, name[: -len(SUFFIX)], self.id, self.device, self.framework, path,
                          (file_stat(path),), info.get("rank"), tuple(info.get("steps") or ()),
                          (), info.get("error"))

    def peek(self, path):
        try:
            with open(path, "rb") as f:
                doc = json.loads(f.read(1 << 20))
            return {"rank": doc.get("rank"), "steps": [s[0] for s in doc.get("steps", [])], "error": None}
        except (OSError, ValueError) as e:
            return {"error": f"{path}: {e}"}

    def parse(self, root, progress=None, options=None):
        try:
            with open(root, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise LoadError(root, f"not a toy profile ({e})")
        sym = SymbolTable()
        us = 1000
        ops, kernels, steps = doc.get("ops", []), doc.get("kernels", []), doc.get("steps", [])
        tables = {
            "ops": make_table("ops", len(ops), name=sym.intern_many([o[0] for o in ops]),
                              cat=sym.intern_many(["cpu_op"] * len(ops)),
                              start_ns=np.array([o[1] * us for o in ops], np.int64),
                              dur_ns=np.array([o[2] * us for o in ops], np.int64),
                              pid=np.ones(len(ops), np.int64), tid=np.ones(len(ops), np.int64),
                              depth=np.zeros(len(ops), np.int16)),
            "kernels": make_table("kernels", len(kernels), name=sym.intern_many([k[0] for k in kernels]),
                                  task_type=sym.intern_many(["kernel"] * len(kernels)),
                                  kind=np.full(len(kernels), KIND_COMPUTE, np.int8),
                                  stream=np.full(len(kernels), 7, np.int64),
                                  start_ns=np.array([k[1] * us for k in kernels], np.int64),
                                  dur_ns=np.array([k[2] * us for k in kernels], np.int64),
                                  launch_op=np.array([k[3] for k in kernels], np.int64)),
            "steps": make_table("steps", len(steps), step=np.array([s[0] for s in steps], np.int64),
                                start_ns=np.array([s[1] * us for s in steps], np.int64),
                                end_ns=np.array([s[2] * us for s in steps], np.int64)),
        }
        if progress is not None:
            progress(1.0)
        meta = registry.meta_for(self.id, device="GPU", rank=doc.get("rank"), path=os.path.abspath(root),
                                 files=[os.path.abspath(root)], compute_stream=7)
        return Profile(sym, meta, tables)


DESCRIPTOR = ToyFormat()


def write_toy(path, scale: float = 1.0, rank: int = 0) -> str:
    """A small toy profile: two steps, three ops, four kernels; ``scale`` stretches the kernels."""
    s = lambda x: int(round(x * scale))   # noqa: E731
    doc = {"rank": rank, "steps": [[1, 0, 5000], [2, 5000, 10000]],
           "ops": [["aten::mm", 100, 2000], ["aten::relu", 2500, 500], ["aten::mm", 5100, 2000]],
           "kernels": [["gemm_kernel", 300, s(1500), 0], ["relu_kernel", 2700, s(200), 1],
                       ["gemm_kernel", 5300, s(1500), 2], ["memset_like", 9000, s(100), -1]]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return str(path)
