"""The Steps view (issue 15 item 4, the tab) in real headless Chromium against a real
`tensorboard` behind `--path_prefix`: per-step bars of both sides on one axis, the phases,
the efficiency cards and the metrics table agree with the `compare/steps` answer; clicking a
step's bar (or Enter on it) selects that step in both step pickers and the other views follow;
the host's dark theme; a side without steps; a corpus GPU pair; an NPU pair (one step a side:
noise unknown) inside the VSCode-like frame; on the 6-step samples the planted stall and the
slower optimizer are the top step-level differences and the noise-only metric is greyed as
within noise. One TensorBoard serves a temporary logdir of symlinks for the whole module.
Screenshots go to test-artifacts/steps_*.png."""
from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request

import pytest

from browser_util import (ART, CONTENT, IFRAME, P, VSCODE_SIM, ConsoleWatch, PluginTab, hash_params, needs_chromium,
                          num, prefixed_base, serve_html, shoot)
from conftest import CORPUS, SAMPLES, needs_samples
import tbserver
from tbserver import TensorBoard

pytestmark = [
    needs_chromium,
    needs_samples,
]

PREFIX = "/proxy/steps"
READY = f"{CONTENT} table.steps-metrics"
BASE, TARGET = "baseline_gpu/worker0", "target_npu/rank0_ascend_pt"
NOSTEP = "nostep_gpu/worker0"
GPU_RUN = "gpu/hta_trace_diff"
GPU_PAIR = (f"{GPU_RUN}/control/control", f"{GPU_RUN}/test/test")
NPU_RUN = "npu/alexnet_ddp_2rank_level1"
NPU_PAIR = (f"{NPU_RUN}/rank0_ascend_pt", f"{NPU_RUN}/rank1_ascend_pt")
PARTS = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other"]
EFFICIENCY = ["gpu_utilization", "sm_efficiency", "achieved_occupancy", "tensor_core_ratio", "ai_core_utilization"]

# a Kineto trace without ProfilerStep#N: the side has no steps
NOSTEP_TRACE = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50, "args": {}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110, "dur": 5,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 120, "dur": 40,
     "args": {"correlation": 1, "device": 0, "stream": 7}}]}


def pair_hash(base: str = BASE, target: str = TARGET, view: str = "steps") -> str:
    return f"#profile_compare&{P}b={base}&{P}t={target}&{P}v={view}"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("steplogs")
    for name in ("baseline_gpu", "target_npu"):
        (d / name).symlink_to(SAMPLES / name)
    (d / "nostep_gpu").mkdir()
    (d / "nostep_gpu" / "worker0.pt.trace.json").write_text(json.dumps(NOSTEP_TRACE))
    for rel in (GPU_RUN, NPU_RUN):
        if (CORPUS / rel).is_dir():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).symlink_to(CORPUS / rel)
    return d


@pytest.fixture(scope="module")
def tb(logdir):
    with TensorBoard(logdir, "--path_prefix", PREFIX) as server:
        server.base = prefixed_base(server, PREFIX)
        yield server


def steps_answer(tb, base: str, target: str) -> dict:
    """The route's answer for the pair (the view asked it first, so it is ready)."""
    q = urllib.parse.urlencode({"baseline": base, "target": target})
    u = f"{tb.base}/data/plugin/profile_compare/compare/steps?{q}"

    def get():
        with urllib.request.urlopen(u, timeout=60) as r:
            return json.loads(r.read()) if r.status == 200 else None
    return tbserver.wait_for(get, 120, 0.5)


class Tab(PluginTab):
    wait_timeout = 30

    def __init__(self, browser, tb, width: int = 1280, height: int = 860, dark: bool = False) -> None:
        super().__init__(self.new_page(browser, width, height, dark))
        self.tb = tb

    def open(self, hash_: str) -> None:
        self.page.goto(self.tb.base + "/" + hash_)
        self.f.locator(READY).first.wait_for(timeout=120000)


