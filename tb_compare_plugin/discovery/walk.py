"""Walk a logdir and group what :mod:`classify` recognises (through the format registry) into runs.

Follows symlinked folders once (loops are cut by real path), never descends into
a worker folder, and never raises for unreadable folders.
"""
from __future__ import annotations

import os

from .classify import classify_entry
from .spec import RunInfo

MAX_DEPTH = 12
_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".ipynb_checkpoints"}


def _run_name(logdir: str, folder: str) -> str:
    rel = os.path.relpath(folder, logdir)
    return "." if rel == "." else rel.replace(os.sep, "/")


def find_runs(logdir: str) -> list[RunInfo]:
    """Every run under ``logdir`` with its workers, sorted by run name."""
    logdir = os.path.abspath(logdir)
    runs: dict[str, RunInfo] = {}
    seen_real: set[str] = set()

    def add(folder: str, spec):
        name = _run_name(logdir, folder)
        runs.setdefault(name, RunInfo(name, folder)).workers.append(spec)

    def visit(folder: str, depth: int):
        try:
            real = os.path.realpath(folder)
        except OSError:
            return
        if real in seen_real or depth > MAX_DEPTH:
            return
        seen_real.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        subdirs = []
        for e in entries:
            try:
                is_dir = e.is_dir()  # follows symlinks
                is_file = not is_dir and e.is_file()
            except OSError:
                continue
            if is_dir and (e.name in _SKIP_DIRS or e.name.startswith(".")):
                continue
            if not (is_dir or is_file):
                continue
            spec = classify_entry(e.path, _run_name(logdir, folder))
            if spec is not None:
                add(folder, spec)
            elif is_dir:
                subdirs.append(e.path)
        for d in subdirs:
            visit(d, depth + 1)

    if os.path.isdir(logdir):
        spec = classify_entry(logdir, ".")         # the logdir is itself one worker's folder
        if spec is not None:
            runs["."] = RunInfo(".", os.path.dirname(logdir), [spec])
        else:
            visit(logdir, 0)
    for r in runs.values():
        _dedupe_names(r)
    return [runs[k] for k in sorted(runs)]


def _dedupe_names(run: RunInfo) -> None:
    """Worker names must be unique in a run (e.g. a.pt.trace.json and a.pt.trace.json.gz)."""
    from dataclasses import replace
    seen: dict[str, int] = {}
    out = []
    for w in run.workers:
        n = w.name
        if n in seen:
            seen[n] += 1
            w = replace(w, name=f"{n}~{seen[n]}")
        else:
            seen[n] = 0
        out.append(w)
    run.workers = out
