"""Issue 14, item 8 (backend): the workbook gets our Operators sheet after the reference's sheets
even when module data put the Module sheets in the operator sheets' place; the tab's answers
(errors, warnings) and its workbooks' banners name paths relative to the logdir; per-instance operator rows carry the ops'
call stacks (the source the Module view reads)."""
from __future__ import annotations

import io
import json
import time

import openpyxl
import pytest

from conftest import CORPUS, needs_corpus
from test_plugin_routes import PREFIX, make_client


def _post(c, path, body, code=200, raw=False):
    for _ in range(2400):
        r = c.post(PREFIX + path, data=json.dumps(body), content_type="application/json")
        if r.status_code != 202:
            assert r.status_code == code, (path, r.status_code, r.get_data()[:500])
            return r.get_data() if raw else json.loads(r.get_data())
        time.sleep(0.05)
    raise AssertionError(f"{path} never finished")


def _ids(c, n: int, run: str | None = None) -> list:
    for _ in range(200):
        runs = json.loads(c.get(PREFIX + "/runs").get_data())
        ids = [w["id"] for r in runs["runs"] for w in r["workers"] if run is None or r["name"] == run]
        if len(ids) >= n:
            return sorted(ids)
        time.sleep(0.05)
    raise AssertionError(f"runs never listed {n} workers")


@pytest.fixture(scope="module")
def npu_pair(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path_factory.mktemp("wb_stacks")))
    c = make_client(CORPUS / "npu")
    ids = _ids(c, 2, "alexnet_ddp_2rank_level1")
    yield c, {"baseline": ids[0], "target": ids[1]}
    mp.undo()


@needs_corpus
def test_operators_sheet_after_the_reference_sheets_with_module_data(npu_pair):
    c, pair = npu_pair
    wb = openpyxl.load_workbook(io.BytesIO(_post(c, "/compare/xlsx", pair, raw=True)), read_only=True)
    names = wb.sheetnames
    assert "ModuleCompareStatistic" in names and "OperatorCompareStatistic" not in names
    assert "Operators" in names
    last_reference = max(names.index(s) for s in ("OverallMetrics", "ModuleCompareStatistic", "ModuleCompare",
                                                  "ApiCompare") if s in names)
    assert names.index("Operators") > last_reference
    banner = [v for v in next(wb["ModuleCompareStatistic"].iter_rows(values_only=True)) if v]
    # the banners name the profiles relative to the logdir (the ids here are those paths)
    assert banner == [f"Base Profiling: {pair['baseline']}", f"Comparison Profiling: {pair['target']}"], banner
    rows = [list(r) for r in wb["Operators"].iter_rows(values_only=True)]
    header = rows[2]
    assert header[0] == "Operator" and "Device Diff (ms)" in header
    table = _post(c, "/compare/operator", {**pair, "limit": 1000})
    assert len(rows) - 3 == table["total"]


@needs_corpus
def test_operator_pairs_carry_call_stacks(npu_pair):
    c, pair = npu_pair
    page = _post(c, "/compare/operator_pairs", {**pair, "limit": 1000})
    stacks = [r.get("b_call_stack") for r in page["rows"]]
    assert any(s and "main.py" in s for s in stacks), stacks[:5]
    assert all(s is None or isinstance(s, str) for s in stacks)


def test_errors_and_runs_show_paths_relative_to_the_logdir(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    logdir = tmp_path / "logs"
    (logdir / "run1").mkdir(parents=True)
    (logdir / "run1" / "worker0.pt.trace.json").write_text('{"traceEvents": [ {"ph": "X", "name": "a", ')
    (logdir / "run1" / "worker1.pt.trace.json").write_text(
        '{"traceEvents": [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 1, "dur": 5, "pid": 1, "tid": 1}]}')
    c = make_client(logdir)
    ids = _ids(c, 2)
    body = _post(c, "/compare/overall", {"baseline": ids[0], "target": ids[1]}, code=422)
    assert str(tmp_path) not in body["error"]
    assert body["error"].startswith("run1/worker0.pt.trace.json: "), body["error"]
    runs = json.loads(c.get(PREFIX + "/runs").get_data())
    errors = [w["error"] for r in runs["runs"] for w in r["workers"] if w.get("error")]
    assert errors and all(e.startswith("run1/worker0.pt.trace.json: ") for e in errors), errors
    assert str(tmp_path) not in json.dumps({k: v for k, v in runs.items() if k != "env"})
