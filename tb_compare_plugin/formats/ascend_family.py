"""What the four Ascend-profiler formats share: a worker is a ``*_ascend_pt`` (PyTorch) or
``*_ascend_ms`` (MindSpore) folder, or a bare ``ASCEND_PROFILER_OUTPUT``; its
ASCEND_PROFILER_OUTPUT holds either a profiler database (``ascend_pytorch_profiler*.db``,
``ascend_mindspore_profiler*.db``, ``msmonitor*.db``: the ``*-db`` formats) or the text export
(``trace_view.json`` + CSVs: the ``*-text`` formats).

One recogniser serves the four descriptors (which format a folder is depends on what it holds);
:class:`AscendFormat` is the descriptor, parametrised by kind (text/db) and framework.
"""
from __future__ import annotations

import json
import os
import re

from ..discovery.probe import (Unreadable, memo, problem_of, rank_from_name, read_bytes,
                               special_error, special_files, stats)
from ..discovery.spec import WorkerSpec
from .base import FormatDescriptor

ASCEND_OUT = "ASCEND_PROFILER_OUTPUT"
DB_RE = re.compile(r"^(ascend_pytorch_profiler|ascend_mindspore_profiler|msmonitor).*\.db$")


def is_ascend_worker_dir(name: str) -> bool:
    return name.endswith("_ascend_pt") or name.endswith("_ascend_ms")


def ascend_files(worker_dir: str) -> tuple[str, list[str], str | None]:
    """(format kind 'db'|'text'|None, files, db_path) for a *_ascend_* folder or ASCEND_PROFILER_OUTPUT."""
    out = os.path.join(worker_dir, ASCEND_OUT)
    if not os.path.isdir(out):
        out = worker_dir
    try:
        names = sorted(os.listdir(out))
    except OSError:
        names = []
    dbs = [n for n in names if DB_RE.match(n)]
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


_INFO_RE = re.compile(r"profiler_info(?:_(\d+))?\.json$")


def profiler_info_rank(worker_dir: str):
    for d in (worker_dir, os.path.dirname(worker_dir)):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            m = _INFO_RE.match(n)
            if m:
                try:
                    info = json.loads(read_bytes(os.path.join(d, n), 1 << 20))
                    r = info.get("rank_id")
                    if isinstance(r, int) and r >= 0:
                        return r
                except (OSError, ValueError, AttributeError, RecursionError):
                    pass
                if m.group(1):
                    return int(m.group(1))
    return None


def _specials(worker_dir: str) -> list:
    """The FIFOs, sockets and devices among what the worker's readers may open: anything in the
    worker folder and its ASCEND_PROFILER_OUTPUT, and profiler_info*.json in the folder above
    (which the rank is read from)."""
    out = os.path.join(worker_dir, ASCEND_OUT)
    found = special_files(worker_dir)
    if os.path.isdir(out):
        found += special_files(out)
    found += special_files(os.path.dirname(worker_dir), _INFO_RE.match)
    return sorted(set(found))


def classify_ascend_dir(run: str, worker_dir: str, worker_name: str | None = None) -> WorkerSpec:
    """The worker of an Ascend folder; never raises: a file that cannot be read (a FIFO named
    like a profile file, damaged data, ...) makes the worker's error, naming the file."""
    try:
        specials = _specials(worker_dir)
        _, files, _ = ascend_files(worker_dir)
        key = ("ascend", run, worker_dir, worker_name, tuple(stats(files)), tuple(specials))
        return memo(key, lambda: _classify_ascend_dir(run, worker_dir, worker_name, specials))
    except Exception as e:  # noqa: BLE001 - the worker's problem, never the listing's
        where = e.path if isinstance(e, Unreadable) else getattr(e, "filename", None) or worker_dir
        return _unreadable_spec(run, worker_dir, worker_name, f"{where}: {problem_of(e)}")


def _unreadable_spec(run, worker_dir, worker_name, error) -> WorkerSpec:
    base = os.path.basename(worker_dir.rstrip("/"))
    framework = "MindSpore" if base.endswith("_ascend_ms") else "PyTorch"
    prefix = "mindspore" if framework == "MindSpore" else "ascend"
    return WorkerSpec(run, worker_name or base, f"{prefix}-text", "NPU", framework, worker_dir, (),
                      rank_from_name(base), (), (), error)


