"""The Timeline view (issue 18 items 1 and 4, the tab) in real headless Chromium against a real
`tensorboard` on samples/ behind `--path_prefix`, in one page load: the planted 2x-slower fc1
matmul is drawn twice as wide on the target lane at the same place in step 3 as its baseline
counterpart; clicking it rings the counterpart and shows its details, whose link opens the
Operator view searched for its operator; the wheel zooms around the pointer and a drag pans, each
refetching the window at the canvas width; a shift-drag over the step and the "Step totals"
button show both sides' per-class totals (the latter equal to the Overview's figures for that
step, ±1%); the host's dark theme at 1024x700; a Kernel row's "timeline" link opens the timeline
aligned on that kernel. A second test opens the view inside the VSCode-like frame (another origin,
sandboxed, scaled 0.8) and zooms and clicks there. The drawn geometry is read from the view's
test hook `window.__tbcTimeline` (each drawn item's pixel rectangle). Screenshots go to
test-artifacts/timeline_*.png."""
from __future__ import annotations

import json
import urllib.parse
import urllib.request

import pytest

from browser_util import (ART, CONTENT, IFRAME, P, VSCODE_SIM, ConsoleWatch, PluginTab, hash_params, needs_chromium,
                          prefixed_base, serve_html, shoot)
from conftest import SAMPLES, needs_samples
import tbserver
from tbserver import TensorBoard

pytestmark = [needs_chromium, needs_samples]

PREFIX = "/proxy/timeline"
GPU, NPU, NPU2 = "baseline_gpu/worker0", "target_npu/rank0_ascend_pt", "target_npu_v2/rank0_ascend_pt"
STEP = 3
CANVAS = f"{CONTENT} canvas.tl-canvas"
FC1 = "aclnnAddmm_MatMulCommon_MatMulV2"


def timeline_hash(base: str, target: str, step: int | None = STEP, view: str = "timeline", extra: str = "") -> str:
    s = f"&{P}bs={step}&{P}ts={step}" if step is not None else ""
    return f"#profile_compare&{P}b={base}&{P}t={target}{s}&{P}v={view}{extra}"


@pytest.fixture(scope="module")
def tb():
    with TensorBoard(SAMPLES, "--path_prefix", PREFIX) as server:
        server.base = prefixed_base(server, PREFIX)
        yield server


def route(tb, name: str, **params) -> dict:
    """A route's answer (the page asked first, so both sides are parsed): polled through 202s."""
    q = urllib.parse.urlencode(params)
    u = f"{tb.base}/data/plugin/profile_compare/{name}?{q}"

    def get():
        with urllib.request.urlopen(u, timeout=60) as r:
            return json.loads(r.read()) if r.status == 200 else None
    return tbserver.wait_for(get, 120, 0.3)


class Tab(PluginTab):
    wait_timeout = 60

    def hook(self, expr: str):
        return self.frame.evaluate(f"(() => {{ const T = window.__tbcTimeline; return {expr}; }})()")

    def items(self, **flt) -> list[dict]:
        return self.frame.evaluate("(f) => window.__tbcTimeline.items(f)", flt)

    def drawn(self) -> None:
        """Wait for the view's hook and a drawn answer with no fetch pending."""
        self.f.locator(CANVAS).wait_for(timeout=180000)
        self.wait(lambda: self.frame.evaluate("!!window.__tbcTimeline && window.__tbcTimeline.items().length > 0"))
        self.settled()

    def settled(self) -> None:
        self.wait(lambda: "loading" not in self.f.locator(f"{CONTENT} [data-role=timeline-status]").inner_text())

    def click_item(self, d: dict) -> None:
        self.f.locator(CANVAS).click(position={"x": d["x"] + min(d["w"] / 2, 6), "y": d["y"] + d["h"] / 2})

    def canvas_point(self, x: float, y: float) -> tuple[float, float]:
        """A canvas point (CSS px) in the page's coordinates."""
        box = self.f.locator(CANVAS).bounding_box()
        return box["x"] + x, box["y"] + y


def planted(items: list[dict]) -> dict:
    slow = [d for d in items if d["cls"] == "matmul" and d["label"] == FC1 and abs(d["dur"] - 0.8) < 0.03]
    assert len(slow) == 1, [(d["label"], d["dur"]) for d in items if d["cls"] == "matmul"][:20]
    return slow[0]


