"""Graph-mode host overhead (issue 17 item 2) on samples/'s graph-mode pair (samples/gen/graph_mode.py,
samples/graph_expected.json): the planted TorchAir input-conversion regression is the top host-overhead
difference at its planted size (±2%) in the engine, the route's overview JSON and the CLI's JSON; the
parts add up to each graph run's host time; a side without graph-mode events is null; the workbook's
HostOverhead sheet; the tab's overview shows the row group and the hint (one page load in real
Chromium, screenshot test-artifacts/host_overhead_overview.png).  One parse per run (module fixture).
"""
from __future__ import annotations

import json

import pytest

from cli_inproc import run_cli
from conftest import ROOT, SAMPLES
from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.engines.host_overhead import PARTS, compare_host_overhead, side_host_overhead
from tb_compare_plugin.loaders import load

GRAPH = json.loads((SAMPLES / "graph_expected.json").read_text())
PLANT = GRAPH["planted"]
BASE, TARGET = "graph_mode/base/rank0_ascend_pt", "graph_mode/target/rank0_ascend_pt"
SIDE_KEYS = ("graph_runs", "framework_ms", "torchair_ms", "torchair_python_ms", "torchair_cpp_ms", "ge_ms")


@pytest.fixture(scope="module")
def profiles():
    return {"base": load("ascend-text", str(SAMPLES / BASE)), "target": load("ascend-text", str(SAMPLES / TARGET)),
            "eager": load("ascend-text", str(SAMPLES / "target_npu" / "rank0_ascend_pt"))}


def check_block(block: dict) -> None:
    """The host_overhead block of a JSON answer: both sides as generated, the planted part on top."""
    for who, run in (("baseline", "base"), ("target", "target")):
        side = block[who]
        for k in SIDE_KEYS:
            assert side[k] == pytest.approx(GRAPH[run][k], abs=1e-6), (who, k)
    top = block["differences"][0]
    assert top["part"] == PLANT["part"]
    assert top["diff_ms"] == pytest.approx(PLANT["total_ms"], rel=0.02)
    assert all(abs(d["diff_ms"]) < 0.02 * PLANT["total_ms"] for d in block["differences"][1:])


def test_engine_finds_the_planted_regression(profiles):
    ho = compare_host_overhead(profiles["base"], profiles["target"])
    check_block(ho.to_dict())
    per_run = (ho.target.total_ns("torchair_python") - ho.baseline.total_ns("torchair_python")) / 1e6 / len(ho.target.runs)
    assert per_run == pytest.approx(PLANT["per_graph_run_ms"], rel=0.02)


def test_parts_add_up(profiles):
    side = side_host_overhead(profiles["target"])
    for r in side.runs:
        assert all(v >= 0 for v in r.parts_ns.values())
        d = r.to_dict()
        assert d["torchair_ms"] == pytest.approx(d["torchair_python_ms"] + d["torchair_cpp_ms"])
        assert d["total_ms"] == pytest.approx(sum(d[f"{p}_ms"] for p in PARTS))
    js = side.to_dict()
    assert js["torchair_ms"] == pytest.approx(js["torchair_python_ms"] + js["torchair_cpp_ms"])
    assert js["total_ms"] == pytest.approx(js["framework_ms"] + js["torchair_ms"] + js["ge_ms"])
    per = js["per_step"]
    assert [s["step"] for s in per] == [1, 2, 3, 4]
    assert sum(s["graph_runs"] for s in per) == js["graph_runs"]
    assert sum(s["ge_ms"] for s in per) == pytest.approx(js["ge_ms"])


def test_one_step_is_its_share(profiles):
    one = compare_host_overhead(profiles["base"], profiles["target"], 2, 2).to_dict()
    steps = GRAPH["target"]["steps"]
    assert one["target"]["graph_runs"] == GRAPH["target"]["graph_runs"] // steps
    assert one["differences"][0]["diff_ms"] == pytest.approx(PLANT["total_ms"] / steps, rel=0.02)


def test_a_side_without_graph_mode_events_is_null(profiles):
    ho = compare_host_overhead(profiles["eager"], profiles["target"]).to_dict()
    assert ho["baseline"] is None and ho["target"]["graph_runs"] == GRAPH["target"]["graph_runs"]
    assert ho["differences"] == []
    assert compare_host_overhead(profiles["eager"], profiles["eager"]).to_dict()["target"] is None


def test_workbook_sheet(profiles, tmp_path):
    from tb_compare_plugin.presenters.xlsx_workbook import write_workbook
    import openpyxl
    cmp = Comparison(profiles["base"], profiles["target"])
    names = write_workbook(cmp, tmp_path / "g.xlsx", sheets=["overall"])
    assert "HostOverhead" in names
    ws = openpyxl.load_workbook(tmp_path / "g.xlsx")["HostOverhead"]
    rows = {r[0]: r for r in ws.iter_rows(values_only=True) if r and isinstance(r[0], str)}
    assert rows["TorchAir Python (input handling)"][7] == pytest.approx(PLANT["total_ms"], rel=0.02)


