"""Loaders: one module per on-disk format, each returning a :class:`Profile`.

``load(fmt, root)`` is the single entry point the store and the CLI use.  A
loader reads files and fills tables; it never compares.  Any problem with the
input surfaces as :class:`LoadError` naming the file.
"""
from __future__ import annotations

from typing import Callable, Optional

from .errors import LoadError

Progress = Optional[Callable[[float], None]]

FORMATS = ("trace-json", "ascend-text", "ascend-db", "mindspore-text", "mindspore-db")


def load(fmt: str, root: str, progress: Progress = None):
    """Parse the worker at ``root`` (a trace file, or an Ascend/MindSpore output folder or .db)."""
    if fmt == "trace-json":
        from . import kineto_json
        return kineto_json.load(root, progress=progress)
    if fmt in ("ascend-text", "mindspore-text"):
        from . import ascend_text
        return ascend_text.load(root, framework="MindSpore" if fmt.startswith("mindspore") else "PyTorch",
                                progress=progress)
    if fmt in ("ascend-db", "mindspore-db"):
        from . import ascend_db
        return ascend_db.load(root, framework="MindSpore" if fmt.startswith("mindspore") else "PyTorch",
                              progress=progress)
    raise LoadError(root, f"unknown profile format {fmt!r}")


__all__ = ["load", "LoadError", "FORMATS"]
