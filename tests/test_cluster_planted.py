"""Planted faults in generated clusters (bench/gen_cluster.py, from the corpus's real 2-rank
Ascend run): at 8 and 64 ranks the planted slow rank and slow link are named, with the right
metric and phase, and a clean cluster of the same size names none.  Engine level: each rank is
summarised from its light files (summarise_worker), then analyse_cluster.  1,024 ranks are the
bench's (bench/cluster_bench.py)."""
from __future__ import annotations

import os
import sys

import pytest

from tb_compare_plugin.analyses.run.cluster import analyse_cluster
from tb_compare_plugin.analyses.run.summarise import summarise_worker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench import gen_cluster  # noqa: E402

SLOW_RANK, EXTRA_MS = 5, 20.0
SLOW_LINK, CUT = (2, 3), 0.7


def analyse(path, n):
    summaries = [summarise_worker(os.path.join(path, f"rank{k}_ascend_pt")) for k in range(n)]
    return analyse_cluster(os.path.basename(path), summaries).to_dict()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if not gen_cluster.DEFAULT_SOURCE.is_dir():
        pytest.skip(f"corpus run missing: {gen_cluster.DEFAULT_SOURCE}")
    out = {}
    base = tmp_path_factory.mktemp("planted")
    for n in (8, 64):
        for kind, extra in (("clean", {}),
                            ("faulty", {"slow_rank": SLOW_RANK, "slow_rank_extra_ms": EXTRA_MS,
                                        "slow_link": SLOW_LINK, "bandwidth_cut": CUT})):
            dest = base / f"{kind}{n}"
            gen_cluster.generate(gen_cluster.Plan(ranks=n, steps=2, seed=11, **extra), dest)
            out[(kind, n)] = analyse(str(dest), n)
    return out


@pytest.mark.parametrize("n", [8, 64])
def test_clean_cluster_names_no_slow_rank_and_no_slow_link(runs, n):
    d = runs[("clean", n)]
    assert len({r["rank"] for r in d["ranks"]}) == n
    assert d["slow_ranks"] == [], d["slow_ranks"]
    assert d["slow_links"] == [] and not any(l["slow"] for l in d["links"])


@pytest.mark.parametrize("n", [8, 64])
def test_planted_slow_rank_is_named_in_computing(runs, n):
    d = runs[("faulty", n)]
    assert {s["rank"] for s in d["slow_ranks"]} == {SLOW_RANK}, d["slow_ranks"]
    comp = next(s for s in d["slow_ranks"] if s["metric"] == "computing")
    assert comp["phase"] == "computing"
    assert comp["value_ms"] - comp["median_ms"] == pytest.approx(EXTRA_MS, rel=0.1)
    wait = [s for s in d["slow_ranks"] if s["metric"] == "wait"]
    assert wait and wait[0]["phase"] == "computing" and "the other ranks wait for it" in wait[0]["reason"]
    assert d["summary"]["slowest_rank"]["rank"] == SLOW_RANK


@pytest.mark.parametrize("n", [8, 64])
def test_planted_slow_link_is_named(runs, n):
    d = runs[("faulty", n)]
    assert [(s["src_rank"], s["dst_rank"]) for s in d["slow_links"]] == [SLOW_LINK], d["slow_links"]
    s = d["slow_links"][0]
    assert s["transport"] == "HCCS" and s["ratio"] == pytest.approx(1 - CUT, rel=0.1)
    assert {(l["src_rank"], l["dst_rank"]) for l in d["links"] if l["slow"]} == {SLOW_LINK}
    # the heatmap's pairs: one per (src, dst, transport), the planted one slow and slowest of HCCS
    pairs = d["link_pairs"]
    assert len({(p["src_rank"], p["dst_rank"], p["transport"]) for p in pairs}) == len(pairs)
    assert [(p["src_rank"], p["dst_rank"]) for p in pairs if p["slow"]] == [SLOW_LINK]
    hccs = [p for p in pairs if p["transport"] == "HCCS"]
    assert min(hccs, key=lambda p: p["bandwidth_gbps"])["src_rank"] == SLOW_LINK[0]
