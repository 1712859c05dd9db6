"""Issue 14, the tab side, in real headless Chromium against a real `tensorboard`: the host's
dark theme followed, run and worker names readable at 1024x700 (full names on hover), the
module tree after "Collapse all", hints that link only to views that apply, an unreadable
side's workbook, and the smaller frictions (min |diff| as you type, the neutral band, long
kernel names). One TensorBoard serves a temporary logdir of symlinks (samples and a few
corpus runs) for the whole module. Screenshots go to test-artifacts/issue14_*.png."""
from __future__ import annotations

import pytest

from browser_util import ART, CONTENT, P, PluginTab, hash_params, needs_chromium, shoot
from conftest import CORPUS, SAMPLES, needs_samples
from tbserver import TensorBoard

pytestmark = [
    needs_chromium,
    needs_samples,
]

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
    broken = d / "broken_gpu"                       # a trace cut off mid-file: the side cannot be read
    broken.mkdir()
    (broken / "worker0.pt.trace.json").write_text('{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "aten::mm", ')
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


class Tab(PluginTab):
    def __init__(self, browser, base: str, width: int = 1280, height: int = 800, dark: bool = False) -> None:
        super().__init__(self.new_page(browser, width, height, dark))
        self.base = base

    def open(self, hash_: str, ready: str = "table.metrics") -> None:
        self.page.goto(self.base + "/" + hash_)
        self.f.locator(f"{CONTENT} {ready}").first.wait_for(timeout=120000)


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


# -- item 2: the module tree after "Collapse all" ---------------------------------------------------

_TREE_JS = """() => [...document.querySelectorAll('#pc-content table.tree > tbody > tr')]
  .filter((tr) => tr.getClientRects().length)
  .map((tr) => {const td = tr.querySelector('td.name'); const tog = td.querySelector('button.tog');
                return {name: td.querySelector('.label').innerText.trim(), indent: parseFloat(td.style.paddingLeft),
                        toggle: tog ? tog.getAttribute('aria-expanded') : null, virtual: tr.classList.contains('virtual')};})"""


@pytest.mark.skipif(not (CORPUS / NPU_L1).is_dir(), reason="corpus run missing")
def test_module_tree_collapse_all_keeps_backward(browser, tb):
    """NPU Level1 rank0 vs rank1: the server has rows for `/[ BACKWARD ]/...` modules but none
    for `/[ BACKWARD ]` itself. After "Collapse all" the top level is the five roots, the
    `[ BACKWARD ]` node among them (a placeholder with a toggle), nothing under the
    toggle-less `Optimizer.zero_grad#SGD.zero_grad`; opening `[ BACKWARD ]` shows its children one
    level in, and every child sits deeper than its parent."""
    t = Tab(browser, tb.url, 1024, 700)
    t.open(pair_hash(f"{NPU_L1}/rank0_ascend_pt", f"{NPU_L1}/rank1_ascend_pt", "module"), "table.tree")
    fr, f = t.frame, t.f
    f.get_by_role("button", name="Collapse all").click()
    rows = fr.evaluate(_TREE_JS)
    names = [r["name"] for r in rows]
    assert names == ["DistributedDataParallel_0", "CrossEntropyLoss_0", "Optimizer.zero_grad#SGD.zero_grad",
                     "[ BACKWARD ]", "Optimizer.step#SGD.step"], names
    assert len({r["indent"] for r in rows}) == 1, rows
    bw = rows[3]
    assert bw["virtual"] and bw["toggle"] == "false", bw
    assert rows[2]["toggle"] is None, rows[2]                        # zero_grad has no children
    shoot(t.page, ART / "issue14_module_collapsed_1024.png", full=False)
    f.get_by_role("button", name="Expand [ BACKWARD ]").click()
    rows = fr.evaluate(_TREE_JS)
    i = [r["name"] for r in rows].index("[ BACKWARD ]")
    kids = rows[i + 1:i + 3]
    assert [k["name"] for k in kids] == ["CrossEntropyLoss_0", "DistributedDataParallel_0"], kids
    assert all(k["indent"] > bw["indent"] for k in kids) and rows[i + 3]["name"] == "Optimizer.step#SGD.step"
    f.get_by_role("button", name="Expand all").click()
    rows = fr.evaluate(_TREE_JS)
    # every row is at most one level deeper than the row above it: no row hangs under a stranger
    for above, r in zip(rows, rows[1:]):
        assert r["indent"] <= above["indent"] + 16, (above, r)
    shoot(t.page, ART / "issue14_module_expanded_1024.png", full=False)
    assert t.console.errors() == []
    t.close()


# -- item 3 (and item 9's Kernel tab): hints that lead somewhere ------------------------------------

