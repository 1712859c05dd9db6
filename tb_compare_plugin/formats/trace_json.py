"""Kineto / Chrome trace JSON (``*.pt.trace.json[.gz]``, or any ``.json[.gz]`` holding a
``traceEvents`` array): PyTorch's profiler on GPU (and CPU-only captures).

Recognised by name (``.pt.trace.json[.gz]``) or by a sniff of its first 64 KB; parsed by
``loaders.kineto_json``."""
from __future__ import annotations

import gzip
import os

from ..discovery.probe import memo, rank_from_name, read_head
from ..discovery.spec import WorkerSpec, file_stat
from .base import FormatDescriptor

TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")


def trace_worker_name(filename: str) -> str:
    for suf in TRACE_SUFFIXES + (".json.gz", ".json"):
        if filename.endswith(suf):
            return filename[: -len(suf)]
    return filename


def sniff_trace_json(path: str) -> bool:
    """Does a generic .json/.json.gz look like a Chrome/Kineto trace (object with traceEvents)?"""
    try:
        head = read_head(path, 64 * 1024).lstrip()
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    return head.startswith(b"{") and b'"traceEvents"' in head


def classify_trace_file(run: str, path: str) -> WorkerSpec:
    try:
        key = ("trace", run, file_stat(path))
    except OSError:
        return _classify_trace_file(run, path)
    return memo(key, lambda: _classify_trace_file(run, path))


def _classify_trace_file(run: str, path: str) -> WorkerSpec:
    name = os.path.basename(path)
    rank, device, error, has = None, "GPU", None, ()
    try:
        files = (file_stat(path),)
    except OSError as e:
        return WorkerSpec(run, trace_worker_name(name), "trace-json", "GPU", "PyTorch", path,
                          (), None, (), (), f"{path}: cannot read ({e.strerror})")
    try:
        info = TraceJson().peek(path)
        rank = info.get("rank")
        device = info.get("device_hint") or "GPU"
        error = info.get("error")
    except ImportError:
        pass
    except Exception as e:  # a peek must never break discovery
        error = f"{path}: {e}"
    if files[0][1] == 0:
        error = f"{path}: the file is empty"
    elif error and not error.startswith(path):  # the peek gives the problem only: name the file
        error = f"{path}: {error}"
    if rank is None:
        rank = rank_from_name(name)
    return WorkerSpec(run, trace_worker_name(name), "trace-json", device, "PyTorch", path,
                      files, rank, (), has, error)


class TraceJson(FormatDescriptor):
    id = "trace-json"
    device = "GPU"
    capabilities = frozenset({"kernels", "steps", "memory", "modules", "communication", "links",
                              "call_stacks"})
    facts = {"task_types_from_db": False, "us_text": "trim", "unreleased_text": "None"}
    modules = ("tb_compare_plugin.loaders.kineto_json",)

    def recognise(self, path: str, run: str | None = None):
        n = os.path.basename(path)
        if not n.endswith((".json", ".json.gz")) or n == "trace_view.json" or not os.path.isfile(path):
            return None
        if n.endswith(TRACE_SUFFIXES) or sniff_trace_json(path):
            return classify_trace_file(_run_of(path) if run is None else run, path)
        return None

    def fallback(self, path: str):
        """A .json the user named that no format recognised is meant as a trace: its spec says
        what is wrong with it (empty, not a trace, unreadable)."""
        n = os.path.basename(path)
        if not n.endswith((".json", ".json.gz")) or n == "trace_view.json" or not os.path.isfile(path):
            return None
        return classify_trace_file(_run_of(path), path)

    def peek(self, path: str) -> dict:
        from ..loaders import kineto_json     # cheap header peek (owned by the loader)
        return kineto_json.peek(path)

    def parse(self, root, progress=None, options=None):
        from ..loaders import kineto_json
        return kineto_json.load(root, progress=progress, **_accepted(kineto_json.load, options))


def _run_of(path: str) -> str:
    return os.path.basename(os.path.dirname(path)) or "."


def _accepted(fn, options) -> dict:
    """The load options ``fn`` takes (by keyword); the others are not this loader's business."""
    if not options:
        return {}
    import inspect
    params = inspect.signature(fn).parameters
    return {k: v for k, v in dict(options).items() if k in params and v is not None}


DESCRIPTOR = TraceJson()