_VIEW_JS = """() => {
  const q = (s) => document.querySelector(s);
  const bars = (side) => [...document.querySelectorAll(`#pc-content g.stepbar[data-side="${side}"]`)]
    .map((g) => ({step: Number(g.dataset.step), label: g.getAttribute('aria-label'), tab: g.getAttribute('tabindex'),
                  pressed: g.getAttribute('aria-pressed')}));
  const eff = (side) => Object.fromEntries([...document.querySelectorAll(`#pc-content .eff-card[data-side="${side}"] dd`)]
    .map((dd) => [dd.dataset.eff, {text: dd.innerText.trim(), na: dd.dataset.na === 'true',
                                   why: (dd.querySelector('.eff-why') || {}).innerText || ''}]));
  const rows = [...document.querySelectorAll('#pc-content table.steps-metrics tr.metric-row')].map((tr) => ({
    name: tr.dataset.metric, cls: tr.className, cells: [...tr.children].map((td) => td.innerText.trim()),
    noise: tr.querySelector('td.noise').dataset.noise, color: getComputedStyle(tr.children[1]).color}));
  return {base: bars('base'), target: bars('target'), eff: {base: eff('base'), target: eff('target')}, rows,
          legend: [...document.querySelectorAll('#pc-content [data-role=steps-legend] [data-part]')].map((e) => e.dataset.part),
          phases: [...document.querySelectorAll('#pc-content [data-role=steps-legend] [data-phase]')].map((e) => e.dataset.phase),
          top: [...document.querySelectorAll('#pc-content [data-role=top-differences] li')].map((li) => li.dataset.metric),
          noStep: (q('#pc-content [data-state=no-steps]') || {}).innerText || '',
          muted: getComputedStyle(q('#pc-content p.muted')).color};
}"""


def view_state(frame) -> dict:
    return frame.evaluate(_VIEW_JS)


def stat_ok(text: str, st: dict) -> bool:
    """'12.345 ± 0.067 (6)' shows the answer's mean, stdev and n at the shown precision."""
    if st.get("mean_ms") is None:
        return text == "—"
    m = re.match(r"^(\S+)(?: ± (\S+))? \((\d+)\)$", text)
    if not m or int(m.group(3)) != st["n"]:
        return False
    tol = lambda v: 0.0006 + abs(v) * 0.001             # noqa: E731 - three significant decimals at most
    if abs(num(m.group(1)) - st["mean_ms"]) > tol(st["mean_ms"]):
        return False
    if st.get("stdev_ms") is None:
        return m.group(2) is None
    return m.group(2) is not None and abs(num(m.group(2)) - st["stdev_ms"]) <= tol(st["stdev_ms"])


def check_against_route(state: dict, ans: dict) -> None:
    """Everything the view shows is the route's answer: bars, efficiency, metric rows, noise marks, ranking."""
    for side, key in (("base", "baseline"), ("target", "target")):
        steps = ans[key]["steps"]
        assert [b["step"] for b in state[side]] == [s["step"] for s in steps], (side, state[side])
        for bar, st in zip(state[side], steps):
            m = re.search(r"step \d+: ([\d,.]+) ms", bar["label"])
            assert m and abs(num(m.group(1)) - st["duration_ms"]) <= 0.006 + st["duration_ms"] * 1e-3, bar
        for k in EFFICIENCY:
            v, cell = ans[key]["efficiency"].get(k), state["eff"][side][k]
            if v is None:
                assert cell["na"] and cell["text"].startswith("n/a") and cell["why"].strip(), (side, k, cell)
            else:
                pct = v if k == "achieved_occupancy" else v * 100
                assert not cell["na"] and abs(num(cell["text"]) - pct) <= 0.051 + pct * 1e-3, (side, k, cell, v)
    tabbable = [b for b in state["base"] + state["target"] if b["tab"] == "0"]
    assert len(tabbable) == (1 if state["base"] or state["target"] else 0)     # one tab stop, arrows move
    assert state["legend"][:8] == PARTS
    rows = {r["name"]: r for r in state["rows"]}
    assert [r["name"] for r in state["rows"]] == [m["name"] for m in ans["metrics"]]
    for m in ans["metrics"]:
        r = rows[m["name"]]
        assert stat_ok(r["cells"][1], m["baseline"]), (r, m)
        assert stat_ok(r["cells"][2], m["target"]), (r, m)
        if m["diff_ms"] is not None:
            assert abs(num(r["cells"][3]) - m["diff_ms"]) <= 0.006 + abs(m["diff_ms"]) * 1e-3, (r, m)
        want = {True: "within", False: "beyond", None: "unknown"}[m["within_noise"]]
        assert r["noise"] == want, (r, m)
        assert r["cells"][5] == {"within": "within noise", "beyond": "beyond noise", "unknown": "noise unknown"}[want]
        if want == "within":                           # greyed: the muted colour, no verdict colour
            assert "within-noise" in r["cls"] and r["color"] == state["muted"], r
    top = ans.get("top_differences") or []
    assert state["top"] == top[:4], (state["top"], top)


# -- the samples: route agreement, click to select, keyboard, dark, a side without steps ----------

@pytest.fixture(scope="module")
def samples_tab(browser, tb):
    """One page on the samples pair for the two tests below: the planted differences (first: it
    only reads the view and scrolls) and the click / keyboard / theme walk (which changes the
    selection, the theme and the pair after)."""
    t = Tab(browser, tb)
    t.open(pair_hash())
    yield t
    t.close()