@pytest.mark.skipif(not (CORPUS / LONG_RUN).is_dir(), reason="corpus run missing")
def test_hints_link_only_views_that_apply(browser, tb):
    """GPU (resnet50) vs NPU: no hint links the Kernel view, whose tab is shown disabled with
    its reason; the Kernel tab says the reason once without asking the server; "Free Time" and
    its child "Free" (nearly the same move) are one hint."""
    t = Tab(browser, tb.url, 1024, 700)
    requests: list[str] = []
    t.page.on("request", lambda r: requests.append(r.url))
    t.open(pair_hash(f"{LONG_RUN}/worker0.1623143089861", TARGET))
    f = t.f
    hints = f.locator(f"{CONTENT} ul.hints li")
    hints.first.wait_for()
    names = [x.get_attribute("data-metric") for x in hints.all()]
    assert "Free Time" in names and "Free" not in names, names
    assert "of which Free" in f.locator(f'{CONTENT} ul.hints li[data-metric="Free Time"]').inner_text()
    assert f.locator(f'{CONTENT} ul.hints button[data-view="kernel"]').count() == 0
    assert f.locator(f'{CONTENT} ul.hints button[data-view="operator"]').count() > 0
    tab = f.locator('button.tab[data-view="kernel"]')
    assert tab.get_attribute("aria-disabled") == "true"
    assert "GPU" in tab.get_attribute("title") and "NPU" in tab.get_attribute("title")
    shoot(t.page, ART / "issue14_hints_1024.png", full=False, scroll_to=f.locator(f"{CONTENT} ul.hints"))
    tab.click(force=True)                                   # disabled, but it still opens to say why
    na = f.locator(f"{CONTENT} [data-state=not-available]")
    na.wait_for()
    text = na.inner_text()
    assert text.count("not available") == 1 and "GPU" in text and "NPU" in text, text
    assert not any("/compare/kernel?" in u for u in requests), [u for u in requests if "/compare/kernel" in u]
    shoot(t.page, ART / "issue14_kernel_na_1024.png", full=False)
    assert t.console.errors() == []
    t.close()


# -- item 5: an unreadable side ---------------------------------------------------------------------

def test_unreadable_side_disables_the_workbook(browser, tb):
    """A pair whose target cannot be read: the tab says why, and Download xlsx is a disabled
    button whose title gives the same reason (it was a link to a download the server refused)."""
    t = Tab(browser, tb.url, 1024, 700)
    t.open(pair_hash(BASE, "broken_gpu/worker0"), "[data-state=worker-error]")
    f = t.f
    xlsx = f.locator('[data-role="xlsx"]')
    t.wait(lambda: xlsx.evaluate("(e) => e.tagName") == "BUTTON")
    assert xlsx.is_disabled()
    title = xlsx.get_attribute("title")
    assert title.startswith("No workbook: Target (worker0") and "cannot be read" in title, title
    shoot(t.page, ART / "issue14_unreadable_side_1024.png", full=False)
    # a readable pair again: the download is back
    t.page.goto(tb.url + "/" + pair_hash())
    f.locator(f"{CONTENT} table.metrics").wait_for(timeout=60000)
    t.wait(lambda: f.locator('a[data-role="xlsx"]').count() == 1)
    t.close()


# -- item 9: smaller frictions; the per-step note on tables; memory labels and units --------------

def test_min_diff_applies_as_you_type(browser, tb):
    t = Tab(browser, tb.url, 1024, 700)
    t.open(pair_hash(view="operator"), ".paged table.t")
    f, fr = t.f, t.frame
    box = f.locator(f'{CONTENT} input[type=number]')
    box.press_sequentially("0.5", delay=40)                   # typed, no Enter, no blur
    t.wait(lambda: hash_params(t.page).get(P + "operator.md") == "0.5" or
           any(k.endswith(".md") and v == "0.5" for k, v in hash_params(t.page).items()), 10)
    idx = fr.evaluate("""() => [...document.querySelectorAll('#pc-content table.t thead th button.sort')]
                           .findIndex((b) => b.dataset.key === 'diff_ms')""")
    assert idx >= 0

    def filtered():
        cells = fr.evaluate(f"""() => [...document.querySelectorAll('#pc-content table.t > tbody > tr')]
                               .map((tr) => tr.children[{idx}]?.innerText ?? '')""")
        return cells and all(abs(float(c.replace("\u2212", "-").replace("+", "").replace(",", "") or 0)) >= 0.5
                             for c in cells)
    t.wait(filtered, 10)
    t.close()


