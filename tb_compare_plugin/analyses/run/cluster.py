"""``analyse_cluster``: the ranks of one run (and optionally of a second run) -> :class:`ClusterResult`,
whose ``to_dict()`` is the JSON of the route ``cluster`` and of ``tb-compare cluster --json``.

Pure: a function of lists of :class:`RankSummary`; it never reads files.  The parts live in
:mod:`.per_rank`, :mod:`.slow_rank`, :mod:`.slow_link`, :mod:`.strategy` and :mod:`.cluster_diff`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ...model.rank_summary import RankSummary
from . import cluster_diff, per_rank, slow_link, slow_rank, strategy


@dataclass
class ClusterResult:
    run: str
    ranks: list                      # per rank and step (per_rank.ROW_KEYS)
    slow_ranks: list                 # slow_rank.find(...)
    links: list                      # slow_link.find(...)
    hints: list                      # strategy.hints(...), plain sentences
    collectives: list = field(default_factory=list)   # per collective per rank: wait/transmit
    warnings: list = field(default_factory=list)      # every rank's warnings, "FILE: ..."
    against: "ClusterResult | None" = None
    diff: "list | None" = None
    summary: dict = field(default_factory=dict)       # rank count, slowest rank, steps

    def to_dict(self) -> dict:
        return {"run": self.run, "ranks": self.ranks, "slow_ranks": self.slow_ranks,
                "links": self.links, "hints": self.hints,
                "against": self.against.to_dict() if self.against is not None else None,
                "diff": self.diff, "collectives": self.collectives, "summary": self.summary,
                "warnings": self.warnings}


def _one(run: str, summaries: Sequence[RankSummary]) -> ClusterResult:
    summaries = sorted(summaries, key=lambda s: s.rank)
    ranks = per_rank.rows(summaries)
    return ClusterResult(
        run=run, ranks=ranks,
        slow_ranks=slow_rank.find(summaries),
        links=slow_link.find(summaries),
        hints=strategy.hints(summaries),
        collectives=per_rank.collective_rows(summaries),
        warnings=[w for s in summaries for w in s.warnings],
        summary=per_rank.overview(summaries),
    )


def analyse_cluster(run: str, summaries: Sequence[RankSummary], against=None) -> ClusterResult:
    """The cluster analysis of ``run`` (its ranks' summaries).  ``against``: ``(run, summaries)``
    of a second run: the result then also holds that run's analysis (``against``) and the
    differences baseline (this run) -> target (``against``) in ``diff``."""
    result = _one(run, summaries)
    if against is not None:
        other_run, other = against
        result.against = _one(other_run, other)
        result.diff = cluster_diff.diff(sorted(summaries, key=lambda s: s.rank),
                                        sorted(other, key=lambda s: s.rank))
    return result
