"""Parse one worker and build its per-profile indexes, in whichever process parses it.

An index is derived from one profile alone (never from a comparison), so it can be built in the
parser process right after the parse, both sides at once on both cores, and cached with the
profile's columns.  Today that is the host-op tree (``engines.optree.store_tree``).  Building an
index is best effort: if it fails, the engines build what they need themselves and report any
problem in their own words.
"""
from __future__ import annotations

import logging

from . import loaders

log = logging.getLogger(__name__)


def add_indexes(prof):
    """Attach the indexes to ``prof`` (in place) and return it."""
    try:
        from .engines.optree import store_tree
        store_tree(prof)
    except Exception as e:  # noqa: BLE001 - an index is an optimisation only
        log.debug("profile_compare: no stored op tree for %s: %s", prof.meta.path, e)
    return prof


def load_indexed(fmt: str, root: str, progress=None):
    """``loaders.load`` plus :func:`add_indexes`."""
    return add_indexes(loaders.load(fmt, root, progress=progress))
