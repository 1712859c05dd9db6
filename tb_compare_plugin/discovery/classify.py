"""Recognise profiles on disk: which files/folders are workers, of which format.

Pure functions over the filesystem, cheap by design: they stat files and read
at most a small header (never parse a whole trace).  Used by the background
scanner (whole logdir) and by the CLI (one path).
"""
from __future__ import annotations

import gzip
import json
import os
import re

from .spec import WorkerSpec, file_stat

ASCEND_OUT = "ASCEND_PROFILER_OUTPUT"
_DB_RE = re.compile(r"^(ascend_pytorch_profiler|ascend_mindspore_profiler|msmonitor).*\.db$")
_TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
_RANK_RE = re.compile(r"rank[_-]?(\d+)", re.I)
SNIFF_BYTES = 256 * 1024
_MEMO: dict = {}
_MEMO_MAX = 4096


def _memo(key, fn):
    """Cache a classification by the stat of its files: rescans re-read nothing unchanged."""
    hit = _MEMO.get(key)
    if hit is None:
        hit = fn()
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = hit
    return hit


def is_ascend_worker_dir(name: str) -> bool:
    return name.endswith("_ascend_pt") or name.endswith("_ascend_ms")


def trace_worker_name(filename: str) -> str:
    for suf in _TRACE_SUFFIXES + (".json.gz", ".json"):
        if filename.endswith(suf):
            return filename[: -len(suf)]
    return filename


def _read_head(path: str, n: int = SNIFF_BYTES) -> bytes:
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read(n)
    with open(path, "rb") as f:
        return f.read(n)


def sniff_trace_json(path: str) -> bool:
    """Does a generic .json/.json.gz look like a Chrome/Kineto trace (object with traceEvents)?"""
    try:
        head = _read_head(path, 64 * 1024).lstrip()
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    return head.startswith(b"{") and b'"traceEvents"' in head


def _rank_from_name(name: str):
    m = _RANK_RE.search(name)
    return int(m.group(1)) if m else None


def classify_trace_file(run: str, path: str) -> WorkerSpec:
    try:
        key = ("trace", run, file_stat(path))
    except OSError:
        return _classify_trace_file(run, path)
    return _memo(key, lambda: _classify_trace_file(run, path))


def _classify_trace_file(run: str, path: str) -> WorkerSpec:
    name = os.path.basename(path)
    rank, device, error, has = None, "GPU", None, ()
    try:
        files = (file_stat(path),)
    except OSError as e:
        return WorkerSpec(run, trace_worker_name(name), "trace-json", "GPU", "PyTorch", path,
                          (), None, (), (), f"{path}: cannot read ({e.strerror})")
    try:
        from ..loaders import kineto_json  # cheap header peek (owned by the loader)
        info = kineto_json.peek(path)
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
        rank = _rank_from_name(name)
    return WorkerSpec(run, trace_worker_name(name), "trace-json", device, "PyTorch", path,
                      files, rank, (), has, error)


def _ascend_files(worker_dir: str) -> tuple[str, list[str], str | None]:
    """(format kind 'db'|'text'|None, files, db_path) for a *_ascend_* folder or ASCEND_PROFILER_OUTPUT."""
    out = os.path.join(worker_dir, ASCEND_OUT)
    if not os.path.isdir(out):
        out = worker_dir
    try:
        names = sorted(os.listdir(out))
    except OSError:
        names = []
    dbs = [n for n in names if _DB_RE.match(n)]
    files = [os.path.join(out, n) for n in names if os.path.isfile(os.path.join(out, n))]
    if out != worker_dir:
        try:
            files += [os.path.join(worker_dir, n) for n in sorted(os.listdir(worker_dir))
                      if n.endswith(".json") and os.path.isfile(os.path.join(worker_dir, n))]
        except OSError:
            pass
    if dbs:
        return "db", files, os.path.join(out, dbs[0])
    if "trace_view.json" in names:
        return "text", files, None
    return None, files, None


def _profiler_info_rank(worker_dir: str):
    for d in (worker_dir, os.path.dirname(worker_dir)):
        try:
            for n in os.listdir(d):
                m = re.match(r"profiler_info(?:_(\d+))?\.json$", n)
                if m:
                    try:
                        with open(os.path.join(d, n), "rb") as f:
                            info = json.loads(f.read(1 << 20))
                        r = info.get("rank_id")
                        if isinstance(r, int) and r >= 0:
                            return r
                    except (OSError, ValueError, AttributeError):
                        pass
                    if m.group(1):
                        return int(m.group(1))
        except OSError:
            pass
    return None


def _stats(files) -> list:
    """(path, size, mtime) of each file that can still be stat'ed."""
    out = []
    for p in files:
        try:
            out.append(file_stat(p))
        except OSError:
            pass
    return out


