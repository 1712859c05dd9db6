"""The ``mindspore-msprof`` format: the msprof timeline export MindSpore 2.x writes in its
``profiler/PROF_*/device_N/timeline/`` (``task_time_*``, ``step_trace_*``, ``hccl_*`` slices).  One
worker per ``device_N`` folder, named ``msprof_device_N``, in the run of its ``PROF_*`` folder
(a path named on the command line may also be the ``PROF_*`` folder).  Parsed by ``loaders/mindspore_msprof``."""
from __future__ import annotations

import os

from ..discovery.probe import special_error, special_files
from ..discovery.spec import WorkerSpec, file_stat
from .base import FormatDescriptor


def _ms():
    from ..loaders import mindspore_msprof
    return mindspore_msprof


def _device_dirs(prof_dir: str) -> list:
    try:
        names = sorted(os.listdir(prof_dir))
    except OSError:
        return []
    return [os.path.join(prof_dir, n) for n in names
            if _ms().DEVICE_RE.match(n) and os.path.isdir(os.path.join(prof_dir, n))]


def _spec(run: str, dev_dir: str, fmt: str):
    files = _ms().slices(dev_dir)
    if not files["task_time"]:
        return None
    dev = int(_ms().DEVICE_RE.match(os.path.basename(dev_dir)).group(1))
    bad = special_error(special_files(os.path.join(dev_dir, "timeline")))
    if bad:                             # a FIFO/socket/device among the slices: never opened
        return WorkerSpec(run, f"msprof_device_{dev}", fmt, "NPU", "MindSpore", dev_dir, (), dev, (), (), bad)
    stats = tuple(file_stat(p) for p in sorted(p for v in files.values() for p in v))
    has = (("communication", bool(files["hccl"])), ("kernels", True), ("memory", False), ("modules", False))
    return WorkerSpec(run, f"msprof_device_{dev}", fmt, "NPU", "MindSpore", dev_dir, stats, dev, (), has, None)


class MindSporeMsprofFormat(FormatDescriptor):
    id = "mindspore-msprof"
    device = "NPU"
    framework = "MindSpore"
    capabilities = frozenset({"kernels", "steps", "communication"})
    facts = {"task_types_from_db": False, "us_text": "trim", "unreleased_text": "None"}
    modules = ("tb_compare_plugin.loaders.mindspore_msprof",)
    hint = "a MindSpore profiler/PROF_*/device_N folder (msprof timeline slices)"

    def recognise(self, path, run=None):
        base = os.path.basename(path.rstrip(os.sep))
        if not os.path.isdir(path):
            return None
        parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
        if _ms().DEVICE_RE.match(base) and parent.startswith("PROF_"):
            # the device folder is the worker, so each PROF_* folder is a run of its own: the
            # profiler/ folder's mindspore-legacy workers carry the same device ids as ranks
            return _spec(run if run is not None else parent, os.path.abspath(path), self.id)
        if run is None and base.startswith("PROF_"):
            devs = _device_dirs(path)
            if len(devs) == 1:
                return _spec(base, devs[0], self.id)
        return None

    def parse(self, root, progress=None, options=None):
        return _ms().load(root, progress, framework=self.framework)


DESCRIPTOR = MindSporeMsprofFormat()