def _classify_ascend_dir(run: str, worker_dir: str, worker_name: str | None = None,
                         specials: list = ()) -> WorkerSpec:
    if specials:                        # never open them (a FIFO blocks whoever reads it)
        return _unreadable_spec(run, worker_dir, worker_name, special_error(list(specials)))
    base = os.path.basename(worker_dir.rstrip("/"))
    framework = "MindSpore" if base.endswith("_ascend_ms") else "PyTorch"
    kind, files, db = ascend_files(worker_dir)
    prefix = "mindspore" if framework == "MindSpore" else "ascend"
    if db and os.path.basename(db).startswith("ascend_mindspore_profiler"):
        prefix, framework = "mindspore", "MindSpore"
    name = worker_name or base
    st = stats(files)
    rank = profiler_info_rank(worker_dir)
    if rank is None:
        rank = rank_from_name(base)
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
        error, steps, has, rank = _peek(AscendFormat("db", framework), db, rank)
    else:
        fmt, root = f"{prefix}-text", worker_dir
        error, steps, has, rank = _peek(AscendFormat("text", framework), worker_dir, rank)
        steps = steps or _text_steps(worker_dir)
    return WorkerSpec(run, name, fmt, "NPU", framework, root, tuple(st), rank, steps, has, error)


def _peek(desc: "AscendFormat", path: str, rank):
    """(error, steps, has, rank) from a loader's cheap ``peek``; a peek never breaks discovery."""
    try:
        info = desc.peek(path)
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
        lines = read_bytes(path, 1 << 20).decode("utf-8", "replace").splitlines()[1:]
    except OSError:
        return ()
    steps = []
    for line in lines:
        cell = line.split(",", 1)[0].strip()
        if cell.isdigit():
            steps.append(int(cell))
    return tuple(sorted(set(steps)))


def recognise(path: str, run: str | None = None):
    """The worker at ``path`` (any of the four formats), or None.  In a logdir walk (``run``
    given) only worker folders count; a path the user named may also be a ``.db`` or a
    ``trace_view.json`` inside one."""
    base = os.path.basename(path)
    if run is not None:
        if not (is_ascend_worker_dir(base) or base == ASCEND_OUT) or not os.path.isdir(path):
            return None
        return classify_ascend_dir(run, path, ASCEND_OUT if base == ASCEND_OUT else None)
    if os.path.isfile(path):
        run = os.path.basename(os.path.dirname(path)) or "."
        if DB_RE.match(base):
            parent = os.path.dirname(path)
            wdir = os.path.dirname(parent) if os.path.basename(parent) == ASCEND_OUT else parent
            spec = classify_ascend_dir(run, wdir)
            if spec.root != path:  # the user picked a specific db
                spec = WorkerSpec(spec.run, spec.name, spec.format.replace("-text", "-db"), "NPU",
                                  spec.framework, path, spec.files, spec.rank, spec.steps, spec.has, None)
            return spec
        if base == "trace_view.json":
            return classify_ascend_dir(run, os.path.dirname(path))
        return None
    if not os.path.isdir(path) or not (is_ascend_worker_dir(base) or base == ASCEND_OUT):
        return None
    parent = os.path.dirname(path)
    if base == ASCEND_OUT and is_ascend_worker_dir(os.path.basename(parent)):
        path, parent = parent, os.path.dirname(parent)
    name = ASCEND_OUT if os.path.basename(path) == ASCEND_OUT else None
    return classify_ascend_dir(os.path.basename(parent) or ".", path, name)


class AscendFormat(FormatDescriptor):
    """One of ascend-text, ascend-db, mindspore-text, mindspore-db."""

    device = "NPU"

    def __init__(self, kind: str, framework: str = "PyTorch") -> None:
        self.kind, self.framework = kind, framework
        self.id = f"{'mindspore' if framework == 'MindSpore' else 'ascend'}-{kind}"
        self.modules = (f"tb_compare_plugin.loaders.ascend_{kind}",)
        common = {"kernels", "steps", "memory", "communication", "links", "call_stacks"}
        if kind == "db":
            # the database's TASK table gives every device task its own type (AI_CORE,
            # AI_VECTOR_CORE, SDMA_SQE...), and the reference reads it on its DB path
            self.capabilities = frozenset(common | {"pmu", "modules"})
            self.facts = {"task_types_from_db": True, "us_text": "float", "unreleased_text": "0.0"}
        else:
            self.capabilities = frozenset(common | {"pmu", "modules", "overlap"})
            self.facts = {"task_types_from_db": False, "us_text": "fixed3", "unreleased_text": "0"}

    recognise = staticmethod(recognise)       # one recogniser for the whole family

    def peek(self, path: str) -> dict:
        if self.kind == "db":
            from ..loaders import ascend_db
            return ascend_db.peek(path)
        from ..loaders import ascend_text
        return ascend_text.peek(path)

    def parse(self, root, progress=None, options=None):
        if self.kind == "db":
            from ..loaders import ascend_db
            return ascend_db.load(root, framework=self.framework, progress=progress)
        from ..loaders import ascend_text
        return ascend_text.load(root, framework=self.framework, progress=progress)
