"""A slow, obvious oracle for interval algebra: pure Python over lists of (start, end) pairs.

Half-open intervals [start, end) of ints.  Nothing here is clever, so the vectorised
functions of ``model.intervals`` (used by the overall engine) can be checked against it.
"""
from __future__ import annotations


def union(pieces) -> list[tuple[int, int]]:
    """Sorted, disjoint pieces covering the same points; touching pieces merge; empty ones vanish."""
    out: list[list[int]] = []
    for s, e in sorted((int(s), int(e)) for s, e in pieces):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def intersect(a, b) -> list[tuple[int, int]]:
    """(∪a) ∩ (∪b): every pair of pieces, clipped to each other, then merged."""
    return union((max(s1, s2), min(e1, e2)) for s1, e1 in union(a) for s2, e2 in union(b)
                 if max(s1, s2) < min(e1, e2))


def subtract(a, b) -> list[tuple[int, int]]:
    """(∪a) minus (∪b): each piece of a, cut by every piece of b in turn."""
    left = union(a)
    for bs, be in union(b):
        cut = []
        for s, e in left:
            if be <= s or e <= bs:
                cut.append((s, e))
                continue
            if s < bs:
                cut.append((s, bs))
            if be < e:
                cut.append((be, e))
        left = cut
    return union(left)


def length(pieces) -> int:
    return sum(e - s for s, e in union(pieces))
