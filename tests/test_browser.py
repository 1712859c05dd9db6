"""The PROFILE COMPARE tab in real headless Chromium against a real `tensorboard` process:
the picker, the suggested pair, the overview, swap / step / hash round-trips, TensorBoard's
reload and tab switches, every view (real routes, plus a contract mock of the view routes
for the tables, tree, call stacks and memory chart), a VSCode-like sandboxed 0.8-scaled
frame, and `--path_prefix`. Screenshots go to test-artifacts/."""
from __future__ import annotations

import re
import shutil

import pytest

from browser_util import (CHROMIUM, IFRAME, LAUNCH_ARGS, VSCODE_SIM, ConsoleWatch, ContractMock, frame_of,
                          hash_params, plugin_frame, serve_html, shoot)
from conftest import CORPUS, ROOT, SAMPLES
from tbserver import TensorBoard

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python) is not installed")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} "
                                "(apt-get install chromium; never `playwright install`)")

ART = ROOT / "test-artifacts"
_PAGE = None


def wait_for(fn, timeout: float = 10, interval: float = 0.1):
    """Poll fn() until truthy, letting Playwright dispatch page events meanwhile (a bare
    time.sleep would freeze the event stream of the sync API)."""
    import time
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = fn()
        if last:
            return last
        if _PAGE is not None and not _PAGE.is_closed():
            _PAGE.wait_for_timeout(interval * 1000)
        else:
            time.sleep(interval)
    raise TimeoutError(f"condition not met in {timeout}s (last: {last!r})")
P = "p.profile_compare."
CONTENT = "#pc-content"
SETTLED = (f"{CONTENT} table.metrics, {CONTENT} [data-state=not-available], {CONTENT} [data-state=error], "
           f"{CONTENT} [data-state=worker-error], {CONTENT} .paged, {CONTENT} .linechart")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    if (SAMPLES / "baseline_gpu").is_dir() and (SAMPLES / "target_npu").is_dir():
        return SAMPLES
    if not CORPUS.is_dir():
        pytest.skip("neither samples/ (baseline_gpu, target_npu) nor the corpus is available")
    d = tmp_path_factory.mktemp("logdir")
    shutil.copytree(CORPUS / "gpu" / "kineto_resnet50_num_workers_0", d / "baseline_gpu")
    shutil.copytree(CORPUS / "npu" / "alexnet_ddp_2rank_level1", d / "target_npu")
    return d


@pytest.fixture(scope="module")
def tb(logdir):
    # a short server-side wait makes slow comparisons answer 202 so the UI's polling path runs
    with TensorBoard(logdir, env={"TB_COMPARE_REQUEST_WAIT": "1"}) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield b
        b.close()


class Tab:
    def __init__(self, page, base: str) -> None:
        global _PAGE
        _PAGE = page
        self.page, self.base = page, base
        self.console = ConsoleWatch(page)
        self.requests: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))

    @property
    def f(self):
        return plugin_frame(self.page)

    def open(self, hash_: str = "#profile_compare") -> None:
        self.page.goto(self.base + "/" + hash_)
        self.f.locator("#compare .side.baseline select").first.wait_for(timeout=30000)

    def settle(self, timeout: float = 90000):
        loc = self.f.locator(SETTLED).first
        loc.wait_for(timeout=timeout)
        return loc

    def select_value(self, role: str) -> str:
        return self.f.locator(f'select[data-role="{role}"]').input_value()


@pytest.fixture(scope="module")
def tab(browser, tb):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    t = Tab(page, tb.url)
    t.open()
    yield t
    page.close()


def _overview_or_skip(t: Tab):
    loc = t.settle()
    if t.f.locator(f"{CONTENT} [data-state=not-available]").count():
        pytest.skip("compare/overall is not served yet: the UI shows 'not available' (checked)")
    if t.f.locator(f"{CONTENT} [data-state=worker-error]").count():
        pytest.skip("a sample worker cannot be parsed yet: " + t.f.locator(CONTENT).inner_text()[:300])
    return loc


# -- the main flow on one page (tests run in file order and share it) ------------------

def test_tab_renders_and_lists_runs_with_devices(tab):
    f = tab.f
    base_runs = f.locator('select[data-role="base-run"] option').all_inner_texts()
    assert any(t.startswith("baseline_gpu") and "GPU" in t for t in base_runs), base_runs
    assert any(t.startswith("target_npu") and "NPU" in t for t in base_runs), base_runs
    chip = f.locator('.chip[data-pair="baseline_gpu→target_npu"]')
    chip.wait_for(timeout=10000)
    assert "GPU" in chip.inner_text() and "NPU" in chip.inner_text()
    assert f.locator(f"{CONTENT} [data-state=empty]").is_visible()
    assert f.get_by_role("tab").count() == 7
    shoot(tab.page, ART / "picker.png", full=False)


