"""What discovery knows about a worker before it is parsed: :class:`WorkerSpec`.

A *run* is a folder whose profiles belong together; a *worker* is one rank or
process in it.  Ids are ``"<run>/<worker>"``: run names may contain "/", worker
names never do.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WorkerSpec:
    run: str                    # run name, relative to the logdir ("." for the logdir itself)
    name: str                   # worker name, unique inside the run
    format: str                 # a format id of formats/registry.py (trace-json, ascend-text, ascend-db, ...)
    device: str                 # best guess before parsing: GPU | NPU | CPU
    framework: str              # PyTorch | MindSpore
    root: str                   # what the loader is given: trace file, *_ascend_pt folder, or .db
    files: tuple = ()           # (path, size, mtime_ns) of every file that makes up the worker
    rank: int | None = None
    steps: tuple = ()           # step ids known without parsing (may be empty)
    has: tuple = ()             # (("kernels", bool), ...) known without parsing
    error: str | None = None    # a problem found during discovery (worker cannot be loaded)

    @property
    def id(self) -> str:
        return f"{self.run}/{self.name}"

    @property
    def size_bytes(self) -> int:
        return int(sum(f[1] for f in self.files))

    @property
    def fingerprint(self) -> tuple:
        """Changes whenever any of the worker's files changes (cache key)."""
        return (self.format, self.root, self.files)

    def has_dict(self) -> dict:
        d = {"kernels": False, "communication": False, "memory": False, "modules": False}
        d.update(dict(self.has))
        return d


def split_worker_id(wid: str) -> tuple[str, str]:
    """'run/a/b/worker' -> ('run/a/b', 'worker').  Raises ValueError when malformed."""
    if not isinstance(wid, str) or "/" not in wid:
        raise ValueError(f"worker id must look like RUN/WORKER, got {wid!r}")
    run, _, worker = wid.rpartition("/")
    if not run or not worker:
        raise ValueError(f"worker id must look like RUN/WORKER, got {wid!r}")
    return run, worker


def file_stat(path: str) -> tuple:
    st = os.stat(path)
    return (path, int(st.st_size), int(st.st_mtime_ns))


@dataclass
class RunInfo:
    name: str
    path: str
    workers: list = field(default_factory=list)   # list[WorkerSpec]
