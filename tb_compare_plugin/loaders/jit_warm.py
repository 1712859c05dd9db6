"""When the parser processes' fork server should load the numba scanners before it forks them.

Importing numba and loading the compiled Kineto / Ascend scanners, the quick plan and the model's
kernels costs ~1-1.5 s of CPU per process.  Each parser child used to pay it after its fork, both
children at once on a 2-core machine, after the fork server had imported everything else.  When
the inputs hold a trace the scanners will read (:data:`FAST_MIN_BYTES` or more), the fork server
loads them once instead (:mod:`.jit_preload`, which imports the scanners; this module is imported by them), while the parent is still importing, and every child
starts with them in memory.  Small inputs never import numba.  Only the scanners the inputs'
big files can use are loaded (:func:`parts`): each costs the fork server ~0.02-0.05 s of CPU on
the way to the first parse.

This module imports nothing heavy: the CLI asks :func:`parts` before anything else starts.
"""
from __future__ import annotations

import os

FAST_MIN_BYTES = 64 << 20
"""From this size on (a ``.gz`` counted at 8x) a Kineto or Ascend trace is read by the numba
scanner (``kineto_scan.wanted``, ``ascend_fast.wanted``)."""

_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def _setting(name: str) -> str:
    return os.environ.get(name, "auto").strip().lower()


PRELOAD_ENV = "TB_COMPARE_JIT_PRELOAD"
"""Set by the parse pool while it starts its fork server (``service.parsepool._jit_parts_named``): which parts
:mod:`.jit_preload` loads, comma-separated ``kineto``, ``ascend``, ``model``; unset: all of them."""

ALL = frozenset(("kineto", "ascend", "model"))


def _parts_for(name: str, kineto: str, ascend: str) -> frozenset:
    """The numba parts a big file named ``name`` may use: the Kineto scanner for a trace ``.json``
    (``.json.gz``), the Ascend one for a ``trace_view.json``; the model's kernels always (every
    big load's side work uses them); nothing more for other files (CSV, .db: no scanner reads
    them).  A scanner its setting turns off is never loaded."""
    parts = {"model"}
    if name.startswith("trace_view.json"):
        if ascend not in _OFF:
            parts.add("ascend")
    elif name.endswith((".json", ".json.gz")) and kineto not in _OFF:
        parts.add("kineto")
    return frozenset(parts)


def parts(paths, max_entries: int = 2000, max_depth: int = 6) -> frozenset:
    """The numba parts a load of ``paths`` (files or folders) will use (:data:`ALL` names them;
    empty: none, numba is not worth loading): from each regular file of :data:`FAST_MIN_BYTES` or
    more under them (at most ``max_entries`` folder entries looked at, symbolic links to folders
    not followed), or all of them when a scanner is forced on by its setting."""
    kineto, ascend = _setting("TB_COMPARE_FAST_KINETO"), _setting("TB_COMPARE_FAST_ASCEND")
    if kineto in _OFF and ascend in _OFF:
        return frozenset()
    if kineto in _ON or ascend in _ON:
        return ALL
    found: frozenset = frozenset()
    seen = 0
    todo = [(str(p), 0) for p in paths]
    while todo and found != ALL:
        path, depth = todo.pop()
        try:
            if os.path.isfile(path):
                size = os.stat(path).st_size
                if size * (8 if path.endswith(".gz") else 1) >= FAST_MIN_BYTES:
                    found |= _parts_for(os.path.basename(path), kineto, ascend)
                continue
            if depth >= max_depth or not os.path.isdir(path):
                continue
            with os.scandir(path) as it:
                for entry in it:
                    seen += 1
                    if seen > max_entries:
                        return found
                    if entry.is_dir(follow_symlinks=False):
                        todo.append((entry.path, depth + 1))
                    elif entry.is_file():
                        size = entry.stat().st_size
                        if size * (8 if entry.name.endswith(".gz") else 1) >= FAST_MIN_BYTES:
                            found |= _parts_for(entry.name, kineto, ascend)
        except OSError:
            continue
    return found


def worth_it(paths, max_entries: int = 2000, max_depth: int = 6) -> bool:
    """Whether a load of ``paths`` will use numba at all (:func:`parts` names which of it)."""
    return bool(parts(paths, max_entries, max_depth))


def wanted_parts() -> frozenset:
    """What :mod:`.jit_preload` loads in this process: :data:`PRELOAD_ENV`'s parts, else all."""
    v = os.environ.get(PRELOAD_ENV, "").strip()
    if not v:
        return ALL
    return frozenset(p.strip() for p in v.split(",")) & ALL
