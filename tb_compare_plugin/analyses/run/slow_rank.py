"""Slow ranks: robust outliers per metric across ranks, and the collective-wait signal."""
from __future__ import annotations


def find(summaries) -> list:
    return []
