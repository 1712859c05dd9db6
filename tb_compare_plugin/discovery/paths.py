"""What a path the user named holds (the CLI's arguments): one worker, or every worker of the
runs under a folder."""
from __future__ import annotations

import os

from .classify import classify_named
from .spec import WorkerSpec
from .walk import find_runs


def classify_path(path: str) -> list[WorkerSpec]:
    """Workers at a user-given path (CLI): a trace file, a .db, a worker folder, an
    ASCEND_PROFILER_OUTPUT folder, or a run folder holding several workers."""
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or folder")
    spec = classify_named(path)
    if spec is not None:
        return [spec]
    if os.path.isfile(path):
        from ..formats.registry import extra_hints
        raise ValueError(f"{path}: not a recognised profile (expected *.pt.trace.json[.gz], "
                         f"a trace .json, an Ascend *.db, or a profiler output folder{extra_hints()})")
    return [w for r in find_runs(path) for w in r.workers]
