"""Loaders: the parsing machinery of each on-disk format, each returning a :class:`Profile`.

Which loader reads which format is the format descriptors' business (``formats/``);
``load(fmt, root)`` is kept as the one call the store, the parse pool, the CLI and tests use,
and dispatches through the format registry.  A loader reads files and fills tables; it never
compares.  Any problem with the input surfaces as :class:`LoadError` naming the file.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

from .errors import LoadError

Progress = Optional[Callable[[float], None]]


def load(fmt: str, root: str, progress: Progress = None, options: Mapping | None = None):
    """Parse the worker at ``root`` (a trace file, or an Ascend/MindSpore output folder or .db)
    as format ``fmt``; ``options``: load options the format may take (by keyword)."""
    from ..formats import registry
    try:
        desc = registry.get(fmt)
    except registry.UnknownFormat:
        raise LoadError(root, f"unknown profile format {fmt!r}") from None
    return desc.load(root, progress, options)


__all__ = ["load", "LoadError"]
