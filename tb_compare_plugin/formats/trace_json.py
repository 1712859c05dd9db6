"""Kineto / Chrome trace JSON (``*.pt.trace.json[.gz]``, or any ``.json[.gz]`` holding a
``traceEvents`` array): PyTorch's profiler on GPU (and CPU-only captures).

Recognised by name (``.pt.trace.json[.gz]``) or by a sniff of its first 64 KB; parsed by
``loaders.kineto_json``."""
from __future__ import annotations

import os
import stat

from ..discovery.probe import Unreadable, memo, not_regular, problem_of, rank_from_name, read_head
from ..discovery.spec import WorkerSpec
from .base import FormatDescriptor

TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")


def trace_worker_name(filename: str) -> str:
    for suf in TRACE_SUFFIXES + (".json.gz", ".json"):
        if filename.endswith(suf):
            return filename[: -len(suf)]
    return filename


def sniff_trace_json(path: str) -> tuple:
    """(looks like a trace, problem): does a generic .json/.json.gz look like a Chrome/Kineto
    trace (an object with traceEvents)?  ``problem`` is why it could not be read (damaged gzip
    data, no permission, ...), None when it could."""
    try:
        head = read_head(path, 64 * 1024).lstrip()
    except Unreadable as e:
        return False, e.problem
    return head.startswith(b"{") and b'"traceEvents"' in head, None


def _error_spec(run: str, path: str, problem: str, files: tuple = ()) -> WorkerSpec:
    """A trace worker that cannot be read: listed, with the error naming the file."""
    name = os.path.basename(path)
    return WorkerSpec(run, trace_worker_name(name), "trace-json", "GPU", "PyTorch", path,
                      files, rank_from_name(name), (), (), f"{path}: {problem}")


def classify_trace_file(run: str, path: str) -> WorkerSpec:
    try:
        st = os.stat(path)
    except OSError as e:
        return _error_spec(run, path, problem_of(e))
    if not stat.S_ISREG(st.st_mode):
        return _error_spec(run, path, not_regular(path, st.st_mode).problem)
    files = ((path, int(st.st_size), int(st.st_mtime_ns)),)
    return memo(("trace", run, files[0]), lambda: _classify_trace_file(run, path, files))


def _classify_trace_file(run: str, path: str, files: tuple) -> WorkerSpec:
    name = os.path.basename(path)
    rank, device, error, has = None, "GPU", None, ()
    try:
        info = TraceJson().peek(path)
        rank = info.get("rank")
        device = info.get("device_hint") or "GPU"
        error = info.get("error")
    except ImportError:
        pass
    except Exception as e:  # noqa: BLE001 - a peek must never break discovery: the file's problem
        error = f"{path}: {problem_of(e)}"
    if files[0][1] == 0:
        error = f"{path}: the file is empty"
    elif error and not error.startswith(path):  # the peek gives the problem only: name the file
        error = f"{path}: {error}"
    if rank is None:
        rank = rank_from_name(name)
    return WorkerSpec(run, trace_worker_name(name), "trace-json", device, "PyTorch", path,
                      files, rank, (), has, error)


def _is_candidate(name: str) -> bool:
    return name.endswith((".json", ".json.gz")) and name != "trace_view.json"


def recognise_trace(path: str, run: str | None) -> WorkerSpec | None:
    """The trace worker at ``path``, or None.  Named like a trace (``*.pt.trace.json[.gz]``):
    always a worker, with an error when it cannot be read (missing, a FIFO/socket/device, ...).
    Any other .json/.json.gz: a worker when its head holds traceEvents, or when it cannot be
    read at all (e.g. damaged gzip data: it may well be a trace, and the user should know)."""
    n = os.path.basename(path)
    if not _is_candidate(n):
        return None
    by_name = n.endswith(TRACE_SUFFIXES)
    run = _run_of(path) if run is None else run
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return _error_spec(run, path, problem_of(FileNotFoundError())) if by_name else None
    except OSError as e:
        return _error_spec(run, path, problem_of(e))
    if stat.S_ISDIR(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        return _error_spec(run, path, not_regular(path, st.st_mode).problem)
    if by_name:
        return classify_trace_file(run, path)
    key = ("sniff", run, path, int(st.st_size), int(st.st_mtime_ns), st.st_ino)
    return memo(key, lambda: _sniffed(run, path)) or None


def _sniffed(run: str, path: str):
    """classify_trace_file when the sniff says trace, an error spec when the file cannot be
    read (but not when it vanished: then there is nothing to list), else False (memo-able)."""
    is_trace, problem = sniff_trace_json(path)
    if is_trace:
        return classify_trace_file(run, path)
    if problem and not os.path.lexists(path):
        return False
    return _error_spec(run, path, problem) if problem else False


class TraceJson(FormatDescriptor):
    id = "trace-json"
    device = "GPU"
    capabilities = frozenset({"kernels", "steps", "memory", "modules", "communication", "links",
                              "call_stacks"})
    facts = {"task_types_from_db": False, "us_text": "trim", "unreleased_text": "None"}
    modules = ("tb_compare_plugin.loaders.kineto_json",)

    def recognise(self, path: str, run: str | None = None):
        return recognise_trace(path, run)

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
