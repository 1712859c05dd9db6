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
    assert back.steps["computing"].tolist() == [10e6] and back.steps["wait"].tolist() == [1e6]
    import pickle
    assert pickle.loads(pickle.dumps(back)) == s       # Dask ships them pickled


def test_result_has_the_issue_keys():
    d = analyse_cluster("run", [summary(r) for r in range(4)]).to_dict()
    assert KEYS <= set(d)
    assert len(d["ranks"]) == 4 and set(d["ranks"][0]) >= RANK_KEYS
    assert d["against"] is None and d["diff"] is None
    both = analyse_cluster("a", [summary(0)], against=("b", [summary(0), summary(1)])).to_dict()
    assert both["against"]["run"] == "b" and isinstance(both["diff"], list)


# ----------------------------------------------------------------------- synthetic clusters
def cluster(n, slow_rank=None, extra_ms=20.0, slow_link=None, cut=0.25, seed=0):
    """n ranks of a data-parallel job: 100 ms compute, one 30 ms all-reduce per step (the
    others wait for the slowest rank inside it), a ring of HCCS links; jitter of about 1 %.
    ``slow_rank`` computes ``extra_ms`` more; ``slow_link`` (src, dst) moves at ``cut`` of
    the bandwidth."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    steps = (1, 2)
    comp = {(r, s): 100e6 * (1 + 0.01 * rng.standard_normal()) + (extra_ms * 1e6 if r == slow_rank else 0)
            for r in range(n) for s in steps}
    latest_of = {s: max(comp[(q, s)] for q in range(n)) for s in steps}
    for r in range(n):
        st, co, li = {k: [] for k in ("step", "computing", "communication_not_overlapped",
                                       "overlapped", "communication", "free", "step_time",
                                       "preparing", "bubble")}, [], []
        for s in steps:
            latest = latest_of[s]
            elapse = 30e6 + (latest - comp[(r, s)])
            free = 2e6 * (1 + 0.01 * rng.standard_normal())
            for k, v in (("step", s), ("computing", comp[(r, s)]),
                         ("communication_not_overlapped", elapse), ("overlapped", 0.0),
                         ("communication", elapse), ("free", free),
                         ("step_time", comp[(r, s)] + elapse + free), ("preparing", 1e6),
                         ("bubble", 0.0)):
                st[k].append(v)
            co.append({"step": s, "name": f"hcom_allReduce_{s}", "op_type": "collective",
                       "group": "g", "elapse": elapse, "wait": elapse - 30e6,
                       "transmit": 30e6, "bytes": 100e6})
            dst = (r + 1) % n
            t = 100e6 / 20.0 * (1 + 0.02 * rng.standard_normal())   # 100 MB at ~20 GB/s
            if slow_link == (r, dst):
                t /= cut
            li.append({"step": s, "collective": "allreduce-total", "src_rank": r, "dst_rank": dst,
                       "transport": "HCCS", "bytes": 100e6, "time": t, "group": "g"})
            li.append({"step": s, "collective": "allreduce-total", "src_rank": r, "dst_rank": r,
                       "transport": "LOCAL", "bytes": 10e6, "time": 10e6 / 400 * (1 + rng.random()),
                       "group": "g"})
        import pandas as pd
        out.append(RankSummary(rank=r, worker=f"rank{r}", steps=make_table("steps", st),
                               collectives=make_table("collectives", pd.DataFrame(co)),
                               links=make_table("links", pd.DataFrame(li))))
    return out


import pytest  # noqa: E402


@pytest.mark.parametrize("n", [4, 8, 64])
def test_clean_cluster_names_nothing(n):
    d = analyse_cluster("clean", cluster(n)).to_dict()
    assert d["slow_ranks"] == [] and d["slow_links"] == []
    assert not any(l["slow"] for l in d["links"])


@pytest.mark.parametrize("n", [4, 8, 64])
def test_planted_slow_rank_is_named_with_its_phase(n):
    d = analyse_cluster("slow", cluster(n, slow_rank=n // 2 + 1)).to_dict()
    assert d["slow_ranks"], d["slow_ranks"]
    assert {s["rank"] for s in d["slow_ranks"]} == {n // 2 + 1}
    top = next(s for s in d["slow_ranks"] if s["metric"] == "computing")
    assert top["phase"] == "computing" and top["value_ms"] > top["median_ms"] + 15
    metrics = {s["metric"] for s in d["slow_ranks"]}
    assert "computing" in metrics and "wait" in metrics    # it computes more, it waits least
    wait = next(s for s in d["slow_ranks"] if s["metric"] == "wait")
    assert "last to arrive at 2 of 2 collectives" in wait["reason"] and wait["phase"] == "computing"
    assert d["hints"][0].startswith(f"Slow rank first: rank {n // 2 + 1}")
    # the per-rank table carries the cross-rank wait: the slow rank waits 0
    assert all(r["wait_ms"] == 0 for r in d["ranks"] if r["rank"] == n // 2 + 1)


@pytest.mark.parametrize("n", [4, 8, 64])
def test_planted_slow_link_is_named(n):
    d = analyse_cluster("link", cluster(n, slow_link=(1, 2))).to_dict()
    assert [(s["src_rank"], s["dst_rank"], s["transport"]) for s in d["slow_links"]] == [(1, 2, "HCCS")]
    s = d["slow_links"][0]
    assert 0.2 < s["ratio"] < 0.3 and s["slow_collectives"] == 2
    assert {(l["src_rank"], l["dst_rank"]) for l in d["links"] if l["slow"]} == {(1, 2)}
    assert d["slow_ranks"] == []


def test_two_ranks_are_too_few_for_a_slow_rank():
    d = analyse_cluster("two", cluster(2, slow_rank=1, extra_ms=50)).to_dict()
    assert d["slow_ranks"] == []


def test_dixon_and_modified_z():
    import numpy as np
    from tb_compare_plugin.analyses.run import slow_rank
    assert slow_rank.outliers(np.array([10.0, 10.1, 20.0]), "high")[0][0] == 2
    assert slow_rank.outliers(np.array([10.0, 10.1, 10.2]), "high") == []
    v = np.r_[np.full(20, 10.0) + np.linspace(0, 0.2, 20), 12.0]
    got = slow_rank.outliers(v, "high")
    assert [i for i, _, m in got] == [20] and got[0][2] == "modified_z"
    assert slow_rank.outliers(np.r_[np.full(20, 10.0), 9.0], "low")[0][0] == 20   # MAD = 0


def test_cluster_against_cluster_names_the_regressed_phase():
    base = cluster(8)
    target = cluster(16, slow_rank=3, extra_ms=20, seed=1)
    d = analyse_cluster("base", base, against=("target", target)).to_dict()
    assert d["against"]["run"] == "target" and len(d["against"]["summary"]["ranks_listed"]) == 16
    s = d["diff_summary"]
    assert s["base_ranks"] == 8 and s["target_ranks"] == 16
    assert s["slowest_target"]["rank"] == 3
    assert s["only_target_ranks"] == list(range(8, 16))
    # everyone waits for rank 3 in the all-reduce: communication not overlapped grew most
    assert s["phase_regressed"] == "communication_not_overlapped"
    per_rank = [r for r in d["diff"] if r["scope"] == "rank"]
    assert len(per_rank) == 16 and per_rank[8]["step_time_base_ms"] is None
    assert per_rank[3]["base_worker"] == "rank3" and per_rank[3]["target_worker"] == "rank3"
    assert per_rank[8]["base_worker"] is None and per_rank[8]["target_worker"] == "rank8"
    r3 = per_rank[3]
    assert r3["computing_diff_ms"] > 15


def test_hints_name_data_parallel_all_reduce_tail():
    d = analyse_cluster("dp", cluster(8)).to_dict()
    assert any(h.startswith("Data parallel:") for h in d["hints"]), d["hints"]


# ----------------------------------------------------------------------- bad input -> warnings
def test_bad_light_files_are_warnings_naming_the_file(tmp_path):
    from tb_compare_plugin.analyses.run.summarise_ascend import from_text
    out = tmp_path / "rank3_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "step_trace_time.csv").write_text(
        "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
        "Communication(Not Overlapped and Exclude Receive),Preparing\n"
        "7,10.5,abc,1,2,3,4,0,1,2\nxx,1,1,1,1,1,1,1,1,1\n")
    (out / "communication.json").write_text(json.dumps({"step7": {"collective": {
        "hcom_allReduce_1@g": {"Communication Time Info": {"Elapse Time(ms)": 2.0,
                                                           "Transit Time(ms)": -1,
                                                           "Wait Time(ms)": "n/a"}},
        "broken@g": 5}}}))
    (out / "communication_matrix.json").write_text(json.dumps({"step7": {"collective": {
        "allreduce-total@g": {"3-4": {"Transport Type": "HCCS", "Transit Size(MB)": 1.0,
                                      "Transit Time(ms)": 0.1},
                              "bogus": {}}}}}))
    s = from_text(str(out.parent), 3)
    text = "\n".join(s.warnings)
    assert "step_trace_time.csv: 1 row(s) dropped: Step is not a number" in text
    assert "step_trace_time.csv: 1 Communication(Not Overlapped) cell(s) empty or not a number" in text
    assert "communication.json: step7/broken@g is not an object; skipped" in text
    assert "communication.json: 1 Transit Time(ms) value(s) missing, negative or not a number" in text
    assert "communication.json: 1 Wait Time(ms) value(s)" in text
    assert "communication_matrix.json: 1 link(s) not keyed SRC-DST; dropped" in text
    assert "without a ProfilerStep window" in text          # no trace_view.json
    assert s.steps["step"].tolist() == [7] and s.steps["computing"].tolist() == [10500.0]
    assert s.links["src_rank"].tolist() == [3] and s.links["time"].tolist() == [100000.0]
    # the summary survives the round trip with its NaNs
    assert RankSummary.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_a_rank_without_files_is_a_warning_not_an_error(tmp_path):
    from tb_compare_plugin.analyses.run.summarise_ascend import from_text
    (tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    s = from_text(str(tmp_path / "rank0_ascend_pt"), 0)
    assert any("step_trace_time.csv: missing" in w for w in s.warnings)
    d = analyse_cluster("r", [s, summary(1)]).to_dict()
    assert d["summary"]["ranks_without_steps"] == [0] and len(d["ranks"]) == 1


def test_warnings_repeated_by_many_ranks_are_folded():
    from tb_compare_plugin.analyses.run.cluster import fold_warnings
    ss = [RankSummary(rank=r, path=f"/x/rank{r}", warnings=[f"/x/rank{r}/a.csv: 1 cell empty"])
          for r in range(10)]
    got = fold_warnings(ss)
    assert got == ["/x/rank0/a.csv: 1 cell empty (and the same on 9 other ranks: 1, 2, 3, 4, 5, "
                   "6, 7, 8 ...)"]


def test_db_without_analysis_db_falls_back_to_communication_op(tmp_path):
    import shutil
    from conftest import CORPUS
    from tb_compare_plugin.analyses.run.summarise_ascend import from_db
    src = CORPUS / "npu" / "alexnet_ddp_2rank_db_level1" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    if not src.is_dir():
        pytest.skip("corpus missing")
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copyfile(src / "ascend_pytorch_profiler_0.db", out / "ascend_pytorch_profiler_0.db")
    s = from_db(str(out / "ascend_pytorch_profiler_0.db"), 0)
    assert any("analysis.db: missing" in w for w in s.warnings)
    assert s.steps.empty and len(s.collectives) == 4
    assert s.collectives["elapse"].tolist()[0] == 88750993.0      # COMMUNICATION_OP window
    assert s.collectives["step"].tolist() == [50] * 4                # by STEP_TIME