def test_suggested_pair_loads_and_shows_overview(tab):
    f = tab.f
    f.locator('.chip[data-pair="baseline_gpu→target_npu"]').click()
    hp = wait_for(lambda: (lambda d: d if d.get(P + "b") and d.get(P + "t") else None)(hash_params(tab.page)), 5)
    assert hp[P + "b"].startswith("baseline_gpu/") and hp[P + "t"].startswith("target_npu/")
    assert f.locator('select[data-role="base-run"]').input_value() == "baseline_gpu"
    assert f.locator('select[data-role="target-run"]').input_value() == "target_npu"
    assert any(u.endswith("/data/plugin/profile_compare/load") for u in tab.requests) or \
        any("compare/overall" in u for u in tab.requests)
    _overview_or_skip(tab)
    table = f.locator("table.metrics").first
    names = table.locator("tbody td.name .label").all_inner_texts()
    assert any(n.strip() == "Computing Time" for n in names), names
    assert any(n.strip() == "E2E Time" for n in names), names
    assert f.locator(".kpi").count() >= 1
    assert f.locator("svg.chart").count() >= 2          # time split + waterfall
    # kernels of a row on demand
    first = table.locator("tbody tr").first            # Computing Time
    if first.locator("button", has_text="Kernels").count():
        first.locator("button", has_text="Kernels").click()
        detail = table.locator("tr.detail table").first
        detail.wait_for()
        assert detail.locator("tbody tr").count() >= 1
        shoot(tab.page, ART / "overview_kernels.png", full=False, scroll_to=detail)
        table.locator("tbody tr").first.locator("button", has_text="Hide").click()
        assert table.locator("tr.detail").count() == 0
    shoot(tab.page, ART / "overview.png")


def test_workbook_link(tab, tb):
    link = tab.f.locator('a[data-role="xlsx"]')
    href = link.get_attribute("href")
    assert href.startswith("compare/xlsx?baseline=") and "&target=" in href       # relative: works behind prefixes
    assert link.get_attribute("download") is not None
    import urllib.error
    try:
        status, body = tb.get("/data/plugin/profile_compare/" + href, timeout=120)
    except urllib.error.HTTPError as e:
        pytest.skip(f"compare/xlsx answers {e.code} (route not served yet); the link itself is checked")
    assert status == 200 and body[:2] == b"PK"                                   # an xlsx is a zip


def test_swap_exchanges_sides(tab):
    before = hash_params(tab.page)
    tab.f.get_by_role("button", name="Swap baseline and target").click()
    after = wait_for(lambda: (lambda d: d if d.get(P + "b") == before.get(P + "t") else None)(hash_params(tab.page)), 5)
    assert after[P + "t"] == before[P + "b"]
    assert tab.select_value("base-run") == "target_npu"
    tab.settle()
    tab.f.get_by_role("button", name="Swap baseline and target").click()
    wait_for(lambda: hash_params(tab.page).get(P + "b") == before[P + "b"], 5)
    tab.settle()


def test_change_step_goes_into_the_hash(tab):
    sel = tab.f.locator('select[data-role="base-step"]')
    opts = sel.locator("option").all()
    if len(opts) < 2 or sel.is_disabled():
        pytest.skip("the baseline worker lists no steps")
    value = opts[1].get_attribute("value")
    sel.select_option(value)
    wait_for(lambda: hash_params(tab.page).get(P + "bs") == value, 5)
    tab.settle()
    assert any(f"base_step={value}" in u for u in tab.requests if "compare/overall" in u)
    sel.select_option("")
    wait_for(lambda: P + "bs" not in hash_params(tab.page), 5)
    tab.settle()


def test_hash_round_trips_after_reload(tab):
    tab.f.locator('button.tab[data-view="kernel"]').click()
    wait_for(lambda: hash_params(tab.page).get(P + "v") == "kernel", 5)
    tab.settle()
    before = hash_params(tab.page)
    tab.page.reload()
    tab.f.locator("#compare .side.baseline select").first.wait_for(timeout=30000)
    tab.settle()
    after = hash_params(tab.page)
    assert {k: v for k, v in after.items() if k.startswith(P)} == {k: v for k, v in before.items() if k.startswith(P)}
    assert tab.select_value("base-worker") == before[P + "b"]
    assert tab.select_value("target-worker") == before[P + "t"]
    assert tab.f.locator('button.tab[data-view="kernel"]').get_attribute("aria-selected") == "true"
    tab.f.locator('button.tab[data-view="overview"]').click()
    tab.settle()