@pytest.mark.skipif(not (CORPUS / NPU_L1).is_dir(), reason="corpus run missing")
def test_rounding_noise_is_neutral(browser, tb):
    """NPU rank0 vs rank1 module table: differences that show as 0.000 carry no sign and no
    colour (they were `+0.000 ▲` red and `−0.000 ▼` green)."""
    t = Tab(browser, tb.url, 1024, 700)
    t.open(pair_hash(f"{NPU_L1}/rank0_ascend_pt", f"{NPU_L1}/rank1_ascend_pt", "module"), "table.tree")
    cells = t.frame.evaluate("""() => [...document.querySelectorAll('#pc-content table.t > tbody > tr > td.num')]
                                 .map((td) => ({text: td.innerText.trim(), cls: td.className}))""")
    zeros = [c for c in cells if c["text"].replace("\u2212", "").replace("+", "").replace("-", "") in ("0.000", "0")]
    assert zeros, cells[:20]
    bad = [c for c in zeros if c["text"][0] in "+-\u2212" or "worse" in c["cls"] or "better" in c["cls"]]
    assert not bad, bad[:10]
    t.close()


@pytest.mark.skipif(not (CORPUS / LONG_RUN).is_dir(), reason="corpus run missing")
def test_long_kernel_names_shortened_with_full_name_on_hover(browser, tb):
    """GPU resnet50 worker vs its sibling: the kernel view's C++ template names are shortened
    in the middle (a few lines at most at 1024 px), the full name on hover."""
    t = Tab(browser, tb.url, 1024, 700)
    t.open(pair_hash(f"{LONG_RUN}/worker0.1623143089861", f"{LONG_RUN}/worker0.1623143566756", "kernel"), ".paged table.t")
    info = t.frame.evaluate("""() => [...document.querySelectorAll('#pc-content table.t > tbody > tr > td.name .label')]
      .map((s) => ({text: s.innerText, title: s.title || '', lines: Math.round(s.getBoundingClientRect().height /
                    parseFloat(getComputedStyle(s).lineHeight || '18'))}))""")
    long = [x for x in info if len(x["title"]) > 120]
    assert long, [x["text"] for x in info[:5]]
    assert all("\u2026" in x["text"] and len(x["text"]) <= 130 for x in long), long[:2]
    assert max(x["lines"] for x in info) <= 5, sorted(info, key=lambda x: -x["lines"])[:2]
    shoot(t.page, ART / "issue14_kernel_names_1024.png", full=False)
    t.close()


@pytest.mark.skipif(not (CORPUS / LONG_RUN).is_dir() or not (CORPUS / NPU_L1).is_dir(), reason="corpus run missing")
def test_tables_say_per_step_and_offer_the_switch(browser, tb):
    """6-step GPU vs 1-step NPU: the operator table says its figures are per step (the server's
    figures.note) and offers the switch; raw totals after it, in the URL and the request.  (Not the
    samples' NPU run: it has 6 steps too.)"""
    t = Tab(browser, tb.url, 1024, 700)
    requests: list[str] = []
    t.page.on("request", lambda r: requests.append(r.url))
    t.open(pair_hash(f"{LONG_RUN}/worker0.1623143089861", f"{NPU_L1}/rank0_ascend_pt", "operator"), ".paged table.t")
    f = t.f
    note = f.locator(f"{CONTENT} [data-role=figures]")
    note.wait_for()
    assert note.get_attribute("data-per-step") == "true" and "per step" in note.inner_text().lower(), note.inner_text()
    f.locator(f"{CONTENT} [data-role=per-step-switch]").click()
    t.wait(lambda: f.locator(f"{CONTENT} [data-role=figures]").count() == 1 and
           f.locator(f"{CONTENT} [data-role=figures]").get_attribute("data-per-step") == "false", 30)
    assert hash_params(t.page).get(P + "ps") == "0"
    assert any("/compare/operator?" in u and "per_step=0" in u for u in requests)
    assert "per_step=0" in f.locator('a[data-role="xlsx"]').get_attribute("href")
    t.close()


def test_memory_units_and_labels(browser, tb):
    """One convention, said once: the memory view's figures are MiB with a line saying the
    units are binary; the overview's peak reserved card is in GiB and its title says what it
    measures."""
    t = Tab(browser, tb.url, 1024, 700, dark=True)
    t.open(pair_hash())
    f = t.f
    card = f.locator('.kpi[data-kpi="Peak reserved memory"]')
    assert "GiB" in card.inner_text() and "MiB" in card.inner_text()
    assert "1 GiB = 1,024 MiB" in card.get_attribute("title")
    assert "reached by" in card.locator("[data-role=peak-component]").inner_text()     # which component (item 4)
    f.locator('button.tab[data-view="memory"]').click()
    f.locator(f"{CONTENT} .linechart").first.wait_for(timeout=60000)
    assert "MiB" in f.locator(f'{CONTENT} .kpi[data-kpi="Peak allocated"]').inner_text()
    assert "binary units" in f.locator(f"{CONTENT} [data-role=memory-about]").inner_text()
    shoot(t.page, ART / "issue14_dark_memory_1024.png", full=False)
    t.close()
