"""Issue 14, the tab side, in real headless Chromium against a real `tensorboard`: the host's
dark theme followed, run and worker names readable at 1024x700 (full names on hover), the
module tree after "Collapse all", hints that link only to views that apply, an unreadable
side's workbook, and the smaller frictions (min |diff| as you type, the neutral band, long
kernel names). One TensorBoard serves a temporary logdir of symlinks (samples and a few
corpus runs) for the whole module. Screenshots go to test-artifacts/issue14_*.png."""
from __future__ import annotations

import pytest

from browser_util import CHROMIUM, LAUNCH_ARGS, ConsoleWatch, frame_of, hash_params, plugin_frame, shoot
from conftest import CORPUS, ROOT, SAMPLES
import tbserver
from tbserver import TensorBoard

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python) is not installed")
pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM} (never `playwright install`)"),
    pytest.mark.skipif(not (SAMPLES / "expected.json").is_file(), reason="samples/ is missing"),
]

ART = ROOT / "test-artifacts"
P = "p.profile_compare."
CONTENT = "#pc-content"
BASE, TARGET = "baseline_gpu/worker0", "target_npu/rank0_ascend_pt"
LONG_RUN = "gpu/kineto_resnet50_num_workers_0"
NPU_L1 = "npu/alexnet_ddp_2rank_level1"


def pair_hash(base: str = BASE, target: str = TARGET, view: str = "overview") -> str:
    v = f"&{P}v={view}" if view != "overview" else ""
    return f"#profile_compare&{P}b={base}&{P}t={target}{v}"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("i14logs")
    for name in ("baseline_gpu", "target_npu", "target_npu_v2"):
        (d / name).symlink_to(SAMPLES / name)
    for rel in (LONG_RUN, NPU_L1):
        src = CORPUS / rel
        if src.is_dir():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).symlink_to(src)
    return d


@pytest.fixture(scope="module")
def tb(logdir):
    with TensorBoard(logdir) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield b
        b.close()


class Tab:
    def __init__(self, browser, base: str, width: int = 1280, height: int = 800, dark: bool = False) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": height},
                                     color_scheme="dark" if dark else "light")
        self.base = base
        self.console = ConsoleWatch(self.page)

    @property
    def f(self):
        return plugin_frame(self.page)

    @property
    def frame(self):
        return frame_of(self.page)

    def open(self, hash_: str, ready: str = "table.metrics") -> None:
        self.page.goto(self.base + "/" + hash_)
        self.f.locator(f"{CONTENT} {ready}").first.wait_for(timeout=120000)

    def wait(self, fn, timeout: float = 20):
        return tbserver.wait_for(fn, timeout, 0.1, sleep=lambda s: self.page.wait_for_timeout(s * 1000))

    def close(self) -> None:
        self.page.close()


def _bg(frame) -> str:
    return frame.evaluate("getComputedStyle(document.body).backgroundColor")


def _luma(css: str) -> float:
    import re
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


# -- item 6: dark mode ----------------------------------------------------------------------------

def test_dark_mode_follows_tensorboard(browser, tb):
    """TensorBoard in dark mode (the browser prefers dark, TensorBoard's default follows it):
    the tab is dark too; the host's `dark-mode` class switched off and on again is followed
    without a reload."""
    t = Tab(browser, tb.url, dark=True)
    t.open(pair_hash())
    assert t.page.evaluate("document.body.classList.contains('dark-mode')")       # TensorBoard is dark
    fr = t.frame
    assert t.wait(lambda: fr.evaluate("document.documentElement.classList.contains('dark')"))
    assert _luma(_bg(fr)) < 80, _bg(fr)
    assert _luma(fr.evaluate("getComputedStyle(document.body).color")) > 180
    table_bg = fr.evaluate(f"getComputedStyle(document.querySelector('{CONTENT} table.metrics thead th')).backgroundColor")
    assert _luma(table_bg) < 90, table_bg
    shoot(t.page, ART / "issue14_dark_overview.png", full=False)
    t.page.evaluate("document.body.classList.remove('dark-mode')")               # the user picks light mode
    assert t.wait(lambda: _luma(_bg(fr)) > 200)
    t.page.evaluate("document.body.classList.add('dark-mode')")
    assert t.wait(lambda: _luma(_bg(fr)) < 80)
    f = t.f
    f.locator('button.tab[data-view="operator"]').click()
    f.locator(f"{CONTENT} .paged table.t").first.wait_for(timeout=60000)
    shoot(t.page, ART / "issue14_dark_operator.png", full=False)
    f.locator('button.tab[data-view="memory"]').click()
    f.locator(f"{CONTENT} .linechart").first.wait_for(timeout=60000)
    shoot(t.page, ART / "issue14_dark_memory.png", full=False)
    assert t.console.errors() == []
    t.close()


def test_light_tensorboard_keeps_the_tab_light(browser, tb):
    t = Tab(browser, tb.url)
    t.open(pair_hash())
    assert not t.page.evaluate("document.body.classList.contains('dark-mode')")
    assert _luma(_bg(t.frame)) > 240
    t.close()


def test_standalone_page_follows_prefers_color_scheme(browser, tb):
    """The plugin page opened on its own (no TensorBoard around it) follows the browser."""
    page = browser.new_page(viewport={"width": 1024, "height": 700}, color_scheme="dark")
    page.goto(tb.url + "/data/plugin_entry.html?name=profile_compare")
    page.locator("#compare").wait_for(timeout=30000)
    assert page.evaluate("document.documentElement.classList.contains('dark')")
    assert _luma(page.evaluate("getComputedStyle(document.body).backgroundColor")) < 80
    page.close()


# -- item 7: narrow windows -----------------------------------------------------------------------

_FITS_JS = """(role) => {
  const sel = document.querySelector(`select[data-role="${role}"]`);
  const opt = sel.selectedOptions[0];
  const cs = getComputedStyle(sel);
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
  const room = sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;  // the arrow
  return {text: opt.text, title: sel.title, need: ctx.measureText(opt.text).width, room};
}"""


@pytest.mark.skipif(not (CORPUS / LONG_RUN).is_dir(), reason="corpus run missing")
def test_names_readable_at_1024(browser, tb):
    """At 1024x700 the chosen run and worker names fit their pickers (shortened in the middle
    when very long), and the full name is the select's hover title."""
    t = Tab(browser, tb.url, 1024, 700)
    t.open(pair_hash(f"{LONG_RUN}/worker0.1623143089861", TARGET))
    fr = t.frame
    for role in ("base-run", "base-worker", "target-run", "target-worker"):
        m = fr.evaluate(_FITS_JS, role)
        assert m["need"] <= m["room"], (role, m)
        assert m["title"], (role, m)
    assert LONG_RUN in fr.evaluate(_FITS_JS, "base-run")["title"]
    assert "worker0.1623143089861" in fr.evaluate(_FITS_JS, "base-worker")["title"]
    shoot(t.page, ART / "issue14_1024x700_overview.png", full=False)
    t.close()