def test_tensorboard_reload_refetches(tab):
    n = sum(u.endswith("/data/plugin/profile_compare/runs") for u in tab.requests)
    tab.page.locator("app-header-reload button.reload-button").click()
    wait_for(lambda: sum(u.endswith("/data/plugin/profile_compare/runs") for u in tab.requests) > n, 10)
    tab.settle()


def test_tab_switch_keeps_state(tab):
    entries = sum("plugin_entry.html" in u for u in tab.requests)
    keys = {k: v for k, v in hash_params(tab.page).items() if k.startswith(P)}
    tab.page.evaluate("location.hash = '#scalars'")
    wait_for(lambda: tab.page.evaluate("location.hash") == "#scalars", 5)
    tab.page.evaluate("location.hash = '#profile_compare'")
    wait_for(lambda: {k: v for k, v in hash_params(tab.page).items() if k.startswith(P)} == keys, 5)
    assert sum("plugin_entry.html" in u for u in tab.requests) == entries   # same iframe, state kept
    assert tab.select_value("base-worker") == keys[P + "b"]


def test_every_view_against_the_real_server(tab):
    for view in ("operator", "module", "kernel", "api", "communication", "memory"):
        tab.f.locator(f'button.tab[data-view="{view}"]').click()
        tab.settle()
        shoot(tab.page, ART / f"real_{view}.png", full=False)
        content = tab.f.locator(CONTENT).inner_text()
        assert "failed" not in content.lower() or "not available" in content.lower(), content[:300]
    tab.f.locator('button.tab[data-view="overview"]').click()
    tab.settle()


def test_keyboard_reaches_the_controls(tab):
    tab.f.locator('button.tab[data-view="overview"]').focus()
    tab.page.keyboard.press("ArrowRight")
    wait_for(lambda: hash_params(tab.page).get(P + "v") == "operator", 5)
    focused = frame_of(tab.page).evaluate("document.activeElement && document.activeElement.dataset.view")
    assert focused == "operator"
    tab.page.keyboard.press("ArrowLeft")
    wait_for(lambda: P + "v" not in hash_params(tab.page), 5)
    tab.settle()


def test_no_console_errors(tab):
    assert tab.console.errors() == []


# -- the view routes against a contract mock --------------------------------------------

def _pair_hash(tb, view: str) -> str:
    runs = tb.get_json("/data/plugin/profile_compare/runs")
    pair = next(p for p in runs["pairs"] if p["baseline"] == "baseline_gpu" and p["target"] == "target_npu")
    return f"#profile_compare&{P}b={pair['baseline_worker']}&{P}t={pair['target_worker']}&{P}v={view}"


