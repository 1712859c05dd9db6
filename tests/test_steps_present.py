"""Where the step comparison shows, outside the tab: the ``compare/steps`` route, ``"steps"`` in
``tb-compare --json``, the ``--steps`` table, the StepCompare / Efficiency sheets and the
overview's step hints all carry the same figures, on samples/ and on real corpus runs; failures
are one line.  Each pair is parsed once per module (the CLI's parsed-profile cache is the
session's TB_COMPARE_CACHE_DIR, which the plugin shares)."""
from __future__ import annotations

import io
import json
import math
import subprocess

import openpyxl
import pytest

import cli_inproc
from conftest import CORPUS, SAMPLES, needs_corpus
from test_plugin_routes import PREFIX, make_client, post_until_done

from tb_compare_plugin import cli

SAMPLE_IDS = {"baseline": "baseline_gpu/worker0", "target": "target_npu/rank0_ascend_pt"}
SAMPLE_PATHS = (SAMPLES / "baseline_gpu/worker0.pt.trace.json", SAMPLES / "target_npu/rank0_ascend_pt")
GPU_RUN = "gpu/kineto_resnet50_num_workers_0"
GPU_FILES = ("worker0.1623143089861.pt.trace.json.gz", "worker0.1623143566756.pt.trace.json.gz")
NPU_RUN = "npu/alexnet_ddp_2rank_level1"


def run_cli(*args) -> tuple[int, str, str]:
    """``tb-compare`` (its ``main``, in this process: cli_inproc): (exit code, stdout, stderr)."""
    r = cli_inproc.run_cli(*args, "--no-progress")
    return r.returncode, r.stdout, r.stderr


def one_line_error(code: int, err: str) -> str:
    assert code == cli.EXIT_FAIL, err
    err = err.strip()
    assert err.startswith("tb-compare: error:") and len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


class Pair:
    """One pair seen through every front door: the route's answer, the CLI's JSON and --steps
    text, and the workbook the CLI wrote."""

    def __init__(self, logdir, ids: dict, paths: tuple, tmp) -> None:
        c = make_client(logdir)
        self.route = post_until_done(c, "/compare/steps", ids)
        self.overall = post_until_done(c, "/compare/overall", ids)
        xlsx, out = tmp / "cmp.xlsx", tmp / "cmp.json"
        code, self.text, err = run_cli(*paths, "--json", out, "--xlsx", xlsx, "--steps", "-q")
        assert code == 0, err
        self.cli = json.loads(out.read_text())
        self.book = openpyxl.load_workbook(xlsx, read_only=True)
        self.xlsx = xlsx


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return Pair(SAMPLES, SAMPLE_IDS, SAMPLE_PATHS, tmp_path_factory.mktemp("samples"))


@pytest.fixture(scope="module")
def corpus_gpu(tmp_path_factory):
    if not CORPUS.is_dir():
        pytest.skip("no corpus")
    ids = {"baseline": f"{GPU_RUN}/{GPU_FILES[0].split('.pt.trace')[0]}",
           "target": f"{GPU_RUN}/{GPU_FILES[1].split('.pt.trace')[0]}"}
    paths = tuple(CORPUS / GPU_RUN / f for f in GPU_FILES)
    return Pair(CORPUS / GPU_RUN, _ids_in(CORPUS / GPU_RUN, ids), paths, tmp_path_factory.mktemp("gpu"))


@pytest.fixture(scope="module")
def corpus_npu(tmp_path_factory):
    if not CORPUS.is_dir():
        pytest.skip("no corpus")
    run = CORPUS / NPU_RUN
    ids = {"baseline": "rank0_ascend_pt", "target": "rank1_ascend_pt"}
    paths = (run / "rank0_ascend_pt", run / "rank1_ascend_pt")
    return Pair(run, _ids_in(run, ids), paths, tmp_path_factory.mktemp("npu"))


