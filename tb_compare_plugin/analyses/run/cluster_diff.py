"""Cluster against cluster: baseline ranks vs target ranks."""
from __future__ import annotations


def diff(base, target) -> list:
    return []
