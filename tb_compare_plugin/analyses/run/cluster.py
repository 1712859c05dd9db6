"""``analyse_cluster``: the ranks of one run (and optionally of a second run) -> :class:`ClusterResult`,
whose ``to_dict()`` is the JSON of the route ``cluster`` and of ``tb-compare cluster --json``.

Pure: a function of lists of :class:`RankSummary`; it never reads files.  The parts live in
:mod:`.per_rank`, :mod:`.slow_rank`, :mod:`.slow_link`, :mod:`.strategy` and :mod:`.cluster_diff`.
``options``: ``min_share`` (slow rank floor, share of the step), ``link_ratio`` (slow link
threshold, share of the peers' median bandwidth).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import pandas as pd

from ...model.rank_summary import RankSummary
from . import cluster_diff, per_rank, slow_link, slow_rank, strategy


@dataclass
class ClusterResult:
    run: str
    ranks: list                      # per rank and step (per_rank.ROW_KEYS)
    slow_ranks: list                 # slow_rank.find(...)
    links: list                      # slow_link.rows(...)
    hints: list                      # strategy.hints(...), plain sentences
    slow_links: list = field(default_factory=list)    # slow links by (src, dst, transport)
    link_pairs: list = field(default_factory=list)    # per (src, dst, transport), all steps
    collectives: list = field(default_factory=list)   # per collective per rank: wait/transmit
    warnings: list = field(default_factory=list)      # every rank's warnings, "FILE: ..."
    summary: dict = field(default_factory=dict)       # rank count, steps, slowest rank
    against: "ClusterResult | None" = None
    diff: "list | None" = None
    diff_summary: "dict | None" = None
    table: pd.DataFrame | None = field(default=None, repr=False)   # per rank and step, ns

    def to_dict(self) -> dict:
        return {"run": self.run, "ranks": self.ranks, "slow_ranks": self.slow_ranks,
                "links": self.links, "hints": self.hints,
                "against": self.against.to_dict() if self.against is not None else None,
                "diff": self.diff, "diff_summary": self.diff_summary,
                "slow_links": self.slow_links, "link_pairs": self.link_pairs,
                "collectives": self.collectives,
                "summary": self.summary, "warnings": self.warnings}


def fold_warnings(summaries: Sequence[RankSummary], keep: int = 3) -> list:
    """Every rank's warnings; one that many ranks repeat word for word but for their own path
    is said once with the count of ranks and the first path (1,024 identical lines help no one)."""
    groups: dict = {}
    for s in summaries:
        for w in s.warnings:
            key = w.replace(s.path, "{rank}") if s.path else w
            groups.setdefault(key, []).append((s.rank, w))
    out = []
    for key, items in groups.items():
        if len(items) <= keep or "{rank}" not in key:
            out.extend(w for _, w in items)
        else:
            ranks = sorted(r for r, _ in items)
            out.append(f"{items[0][1]} (and the same on {len(items) - 1} other ranks: "
                       f"{', '.join(str(r) for r in ranks[1:9])}{' ...' if len(ranks) > 9 else ''})")
    return out


def _one(run: str, summaries: Sequence[RankSummary], options: Mapping) -> ClusterResult:
    summaries = sorted(summaries, key=lambda s: s.rank)
    seen: set = set()
    dup = sorted({s.rank for s in summaries if s.rank in seen or seen.add(s.rank)})
    if dup:
        raise ValueError(f"{run}: rank(s) {dup[:8]} appear in more than one worker")
    warnings = fold_warnings(summaries)
    coll = per_rank.all_collectives(summaries)
    table = per_rank.step_table(summaries, coll)
    links = slow_link.flag(slow_link.link_table(summaries, warnings),
                           options.get("link_ratio", slow_link.RATIO))
    slow = slow_rank.find(table, coll, options.get("min_share", slow_rank.MIN_SHARE))
    pairs = slow_link.slow_pairs(links)
    return ClusterResult(
        run=run, ranks=per_rank.rows(summaries, table), slow_ranks=slow,
        links=slow_link.rows(links), hints=strategy.hints(table, coll, slow, pairs),
        slow_links=pairs, link_pairs=slow_link.pairs(links, pairs),
        collectives=per_rank.collective_rows(coll), warnings=warnings,
        summary=per_rank.overview(summaries, table), table=table)


def analyse_cluster(run: str, summaries: Sequence[RankSummary], against=None,
                    options: Mapping | None = None) -> ClusterResult:
    """The cluster analysis of ``run`` (its ranks' summaries).  ``against``: ``(run, summaries)``
    of a second run: the result then also holds that run's analysis (``against``) and the
    differences this run (baseline) -> ``against`` (target) in ``diff`` / ``diff_summary``."""
    options = dict(options or {})
    result = _one(run, summaries, options)
    if against is not None:
        other_run, other = against
        result.against = _one(other_run, other, options)
        result.diff, result.diff_summary = cluster_diff.diff(result.table, result.against.table)
    return result