def _ids_in(logdir, want: dict) -> dict:
    """The worker ids the plugin lists under ``logdir`` whose names end as ``want`` says."""
    c = make_client(logdir)
    import time
    for _ in range(200):
        runs = json.loads(c.get(PREFIX + "/runs").get_data())
        ids = [w["id"] for r in runs["runs"] for w in r["workers"]]
        got = {k: next((i for i in ids if i.endswith(v.rsplit("/", 1)[-1])), None) for k, v in want.items()}
        if all(got.values()):
            return got
        time.sleep(0.05)
    raise AssertionError(f"workers {want} not listed under {logdir}: {ids}")


PAIRS = ["samples", pytest.param("corpus_gpu", marks=needs_corpus), pytest.param("corpus_npu", marks=needs_corpus)]


@pytest.fixture
def pair(request):
    return request.getfixturevalue(request.param)


# ----------------------------------------------------------------------------- one object everywhere

@pytest.mark.parametrize("pair", PAIRS, indirect=True)
def test_route_json_is_the_cli_json(pair):
    assert pair.route == pair.cli["steps"]
    for key in ("baseline", "target", "metrics", "noise_test", "top_differences", "notes"):
        assert key in pair.route
    names = [m["name"] for m in pair.route["metrics"]]
    assert names[0] == "step_time" and "phases.iteration_gap" in names and "breakdown.kernel" in names
    for side in ("baseline", "target"):
        s = pair.route[side]
        assert s["steps"], side
        for st in s["steps"]:
            assert set(st["breakdown_ms"]) >= {"kernel", "memcpy", "memset", "communication", "runtime",
                                               "dataloader", "cpu_exec", "other"}
            assert set(st["phases_ms"]) >= {"iteration_gap", "fwd_bwd", "tail"}
        assert set(s["efficiency"]) >= {"gpu_utilization", "sm_efficiency", "achieved_occupancy",
                                        "tensor_core_ratio", "ai_core_utilization"}


@pytest.mark.parametrize("pair", PAIRS, indirect=True)
def test_steps_table_shows_every_metric_in_the_ranked_order(pair):
    steps = pair.route
    lines = pair.text.splitlines()
    assert lines[0].startswith(f"Steps: baseline {len(steps['baseline']['steps'])}, "
                               f"target {len(steps['target']['steps'])}")
    head = next(i for i, line in enumerate(lines) if line.startswith("Metric"))
    legend = next(i for i, line in enumerate(lines) if line.startswith("* beyond"))   # then efficiency, notes
    shown = [line.split()[0] for line in lines[head + 2:legend] if line.strip()]
    top = steps["top_differences"]
    assert shown[:len(top)] == top
    assert sorted(shown) == sorted(m["name"] for m in steps["metrics"])
    marks = {"~": True, "*": False, "?": None}
    by_name = {m["name"]: m for m in steps["metrics"]}
    for line in lines[head + 2:]:
        parts = line.split()
        if parts and parts[0] in by_name:
            m = by_name[parts[0]]
            assert marks[parts[-1]] is m["within_noise"], line
            assert f"({m['baseline']['n']})" in line and f"({m['target']['n']})" in line
    assert sum(line.startswith(("Efficiency baseline:", "Efficiency target:")) for line in lines) == 2
    assert all(len(line) <= 80 for line in lines if not line.startswith("note"))


def test_one_step_per_side_says_noise_unknown(corpus_npu):
    steps = corpus_npu.route
    if min(len(steps["baseline"]["steps"]), len(steps["target"]["steps"])) != 1:
        pytest.skip("this run has more than one step per side now")
    assert all(m["within_noise"] is None for m in steps["metrics"])
    assert any("noise unknown" in n for n in steps["notes"])
    assert "noise unknown" in corpus_npu.text


# ----------------------------------------------------------------------------- failures: one line

def test_unknown_run_is_one_line(tmp_path):
    code, out, err = run_cli(tmp_path / "nope", SAMPLE_PATHS[1], "--steps")
    assert "no such file" in one_line_error(code, err)
    assert out == ""


def test_broken_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 1')
    code, out, err = run_cli(bad, SAMPLE_PATHS[0], "--steps", "--json", tmp_path / "o.json")
    assert "bad.pt.trace.json" in one_line_error(code, err)
    assert not (tmp_path / "o.json").exists()