def classify_ascend_dir(run: str, worker_dir: str, worker_name: str | None = None) -> WorkerSpec:
    _, files, _ = _ascend_files(worker_dir)
    stats = _stats(files)
    key = ("ascend", run, worker_dir, worker_name, tuple(stats))
    return _memo(key, lambda: _classify_ascend_dir(run, worker_dir, worker_name))


def _classify_ascend_dir(run: str, worker_dir: str, worker_name: str | None = None) -> WorkerSpec:
    base = os.path.basename(worker_dir.rstrip("/"))
    framework = "MindSpore" if base.endswith("_ascend_ms") else "PyTorch"
    kind, files, db = _ascend_files(worker_dir)
    prefix = "mindspore" if framework == "MindSpore" else "ascend"
    if db and os.path.basename(db).startswith("ascend_mindspore_profiler"):
        prefix, framework = "mindspore", "MindSpore"
    name = worker_name or base
    stats = _stats(files)
    rank = _profiler_info_rank(worker_dir)
    if rank is None:
        rank = _rank_from_name(base)
    error, steps, has = None, (), ()
    if kind is None:
        out = os.path.join(worker_dir, ASCEND_OUT)
        try:
            os.listdir(out if os.path.isdir(out) else worker_dir)
            error = (f"{worker_dir}: no trace_view.json or profiler .db in {ASCEND_OUT} "
                     "(the profile was not collected or not parsed yet)")
        except OSError as e:            # e.g. no permission: say so, not "not collected"
            error = f"{e.filename or out}: cannot list the folder ({e.strerror or e})"
        fmt, root = f"{prefix}-text", worker_dir
    elif kind == "db":
        fmt, root = f"{prefix}-db", db
        error, steps, has, rank = _peek("ascend_db", db, rank)
    else:
        fmt, root = f"{prefix}-text", worker_dir
        error, steps, has, rank = _peek("ascend_text", worker_dir, rank)
        steps = steps or _text_steps(worker_dir)
    return WorkerSpec(run, name, fmt, "NPU", framework, root, tuple(stats), rank, steps, has, error)


def _peek(loader: str, path: str, rank):
    """(error, steps, has, rank) from a loader's cheap ``peek``; a peek never breaks discovery."""
    import importlib
    try:
        info = importlib.import_module(f"tb_compare_plugin.loaders.{loader}").peek(path)
    except ImportError:
        return None, (), (), rank
    except Exception as e:  # noqa: BLE001
        return f"{path}: {e}", (), (), rank
    if info.get("rank") is not None and rank is None:
        rank = info["rank"]
    return (info.get("error"), tuple(info.get("steps") or ()),
            tuple(sorted((info.get("has") or {}).items())), rank)


def _text_steps(worker_dir: str) -> tuple:
    """Step ids from step_trace_time.csv (tiny file) when present."""
    out = os.path.join(worker_dir, ASCEND_OUT)
    path = os.path.join(out if os.path.isdir(out) else worker_dir, "step_trace_time.csv")
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            lines = f.read(1 << 20).splitlines()[1:]
    except OSError:
        return ()
    steps = []
    for line in lines:
        cell = line.split(",", 1)[0].strip()
        if cell.isdigit():
            steps.append(int(cell))
    return tuple(sorted(set(steps)))


def classify_path(path: str) -> list[WorkerSpec]:
    """Workers at a user-given path (CLI): a trace file, a .db, a worker folder, an
    ASCEND_PROFILER_OUTPUT folder, or a run folder holding several workers."""
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or folder")
    if os.path.isfile(path):
        base = os.path.basename(path)
        run = os.path.basename(os.path.dirname(path)) or "."
        if _DB_RE.match(base):
            parent = os.path.dirname(path)
            wdir = os.path.dirname(parent) if os.path.basename(parent) == ASCEND_OUT else parent
            spec = classify_ascend_dir(run, wdir)
            if spec.root != path:  # the user picked a specific db
                spec = WorkerSpec(spec.run, spec.name, spec.format.replace("-text", "-db"), "NPU",
                                  spec.framework, path, spec.files, spec.rank, spec.steps, spec.has, None)
            return [spec]
        if base.endswith((".json", ".json.gz")):
            if base == "trace_view.json":
                return [classify_ascend_dir(run, os.path.dirname(path))]
            return [classify_trace_file(run, path)]
        raise ValueError(f"{path}: not a recognised profile (expected *.pt.trace.json[.gz], "
                         "a trace .json, an Ascend *.db, or a profiler output folder)")
    from .walk import find_runs
    if is_ascend_worker_dir(os.path.basename(path)) or os.path.basename(path) == ASCEND_OUT:
        parent = os.path.dirname(path)
        if os.path.basename(path) == ASCEND_OUT and is_ascend_worker_dir(os.path.basename(parent)):
            path, parent = parent, os.path.dirname(parent)
        name = ASCEND_OUT if os.path.basename(path) == ASCEND_OUT else None
        return [classify_ascend_dir(os.path.basename(parent) or ".", path, name)]
    runs = find_runs(path)
    return [w for r in runs for w in r.workers]