def test_timeline_on_samples(browser, tb):
    t = Tab(PluginTab.new_page(browser, 1400, 1000))
    t.page.goto(tb.base + "/" + timeline_hash(GPU, NPU))
    t.drawn()
    assert t.f.locator('button.tab[data-view="timeline"]').get_attribute("aria-selected") == "true"
    win = t.hook("T.window")
    assert win["start"] <= 0 < win["end"], win
    # both sides' lanes: host, device, communication and free on each
    kinds = {(d["side"], d["kind"]) for d in t.items()}
    for side in ("baseline", "target"):
        assert {(side, k) for k in ("host", "device", "communication", "free")} <= kinds, kinds
    plugin = [u for u in t.requests if "/data/plugin/profile_compare/" in u]
    assert all(f"{PREFIX}/data/plugin/profile_compare/" in u for u in plugin)
    tl = [u for u in plugin if "/compare/timeline?" in u]
    assert tl and f"step={STEP}" in tl[-1] and "px=" in tl[-1]
    width = t.frame.evaluate("document.querySelector('canvas.tl-canvas').clientWidth")
    assert abs(int(urllib.parse.parse_qs(urllib.parse.urlparse(tl[-1]).query)["px"][0]) - (width - 176)) <= 2

    # the planted 2x matmul: the target's fc1 kernel is 0.8 ms; click it: its baseline counterpart is ringed
    slow = planted(t.items(side="target"))
    t.click_item(slow)
    t.wait(lambda: t.hook("T.counterpart"))
    cp = t.hook("T.counterpart")
    assert t.hook("T.selected") == {"side": "target", "id": slow["id"]} and cp["side"] == "baseline"
    t.f.locator(f"{CONTENT} [data-role=timeline-details] .tl-name").wait_for()
    assert t.f.locator(f"{CONTENT} [data-role=timeline-details] .tl-name").inner_text() == FC1
    assert t.f.locator(f"{CONTENT} [data-role=timeline-counterpart]").get_attribute("data-id") == cp["id"]
    t.settled()
    base = [d for d in t.items(side="baseline") if d["id"] == cp["id"]]
    assert len(base) == 1, cp
    b = base[0]
    assert abs(b["dur"] - 0.4) < 0.03, b
    # visibly longer on the target lane (twice the pixels), at the same place in the step (within 0.3 ms)
    assert 1.8 <= slow["w"] / b["w"] <= 2.2, (slow, b)
    px_per_ms = slow["w"] / slow["dur"]
    assert abs(slow["x"] - b["x"]) <= 0.3 * px_per_ms, (slow, b)
    assert b["y"] < slow["y"]                                   # the baseline is drawn above the target
    # hovering it: a tooltip with its name, duration, stream and input shapes
    t.page.mouse.move(*t.canvas_point(slow["x"] + min(slow["w"] / 2, 6), slow["y"] + slow["h"] / 2))
    tip = t.f.locator(f"{CONTENT} .tl-tip")
    t.wait(lambda: tip.is_visible() and "Shapes:" in tip.inner_text())
    text = tip.inner_text()
    assert FC1 in text and "0.800 ms" in text and "Stream: stream" in text and "2048,1024;4096,1024;4096" in text, text
    tb_ = tip.bounding_box()                      # inside the frame's viewport (above the pointer near its bottom)
    assert tb_["y"] >= 0 and tb_["y"] + tb_["height"] <= t.page.viewport_size["height"] + 1, tb_
    shoot(t.page, ART / "timeline_samples_light.png", full=False, scroll_to=t.f.locator(CANVAS))

    # wheel zoom around the pointer: a narrower window around that point, refetched at the canvas width
    before, n0 = t.hook("T.window"), t.hook("T.fetches")
    at_ms = slow["start"] + slow["dur"] / 2
    t.page.mouse.move(*t.canvas_point(slow["x"] + slow["w"] / 2, slow["y"] + slow["h"] / 2))
    t.page.mouse.wheel(0, -400)
    t.wait(lambda: t.hook("T.fetches") > n0)
    t.settled()
    zoomed = t.hook("T.window")
    span0, span1 = before["end"] - before["start"], zoomed["end"] - zoomed["start"]
    assert span1 < span0 * 0.7, (before, zoomed)
    # the point under the pointer stays put
    f0 = (at_ms - before["start"]) / span0
    f1 = (at_ms - zoomed["start"]) / span1
    assert abs(f0 - f1) < 0.02, (f0, f1)
    last = urllib.parse.parse_qs(urllib.parse.urlparse(t.hook("T.lastUrl")).query)
    assert abs(float(last["start_ms"][0]) - zoomed["start"]) < 1e-3 and abs(float(last["end_ms"][0]) - zoomed["end"]) < 1e-3
    assert t.items(side="target", label=FC1)

    # drag pans: the window moves by the dragged distance, same span, refetched
    n1 = t.hook("T.fetches")
    y = slow["y"] + slow["h"] / 2
    t.page.mouse.move(*t.canvas_point(700, y))
    t.page.mouse.down()
    t.page.mouse.move(*t.canvas_point(600, y), steps=4)
    t.page.mouse.move(*t.canvas_point(500, y), steps=4)
    t.page.mouse.up()
    t.wait(lambda: t.hook("T.fetches") > n1)
    t.settled()
    panned = t.hook("T.window")
    ms_per_px = span1 / (width - 176)
    assert abs((panned["start"] - zoomed["start"]) - 200 * ms_per_px) < 3 * ms_per_px, (zoomed, panned)
    assert abs((panned["end"] - panned["start"]) - span1) < 1e-6
    assert t.hook("T.selected") == {"side": "target", "id": slow["id"]}

    # a shift-drag range over the baseline's step: both sides' totals per class, the baseline's = its step's
    t.f.locator(f"{CONTENT} [data-role=timeline-reset]").click()
    t.settled()
    full = t.hook("T.window")
    ext = route(tb, "compare/timeline/range", baseline=GPU, target=NPU, step=STEP)
    x0 = 168 + (0 - full["start"]) / (full["end"] - full["start"]) * (width - 176)
    end_ms = ext["window"]["baseline"]["end_ms"]
    ov = route(tb, "compare/overall", baseline=GPU, target=NPU, base_step=STEP, target_step=STEP)
    by = {r["name"].strip(): r for r in ov["overall_metrics"]}
    x1 = 168 + (end_ms - full["start"]) / (full["end"] - full["start"]) * (width - 176)
    y0 = 40
    t.page.keyboard.down("Shift")
    t.page.mouse.move(*t.canvas_point(x0 + 0.5, y0))
    t.page.mouse.down()
    t.page.mouse.move(*t.canvas_point((x0 + x1) / 2, y0), steps=5)
    t.page.mouse.move(*t.canvas_point(x1 - 0.5, y0), steps=5)
    t.page.mouse.up()
    t.page.keyboard.up("Shift")
    table = t.f.locator(f"{CONTENT} [data-role=timeline-range] table")
    table.wait_for(timeout=60000)
    rows = rows_of(t)
    assert {"matmul", "vector", "computing", "free"} <= set(rows), rows
    assert rows["matmul"][0] > 0 and rows["matmul"][1] > 0
    assert rows["matmul"][0] == pytest.approx(by["Matmul"]["baseline"]["duration_ms"], rel=0.02)
    rng = t.hook("T.range")
    assert rng and abs(min(rng["start"], rng["end"])) < 0.2 and abs(max(rng["start"], rng["end"]) - end_ms) < 0.2, rng
    assert t.hook("T.window") == full                            # a range selection does not pan
    shoot(t.page, ART / "timeline_samples_range.png", full=False, scroll_to=table)

    # "Step totals": each side's own step window, equal to the Overview's figures for that step (±1%)
    t.f.locator(f"{CONTENT} [data-role=timeline-step-totals]").click()
    t.f.locator(f'{CONTENT} [data-role=timeline-range][data-scope="step"]').wait_for(timeout=60000)
    rows = rows_of(t)
    for key, name in (("matmul", "Matmul"), ("computing", "Computing Time"), ("free", "Free Time"),
                      ("communication", "Uncovered Communication Time")):
        for i, side in enumerate(("baseline", "target")):
            want = by[name][side]["duration_ms"] if name in by else 0.0
            assert rows[key][i] == pytest.approx(want, rel=0.01, abs=0.002), (key, side, rows[key], want)

    # the details' link opens the Operator view searched for the kernel's operator
    op = t.f.locator(f"{CONTENT} [data-role=timeline-open-op]")
    op.wait_for(timeout=60000)
    op_name = op.get_attribute("data-name")
    assert op_name in ("aten::addmm", "aten::linear"), op_name       # the operator row above aclnnAddmm / the GPU's addmm
    op.click()
    t.f.locator(f"{CONTENT} table.t tbody tr").first.wait_for(timeout=60000)
    assert t.f.locator('button.tab[data-view="operator"]').get_attribute("aria-selected") == "true"
    assert hash_params(t.page).get(P + "q") == op_name
    names = t.frame.evaluate("[...document.querySelectorAll('#pc-content table.t tbody td.name .label')].map((e) => e.textContent)")
    assert any(op_name in n for n in names), (op_name, names[:5])
    # that Operator row's own "timeline" link: the timeline opens aligned on the operator's first call in the step
    row = t.f.locator(f"{CONTENT} table.t tbody tr").filter(has=t.f.locator("td.name .label", has_text=op_name)).first
    row.locator("[data-role=timeline-link]").click()
    t.wait(lambda: (hash_params(t.page).get(P + "m") or "").startswith("align:baseline:o"))
    t.drawn()
    t.wait(lambda: t.hook("T.counterpart"))
    sel = t.hook("T.selected")
    mine = [d for d in t.items(side="baseline") if d["id"] == sel["id"]]
    assert mine and mine[0]["label"] == op_name and abs(mine[0]["start"]) < 1e-6, mine
    assert t.f.locator(f"{CONTENT} [data-role=timeline-details] .tl-name").inner_text() == op_name

    # the host's dark theme at 1024x700
    t.page.set_viewport_size({"width": 1024, "height": 700})
    t.page.evaluate(f"location.hash = {json.dumps(timeline_hash(GPU, NPU))}")
    t.drawn()
    t.page.evaluate("document.body.classList.add('dark-mode')")
    t.wait(lambda: t.frame.evaluate("document.documentElement.classList.contains('dark')"))
    t.page.wait_for_timeout(200)
    lum = t.frame.evaluate("""() => {
      const c = document.querySelector('canvas.tl-canvas'); const g = c.getContext('2d');
      const dpr = window.devicePixelRatio || 1; const p = g.getImageData(Math.round(5 * dpr), Math.round(c.height - 3 * dpr), 1, 1).data;
      return 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2]; }""")
    assert lum < 90, lum
    assert t.items(side="target", label=FC1)
    shoot(t.page, ART / "timeline_samples_dark_1024.png", full=False, scroll_to=t.f.locator(CANVAS))
    t.page.evaluate("document.body.classList.remove('dark-mode')")
    t.page.set_viewport_size({"width": 1400, "height": 1000})

    # a Kernel row's "timeline" link (an NPU pair: the Kernel view applies): the timeline opens aligned on it
    t.page.evaluate(f"location.hash = {json.dumps(timeline_hash(NPU, NPU2, view='kernel', extra=f'&{P}q=MatMulV2'))}")
    link = t.f.locator(f"{CONTENT} table.t tbody tr [data-role=timeline-link]").first
    link.wait_for(timeout=120000)
    row_name = t.frame.evaluate("document.querySelector('#pc-content table.t tbody td.name .label').textContent")
    row_shape = t.frame.evaluate("document.querySelector('#pc-content table.t tbody tr').children[1].textContent")
    link.click()
    t.wait(lambda: (hash_params(t.page).get(P + "m") or "").startswith("align:baseline:k"))
    t.drawn()
    t.wait(lambda: t.hook("T.counterpart"))
    sel = t.hook("T.selected")
    assert f"align:{sel['side']}:{sel['id']}" == hash_params(t.page)[P + "m"]
    mine = [d for d in t.items(side="baseline") if d["id"] == sel["id"]]
    assert mine and mine[0]["label"].endswith("_" + row_name.split()[0]) and abs(mine[0]["start"]) < 1e-6, (mine, row_name)
    cp = t.hook("T.counterpart")
    other = [d for d in t.items(side="target") if d["id"] == cp["id"]]
    assert other and abs(other[0]["start"]) < 1e-6                 # both sides aligned on the pair
    shoot(t.page, ART / "timeline_kernel_row_aligned.png", full=False, scroll_to=t.f.locator(CANVAS))
    # and back: the details' link opens the Kernel view searched for its row (the NPU row names the kernel's
    # type and its input shapes): that row alone
    back = t.f.locator(f"{CONTENT} [data-role=timeline-open-row][data-view=kernel]")
    back.wait_for(timeout=60000)
    key = back.get_attribute("data-name")
    assert key.replace('"', "") == f"{row_name.split()[0]} {row_shape}", (key, row_name, row_shape)  # the cell drops quotes
    back.click()
    t.f.locator(f"{CONTENT} table.t tbody tr [data-role=timeline-link]").first.wait_for(timeout=60000)
    assert hash_params(t.page).get(P + "v") == "kernel" and hash_params(t.page).get(P + "q") == key
    t.wait(lambda: t.frame.evaluate("[...document.querySelectorAll('#pc-content table.t tbody tr')].map((tr) => "
                                    "[tr.querySelector('td.name .label').textContent, tr.children[1].textContent])")
           == [[row_name, row_shape]])
    assert t.console.errors() == []
    t.close()