def test_route_errors(samples):
    c = make_client(SAMPLES)
    r = c.get(PREFIX + "/compare/steps?baseline=baseline_gpu/worker0&target=nope/x")
    assert r.status_code == 400 and "unknown worker" in json.loads(r.get_data())["error"]
    r = c.get(PREFIX + "/compare/steps?baseline=baseline_gpu/worker0")
    assert r.status_code == 400


# ----------------------------------------------------------------------------- the workbook

def _sheet_tables(ws) -> tuple[list, list, list]:
    """(header, per-step rows, metric rows with their fill) of a StepCompare sheet."""
    rows = [(list(r), None) for r in ws.iter_rows(min_row=3, values_only=True)]
    header = rows[0][0]
    steps, i = [], 1
    while i < len(rows) and any(v is not None for v in rows[i][0]):
        steps.append(rows[i][0])
        i += 1
    while i < len(rows) and rows[i][0][0] != "Metric":
        i += 1
    metrics = [r for r, _ in rows[i + 1:] if r and r[0] is not None]
    return header, steps, metrics


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return isinstance(a, (int, float)) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12) or a == b


@pytest.mark.parametrize("pair", PAIRS, indirect=True)
def test_step_compare_sheet_shows_the_route_figures(pair):
    from tb_compare_plugin.presenters.steps_json import noise_word
    from tb_compare_plugin.presenters.xlsx_steps import BREAKDOWN_HEAD, phase_keys
    steps = pair.route
    assert {"StepCompare", "Efficiency"} <= set(pair.book.sheetnames)
    header, rows, metrics = _sheet_tables(pair.book["StepCompare"])
    phases = phase_keys(steps)
    per_side = 3 + len(BREAKDOWN_HEAD) + len(phases)
    assert len(header) == 2 + 2 * per_side
    bs, ts = steps["baseline"]["steps"], steps["target"]["steps"]
    assert len(rows) == max(len(bs), len(ts))
    for i, row in enumerate(rows):
        for side, off in ((bs, 1), (ts, 1 + per_side)):
            if i >= len(side):
                assert all(v is None for v in row[off:off + per_side])
                continue
            st = side[i]
            want = [st["step"], st["start_ms"], st["duration_ms"], *(st["breakdown_ms"][k] for k, _ in BREAKDOWN_HEAD),
                    *(st["phases_ms"].get(k) for k in phases)]
            got = row[off:off + per_side]
            assert all(_same(g, w) for g, w in zip(got, want)), (i, got, want)
    from tb_compare_plugin.presenters.cli_text import steps_order
    order = steps_order(steps)
    assert [r[0] for r in metrics] == [m["name"] for m in order]
    rank = {n: i + 1 for i, n in enumerate(steps["top_differences"])}
    for r, m in zip(metrics, order):
        want = [m[s][k] for s in ("baseline", "target") for k in ("mean_ms", "min_ms", "max_ms", "stdev_ms", "n")]
        want += [m["diff_ms"], m["ratio"], noise_word(m["within_noise"]), m["p_value"], rank.get(m["name"])]
        assert all(_same(g, w) for g, w in zip(r[1:16], want)), (r, want)


def test_within_noise_rows_are_greyed(samples):
    from tb_compare_plugin.presenters import xlsx_style as S
    wb = openpyxl.load_workbook(samples.xlsx)       # styles: not read-only
    ws = wb["StepCompare"]
    noise = {m["name"]: m["within_noise"] for m in samples.route["metrics"]}
    seen = 0
    for row in ws.iter_rows(min_row=4):
        name = row[0].value
        if isinstance(name, str) and name in noise:
            fill = (row[1].fill.fgColor.rgb or "")[-6:] if row[1].fill and row[1].fill.fill_type else None
            assert (fill == S.MUTED) is (noise[name] is True), name
            if noise[name] is True:
                assert (row[0].font.color.rgb or "")[-6:] == S.MUTED_FONT
            seen += 1
    assert seen == len(noise)


