"""The ``mindspore-legacy`` format: a MindSpore 1.x/2.x Ascend ``profiler/`` folder of MindInsight
intermediate files (``step_trace_raw_N_detail_time.csv``, ``[ascend_]timeline_display_N.json``,
``framework_raw_N.csv``, ...).  One worker per device id ``N``; its root is the device's step
trace (or its timeline when there is no step trace).  Parsed by ``loaders/mindspore_legacy``."""
from __future__ import annotations

import os

from ..discovery.probe import problem_of, special_error, special_files
from ..discovery.spec import WorkerSpec, file_stat
from .base import FormatDescriptor


def _ms():
    from ..loaders import mindspore_legacy
    return mindspore_legacy


def _spec(run: str, folder: str, dev: int, fmt: str) -> WorkerSpec | None:
    files = _ms().device_files(folder, dev)
    root = files.get("step_trace") or files.get("timeline")
    if root is None:
        return None
    bad = special_error(special_files(folder, lambda n: f"_{dev}" in n))
    if bad:                             # a FIFO/socket/device named like this device's files
        return WorkerSpec(run, f"device_{dev}", fmt, "NPU", "MindSpore", root, (), dev, (), (), bad)
    steps, error = (), None
    try:
        stats = tuple(file_stat(p) for p in sorted(files.values()))
    except OSError as e:                # a file vanished since it was listed
        return WorkerSpec(run, f"device_{dev}", fmt, "NPU", "MindSpore", root, (), dev, (), (),
                          f"{e.filename or root}: {problem_of(e)}")
    if "step_trace" in files:
        try:
            steps = tuple(s[0] for s in _ms().read_step_trace(files["step_trace"], []))
        except Exception as e:  # noqa: BLE001  (discovery reports, never raises)
            error = str(e)
    has = (("communication", False), ("kernels", "timeline" in files), ("memory", False), ("modules", False))
    return WorkerSpec(run, f"device_{dev}", fmt, "NPU", "MindSpore", root, stats, dev, steps, has, error)


class MindSporeLegacyFormat(FormatDescriptor):
    id = "mindspore-legacy"
    device = "NPU"
    framework = "MindSpore"
    capabilities = frozenset({"kernels", "steps"})
    facts = {"task_types_from_db": False, "us_text": "trim", "unreleased_text": "None"}
    modules = ("tb_compare_plugin.loaders.mindspore_legacy",)
    hint = "a MindSpore profiler/ folder (step_trace_raw_N_detail_time.csv, timeline_display_N.json)"

    def recognise(self, path, run=None):
        name = os.path.basename(path)
        ms = _ms()
        if run is not None:                 # logdir walk: the device's entry file is the worker
            m = ms.STEP_RE.match(name) or ms.TIMELINE_RE.match(name)
            if not m or not os.path.isfile(path):
                return None
            folder, dev = os.path.dirname(path), int(m.group(1))
            files = ms.device_files(folder, dev)
            if path != (files.get("step_trace") or files.get("timeline")):
                return None                 # the step trace speaks for the device
            return _spec(run, folder, dev, self.id)
        if os.path.isfile(path):
            m = ms.STEP_RE.match(name) or ms.TIMELINE_RE.match(name)
            if not m:
                return None
            folder = os.path.dirname(os.path.abspath(path))
            return _spec(os.path.basename(folder) or ".", folder, int(m.group(1)), self.id)
        if not os.path.isdir(path):
            return None
        for folder in (path, os.path.join(path, "profiler")):
            devs = ms.devices(folder)
            if len(devs) == 1:
                return _spec(os.path.basename(os.path.abspath(path)) or ".", folder, devs[0], self.id)
        return None

    def peek(self, path):
        folder, dev = _ms().split_root(path)
        files = _ms().device_files(folder, dev)
        steps = [s[0] for s in _ms().read_step_trace(files["step_trace"], [])] if "step_trace" in files else []
        return {"rank": dev, "steps": steps, "has": {"kernels": "timeline" in files}, "error": None}

    def parse(self, root, progress=None, options=None):
        return _ms().load(root, progress, framework=self.framework)


DESCRIPTOR = MindSporeLegacyFormat()