def test_views_against_the_api_contract(browser, tb):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    mock = ContractMock()
    mock.install(page)
    t = Tab(page, tb.url)
    t.open(_pair_hash(tb, "operator"))
    f = t.f
    f.locator(f"{CONTENT} .paged table").wait_for(timeout=60000)
    assert mock.last("operator")["limit"] == "50"
    rows = f.locator(f"{CONTENT} tbody tr")
    assert rows.count() == 50
    assert f.locator(".badge.baseline_only").count() and f.locator(".badge.target_only").count()
    assert "1–50 of 120" in f.locator(".pager").inner_text()
    shoot(page, ART / "view_operator.png")
    # sort on the server: desc first, then asc
    f.get_by_role("button", name=re.compile(r"^Diff")).click()
    wait_for(lambda: mock.last("operator").get("sort") == "diff_ms" and mock.last("operator").get("order") == "desc", 5)
    f.locator('th[aria-sort="descending"]').wait_for()
    f.get_by_role("button", name=re.compile(r"^Diff")).click()
    wait_for(lambda: mock.last("operator").get("order") == "asc", 5)
    assert hash_params(page).get(P + "s") == "diff_ms" and hash_params(page).get(P + "o") == "asc"
    # search, min |diff|, page size, pager
    f.get_by_role("searchbox").fill("op_01")
    f.get_by_role("searchbox").press("Enter")
    wait_for(lambda: mock.last("operator").get("q") == "op_01", 5)
    f.get_by_role("searchbox").fill("")
    f.get_by_role("searchbox").press("Enter")
    wait_for(lambda: P + "q" not in hash_params(page), 5)     # answered from the client cache
    f.get_by_label(re.compile("Minimum absolute difference")).fill("5")
    f.get_by_label(re.compile("Minimum absolute difference")).press("Enter")
    wait_for(lambda: mock.last("operator").get("min_diff") == "5", 5)
    f.get_by_label(re.compile("Minimum absolute difference")).fill("")
    f.get_by_label(re.compile("Minimum absolute difference")).press("Enter")
    f.get_by_label("Rows per page").select_option("25")
    wait_for(lambda: mock.last("operator").get("limit") == "25", 5)
    f.get_by_role("button", name="Next page").click()
    wait_for(lambda: mock.last("operator").get("offset") == "25", 5)
    wait_for(lambda: "26–50 of 120" in f.locator(".pager").inner_text(), 5)

    # module: tree with expand/collapse by path and call stacks as text (not in VSCode)
    f.locator('button.tab[data-view="module"]').click()
    f.locator(f"{CONTENT} .paged table").wait_for(timeout=10000)
    body = f.locator(f"{CONTENT} tbody")
    wait_for(lambda: body.locator("tr").count() == 10, 5)
    f.get_by_role("button", name="Collapse features_0").click()
    wait_for(lambda: body.locator("tr").count() == 7, 5)
    f.get_by_role("button", name="Expand features_0").click()
    wait_for(lambda: body.locator("tr").count() == 10, 5)
    body.locator("tr").first.get_by_role("button", name="Show").click()
    stack = f.locator("ol.stack").first
    stack.wait_for()
    assert "/home/me/train.py(12): main" in stack.inner_text()
    assert stack.locator("button").count() == 0          # plain text outside VSCode
    shoot(page, ART / "view_module.png")

    for view in ("kernel", "api", "communication"):
        f.locator(f'button.tab[data-view="{view}"]').click()
        f.locator(f"{CONTENT} .paged table").wait_for(timeout=10000)
        wait_for(lambda: mock.last(view)["limit"], 5)
        if view == "kernel":            # unit from the column type when the label has none
            assert "Baseline (µs)" in f.locator(f"{CONTENT} thead").inner_text()
            assert "(µs)" in f.locator(".toolbar").inner_text()
        shoot(page, ART / f"view_{view}.png")

    # memory: both curves, peaks marked, drag-to-zoom, attribution and the paged table
    f.locator('button.tab[data-view="memory"]').click()
    chart = f.locator(f"{CONTENT} .linechart svg")
    chart.wait_for(timeout=10000)
    assert chart.locator("polyline").count() == 4
    assert chart.locator("circle").count() == 2
    f.locator("table[aria-label='Peak attribution']").wait_for(timeout=10000)
    f.locator(f"{CONTENT} .paged table").wait_for(timeout=10000)
    shoot(page, ART / "view_memory.png")
    ticks_before = chart.locator("g.axis text").all_inner_texts()
    box = chart.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5, steps=4)
    page.mouse.up()
    wait_for(lambda: chart.locator("g.axis text").all_inner_texts() != ticks_before, 5)
    assert f.locator("table[aria-label='Peak attribution'] tbody tr").count() == 3
    f.locator(f"{CONTENT} .paged table").wait_for(timeout=10000)
    assert mock.last("memory")["limit"] == "50"
    shoot(page, ART / "view_memory_zoomed.png", full=False, scroll_to=chart)
    f.get_by_role("button", name="Reset zoom").click()
    wait_for(lambda: chart.locator("g.axis text").all_inner_texts() == ticks_before, 5)
    assert t.console.errors() == []
    page.close()


def test_view_not_available_is_explained(browser, tb):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.route(re.compile(r"/compare/operator\?"), lambda r: r.fulfill(
        status=404, content_type="application/json", body='{"error": "operator compare needs torch ops on both sides"}'))
    t = Tab(page, tb.url)
    t.open(_pair_hash(tb, "operator"))
    na = t.f.locator(f"{CONTENT} [data-state=not-available]")
    na.wait_for(timeout=60000)
    assert "not available for this pair" in na.inner_text()
    assert "torch ops on both sides" in na.inner_text()
    page.close()


