"""The hand-off folder: where a parser process leaves the profile it read for its parent (and,
with shared jobs, for the other side's parser process) when no cache is used -- the cache's
layout, unbounded and unchecked (each entry lives for one parse and is read right after it was
written, in this run's private scratch folder), constant columns kept by value."""
from __future__ import annotations


def handoff_cache(root: str):
    """The hand-off folder at ``root`` as a :class:`~tb_compare_plugin.cache.ProfileCache`."""
    from ..cache import ProfileCache
    handoff = ProfileCache(root, max_bytes=1 << 62)
    handoff.check_columns = False
    handoff.compact_constants = True    # one value, not ~60 MB of rows, for the constant columns
    return handoff
