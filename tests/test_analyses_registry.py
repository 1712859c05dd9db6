"""The registry of analyses: the built-in views are on it, and a toy analysis added through
the registry alone (tests/toy_analysis.py) appears in the CLI JSON, a route, the `analyses`
listing and the workbook, with nothing else changed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import openpyxl
import pytest

from tb_compare_plugin import analyses as reg
from tb_compare_plugin.analyses import Analysis, Column

from conftest import SAMPLES
from test_plugin_routes import PREFIX, make_client

HERE = Path(__file__).parent
BASE = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
TARGET = SAMPLES / "target_npu" / "rank0_ascend_pt"
PAIR = {"baseline": "baseline_gpu/worker0", "target": "target_npu/rank0_ascend_pt"}
BUILTIN = ["kernel", "api", "operator", "operator_pairs", "module", "memory", "memory_peak"]


@pytest.fixture
def toy():
    import toy_analysis
    reg.register(toy_analysis.ANALYSIS, replace=True)
    yield toy_analysis
    reg.unregister(toy_analysis.NAME)


def test_builtin_views_are_registered_route_only():
    got = [a.name for a in reg.analyses()]
    assert got[:len(BUILTIN)] == BUILTIN
    assert all(a.outputs == {"route"} for a in reg.analyses() if a.name in BUILTIN)
    assert not reg.analyses("json") and not reg.analyses("sheet")


def test_registry_refuses_bad_entries():
    with pytest.raises(ValueError):
        Analysis("Bad Name", "x", lambda c: None, ())
    with pytest.raises(ValueError):
        Analysis("ok", "x", lambda c: None, (), needs={"gpus"})
    with pytest.raises(ValueError):
        reg.register(Analysis("kernel", "again", lambda c: None, (Column("name", "N"),)))
    with pytest.raises(KeyError, match="unknown analysis"):
        reg.get("nope")


def _cli(*args, cwd, analyses="toy_analysis"):
    """The real tb-compare command, with the toy analysis switched on from outside the package."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
               TB_COMPARE_ANALYSES=analyses)
    return subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def test_toy_analysis_in_cli_json_and_workbook(tmp_path):
    if not BASE.exists():
        pytest.skip("samples not generated")
    out, book = tmp_path / "out.json", tmp_path / "out.xlsx"
    r = _cli(BASE, TARGET, "--json", out, "--xlsx", book, "-q", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    body = json.loads(out.read_text())
    toy = body["analyses"]["toy_table_rows"]
    assert toy["columns"] == ["name", "b_rows", "t_rows", "diff_rows"]
    rows = {row["name"]: row for row in toy["rows"]}
    assert rows["kernels"]["b_rows"] > 0 and rows["kernels"]["t_rows"] > 0
    wb = openpyxl.load_workbook(book, read_only=True)
    assert wb.sheetnames[-1] == "Toy table rows"
    cells = list(wb["Toy table rows"].iter_rows(min_row=3, values_only=True))
    assert list(cells[0]) == ["Table", "Base Rows", "Target Rows", "Diff Rows"]
    sheet = {row[0]: row for row in cells[1:]}
    assert sheet["kernels"][1] == rows["kernels"]["b_rows"]
    # without the toy module: no "analyses" key, no extra sheet (the built-ins are unchanged)
    r = _cli(BASE, TARGET, "--json", out, "-q", "--no-progress", cwd=tmp_path, analyses="")
    assert r.returncode == 0, r.stderr
    assert "analyses" not in json.loads(out.read_text())
    # an add-on that cannot be used is skipped with a warning naming it, and the run goes on
    r = _cli(BASE, TARGET, "--json", out, "-q", "--no-progress", cwd=tmp_path, analyses="no_such_module")
    assert r.returncode == 0 and "no_such_module" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "analyses" not in json.loads(out.read_text())


def _poll(c, path, body):
    for _ in range(600):
        r = c.post(PREFIX + path, data=json.dumps(body), content_type="application/json")
        if r.status_code != 202:
            return r
        time.sleep(0.1)
    raise AssertionError(f"{path} still 202")


def test_toy_analysis_in_routes(toy, tmp_path, monkeypatch):
    if not BASE.exists():
        pytest.skip("samples not generated")
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    c = make_client(SAMPLES)
    listed = json.loads(c.get(PREFIX + "/analyses").get_data())["analyses"]
    names = [a["name"] for a in listed]
    assert names[:len(BUILTIN)] == BUILTIN and toy.NAME in names
    entry = next(a for a in listed if a["name"] == toy.NAME)
    assert [col["key"] for col in entry["columns"]] == ["name", "b_rows", "t_rows", "diff_rows"]
    r = _poll(c, "/compare/" + toy.NAME, {**PAIR, "sort": "name", "order": "asc"})
    assert r.status_code == 200, r.get_data()
    page = json.loads(r.get_data())
    assert page["columns"][0] == {"key": "name", "label": "Table", "type": "text"}
    assert [row["name"] for row in page["rows"]] == sorted(row["name"] for row in page["rows"])
    r = _poll(c, "/compare/overall", PAIR)
    assert r.status_code == 200
    assert toy.NAME in json.loads(r.get_data())["analyses"]
    r = _poll(c, "/compare/xlsx", PAIR)
    assert r.status_code == 200
    import io
    wb = openpyxl.load_workbook(io.BytesIO(r.get_data()), read_only=True)
    assert "Toy table rows" in wb.sheetnames
    # with a pair, the listing says which analyses apply
    q = "?baseline=baseline_gpu/worker0&target=target_npu/rank0_ascend_pt"
    listed = {a["name"]: a for a in json.loads(c.get(PREFIX + "/analyses" + q).get_data())["analyses"]}
    assert listed["kernel"]["available"] and listed[toy.NAME]["available"] and not listed["api"]["missing"]


def test_needs_are_checked_against_both_sides(toy, tmp_path, monkeypatch):
    """An analysis whose need neither side holds is refused on the route (404 naming it), left out
    of the workbook with a note, and reported unavailable in the JSON."""
    if not BASE.exists():
        pytest.skip("samples not generated")
    from tb_compare_plugin.comparison import Comparison
    from tb_compare_plugin.loaders import load
    from tb_compare_plugin.presenters.answers_json import analyses_json
    from tb_compare_plugin.presenters.xlsx_workbook import write_workbook
    b = load("trace-json", str(BASE))
    held = reg.registry.capabilities(b)
    lacking = sorted(set(reg.CAPABILITIES) - held)
    assert "kernels" in held and lacking
    need = lacking[0]
    reg.register(Analysis("toy_needy", "Toy needy", toy.table_rows, toy.TOY.columns, needs={need}))
    try:
        cmp = Comparison(b, b)
        assert analyses_json(cmp)["toy_needy"] == {"label": "Toy needy",
                                                   "unavailable": f"neither profile holds {need}"}
        out = tmp_path / "w.xlsx"
        names = write_workbook(cmp, str(out))
        assert "Toy needy" not in names and "Toy table rows" in names
        summary = [r[0] for r in openpyxl.load_workbook(out, read_only=True)["Summary"].iter_rows(values_only=True)]
        assert any(isinstance(x, str) and "Toy needy sheet was not written" in x for x in summary)
    finally:
        reg.unregister("toy_needy")
