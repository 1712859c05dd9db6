"""Reopening a cached pair in a real TensorBoard: the overview JSON and the rendered tab.

    python -m bench.ui_bench                      # the generated 1 GB GPU pair, 3 repeats
    python -m bench.ui_bench --pair npu_500mb --repeat 5

A throwaway logdir outside the bench folder holds two symlinked runs (``baseline``,
``target``) of the pair, and a throwaway parsed-profile cache.  First one TensorBoard
parses the pair (POST compare/overall; timed as "first open").  Then, per repeat, a fresh
TensorBoard process (empty memory, warm disk cache) is started and timed twice:

* ``overview_json``: POST compare/overall until the JSON arrives (what the tab asks first);
* ``tab``: in headless Chromium, the tab is open with the baseline chosen in its URL (so it
  does not open the suggested pair by itself); timed from picking the target run until the
  overview's metric table is rendered (a second fresh process, so the JSON is not in its
  memory either).

Chromium is /usr/bin/chromium driven by Playwright (installed by scripts/test.sh).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

from . import gen_traces  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from browser_util import IFRAME, LAUNCH_ARGS  # noqa: E402
from tbserver import TensorBoard  # noqa: E402

ROUTE = "/data/plugin/profile_compare"


def _log(msg: str) -> None:
    print(f"[ui-bench] {msg}", file=sys.stderr, flush=True)


def make_logdir(pair_dir: Path, tmp: Path) -> Path:
    logdir = tmp / "logdir"
    logdir.mkdir()
    for side in ("baseline", "target"):
        (logdir / side).symlink_to(pair_dir / side, target_is_directory=True)
    return logdir


def worker_ids(tb: TensorBoard) -> dict:
    """run -> worker id, once discovery has listed both runs."""
    deadline = time.time() + 120
    while time.time() < deadline:
        runs = tb.get_json(ROUTE + "/runs")
        ids = {r["name"]: r["workers"][0]["id"] for r in runs.get("runs", []) if r.get("workers")}
        if {"baseline", "target"} <= set(ids):
            return ids
        time.sleep(0.2)
    raise RuntimeError(f"runs not discovered: {runs}")


def post_overall(tb: TensorBoard, ids: dict) -> float:
    """POST compare/overall until it answers with the overview (202 "loading" meanwhile, as the tab
    polls); seconds taken."""
    t = time.perf_counter()
    while True:
        over = tb.post_json(ROUTE + "/compare/overall", {"baseline": ids["baseline"], "target": ids["target"]},
                            timeout=600)
        if over.get("status") != "loading":
            break
        time.sleep(0.05)
    took = time.perf_counter() - t
    if not any(m.get("name") == "E2E Time" for m in over.get("overall_metrics", [])):
        raise RuntimeError(f"overview JSON without an E2E Time row: {str(over)[:300]}")
    return took


def time_tab(tb: TensorBoard, browser, ids: dict) -> float:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.goto(tb.url + "/#profile_compare&p.profile_compare.b=" + quote(ids["baseline"], safe="/"))
        f = page.frame_locator(IFRAME)
        f.locator('select[data-role="target-run"]').wait_for(timeout=60000)
        f.locator('select[data-role="target-run"] option[value="target"]').wait_for(state="attached", timeout=60000)
        t = time.perf_counter()
        f.locator('select[data-role="target-run"]').select_option("target")
        f.locator("table.metrics").first.wait_for(timeout=120000)
        return time.perf_counter() - t
    finally:
        page.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="gpu_1gb", help="a generated pair folder (default gpu_1gb)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    pair_dir = gen_traces.default_out() / args.pair
    if not (pair_dir / "baseline").is_dir():
        _log(f"{pair_dir} missing: run python -m bench.gen_traces first")
        return 2
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory(prefix="tbc-ui-bench-") as tmp:
        tmp = Path(tmp)
        logdir = make_logdir(pair_dir, tmp)
        env = {"TB_COMPARE_CACHE_DIR": str(tmp / "cache")}
        with TensorBoard(logdir, env=env) as tb:
            first = post_overall(tb, worker_ids(tb))
        _log(f"first open (parse both sides, compare): {first:.2f} s")
        json_t, tab_t = [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=LAUNCH_ARGS)
            for i in range(args.repeat):
                with TensorBoard(logdir, env=env) as tb:
                    json_t.append(post_overall(tb, worker_ids(tb)))
                with TensorBoard(logdir, env=env) as tb:
                    tab_t.append(time_tab(tb, browser, worker_ids(tb)))
                _log(f"repeat {i + 1}: overview JSON {json_t[-1]:.2f} s, tab rendered {tab_t[-1]:.2f} s")
            browser.close()
    out = {"pair": args.pair, "first_open_s": first, "overview_json_s": json_t, "tab_s": tab_t,
           "median_overview_json_s": statistics.median(json_t), "median_tab_s": statistics.median(tab_t)}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