def rows_of(t: Tab) -> dict[str, tuple[float, float]]:
    out = t.frame.evaluate("""() => Object.fromEntries([...document.querySelectorAll('[data-role=timeline-range] tbody tr')]
      .map((tr) => [tr.dataset.class, [tr.children[1].textContent, tr.children[2].textContent]]))""")
    num = lambda s: float(s.replace(",", "")) if s not in ("—", "") else float("nan")  # noqa: E731
    return {k: (num(a), num(b)) for k, (a, b) in out.items()}


def test_timeline_in_the_vscode_like_frame(browser, tb):
    """Another origin frames TensorBoard sandboxed and scaled 0.8, as VSCode does: the timeline
    draws, the wheel zooms and a click on the planted matmul rings its counterpart."""
    page = browser.new_page(viewport={"width": 1200, "height": 860})
    console = ConsoleWatch(page)
    with serve_html(VSCODE_SIM.format(src=tb.base + "/" + timeline_hash(GPU, NPU))) as outer:
        page.goto(outer)
        f = page.frame_locator("#tb").frame_locator(IFRAME)
        f.locator(CANVAS).wait_for(timeout=180000)
        fr = next(x for x in page.frames if "plugin_entry.html" in x.url)
        hook = lambda e: fr.evaluate(f"(() => {{ const T = window.__tbcTimeline; return {e}; }})()")  # noqa: E731
        tbserver.wait_for(lambda: fr.evaluate("!!window.__tbcTimeline && window.__tbcTimeline.items().length > 0"), 60, 0.2,
                          sleep=lambda s: page.wait_for_timeout(s * 1000))
        page.wait_for_timeout(300)
        slow = planted(fr.evaluate("window.__tbcTimeline.items({side: 'target'})"))
        # the page sees the canvas scaled by 0.8: click in the page's coordinates
        box = f.locator(CANVAS).bounding_box()
        k = box["width"] / fr.evaluate("document.querySelector('canvas.tl-canvas').offsetWidth")
        assert abs(k - 0.8) < 0.01, k
        page.mouse.click(box["x"] + (slow["x"] + min(slow["w"] / 2, 6)) * k, box["y"] + (slow["y"] + slow["h"] / 2) * k)
        tbserver.wait_for(lambda: hook("T.counterpart"), 60, 0.2, sleep=lambda s: page.wait_for_timeout(s * 1000))
        assert hook("T.selected")["id"] == slow["id"] and hook("T.counterpart")["side"] == "baseline"
        before, n0 = hook("T.window"), hook("T.fetches")
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 40)
        page.mouse.wheel(0, -300)
        tbserver.wait_for(lambda: hook("T.fetches") > n0, 30, 0.2, sleep=lambda s: page.wait_for_timeout(s * 1000))
        after = hook("T.window")
        assert after["end"] - after["start"] < (before["end"] - before["start"]) * 0.8
        page.wait_for_timeout(500)
        shoot(page, ART / "timeline_vscode.png", full=False)
        assert console.errors() == []
    page.close()
