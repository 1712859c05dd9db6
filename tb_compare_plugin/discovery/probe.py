"""Cheap, format-neutral probes the format descriptors use to recognise paths: a stat-keyed
memo (rescans re-read nothing unchanged), a bounded header read, the rank in a file name, and
the (path, size, mtime) of a worker's files.  Knows no format."""
from __future__ import annotations

import gzip
import re

from .spec import file_stat

SNIFF_BYTES = 256 * 1024
_RANK_RE = re.compile(r"rank[_-]?(\d+)", re.I)
_MEMO: dict = {}
_MEMO_MAX = 4096


def memo(key, fn):
    """Cache a classification by the stat of its files: rescans re-read nothing unchanged."""
    hit = _MEMO.get(key)
    if hit is None:
        hit = fn()
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = hit
    return hit


def read_head(path: str, n: int = SNIFF_BYTES) -> bytes:
    """At most ``n`` bytes (decompressed for ``.gz``) from the start of ``path``."""
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read(n)
    with open(path, "rb") as f:
        return f.read(n)


def rank_from_name(name: str):
    m = _RANK_RE.search(name)
    return int(m.group(1)) if m else None


def stats(files) -> list:
    """(path, size, mtime) of each file that can still be stat'ed."""
    out = []
    for p in files:
        try:
            out.append(file_stat(p))
        except OSError:
            pass
    return out