def test_planted_step_differences_on_samples(samples_tab, tb):
    """The 6-step samples (samples/README.md, expected.json "steps"."planted"): the data-loader
    stall (iteration gap) and the slower optimizer (tail compute) are the top two step-level
    differences, at their planted sizes (±2%) and beyond noise; the metric planted to differ only
    by noise is greyed as within noise."""
    ans = steps_answer(tb, BASE, TARGET)
    planted = (json.loads((SAMPLES / "expected.json").read_text()).get("steps") or {}).get("planted") or []
    mine = [p for p in planted if p.get("pair") in ("target_npu vs baseline_gpu", "every pair")]
    ranked = sorted((p for p in mine if isinstance(p.get("rank"), int)), key=lambda p: p["rank"])
    noise_only = [p["metric"] for p in mine if p.get("within_noise") is True]
    if min(len(ans["baseline"]["steps"]), len(ans["target"]["steps"])) < 6 or len(ranked) < 2 or not noise_only:
        pytest.skip("the samples do not have six steps a side with planted step-level differences yet")
    t = samples_tab
    state = view_state(t.frame)
    check_against_route(state, ans)
    assert state["top"][:2] == [p["metric"] for p in ranked[:2]], state["top"]
    rows = {r["name"]: r for r in state["rows"]}
    for p in ranked[:2]:
        r = rows[p["metric"]]
        assert r["noise"] == "beyond" and "ranked" in r["cls"], r
        assert abs(num(r["cells"][3]) - p["per_step_ms"]) <= 0.02 * p["per_step_ms"], (r, p)
    for name in noise_only:
        assert rows[name]["noise"] == "within" and "within-noise" in rows[name]["cls"], rows[name]
        assert rows[name]["color"] == state["muted"]
    shoot(t.page, ART / "steps_samples_planted.png", full=False,
          scroll_to=t.f.locator(f"{CONTENT} [data-role=top-differences]"))
    assert t.console.errors() == []


def test_steps_view_on_samples_click_selects_the_step(samples_tab, tb):
    t = samples_tab
    ans = steps_answer(tb, BASE, TARGET)
    assert ans["baseline"]["steps"] and ans["target"]["steps"]
    state = view_state(t.frame)
    check_against_route(state, ans)
    plugin = [u for u in t.requests if "/data/plugin/profile_compare/" in u]
    assert any("/compare/steps?" in u for u in plugin)
    assert all(f"{PREFIX}/data/plugin/profile_compare/" in u for u in plugin), plugin
    shoot(t.page, ART / "steps_samples_light.png")

    # a click on the second step's baseline bar selects that row's steps in both pickers
    bstep, tstep = ans["baseline"]["steps"][1]["step"], ans["target"]["steps"][1]["step"]
    t.f.locator(f'{CONTENT} g.stepbar[data-side="base"][data-index="1"]').click()
    t.wait(lambda: hash_params(t.page).get(P + "bs") == str(bstep) and hash_params(t.page).get(P + "ts") == str(tstep))
    assert t.f.locator('select[data-role="base-step"]').input_value() == str(bstep)
    assert t.f.locator('select[data-role="target-step"]').input_value() == str(tstep)
    t.f.locator(f"{CONTENT} [data-role=step-selection]").wait_for(timeout=20000)
    sel = t.f.locator(f'{CONTENT} g.stepbar[data-side="base"][data-index="1"]')
    assert sel.get_attribute("aria-pressed") == "true" and sel.get_attribute("tabindex") == "0"
    assert t.wait(lambda: t.frame.evaluate("document.activeElement && document.activeElement.dataset.index") == "1")
    # the other views follow: the overview asks for that step of each side
    t.f.locator('button.tab[data-view="overview"]').click()
    t.f.locator(f"{CONTENT} table.metrics").first.wait_for(timeout=60000)
    overall = [u for u in t.requests if "/compare/overall?" in u]
    assert overall and f"base_step={bstep}" in overall[-1] and f"target_step={tstep}" in overall[-1], overall[-1:]
    t.f.locator('button.tab[data-view="steps"]').click()
    t.f.locator(READY).wait_for(timeout=60000)
    # keyboard: the selected bar is the tab stop; arrows move; Enter on the selected row goes back to all steps
    bar = t.f.locator(f'{CONTENT} g.stepbar[aria-pressed="true"][data-side="base"]')
    bar.focus()
    t.page.keyboard.press("ArrowDown")
    assert t.frame.evaluate("document.activeElement.dataset.side") == "target"
    t.page.keyboard.press("ArrowUp")
    t.page.keyboard.press("Enter")
    t.wait(lambda: P + "bs" not in hash_params(t.page) and P + "ts" not in hash_params(t.page))
    assert t.f.locator('select[data-role="base-step"]').input_value() == ""
    t.wait(lambda: t.f.locator(f"{CONTENT} [data-role=step-selection]").count() == 0)

    # the host's dark theme, with a step selected again
    t.f.locator(f'{CONTENT} g.stepbar[data-side="target"][data-index="0"]').click()
    t.wait(lambda: hash_params(t.page).get(P + "ts") == str(ans["target"]["steps"][0]["step"]))
    t.f.locator(f"{CONTENT} [data-role=step-selection]").wait_for(timeout=20000)
    t.page.evaluate("document.body.classList.add('dark-mode')")
    fr = t.frame
    assert t.wait(lambda: fr.evaluate("document.documentElement.classList.contains('dark')"))
    luma = fr.evaluate("""() => {
      const l = (c) => { const [r, g, b] = c.match(/\\d+/g).map(Number); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
      const cs = (s, p) => getComputedStyle(document.querySelector(s))[p];
      return {bg: l(cs('body', 'backgroundColor')), label: l(cs('#pc-content .steps-chart .row-label', 'fill')),
              axis: l(cs('#pc-content .steps-chart .axis text', 'fill')), legend: l(cs('#pc-content [data-role=steps-legend]', 'color')),
              card: l(cs('#pc-content .eff-card', 'backgroundColor')), th: l(cs('#pc-content table.steps-metrics thead th', 'backgroundColor'))};
    }""")
    assert luma["bg"] < 80 and luma["card"] < 90 and luma["th"] < 90, luma
    assert luma["label"] > 150 and luma["axis"] > 150 and luma["legend"] > 150, luma
    shoot(t.page, ART / "steps_samples_dark.png")
    t.page.evaluate("document.body.classList.remove('dark-mode')")

    # a side without steps: said, and only the other side's bars are drawn
    t.page.evaluate(f"location.hash = {json.dumps(pair_hash(NOSTEP, TARGET))}")
    t.f.locator(f"{CONTENT} [data-state=no-steps]").wait_for(timeout=120000)
    t.f.locator(READY).wait_for(timeout=60000)
    state = view_state(t.frame)
    assert "baseline has no steps" in state["noStep"], state["noStep"]
    assert not state["base"] and len(state["target"]) == len(ans["target"]["steps"])
    check_against_route(state, steps_answer(tb, NOSTEP, TARGET))
    shoot(t.page, ART / "steps_no_steps_side.png")
    assert t.console.errors() == []


