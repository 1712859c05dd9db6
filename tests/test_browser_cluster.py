"""The Cluster view (issue 16 item 7, the tab) in real headless Chromium against a real
`tensorboard` behind `--path_prefix`: on a generated 16-rank cluster with a planted slow rank
and slow link (bench/gen_cluster.py, into a temporary folder) the view appears, its ranks
table equals the `cluster` route's answer, the slow rank and the slow link are highlighted with
the route's reasons, the bar chart and the link heatmap draw; a click on a rank opens that
rank's worker in the pair views; cluster against cluster (the slow cluster against a clean one:
slowest rank of each side, a click on a rank opens its two workers); the corpus's 2-rank NPU runs
(text against db) inside the VSCode-like frame; the host's dark theme. One TensorBoard serves a
temporary logdir of symlinks and generated runs for the whole module. Screenshots go to
test-artifacts/cluster_*.png."""
from __future__ import annotations

import json
import subprocess
import urllib.request
import sys
import time

import pytest

from browser_util import (ART, CONTENT, IFRAME, P, VSCODE_SIM, ConsoleWatch, frame_of, hash_params, needs_chromium, num,
                          plugin_frame, prefixed_base, serve_html, shoot)
from conftest import CORPUS, ROOT
from tbserver import TensorBoard

TEXT_RUN, DB_RUN = "alexnet_ddp_2rank_level1", "alexnet_ddp_2rank_db_level1"
pytestmark = [
    needs_chromium,
    pytest.mark.skipif(not (CORPUS / "npu" / TEXT_RUN).is_dir(), reason="corpus 2-rank NPU run is missing"),
]

PREFIX = "/proxy/cluster"
READY = f"{CONTENT} [data-role=rank-table] table"
SLOW, CLEAN = "slow16", "clean16"
SLOW_RANK, SLOW_LINK = 5, (2, 3)
METRICS = ["step_time", "computing", "communication_not_overlapped", "overlapped", "communication", "free", "wait",
           "transmit", "preparing", "bubble"]


def worker(run: str, rank: int) -> str:
    return f"{run}/rank{rank}_ascend_pt"


def cluster_hash(base: str, target: str) -> str:
    return f"#profile_compare&{P}b={base}&{P}t={target}&{P}v=cluster"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("clusterlogs")
    for name in (TEXT_RUN, DB_RUN):
        (d / name).symlink_to(CORPUS / "npu" / name)
    gen = [sys.executable, "-m", "bench.gen_cluster", "--ranks", "16", "--steps", "2", "--out", str(d)]
    subprocess.run(gen + ["--name", SLOW, "--seed", "1", "--slow-rank", str(SLOW_RANK), "--slow-rank-extra-ms", "20",
                          "--slow-link", f"{SLOW_LINK[0]}-{SLOW_LINK[1]}", "--bandwidth-cut", "0.7"],
                   check=True, cwd=ROOT, capture_output=True)
    subprocess.run(gen + ["--name", CLEAN, "--seed", "2"], check=True, cwd=ROOT, capture_output=True)
    return d


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    cache = tmp_path_factory.mktemp("clustercache")
    with TensorBoard(logdir, "--path_prefix", PREFIX, env={"TB_COMPARE_CACHE_DIR": str(cache)}) as server:
        server.base = prefixed_base(server, PREFIX)
        with urllib.request.urlopen(server.base + "/data/plugin/profile_compare/runs", timeout=60) as r:
            listed = json.loads(r.read())["runs"]
        if not any("cluster" in x for x in listed):
            pytest.skip("the plugin has no `cluster` route yet (the runs listing has no `cluster` field)")
        yield server


def route(tb, run: str, against: str | None = None) -> dict:
    """The `cluster` answer (POST computes; the view asked it first, so it is ready)."""
    body = {"run": run} | ({"against": against} if against else {})
    for _ in range(240):
        status, data = _post(tb, body)
        if status == 200:
            return json.loads(data)
        time.sleep(0.5)
    raise AssertionError("the cluster route never answered")