@pytest.mark.parametrize("pair", PAIRS, indirect=True)
def test_efficiency_sheet_shows_the_route_figures(pair):
    rows = [list(r) for r in pair.book["Efficiency"].iter_rows(min_row=4, values_only=True)]
    rows = [r for r in rows if r and r[1]]
    eff = {s: pair.route[s]["efficiency"] for s in ("baseline", "target")}
    keys = [r[1] for r in rows]
    assert keys[:5] == ["gpu_utilization", "sm_efficiency", "achieved_occupancy", "tensor_core_ratio",
                        "ai_core_utilization"]
    for label, key, b, t, d in (r[:5] for r in rows):
        scale = 1 if key == "achieved_occupancy" else 100
        for got, side in ((b, "baseline"), (t, "target")):
            v = eff[side].get(key)
            assert (got is None) if not isinstance(v, (int, float)) or isinstance(v, bool) \
                else got == pytest.approx(v * scale, rel=1e-12), (key, side, got, v)
        assert d is None if b is None or t is None else d == pytest.approx(t - b)


def test_samples_workbook_opens_in_libreoffice(samples, tmp_path):
    import shutil
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if not exe:
        pytest.skip("LibreOffice not installed")
    proc = subprocess.run([exe, "--headless", f"-env:UserInstallation=file://{tmp_path}/lo", "--convert-to", "pdf",
                           "--outdir", str(tmp_path), str(samples.xlsx)], capture_output=True, text=True, timeout=240)
    pdf = tmp_path / (samples.xlsx.stem + ".pdf")
    assert proc.returncode == 0 and pdf.is_file() and pdf.stat().st_size > 1000, proc.stderr


def test_greyed_and_coloured_metric_rows(tmp_path):
    """A within-noise row is grey (fill and text, no red/green); a beyond-noise regression is
    red, and noise unknown is plain: the StepCompare sheet's styles on a hand-made answer."""
    from tb_compare_plugin.presenters import xlsx_style as S
    from tb_compare_plugin.presenters.xlsx_steps import step_compare_sheet
    from tb_compare_plugin.presenters.xlsx_writer import Workbook

    def stat(mean, n=6):
        return {"mean_ms": mean, "min_ms": mean - 0.1, "max_ms": mean + 0.1, "stdev_ms": 0.05, "n": n}

    def step(i, gap):
        return {"step": i, "start_ms": 10.0 * i, "duration_ms": 10.0, "phases_ms": {"iteration_gap": gap},
                "breakdown_ms": {"kernel": 5.0}}
    steps = {"baseline": {"steps": [step(1, 1.0), step(2, 1.0)]}, "target": {"steps": [step(1, 4.0)]},
             "metrics": [{"name": "phases.iteration_gap", "baseline": stat(1.0), "target": stat(4.0), "diff_ms": 3.0,
                          "ratio": 4.0, "within_noise": False, "p_value": 1e-6},
                         {"name": "breakdown.memcpy", "baseline": stat(1.0), "target": stat(1.01), "diff_ms": 0.01,
                          "ratio": 1.01, "within_noise": True, "p_value": 0.7},
                         {"name": "step_time", "baseline": stat(10.0, 1), "target": stat(10.5, 1), "diff_ms": 0.5,
                          "ratio": 1.05, "within_noise": None, "p_value": None}],
             "top_differences": ["phases.iteration_gap"]}
    path = tmp_path / "s.xlsx"
    book = Workbook(str(path))
    S.write_sheet(book, S.StyleBook(book.styles), step_compare_sheet(steps), "a", "b")
    book.close()
    ws = openpyxl.load_workbook(path)["StepCompare"]
    at = {ws.cell(r, 1).value: r for r in range(1, ws.max_row + 1)}
    def fill(c):
        return (c.fill.fgColor.rgb or "")[-6:] if c.fill is not None and c.fill.fill_type else None
    gap, memcpy, step_time = at["phases.iteration_gap"], at["breakdown.memcpy"], at["step_time"]
    assert gap < memcpy and gap < step_time                          # ranked first
    assert fill(ws.cell(gap, 12)) == S.WORSE and ws.cell(gap, 14).value == "beyond noise" and ws.cell(gap, 16).value == 1
    assert all(fill(ws.cell(memcpy, c)) == S.MUTED for c in range(1, 17))
    assert (ws.cell(memcpy, 12).font.color.rgb or "")[-6:] == S.MUTED_FONT and ws.cell(memcpy, 14).value == "within noise"
    assert fill(ws.cell(step_time, 1)) is None and ws.cell(step_time, 14).value == "noise unknown"
    assert ws.cell(5, 2).value == 2 and ws.cell(5, 2 + 3 + 8 + 3).value is None      # target has one step