# -- the corpus: a GPU pair with six steps a side; an NPU pair in the VSCode-like frame ----------

@pytest.mark.skipif(not (CORPUS / GPU_RUN).is_dir(), reason="corpus run missing")
def test_steps_view_on_a_corpus_gpu_pair(browser, tb):
    t = Tab(browser, tb)
    t.open(pair_hash(*GPU_PAIR))
    ans = steps_answer(tb, *GPU_PAIR)
    assert len(ans["baseline"]["steps"]) >= 2 and len(ans["target"]["steps"]) >= 2
    check_against_route(view_state(t.frame), ans)
    shoot(t.page, ART / "steps_corpus_gpu.png")
    assert t.console.errors() == []
    t.close()


@pytest.mark.skipif(not (CORPUS / NPU_RUN).is_dir(), reason="corpus run missing")
def test_steps_view_on_an_npu_pair_in_the_vscode_like_frame(browser, tb):
    """Another origin frames TensorBoard sandboxed and scaled 0.8, as VSCode does: the view
    renders on an NPU pair (one step a side: every noise mark says "noise unknown"), and a
    click on a bar selects the step."""
    page = browser.new_page(viewport={"width": 1100, "height": 760})
    console = ConsoleWatch(page)
    with serve_html(VSCODE_SIM.format(src=tb.base + "/" + pair_hash(*NPU_PAIR))) as outer:
        page.goto(outer)
        f = page.frame_locator("#tb").frame_locator(IFRAME)
        f.locator(READY).wait_for(timeout=180000)
        inner = next(fr for fr in page.frames if "plugin_entry.html" in fr.url)
        ans = steps_answer(tb, *NPU_PAIR)
        state = view_state(inner)
        check_against_route(state, ans)
        if min(len(ans["baseline"]["steps"]), len(ans["target"]["steps"])) < 2:
            assert {r["noise"] for r in state["rows"]} == {"unknown"}, state["rows"]
        shoot(page, ART / "steps_vscode_npu.png", full=False)
        f.locator(f'{CONTENT} g.stepbar[data-side="base"]').first.click()
        f.locator(f"{CONTENT} [data-role=step-selection]").wait_for(timeout=30000)
        assert f.locator('select[data-role="base-step"]').input_value() == str(ans["baseline"]["steps"][0]["step"])
        shoot(page, ART / "steps_vscode_npu_selected.png", full=False)
        assert console.errors() == []
    page.close()
