"""Cluster figures against the reference's ``msprof-analyze cluster`` outputs on the corpus's
2-rank NPU runs (../shared/spec/golden/cluster): per-rank step figures
(cluster_step_trace_time.csv, cluster_time_summary.csv) and links (cluster_communication_matrix)
within 0.1 %, except the differences documented in docs/deviations.md's cluster-deviations block
(read here, so prose and test name the same figures).  Each run is summarised once per module."""
from __future__ import annotations

import csv
import json
import math

import pytest

from conftest import CORPUS, GOLDEN, deviations_block, needs_corpus, needs_golden
from tb_compare_plugin.analyses.run.cluster import analyse_cluster
from tb_compare_plugin.analyses.run.summarise import summarise_worker

pytestmark = [needs_corpus, needs_golden]
REL = 1e-3
RUNS = ("alexnet_ddp_2rank_level0", "alexnet_ddp_2rank_level1", "alexnet_ddp_2rank_db_level1")


def deviations() -> dict:
    return deviations_block("cluster")


@pytest.fixture(scope="module")
def results() -> dict:
    out = {}
    for run in RUNS:
        summaries = [summarise_worker(str(CORPUS / "npu" / run / f"rank{r}_ascend_pt"))
                     for r in (0, 1)]
        out[run] = analyse_cluster(run, summaries).to_dict()
    return out


def close(a, b) -> bool:
    if a is None or b is None:
        return False
    return math.isclose(float(a), float(b), rel_tol=REL, abs_tol=1e-9)


def check(run: str, file: str, mismatches: dict) -> None:
    """Fail unless the mismatching columns are exactly those documented for (run, file)."""
    documented = set(deviations().get(run, {}).get(file, {}))
    found = set(mismatches)
    assert found <= documented, f"{run}/{file}: undocumented differences {sorted(found - documented)}: " \
                                f"{ {k: mismatches[k] for k in found - documented} }"
    assert documented <= found, f"{run}/{file}: documented differences no longer differ: " \
                                f"{sorted(documented - found)} (update docs/deviations.md)"


STEP_TRACE = {"Computing": "computing_ms", "Communication(Not Overlapped)": "communication_not_overlapped_ms",
              "Overlapped": "overlapped_ms", "Communication": "communication_ms", "Free": "free_ms",
              "Bubble": "bubble_ms", "Preparing": "preparing_ms"}


@pytest.mark.parametrize("run", ["alexnet_ddp_2rank_level0", "alexnet_ddp_2rank_level1"])
def test_cluster_step_trace_time(results, run):
    rows = list(csv.DictReader(open(GOLDEN / "cluster" / run / "cluster_step_trace_time.csv")))
    ours = {(r["rank"], r["step"]): r for r in results[run]["ranks"]}
    assert len(rows) == len(ours) == 2
    bad: dict = {}
    for g in rows:
        mine = ours[(int(g["Index"]), int(g["Step"]))]
        for col, key in STEP_TRACE.items():
            if not close(float(g[col]) / 1000, mine[key]):
                bad.setdefault(col, []).append((g["Index"], float(g[col]) / 1000, mine[key]))
    check(run, "cluster_step_trace_time.csv", bad)


TIME_SUMMARY = {"Step Time(us)": "step_time_ms", "Computation(us)": "computing_ms",
                "Communication Not Overlap Computation(us)": "communication_not_overlapped_ms",
                "Communication Overlap Computation(us)": "overlapped_ms",
                "Communication(us)": "communication_ms", "Free(us)": "free_ms",
                "Communication Wait Stage Time(us)": "wait_ms",
                "Communication Transmit Stage Time(us)": "transmit_ms"}


def test_cluster_time_summary(results):
    run = "alexnet_ddp_2rank_db_level1"
    rows = list(csv.DictReader(open(GOLDEN / "cluster" / run / "cluster_time_summary.csv")))
    ours = {(r["rank"], r["step"]): r for r in results[run]["ranks"]}
    bad: dict = {}
    for g in rows:
        mine = ours[(int(g["Rank"]), int(g["Step"]))]
        for col, key in TIME_SUMMARY.items():
            if not close(float(g[col]) / 1000, mine[key]):
                bad.setdefault(col, []).append((g["Rank"], float(g[col]) / 1000, mine[key]))
    check(run, "cluster_time_summary.csv", bad)


