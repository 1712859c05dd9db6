"""Cluster analyses at engine level: RankSummary round trips, the per-rank table, slow ranks,
slow links, strategy hints and cluster against cluster on small synthetic rank lists (and the
corpus's 2-rank runs where a real file matters)."""
from __future__ import annotations

import json

from tb_compare_plugin.analyses.run.cluster import analyse_cluster
from tb_compare_plugin.model.rank_summary import RankSummary, make_table

KEYS = {"run", "ranks", "slow_ranks", "links", "hints", "against", "diff"}
RANK_KEYS = {"rank", "worker", "step", "step_time_ms", "computing_ms",
             "communication_not_overlapped_ms", "overlapped_ms", "communication_ms", "free_ms",
             "wait_ms", "transmit_ms", "preparing_ms", "bubble_ms"}


def summary(rank, computing=10e6, comm=5e6, free=1e6, step=1, **kw):
    steps = make_table("steps", {"step": [step], "computing": [computing],
                                 "communication_not_overlapped": [comm], "overlapped": [0.0],
                                 "communication": [comm], "free": [free],
                                 "step_time": [computing + comm + free], "wait": [kw.get("wait", 1e6)],
                                 "transmit": [comm - kw.get("wait", 1e6)], "preparing": [0.0],
                                 "bubble": [0.0]})
    return RankSummary(rank=rank, worker=f"rank{rank}", steps=steps)


def test_rank_summary_round_trips_through_json():
    s = summary(3)
    s.warnings.append("f.csv: 1 cell empty")
    back = RankSummary.from_dict(json.loads(json.dumps(s.to_dict())))
    assert back == s and back.warnings == s.warnings


def test_result_has_the_issue_keys():
    d = analyse_cluster("run", [summary(r) for r in range(4)]).to_dict()
    assert KEYS <= set(d)
    assert len(d["ranks"]) == 4 and set(d["ranks"][0]) >= RANK_KEYS
    assert d["against"] is None and d["diff"] is None
    both = analyse_cluster("a", [summary(0)], against=("b", [summary(0), summary(1)])).to_dict()
    assert both["against"]["run"] == "b" and isinstance(both["diff"], list)
