"""The input formats tb-compare reads, in recognition order.  Adding a format: one module in
this package defining a :class:`~.base.FormatDescriptor` (plus its tests), and one line below.

Discovery asks :func:`recognise`, the loaders' dispatch and the parse pool call :func:`load`,
everything else asks :func:`get` for a descriptor by id.

Formats from outside the package: ``TB_COMPARE_FORMATS=pkg.mod[:ATTR],...`` registers
``pkg.mod.DESCRIPTOR`` (or ``ATTR``) when this module is imported, in every process (the parser
processes too).  :func:`register` adds one at run time (tests): the parser processes are forked
from a server started earlier, so such a format is parsed in the calling process
(:func:`parsed_in_pool`).
"""
from __future__ import annotations

import importlib
import logging
import os
import threading
from typing import Mapping

from .ascend_db import DESCRIPTOR as _ASCEND_DB
from .ascend_text import DESCRIPTOR as _ASCEND_TEXT
from .base import FormatDescriptor, Progress
from .mindspore_db import DESCRIPTOR as _MINDSPORE_DB
from .mindspore_legacy import DESCRIPTOR as _MINDSPORE_LEGACY
from .mindspore_msprof import DESCRIPTOR as _MINDSPORE_MSPROF
from .mindspore_text import DESCRIPTOR as _MINDSPORE_TEXT
from .msprof_cann import DESCRIPTOR as _MSPROF_CANN
from .trace_json import DESCRIPTOR as _TRACE_JSON

BUILTIN: tuple = (_TRACE_JSON, _ASCEND_TEXT, _ASCEND_DB, _MINDSPORE_TEXT, _MINDSPORE_DB,
           _MINDSPORE_LEGACY, _MSPROF_CANN, _MINDSPORE_MSPROF)

ENV = "TB_COMPARE_FORMATS"
_lock = threading.Lock()
_formats: list = list(BUILTIN)
log = logging.getLogger(__name__)


def _from_env() -> tuple:
    """Descriptors named by ``TB_COMPARE_FORMATS``; one that cannot be imported is skipped with
    a warning naming it (a broken add-on must not stop TensorBoard or the CLI)."""
    out = []
    for item in filter(None, (x.strip() for x in os.environ.get(ENV, "").split(","))):
        mod, _, attr = item.partition(":")
        try:
            desc = getattr(importlib.import_module(mod), attr or "DESCRIPTOR")
            if not isinstance(getattr(desc, "id", None), str) or not desc.id:
                raise TypeError("not a format descriptor (it has no id)")
        except Exception as e:  # noqa: BLE001
            log.warning("tb-compare: %s=%s: cannot use %s: %s", ENV, os.environ.get(ENV), item, e)
            continue
        out.append(desc)
    return tuple(out)


_AT_IMPORT: tuple = ()


class UnknownFormat(KeyError):
    pass


def all_formats() -> tuple:
    """Every registered descriptor, in recognition order."""
    return tuple(_formats)


def ids() -> tuple:
    return tuple(d.id for d in _formats)


def builtin_ids() -> tuple:
    return tuple(d.id for d in BUILTIN)


def get(fmt: str) -> FormatDescriptor:
    for d in _formats:
        if d.id == fmt:
            return d
    raise UnknownFormat(fmt)


def register(desc: FormatDescriptor, first: bool = False) -> FormatDescriptor:
    """Add ``desc`` (replacing a descriptor of the same id); ``first``: recognised before the others."""
    if not desc.id:
        raise ValueError("a format descriptor needs an id")
    with _lock:
        _formats[:] = [d for d in _formats if d.id != desc.id]
        _formats.insert(0, desc) if first else _formats.append(desc)
    return desc


def unregister(fmt: str) -> None:
    with _lock:
        _formats[:] = [d for d in _formats if d.id != fmt or d in BUILTIN]


def recognise(path: str, run: str | None = None):
    """The :class:`WorkerSpec` of the first format that recognises ``path``, or None.  A
    recogniser shared by several descriptors (a format family) is asked once."""
    asked: list = []
    formats = list(_formats)
    for d in formats:
        fn = d.recognise
        if fn in asked:
            continue
        asked.append(fn)
        spec = _guarded(d, fn, path, run)
        if spec is not None:
            return spec
    if run is None:                     # a path the user named: a format may still claim it
        for d in formats:
            spec = _guarded(d, d.fallback, path)
            if spec is not None:
                return spec
    return None


def _guarded(desc, fn, *args):
    """A recogniser that raises (an add-on's bug) must not stop discovery of everything else:
    it recognises nothing, and the log says which format failed on which path."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001
        log.warning("tb-compare: format %s failed to recognise %s: %s: %s", desc.id, args[0],
                    type(e).__name__, e)
        return None


def extra_hints() -> str:
    """", or <hint>" for each registered format beyond the built-in ones (error messages)."""
    return "".join(f", or {d.hint}" for d in _formats if d not in BUILTIN and d.hint)


def load(fmt: str, root: str, progress: Progress = None, options: Mapping | None = None):
    """Parse the worker at ``root`` as format ``fmt`` (a Profile with the format's facts set)."""
    return get(fmt).load(root, progress, options)


def finish(profile):
    """Record the facts of ``profile.meta.format`` on a profile read back from a cache."""
    try:
        return get(profile.meta.format).finish(profile)
    except UnknownFormat:
        return profile


def is_builtin(fmt: str) -> bool:
    return fmt in builtin_ids()


def parsed_in_pool(fmt: str) -> bool:
    """Can the parser processes parse ``fmt``: a built-in format or one from ``TB_COMPARE_FORMATS``
    (they know the formats registered when the registry was imported, not later ones)."""
    return any(d.id == fmt for d in BUILTIN + _AT_IMPORT)


def preload_modules() -> list:
    """Modules the parser processes import ahead: each format's loader and its own module."""
    out: list = []
    for d in BUILTIN + _AT_IMPORT:
        for m in tuple(d.modules) + (type(d).__module__,):
            if m not in out:
                out.append(m)
    return out



def meta_for(fmt: str, **fields):
    """A ProfileMeta of format ``fmt`` carrying the format's facts (for profiles built by hand:
    tests, synthetic profiles)."""
    from ..model import ProfileMeta
    desc = get(fmt)
    return ProfileMeta(format=fmt, **{**dict(desc.facts), "capabilities": sorted(desc.capabilities), **fields})


# formats named by TB_COMPARE_FORMATS: last, once everything above is defined
for _d in _from_env():
    register(_d)
_AT_IMPORT = tuple(d for d in _formats if d not in BUILTIN)