def _link_check(run, file, golden_rows, results):
    ours = {(l["step"], l["collective"], l["src_rank"], l["dst_rank"]): l
            for l in results[run]["links"]}
    bad: dict = {}
    for (step, coll, src, dst), g in golden_rows:
        mine = ours.get((step, coll, src, dst))
        if mine is None:
            bad.setdefault("missing", []).append((step, coll, src, dst))
            continue
        if g["transport"] != mine["transport"]:
            bad.setdefault("transport", []).append((coll, src, dst))
        for k in ("size_mb", "time_ms", "bandwidth_gbps"):
            if not close(g[k], mine[k]):
                bad.setdefault(k, []).append((coll, src, dst, g[k], mine[k]))
    assert len(ours) == len(golden_rows)
    check(run, file, bad)


def test_communication_matrix_text(results):
    run = "alexnet_ddp_2rank_level1"
    data = json.load(open(GOLDEN / "cluster" / run / "cluster_communication_matrix.json"))
    rows = []
    for steps in data.values():
        for step, ops in steps.items():
            for key, links in ops.items():
                name = key.partition("@")[0]
                if name == "Total Op Info":      # the reference's copy of the -total rows
                    continue
                for link, v in links.items():
                    src, dst = map(int, link.split("-"))
                    rows.append(((int(step[4:]), name, src, dst),
                                 {"transport": v["Transport Type"], "size_mb": v["Transit Size(MB)"],
                                  "time_ms": v["Transit Time(ms)"],
                                  "bandwidth_gbps": v["Bandwidth(GB/s)"]}))
    _link_check(run, "cluster_communication_matrix.json", rows, results)


def test_communication_matrix_db(results):
    run = "alexnet_ddp_2rank_db_level1"
    rows = []
    for g in csv.DictReader(open(GOLDEN / "cluster" / run / "cluster_communication_matrix.csv")):
        if g["hccl_op_name"] == "Total Op Info":     # the reference's copy of the -total rows
            continue
        rows.append(((int(g["step"][4:]), g["hccl_op_name"], int(g["src_rank"]), int(g["dst_rank"])),
                     {"transport": g["transport_type"], "size_mb": float(g["transit_size"]),
                      "time_ms": float(g["transit_time"]), "bandwidth_gbps": float(g["bandwidth"])}))
    _link_check(run, "cluster_communication_matrix.csv", rows, results)


def test_link_pairs_are_the_total_rows(results):
    """The heatmap's pairs take the profiler's allreduce-total rows (the reference's Total Op Info)."""
    run = "alexnet_ddp_2rank_level1"
    total = {(l["src_rank"], l["dst_rank"]): l for l in results[run]["links"]
             if l["collective"] == "allreduce-total"}
    pairs = results[run]["link_pairs"]
    assert len(pairs) == 4
    for p in pairs:
        t = total[(p["src_rank"], p["dst_rank"])]
        assert (p["transport"], p["size_mb"], p["time_ms"]) == (t["transport"], t["size_mb"], t["time_ms"])


def test_two_ranks_name_no_slow_rank(results):
    # the reference's slow_rank: "No slow rank found" (two ranks are too few for a test)
    for run in RUNS:
        assert results[run]["slow_ranks"] == []
        assert not any(l["slow"] for l in results[run]["links"])


@pytest.fixture(scope="module")
def gpu() -> dict:
    summaries = [summarise_worker(str(CORPUS / "gpu" / "hta_2rank" / f"rank{r}.pt.trace.json.gz"))
                 for r in (0, 1)]
    return analyse_cluster("hta_2rank", summaries).to_dict()


def test_gpu_two_ranks_from_the_full_parse(gpu):
    """No reference cluster output exists for GPU traces: the reduction's own invariants, the
    cross-rank wait/transmit split, and the ring-peer links with their warning."""
    assert [(r["rank"], r["step"]) for r in gpu["ranks"]] == [(0, 551), (0, 552), (1, 551), (1, 552)]
    for r in gpu["ranks"]:
        assert r["communication_ms"] == pytest.approx(r["communication_not_overlapped_ms"] + r["overlapped_ms"])
        assert r["computing_ms"] > 100 and r["bubble_ms"] is None
        assert r["wait_ms"] + r["transmit_ms"] == pytest.approx(
            sum(c["elapse_ms"] for c in gpu["collectives"]
                if c["rank"] == r["rank"] and c["step"] == r["step"]))
    # both ranks share each collective's transmit time (its shortest elapse)
    t = {(r["rank"], r["step"]): r["transmit_ms"] for r in gpu["ranks"]}
    assert t[(0, 551)] == t[(1, 551)] and t[(0, 552)] == t[(1, 552)]
    assert {(l["src_rank"], l["dst_rank"], l["transport"]) for l in gpu["links"]} == {(0, 1, "NCCL"), (1, 0, "NCCL")}
    assert any("next rank of the group's ring" in w for w in gpu["warnings"])
    assert any("without message size" in w for w in gpu["warnings"])     # a 2023 trace: no nelems
    assert gpu["slow_ranks"] == []
