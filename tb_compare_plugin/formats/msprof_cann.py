"""The ``msprof-cann`` format: an msprof CANN text export, ``PROF_XXX/mindstudio_profiler_output/``
(TensorFlow on Ascend through the TF adapter, offline/ACL inference, any job profiled by the msprof
command line).  One worker per ``PROF_XXX`` folder, named ``msprof_device_<id>``; a path named on
the command line may also be the ``mindstudio_profiler_output`` folder.  Parsed by
``loaders/msprof_cann``.

Framework, from what the files say (cheap header reads):

* ``TensorFlow``: step_trace has an FP Start value (forward/backward markers exist only for a
  training graph run through GE, which with msprof is the TensorFlow adapter; MindSpore writes its
  own folders, PyTorch its ``*_ascend_pt``);
* ``ACL``: no FP Start (offline inference writes ``N/A``) and api_statistic lists an ``acl*`` API
  (AscendCL: ``aclmdlExecute``, ``aclopExecute``...);
* ``unknown`` otherwise.

A ``PROF_XXX`` folder holding only raw ``device_*/data`` (and no ``mindstudio_profiler_output``)
needs the msprof binary to export it: it is a worker with an error saying so.  One whose
``device_N/timeline`` holds msprof timeline slices is MindSpore's (``mindspore-msprof``).
"""
from __future__ import annotations

import os

from ..discovery.probe import problem_of, read_bytes, special_error, special_files
from ..discovery.spec import WorkerSpec, file_stat
from .base import FormatDescriptor


def _m():
    from ..loaders import msprof_cann
    return msprof_cann


def _head_rows(path: str, limit: int = 64 * 1024) -> list:
    try:
        lines = read_bytes(path, limit).decode("utf-8-sig", "replace").splitlines()
    except OSError:
        return []
    if len(lines) < 2:
        return []
    head = [c.strip() for c in lines[0].split(",")]
    return [dict(zip(head, (c.strip() for c in ln.split(",")))) for ln in lines[1:-1] or lines[1:2]]


def framework_of(files: dict) -> str:
    for p in files.get(("step_trace", "csv"), [])[:1]:
        if any(r.get("FP Start(us)", "N/A") not in ("", "N/A") for r in _head_rows(p)):
            return "TensorFlow"
    for p in files.get(("api_statistic", "csv"), [])[:1]:
        if any(r.get("API Name", "").lower().startswith("acl") for r in _head_rows(p)):
            return "ACL"
    return "unknown"


def _raw_only(prof_dir: str) -> bool:
    try:
        names = os.listdir(prof_dir)
    except OSError:
        return False
    devs = [os.path.join(prof_dir, n) for n in names if _m().DEVICE_RE.match(n)]
    return bool(devs) and not any(os.path.isdir(os.path.join(d, "timeline")) for d in devs) \
        and any(os.path.isdir(os.path.join(d, "data")) for d in devs)


class MsprofCannFormat(FormatDescriptor):
    id = "msprof-cann"
    device = "NPU"
    framework = "unknown"
    capabilities = frozenset({"kernels", "steps", "communication", "pmu"})
    facts = {"task_types_from_db": False, "us_text": "trim", "unreleased_text": "None"}
    modules = ("tb_compare_plugin.loaders.msprof_cann",)
    hint = "an msprof PROF_* folder with mindstudio_profiler_output/ (msprof --export=on)"

    def recognise(self, path, run=None):
        path = os.path.abspath(path)
        base = os.path.basename(path)
        if not os.path.isdir(path):
            return None
        if base == _m().OUTPUT_DIR:
            if run is not None:
                return None
            prof = os.path.dirname(path)
        elif base.startswith("PROF_"):
            prof = path
        else:
            return None
        out = os.path.join(prof, _m().OUTPUT_DIR)
        if run is None:
            parent = os.path.basename(os.path.dirname(prof))
            run = parent or os.path.basename(prof)
        if not os.path.isdir(out):
            if _raw_only(prof):
                return WorkerSpec(run, os.path.basename(prof), self.id, "NPU", "unknown", prof, (), None, (), (),
                                  f"{prof}: raw msprof data only (device_*/data, no {_m().OUTPUT_DIR}/); "
                                  f"export it first with the msprof binary: msprof --export=on --output={prof}")
            return None
        bad = special_error(special_files(out))
        if bad:                             # a FIFO/socket/device in the export: never opened
            return WorkerSpec(run, os.path.basename(prof), self.id, "NPU", "unknown", out, (), None, (), (), bad)
        try:
            return self._export(run, prof, out)
        except Exception as e:  # noqa: BLE001 - a file that cannot be read is this worker's error
            return WorkerSpec(run, os.path.basename(prof), self.id, "NPU", "unknown", out, (), None, (), (),
                              f"{getattr(e, 'path', None) or getattr(e, 'filename', None) or out}: "
                              f"{problem_of(e)}")

    def _export(self, run: str, prof: str, out: str):
        files = _m().output_files(out)
        ops = files.get(("op_summary", "csv"), [])
        if not ops:
            if run is None or any(k != "_dropped" and v for k, v in files.items()):
                return WorkerSpec(run, os.path.basename(prof), self.id, "NPU", "unknown", out, (), None, (), (),
                                  f"{out}: no op_summary_*.csv (the export holds no device task summary)")
            return None
        dev = _m().device_from_folders(prof)
        if dev is None:
            rows = _head_rows(ops[0], 8192)
            try:
                dev = int(rows[0].get("Device_id", "")) if rows else None
            except ValueError:
                dev = None
        stats = tuple(file_stat(p) for p in sorted(p for k, v in files.items() if k != "_dropped" for p in v))
        has = (("communication", True), ("kernels", True), ("memory", False), ("modules", False))
        name = f"msprof_device_{dev}" if dev is not None else os.path.basename(prof)
        return WorkerSpec(run, name, self.id, "NPU", framework_of(files), out, stats, dev, (), has, None)

    def parse(self, root, progress=None, options=None):
        fw = framework_of(_m().output_files(root)) if os.path.isdir(root) else "unknown"
        return _m().load(root, progress, framework=fw)


DESCRIPTOR = MsprofCannFormat()
