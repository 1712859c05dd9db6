"""Ascend step trace: step_trace_time.csv / analysis.db StepTraceTime into the model's
``step_trace`` table, its columns recomputed from the events (engines/step_trace.py) within 0.1%
on every corpus NPU run that has the file (text and db), the reference's cluster_step_trace_time.csv
rows equal to what we load, the NPU steps' parts and phases adding up, and bad cells reported.
One parse per run (module cache).
"""
from __future__ import annotations

import csv
import math

import pytest

from conftest import CORPUS, GOLDEN, needs_corpus
from tb_compare_plugin.engines import step_trace
from tb_compare_plugin.engines.step_breakdown import role_pieces
from tb_compare_plugin.engines.steps import BREAKDOWN, PHASES, compare_steps, side_steps
from tb_compare_plugin.loaders import ascend_step_trace, load
from tb_compare_plugin.model import ProfileMeta
from tb_compare_plugin.model.profile import STEP_TRACE_COLUMNS

pytestmark = needs_corpus

RUNS = [(f"npu/alexnet_ddp_2rank_{lvl}/rank{r}_ascend_pt", "ascend-db" if lvl.startswith("db") else "ascend-text")
        for lvl in ("level0", "level1", "db_level0", "db_level1") for r in (0, 1)]
HEADERS = {"Computing": "computing", "Communication(Not Overlapped)": "communication_not_overlapped",
           "Overlapped": "overlapped", "Communication": "communication", "Free": "free", "Stage": "stage",
           "Bubble": "bubble",
           "Communication(Not Overlapped and Exclude Receive)": "communication_not_overlapped_and_exclude_receive",
           "Preparing": "preparing"}
REL = 1e-3                       # the 0.1%
ABS_NS = 1000.0                  # values of ~0 (Bubble): 1 µs


_CACHE: dict = {}


@pytest.fixture(scope="module")
def run():
    def get(rel, fmt):
        if rel not in _CACHE:
            _CACHE[rel] = load(fmt, str(CORPUS / rel))
        return _CACHE[rel]
    yield get
    _CACHE.clear()


@pytest.mark.parametrize("rel,fmt", RUNS, ids=[r[0].split("/", 1)[1] for r in RUNS])
def test_step_trace_recomputed_from_events_within_0_1_percent(rel, fmt, run):
    p = run(rel, fmt)
    filed = step_trace.from_file(p)
    assert filed, f"{rel}: no step trace loaded ({p.meta.warnings})"
    computed, lanes = step_trace.from_events(p, role_pieces(p))
    assert lanes in ("overlap", "kernels")
    assert set(filed) <= set(computed)
    off = []
    for sid, row in filed.items():
        for c in STEP_TRACE_COLUMNS:
            a, b = row[c], computed[sid][c]
            if a is None or abs(a - b) > max(ABS_NS, REL * abs(a)):
                off.append((sid, c, a, b))
    assert not off, off


@pytest.mark.parametrize("rel,fmt", RUNS, ids=[r[0].split("/", 1)[1] for r in RUNS])
def test_npu_steps_expose_the_file_and_add_up(rel, fmt, run):
    p = run(rel, fmt)
    side = side_steps(p)
    assert [r.step for r in side.steps] == [50]
    r = side.steps[0]
    assert r.step_trace_source == "file"
    assert set(r.step_trace_ns) == set(STEP_TRACE_COLUMNS)
    assert sum(r.breakdown_ns[k] for k in BREAKDOWN) == r.duration_ns
    assert sum(r.phases_ns[k] for k in PHASES) == r.duration_ns
    # the DDP all-reduce dominates these AlexNet steps: NPU collectives are Communication
    assert r.breakdown_ns["communication"] > r.breakdown_ns["kernel"]
    # the iteration gap starts at the step start: it is Preparing (host start -> first task),
    # less the part of it before the device range
    assert r.phases_ns["iteration_gap"] <= r.step_trace_ns["preparing"] + 1e6
    d = side.to_dict()["steps"][0]
    assert d["step_trace_source"] == "file"
    assert d["step_trace_ms"]["computing"] == pytest.approx(r.step_trace_ns["computing"] / 1e6, abs=1e-6)


@pytest.mark.parametrize("lvl", ["level0", "level1"])
def test_cluster_golden_rows_equal_the_loaded_files(lvl, run):
    path = GOLDEN / "cluster" / f"alexnet_ddp_2rank_{lvl}" / "cluster_step_trace_time.csv"
    if not path.exists():
        pytest.skip("cluster golden absent")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows
    for row in rows:
        rank = int(row["Index"])
        filed = step_trace.from_file(run(f"npu/alexnet_ddp_2rank_{lvl}/rank{rank}_ascend_pt", "ascend-text"))
        got = filed[int(row["Step"])]
        for head, col in HEADERS.items():
            assert got[col] == pytest.approx(float(row[head]) * 1000, abs=1e-3), (rank, head)


def test_one_step_npu_pair_has_unknown_noise(run):
    a = run(RUNS[0][0], RUNS[0][1])
    b = run(RUNS[4][0], RUNS[4][1])
    sc = compare_steps(a, b)
    assert all(m.within_noise is None for m in sc.metrics)
    assert sc.top_differences()                           # ranked all the same, by size


def test_bad_cells_become_empty_with_a_warning(tmp_path):
    f = tmp_path / "step_trace_time.csv"
    f.write_text("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
                 "Communication(Not Overlapped and Exclude Receive),Preparing\n"
                 "3,1.5,2,0.5,2.5,oops,10,0,2,\n"
                 "x,1,1,1,1,1,1,1,1,1\n")
    meta = ProfileMeta(device="NPU")
    t = ascend_step_trace.from_csv(str(f), meta)
    assert list(t["step"]) == [3]
    assert t["computing_ns"].iat[0] == 1500.0
    assert math.isnan(t["free_ns"].iat[0]) and math.isnan(t["preparing_ns"].iat[0])
    text = " | ".join(meta.warnings)
    assert str(f) in text and "Free" in text and "Preparing" in text and "dropped" in text
    assert str(f) in meta.files
