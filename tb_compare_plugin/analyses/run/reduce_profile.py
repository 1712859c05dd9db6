"""A parsed :class:`Profile` -> :class:`RankSummary` (for formats with no light per-rank files:
GPU traces).  Pure reduction; no file access."""
from __future__ import annotations

from ...model.rank_summary import RankSummary


def summarise_profile(profile, rank) -> RankSummary:
    if rank is None:
        rank = profile.meta.rank
    return RankSummary(rank=-1 if rank is None else rank, source=(profile.meta.path,),
                       warnings=[f"{profile.meta.path}: reduction from a full parse not done yet"])
