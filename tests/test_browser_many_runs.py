"""Issue 21 §2, the tab side, in real headless Chromium against a real `tensorboard`: with a few
hundred runs the run pickers list a bounded number of options and filter as you type (Enter
picks the first match), the suggestions show a few chips and the rest behind "more", and the
listing says how many candidates the server left off. One page load; the logdir is 300 run
folders of one tiny Kineto trace (bench/runs_route.py's, hard links). Screenshot:
test-artifacts/many_runs_filter.png."""
from __future__ import annotations

import pytest

from bench.runs_route import make_logdir
from browser_util import ART, CONTENT, IFRAME, P, PluginTab, hash_params, needs_chromium, shoot
from tbserver import TensorBoard

pytestmark = [needs_chromium]

N = 300


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    logdir = make_logdir(tmp_path_factory.mktemp("many"), N)
    with TensorBoard(logdir) as server:
        yield server


def _options(f, role: str) -> list[str]:
    return f.locator(f'select[data-role="{role}"] option').evaluate_all("os => os.map(o => o.value)")


def test_type_to_filter_and_pick_among_hundreds_of_runs(browser, tb):
    t = PluginTab(PluginTab.new_page(browser, 1280, 900))
    try:
        t.page.goto(tb.url + "/#profile_compare")
        f = t.f
        f.locator(f"{CONTENT} table.metrics").wait_for(timeout=120000)       # the top suggestion opened itself
        hp = hash_params(t.page)
        assert (hp[P + "b"], hp[P + "t"]) == ("run_0000/worker0", "run_0001/worker0"), hp

        # a bounded list: 200 runs listed, the rest said, not 300 options
        opts = _options(f, "target-run")
        assert len(opts) <= 203 and "run_0001" in opts, len(opts)
        assert "100 more" in f.locator('select[data-role="target-run"] option.pick-more').inner_text()

        # a few chips, the rest behind "more", the left-off count said
        assert f.locator(".pc-row > .suggest > .chip").count() == 6
        assert "more" in f.locator("details.more-pairs > summary").inner_text()
        assert "not listed" in f.locator('[data-role="pairs-left-off"]').inner_text()

        # type to filter: every word, any case; Enter picks the first match
        box = f.locator('input[data-role="target-run-filter"]')
        box.fill("RUN 0123")
        t.wait(lambda: "run_0123" in _options(f, "target-run"))
        opts = _options(f, "target-run")
        assert "run_0123" in opts and len(opts) == 3, opts            # the head, the current choice, the match
        assert "1 of 300" in f.locator('select[data-role="target-run"]').locator("xpath=..").inner_text()
        box.press("Enter")
        t.wait(lambda: hash_params(t.page).get(P + "t") == "run_0123/worker0")

        # the other side: narrow to a hundred, choose one from the list
        f.locator('input[data-role="base-run-filter"]').fill("run_02")
        t.wait(lambda: len(_options(f, "base-run")) == 102)            # head, current, run_0200..run_0299
        f.locator('select[data-role="base-run"]').select_option("run_0250")
        t.wait(lambda: hash_params(t.page).get(P + "b") == "run_0250/worker0")
        t.wait(lambda: f.locator(f"{CONTENT} table.metrics").count() > 0, 60)
        # the typed text stays in its box across the redraw, the choice shows in the select
        assert f.locator('input[data-role="base-run-filter"]').input_value() == "run_02"
        assert f.locator('select[data-role="base-run"]').input_value() == "run_0250"
        assert f.locator('select[data-role="target-run"]').input_value() == "run_0123"
        shoot(t.page, ART / "many_runs_filter.png", full=False)
        assert not t.console.errors(), t.console.errors()
    finally:
        t.close()
