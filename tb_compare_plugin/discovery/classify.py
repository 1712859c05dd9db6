"""Recognise profiles on disk: which files/folders are workers, of which format.

Asks the format registry (``formats/registry.py``): each format's descriptor knows its own
paths.  Cheap by design: recognisers stat files and read at most a small header (never parse a
whole trace).  Used by the background scanner (whole logdir, through ``walk``) and by the CLI
(one path, through ``paths``).
"""
from __future__ import annotations

from .spec import WorkerSpec


def classify_entry(path: str, run: str) -> WorkerSpec | None:
    """The worker at ``path`` found while walking run ``run`` of a logdir, or None (then a folder
    is walked into, a file ignored)."""
    from ..formats import registry
    return registry.recognise(path, run)


def classify_named(path: str) -> WorkerSpec | None:
    """The worker at a path the user named (it may also be a file inside a worker folder, e.g. a
    ``.db`` or a ``trace_view.json``), or None."""
    from ..formats import registry
    return registry.recognise(path, None)