def _post(tb, body):
    req = urllib.request.Request(tb.base + "/data/plugin/profile_compare/cluster", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.status, r.read()


def open_view(page, tb, h: str):
    page.goto(tb.base + "/" + h)
    f = plugin_frame(page)
    f.locator(READY).wait_for(timeout=240000)
    return f


def per_rank_means(ans: dict) -> dict[int, dict[str, float]]:
    by: dict[int, list[dict]] = {}
    for r in ans["ranks"]:
        by.setdefault(r["rank"], []).append(r)
    out = {}
    for rank, rows in by.items():
        out[rank] = {}
        for m in METRICS:
            vs = [x[f"{m}_ms"] for x in rows if x.get(f"{m}_ms") is not None]
            out[rank][m] = sum(vs) / len(vs) if vs else None
    return out


def table_state(frame) -> list[dict]:
    return frame.evaluate("""() => [...document.querySelectorAll('[data-role=rank-table] tbody tr')].map((tr) => ({
      rank: Number(tr.dataset.rank), cls: tr.className, title: tr.title || '',
      cells: [...tr.children].map((td) => td.innerText.trim()),
      flags: [...tr.querySelectorAll('td[data-flag]')].map((td) => [td.dataset.flag, td.title])}))""")


def check_table(frame, ans: dict) -> list[dict]:
    """Every listed rank's figures equal the route's per-rank means at the shown precision."""
    rows = table_state(frame)
    want = per_rank_means(ans)
    assert sorted(r["rank"] for r in rows) == sorted(want)[:len(rows)]
    for r in rows:
        for i, m in enumerate(METRICS):
            v = want[r["rank"]][m]
            text = r["cells"][1 + i]
            if v is None:
                assert text == "—"
            else:
                assert abs(num(text) - v) <= max(0.0051, abs(v) * 1e-3), (r["rank"], m, text, v)
    return rows


def canvas_painted(frame, role: str) -> int:
    """How many distinct colours the canvas holds (a blank canvas has one)."""
    return frame.evaluate("""(role) => {
      const c = document.querySelector(`canvas[data-role=${role}]`);
      if (!c || !c.width || !c.height) return 0;
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const seen = new Set();
      for (let i = 0; i < d.length; i += 4 * 7) { seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]); if (seen.size > 20) break; }
      return seen.size;
    }""", role)


def test_cluster_view_slow_rank_and_link(browser, tb):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = ConsoleWatch(page)
    f = open_view(page, tb, cluster_hash(worker(SLOW, 0), worker(SLOW, 1)))
    frame = frame_of(page)
    tab = f.locator('button.tab[data-view="cluster"]')
    assert tab.is_visible() and tab.get_attribute("aria-selected") == "true"
    ans = route(tb, SLOW)
    rows = check_table(frame, ans)
    assert len(rows) == 16
    # the slow rank: highlighted row, flagged cells with the route's reasons, listed with its reason
    reasons = {s["metric"]: s["reason"] for s in ans["slow_ranks"] if s["rank"] == SLOW_RANK}
    assert reasons, ans["slow_ranks"]
    slow_row = next(r for r in rows if r["rank"] == SLOW_RANK)
    assert "cl-slow" in slow_row["cls"]
    assert dict(slow_row["flags"]) == reasons
    assert all("cl-slow" not in r["cls"] for r in rows if r["rank"] not in {s["rank"] for s in ans["slow_ranks"]})
    listed = f.locator(f'{CONTENT} [data-role=slow-ranks] li[data-rank="{SLOW_RANK}"]')
    assert listed.count() == len(reasons)
    assert set(listed.locator(".cl-reason").all_inner_texts()) == set(reasons.values())
    # the slow link, with its reason
    link = f.locator(f'{CONTENT} [data-role=slow-links] li[data-link="{SLOW_LINK[0]}-{SLOW_LINK[1]}"]')
    want_link = next(l for l in ans["slow_links"] if (l["src_rank"], l["dst_rank"]) == SLOW_LINK)
    assert link.locator(".cl-reason").inner_text() == want_link["reason"]
    assert [(l["src_rank"], l["dst_rank"]) for l in ans["slow_links"]] == [SLOW_LINK]
    # hints, bars and heatmap
    assert f.locator(f"{CONTENT} [data-role=cluster-hints] li").count() == len(ans["hints"])
    assert canvas_painted(frame, "rank-bars") > 4
    assert canvas_painted(frame, "link-heatmap") > 4
    legend = f.locator(f"{CONTENT} [data-role=transports]").inner_text()
    assert "HCCS" in legend and "RDMA" in legend
    # hover tooltip on the heatmap's slow cell
    heat = f.locator(f"{CONTENT} canvas[data-role=link-heatmap]")
    heat.scroll_into_view_if_needed()
    box = heat.bounding_box()
    cell = (box["width"] - 48) / 16                # the heatmap's geometry: 40 px left, 30 px top, 8 px right
    page.mouse.move(box["x"] + 40 + (SLOW_LINK[1] + 0.5) * cell, box["y"] + 30 + (SLOW_LINK[0] + 0.5) * cell)
    tip = f.locator(f"{CONTENT} [data-role=links] .cl-tip")
    tip.wait_for(state="visible", timeout=5000)
    assert f"{SLOW_LINK[0]} → {SLOW_LINK[1]} (HCCS)" in tip.inner_text() and "slow" in tip.inner_text()
    shoot(page, ART / "cluster_view_light.png")
    page.evaluate("document.body.classList.add('dark-mode')")
    f.locator("html.dark").wait_for(state="attached", timeout=10000)
    shoot(page, ART / "cluster_view_dark.png")
    page.evaluate("document.body.classList.remove('dark-mode')")
    # keyboard: focus the bars, move to the slow rank, Enter opens it in the pair views
    bars = f.locator(f"{CONTENT} canvas[data-role=rank-bars]")
    bars.focus()
    page.keyboard.press("Home")
    for _ in range(SLOW_RANK):
        page.keyboard.press("ArrowRight")
    assert f.locator(f"{CONTENT} [data-role=rank-bars-focus]").inner_text().startswith(f"Rank {SLOW_RANK}")
    page.keyboard.press("Enter")
    deadline = time.time() + 20
    while time.time() < deadline and hash_params(page).get(P + "b") != worker(SLOW, SLOW_RANK):
        time.sleep(0.2)
    hp = hash_params(page)
    assert hp.get(P + "b") == worker(SLOW, SLOW_RANK)
    assert hp.get(P + "t", "").startswith(SLOW + "/") and hp[P + "t"] != hp[P + "b"]
    assert P + "v" not in hp                      # the home (overview) view shows the pair
    f.locator('button.tab[data-view="overview"][aria-selected="true"]').wait_for(timeout=20000)
    assert console.errors() == []
    page.close()


def test_cluster_against_cluster(browser, tb):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = ConsoleWatch(page)
    f = open_view(page, tb, cluster_hash(worker(SLOW, 0), worker(CLEAN, 0)))
    f.locator(f"{CONTENT} [data-role=cluster-diff]").wait_for(timeout=60000)
    ans = route(tb, SLOW, CLEAN)
    assert ans["against"]["run"] == CLEAN
    summ = ans["diff_summary"]
    assert f"rank {summ['slowest_base']['rank']} " in f.locator(f"{CONTENT} [data-role=slowest-base]").inner_text()
    assert f"rank {summ['slowest_target']['rank']} " in f.locator(f"{CONTENT} [data-role=slowest-target]").inner_text()
    assert abs(num(f.locator(f"{CONTENT} [data-role=step-diff]").inner_text()) - summ["step_time_diff_ms"]) < 0.01
    aggs = f.locator(f"{CONTENT} [data-role=diff-aggregate] tbody tr")
    assert sorted(aggs.evaluate_all("(rs) => rs.map((r) => r.dataset.scope)")) == sorted(
        r["scope"] for r in ans["diff"] if r["scope"] != "rank")
    diff_rows = f.locator(f"{CONTENT} [data-role=diff-table] tbody tr")
    assert diff_rows.count() == 16
    want = {r["rank"]: r for r in ans["diff"] if r["scope"] == "rank"}
    first = diff_rows.first                            # sorted by step time diff, largest first
    top = max(want.values(), key=lambda r: r["step_time_diff_ms"])
    assert int(first.get_attribute("data-rank")) == top["rank"]
    shoot(page, ART / "cluster_vs_cluster.png", scroll_to=f.locator(f"{CONTENT} [data-role=cluster-diff]"), full=False)
    f.locator(f'{CONTENT} [data-role=diff-table] button.cl-rank[data-rank="{SLOW_RANK}"]').click()
    deadline = time.time() + 20
    while time.time() < deadline and hash_params(page).get(P + "b") != worker(SLOW, SLOW_RANK):
        time.sleep(0.2)
    hp = hash_params(page)
    assert hp.get(P + "b") == f"{SLOW}/{want[SLOW_RANK]['base_worker']}"
    assert hp.get(P + "t") == f"{CLEAN}/{want[SLOW_RANK]['target_worker']}"
    assert console.errors() == []
    page.close()


def test_corpus_two_rank_runs_in_vscode_frame(browser, tb):
    """The corpus's text and db 2-rank runs: the view shows both ranks as the route, against each other."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = ConsoleWatch(page)
    with urllib.request.urlopen(tb.base + "/data/plugin/profile_compare/runs", timeout=60) as r:
        runs = {x["name"]: x for x in json.loads(r.read())["runs"]}
    tw, dw = runs[TEXT_RUN]["workers"][0]["id"], runs[DB_RUN]["workers"][0]["id"]
    assert len(runs[TEXT_RUN]["workers"]) == 2 and len(runs[DB_RUN]["workers"]) == 2
    src = tb.base + "/" + cluster_hash(tw, dw)
    with serve_html(VSCODE_SIM.format(src=src)) as outer:
        page.goto(outer)
        f = page.frame_locator("#tb").frame_locator(IFRAME)
        f.locator(READY).wait_for(timeout=240000)
        f.locator(f"{CONTENT} [data-role=cluster-diff]").wait_for(timeout=60000)
        inner = next(fr for fr in page.frames if "plugin_entry.html" in fr.url)
        ans = route(tb, TEXT_RUN, DB_RUN)
        rows = check_table(inner, ans)
        assert len(rows) == 2
        assert inner.evaluate("() => document.querySelectorAll('[data-role=diff-table] tbody tr').length") == 2
        if ans.get("link_pairs"):
            assert canvas_painted(inner, "link-heatmap") > 2
        shoot(page, ART / "cluster_vscode_corpus.png", full=False)
    assert console.errors() == []
    page.close()
