"""Malformed-input cases for tests/test_malformed.py, one module per input format.

Each :class:`Case` writes one broken (or merely odd) profile into an empty folder, derived from
a real file: the project's own ``samples/`` (always present) or the real corpus (cases marked
``corpus=True``, skipped when ``../shared/corpus`` is absent; large corpus files are truncated
copies, never many full ones).  ``culprits`` are the file/folder names one of which a LoadError
must name; ``source`` names the pristine profile the case was derived from, so the test can tell
rows the loader dropped (which need a warning) from rows the case itself removed (``removes``).

Modules: :mod:`.common` (the Case record, sources, helpers), :mod:`.kineto`, :mod:`.ascend_text`,
:mod:`.ascend_db`, :mod:`.layout`, :mod:`.mindspore`, :mod:`.msprof` (the cases, registered on import, in this order) and
:mod:`.tinydb` (the SQLite export the tests build).
"""
from __future__ import annotations

from . import kineto, ascend_text, ascend_db, layout, mindspore, msprof  # noqa: F401  (register their cases, in this order)
from .common import (ASCEND_TEXT_OWNER, CASES, CORPUS_SOURCES, DB, OUT, SOURCES, TRACE, WORKER,  # noqa: F401
                     Case, add, add_mut, copy_npu, out)
from .tinydb import make_tiny_db  # noqa: F401


def by_id() -> dict[str, Case]:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    return {c.id: c for c in CASES}