# ----------------------------------------------------------------------------- overview step hints

def test_step_hints_rule():
    """Hints come from top_differences, never within noise, at most three, each moving at least
    0.5% of the longer mean step time; with one step a side they say noise is unknown."""
    from tb_compare_plugin.presenters.steps_json import HINT_MAX, NOISE_UNKNOWN, step_hints

    def metric(name, diff, noise, n=6):
        return {"name": name, "baseline": {"mean_ms": 100.0, "n": n}, "target": {"mean_ms": 100.0 + diff, "n": n},
                "diff_ms": diff, "ratio": (100.0 + diff) / 100.0, "within_noise": noise}
    metrics = [metric("step_time", 4.0, False), metric("phases.iteration_gap", 3.0, False),
               metric("phases.tail_compute", 1.5, False), metric("phases.fwd_bwd", 0.2, False),
               metric("phases.tail_communication", -0.9, True)]
    steps = {"metrics": metrics, "top_differences": ["phases.iteration_gap", "phases.tail_compute", "phases.fwd_bwd",
                                                     "phases.tail_communication"]}
    hints = step_hints(steps)
    assert [h["metric"] for h in hints] == ["phases.iteration_gap", "phases.tail_compute"]   # 0.2 ms < 0.5%
    assert hints[0]["noise"] == "beyond noise" and hints[0]["diff_ms"] == 3.0 and hints[0]["label"].startswith("Iteration gap")
    one = {"metrics": [metric("step_time", 4.0, None, 1), metric("phases.iteration_gap", 3.0, None, 1)],
           "top_differences": ["phases.iteration_gap"]}
    assert step_hints(one)[0]["noise"] == NOISE_UNKNOWN == "noise unknown (one step per side)"
    many = {"metrics": [metric(f"phases.x{i}", 5.0, False) for i in range(5)],
            "top_differences": [f"phases.x{i}" for i in range(5)]}
    assert len(step_hints(many)) == HINT_MAX


@pytest.mark.parametrize("pair", PAIRS, indirect=True)
def test_route_hints_follow_the_ranking(pair):
    from tb_compare_plugin.presenters.steps_json import step_hints
    steps = pair.route
    assert steps["hints"] == step_hints(steps)
    by_name = {m["name"]: m for m in steps["metrics"]}
    assert all(by_name[h["metric"]]["within_noise"] is not True for h in steps["hints"])
    assert [h["metric"] for h in steps["hints"]] == [n for n in steps["top_differences"]
                                                     if n in {h["metric"] for h in steps["hints"]}]
    assert all(by_name[n]["within_noise"] is not True for n in steps["top_differences"])