def cli_json(base, target):
    r = run_cli(SAMPLES / base, SAMPLES / target, "--json", "-", "--quiet")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def check_overview(payload: dict) -> None:
    check_block(payload["host_overhead"])
    group = [m for m in payload["overall_metrics"] if m.get("host_overhead")]
    assert [m["host_overhead"] for m in group] == ["total", "framework", "torchair", "torchair_python",
                                                   "torchair_cpp", "ge"]
    assert group[0]["depth"] == 0 and group[0]["unit"] == "ms host"
    assert group[3]["diff_ms"] == pytest.approx(PLANT["total_ms"], rel=0.02)
    assert any(n.startswith("Graph-mode host overhead dominates") and "TorchAir Python" in n
               for n in payload["notes"])


def test_cli_json_and_route():
    cli = cli_json(BASE, TARGET)
    check_overview(cli)
    from test_plugin_routes import PREFIX, make_client
    c = make_client(SAMPLES)
    r = c.post(PREFIX + "/compare/overall", data=json.dumps({"baseline": BASE, "target": TARGET}),
               content_type="application/json")
    assert r.status_code == 200, r.get_data()[:300]
    route = json.loads(r.get_data())
    check_overview(route)
    assert route["host_overhead"] == cli["host_overhead"]
    eager = cli_json("target_npu/rank0_ascend_pt", TARGET)
    assert eager["host_overhead"]["baseline"] is None
    assert eager["host_overhead"]["target"]["graph_runs"] == GRAPH["target"]["graph_runs"]


def test_browser_overview_shows_the_group_and_the_hint(tmp_path):
    from browser_util import CHROMIUM, LAUNCH_ARGS, ConsoleWatch, plugin_frame, shoot
    from tbserver import TensorBoard
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python) is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    (tmp_path / "graph_mode").symlink_to(SAMPLES / "graph_mode")
    p = "p.profile_compare."
    with TensorBoard(tmp_path) as tb, playwright_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        page = b.new_page(viewport={"width": 1280, "height": 1400})
        console = ConsoleWatch(page)
        page.goto(f"{tb.url.rstrip('/')}/#profile_compare&{p}b={BASE}&{p}t={TARGET}&{p}v=overview")
        f = plugin_frame(page)
        f.locator("#pc-content table.metrics").first.wait_for(timeout=180000)
        table = f.locator("#pc-content table.metrics").first.inner_text()
        notes = f.locator("#pc-content ul.notes").first.inner_text()
        hints = f.locator("#pc-content ul.hints").first.inner_text()
        ART = ROOT / "test-artifacts"
        ART.mkdir(exist_ok=True)
        shoot(page, ART / "host_overhead_overview.png")
        b.close()
    assert "Host Overhead (graph mode)" in table and "TorchAir Python (input handling)" in table
    assert "ms host" in table
    assert "Graph-mode host overhead dominates" in notes
    assert "Host Overhead (graph mode) +3.000 ms" in hints
    assert not console.errors()


def test_steps_route_per_step_parts():
    """The Steps view's block: per step, each side's parts; the planted part differs by its share a step."""
    from test_plugin_routes import PREFIX, make_client
    c = make_client(SAMPLES)
    r = c.post(PREFIX + "/compare/steps", data=json.dumps({"baseline": BASE, "target": TARGET}),
               content_type="application/json")
    assert r.status_code == 200, r.get_data()[:300]
    ho = json.loads(r.get_data())["host_overhead"]
    steps = GRAPH["target"]["steps"]
    runs = GRAPH["target"]["graph_runs"] // steps
    assert [s["step"] for s in ho["baseline"]] == [s["step"] for s in ho["target"]] == list(range(1, steps + 1))
    for b, t in zip(ho["baseline"], ho["target"]):
        assert b["graph_runs"] == t["graph_runs"] == runs
        assert t["torchair_python_ms"] - b["torchair_python_ms"] == pytest.approx(PLANT["per_graph_run_ms"] * runs,
                                                                                  rel=0.02)
        for part in ("framework_ms", "torchair_cpp_ms", "ge_ms"):
            assert t[part] == pytest.approx(b[part], abs=1e-9)
    eager = c.post(PREFIX + "/compare/steps", data=json.dumps({"baseline": "target_npu/rank0_ascend_pt",
                                                                "target": TARGET}), content_type="application/json")
    assert json.loads(eager.get_data())["host_overhead"]["baseline"] is None