def test_worker_errors_and_parse_progress_in_place(browser, tb):
    """A run with an unreadable worker and a worker still parsing (the runs answer is doctored)."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    polls = {"n": 0}

    def runs(route):
        resp = route.fetch()
        body = resp.json()
        polls["n"] += 1
        for r in body["runs"]:
            if r["name"] == "target_npu":
                w0 = r["workers"][0]
                if polls["n"] <= 4:
                    w0.update(status="loading", progress=0.4)
                r["workers"].append(dict(w0, id="target_npu/rank9_broken", name="rank9_broken", rank=9, status="error",
                                         progress=1.0, error="kernel_details.csv: no column 'Duration(us)'"))
        route.fulfill(response=resp, json=body)

    page.route(re.compile(r"/data/plugin/profile_compare/runs$"), runs)
    t = Tab(page, tb.url)
    t.open()
    f = t.f
    f.locator('.chip[data-pair="baseline_gpu→target_npu"]').click()
    loading = f.locator(f"{CONTENT} [data-state=loading]")
    loading.wait_for(timeout=5000)
    assert "40%" in loading.inner_text() and "target" in loading.inner_text()
    assert "Parsing… 40%" in f.locator(".side.target .side-status").inner_text()
    t.settle()                                                   # parsed: the overview (or its notice) shows
    opt = f.locator('select[data-role="target-worker"] option[value="target_npu/rank9_broken"]')
    assert opt.is_disabled() and "unreadable" in opt.inner_text()
    errs = f.locator(".side.target details.side-errors")
    errs.locator("summary").click()
    assert "no column 'Duration(us)'" in errs.inner_text()
    shoot(page, ART / "worker_errors.png", full=False)
    # a shared link naming the broken worker explains itself in place
    t.open(_pair_hash(tb, "overview").replace("rank0_ascend_pt", "rank9_broken"))
    err = f.locator(f"{CONTENT} [data-state=worker-error]")
    err.wait_for(timeout=10000)
    assert "cannot be read" in err.inner_text() and "Duration(us)" in err.inner_text()
    assert "Cannot read this worker" in f.locator(".side.target .side-status").inner_text()
    assert t.console.errors() == []
    page.close()


# -- VSCode-like embedding ---------------------------------------------------------------

def test_vscode_like_frame(browser, tb):
    """Another origin frames TensorBoard in a sandboxed, 0.8-scaled iframe (as VSCode does)."""
    page = browser.new_page(viewport={"width": 1024, "height": 640})
    mock = ContractMock()
    mock.install(page)
    src = tb.url + "/" + _pair_hash(tb, "module")
    console = ConsoleWatch(page)
    with serve_html(VSCODE_SIM.format(src=src)) as outer:
        page.goto(outer)
        f = page.frame_locator("#tb").frame_locator(IFRAME)
        f.locator(f"{CONTENT} .paged table").wait_for(timeout=60000)
        inner = next(fr for fr in page.frames if "plugin_entry.html" in fr.url)
        assert inner.evaluate("window.innerWidth") >= 1270          # laid out on the 1.25x viewport
        assert inner.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        # jump to source: frames become buttons posting {filename, line} to the webview
        f.locator(f"{CONTENT} tbody tr").first.get_by_role("button", name="Show").click()
        f.locator("ol.stack button").first.click()
        got = wait_for(lambda: page.evaluate("window.received"), 5)
        assert got[0]["data"] == {"filename": "/home/me/train.py", "line": 12}
        assert got[0]["origin"] == tb.url.split("/", 3)[0] + "//" + tb.url.split("/", 3)[2]
        # the workbook: downloads are blocked in the sandbox, so it is saved on the server
        f.locator('button[data-role="export"]').click()
        f.get_by_label("Saved workbook path").wait_for(timeout=5000)
        assert f.get_by_label("Saved workbook path").input_value().endswith(".xlsx")
        assert mock.exports and mock.exports[0]["baseline"].startswith("baseline_gpu/")
        shoot(page, ART / "vscode_frame.png", full=False)
        assert console.errors() == []
    page.close()


# -- behind a proxy prefix -----------------------------------------------------------------

def test_path_prefix(browser, logdir):
    with TensorBoard(logdir, "--path_prefix", "/proxy/abc") as tbp:
        assert tbp.url.endswith("/proxy/abc") or "/proxy/abc" in tbp.url
        base = tbp.url if tbp.url.endswith("/proxy/abc") else tbp.url.rstrip("/") + "/proxy/abc"
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        t = Tab(page, base)
        t.open()
        t.f.locator('.chip[data-pair="baseline_gpu→target_npu"]').click()
        # parsing starts again on this fresh server: the loading state (or the result) is enough
        t.f.locator(f"{CONTENT} [data-state=loading], " + SETTLED).first.wait_for(timeout=60000)
        assert any(u.endswith("/proxy/abc/data/plugin/profile_compare/load") for u in t.requests) or \
            any("/proxy/abc/data/plugin/profile_compare/compare/overall" in u for u in t.requests)
        plugin_urls = [u for u in t.requests if "/data/plugin/profile_compare/" in u]
        assert plugin_urls and all("/proxy/abc/data/plugin/profile_compare/" in u for u in plugin_urls)
        shoot(page, ART / "path_prefix.png", full=False)
        assert t.console.errors() == [], t.console.not_found
        page.close()