def test_overview_shows_the_step_hints_in_the_browser(tmp_path):
    """The Overview, in real Chromium against a real TensorBoard, lists the route's step-level
    hints under its own hints (asked after the overview is drawn), each linking the Steps view."""
    from browser_util import CHROMIUM, LAUNCH_ARGS, ConsoleWatch, plugin_frame
    from tbserver import TensorBoard
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python) is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    P = "p.profile_compare."
    with TensorBoard(SAMPLES) as tb, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            console = ConsoleWatch(page)
            page.goto(f"{tb.url}/#profile_compare&{P}b={SAMPLE_IDS['baseline']}&{P}t={SAMPLE_IDS['target']}&{P}v=overview")
            f = plugin_frame(page)
            f.locator("#pc-content .step-hints[data-state=done]").wait_for(state="attached", timeout=120000)
            shown = f.locator("#pc-content .step-hints li").evaluate_all(
                "(els) => els.map((li) => ({metric: li.dataset.metric, noise: li.dataset.noise, text: li.innerText}))")
            hints = tb.get_json("/data/plugin/profile_compare/compare/steps?"
                                f"baseline={SAMPLE_IDS['baseline']}&target={SAMPLE_IDS['target']}")["hints"]
            assert [s["metric"] for s in shown] == [h["metric"] for h in hints]
            for s, h in zip(shown, hints):
                assert s["noise"] == h["noise"] and h["label"] in s["text"] and "Steps view" in s["text"], s
            assert not console.errors(), console.errors()
            if shown:
                from browser_util import shoot
                from conftest import ROOT
                shoot(page, ROOT / "test-artifacts" / "steps_overview_hints.png", full=False,
                      scroll_to=f.locator("#pc-content .step-hints"))
                f.locator('#pc-content .step-hints button[data-view="steps"]').first.click()
                f.locator("#pc-content table.steps-metrics").wait_for(timeout=60000)     # the Steps view
        finally:
            browser.close()


# ----------------------------------------------------------------------------- the planted step differences

def _planted():
    """(the two ranked plants of the demo pair, the noise-only metrics), from samples/expected.json."""
    expected = json.loads((SAMPLES / "expected.json").read_text())
    planted = (expected.get("steps") or {}).get("planted") or []
    mine = [p for p in planted if p.get("pair") in ("target_npu vs baseline_gpu", "every pair")]
    ranked = sorted((p for p in mine if isinstance(p.get("rank"), int)), key=lambda p: p["rank"])[:2]
    return ranked, [p["metric"] for p in mine if p.get("within_noise") is True]


def test_planted_stall_and_optimizer_everywhere(samples):
    """samples/README.md: the data-loader stall (iteration gap) and the slower optimizer (tail
    compute) are the top two step-level differences at their planted sizes (±2%), beyond noise,
    and the noise-only metric is within noise: in the route, the CLI's JSON and --steps table, the
    StepCompare sheet and the overview's step hints."""
    ranked, noise_only = _planted()
    steps = samples.route
    if min(len(steps["baseline"]["steps"]), len(steps["target"]["steps"])) < 6 or len(ranked) < 2 or not noise_only:
        pytest.skip("the samples do not have six steps a side with planted step-level differences yet")
    names = [p["metric"] for p in ranked]
    assert names == ["phases.iteration_gap", "phases.tail_compute"]
    for answer in (steps, samples.cli["steps"]):                        # route, CLI JSON
        by_name = {m["name"]: m for m in answer["metrics"]}
        assert answer["top_differences"][:2] == names
        for p in ranked:
            m = by_name[p["metric"]]
            assert m["diff_ms"] == pytest.approx(p["per_step_ms"], rel=0.02) and m["within_noise"] is False, m
        for name in noise_only:
            assert by_name[name]["within_noise"] is True, by_name[name]
        assert [h["metric"] for h in answer["hints"]][:2] == names          # the overview's step hints
        assert all(h["noise"] == "beyond noise" for h in answer["hints"][:2])
    lines = samples.text.splitlines()                                    # --steps
    head = next(i for i, line in enumerate(lines) if line.startswith("Metric"))
    rows = [line.split() for line in lines[head + 2:]]
    assert [r[0] for r in rows[:2]] == names and all(r[-1] == "*" for r in rows[:2])
    for r, p in zip(rows, ranked):
        assert float(r[-3]) == pytest.approx(p["per_step_ms"], rel=0.02)
    for name in noise_only:
        assert next(r for r in rows if r and r[0] == name)[-1] == "~"
    _, _, metrics = _sheet_tables(samples.book["StepCompare"])           # the workbook
    by_row = {r[0]: r for r in metrics}
    assert [r[0] for r in metrics[:2]] == names
    for p in ranked:
        r = by_row[p["metric"]]
        assert r[11] == pytest.approx(p["per_step_ms"], rel=0.02) and r[13] == "beyond noise" and r[15] == p["rank"]
    for name in noise_only:
        assert by_row[name][13] == "within noise" and by_row[name][15] is None
