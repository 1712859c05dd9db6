"""The new formats' sample pairs in the tab (issue 17), in real headless Chromium against a real
`tensorboard`: each planted difference is the top row of its view at its planted size (±2%) —
the slower MatMul of the MindSpore pair in the Kernel and Operator views (samples/mindspore_expected.json),
the Data Aug Bound regression of the msprof CANN pair in the Steps view (gen/msprof_cann.py), the TorchAir
input-conversion regression of the graph-mode pair in the overview's host-overhead row group
(samples/graph_expected.json) and, in the Steps view, per step — and the MindSpore module view shows its scope-tree note, a memory view
and the views with nothing on a side say why (memory, API).  One page: the first view is a page load, the others are hash changes.
Screenshots go to test-artifacts/formats_*.png."""
from __future__ import annotations

import json
import sys

import pytest

from browser_util import ART, CONTENT, P, PluginTab, needs_chromium, num, shoot, table_rows
from conftest import SAMPLES, needs_samples
from tbserver import TensorBoard

pytestmark = [needs_chromium, needs_samples]

MS = json.loads((SAMPLES / "mindspore_expected.json").read_text())["planted"]
GRAPH_ALL = json.loads((SAMPLES / "graph_expected.json").read_text())
GRAPH = GRAPH_ALL["planted"]
GRAPH_STEPS = GRAPH_ALL["target"]["steps"]
GRAPH_RUNS = GRAPH_ALL["target"]["graph_runs"] // GRAPH_STEPS
sys.path.insert(0, str(SAMPLES))
from gen import msprof_cann as msprof  # noqa: E402

(MS_B,) = (SAMPLES / "mindspore" / "baseline").glob("rank0_*_ascend_ms")
(MS_T,) = (SAMPLES / "mindspore" / "target").glob("rank0_*_ascend_ms")
MS_PAIR = (f"mindspore/baseline/{MS_B.name}", f"mindspore/target/{MS_T.name}")
MSPROF_PAIR = ("msprof_tf/baseline/msprof_device_0", "msprof_tf/target/msprof_device_0")
GRAPH_PAIR = ("graph_mode/base/rank0_ascend_pt", "graph_mode/target/rank0_ascend_pt")
AUG_MEAN_MS = msprof.AUG_EXTRA_US * (msprof.ITERATIONS - 1) / msprof.ITERATIONS / 1000
TABLE = f"{CONTENT} table.t"


def pair_hash(pair, view: str) -> str:
    return f"#profile_compare&{P}b={pair[0]}&{P}t={pair[1]}&{P}v={view}"


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    d = tmp_path_factory.mktemp("formats")
    for name in ("mindspore", "msprof_tf", "graph_mode"):
        (d / name).symlink_to(SAMPLES / name)
    with TensorBoard(d) as server:
        yield server


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.02 * abs(b)


def test_planted_differences_are_the_top_rows(browser, tb):
    t = PluginTab(PluginTab.new_page(browser, 1280, 1000))
    base = tb.url.rstrip("/") + "/"
    ART.mkdir(exist_ok=True)

    def show(pair, view: str, ready: str, first: bool = False):
        if first:
            t.page.goto(base + pair_hash(pair, view))
        else:                                  # a hash change: the tab re-renders, no page load
            t.page.evaluate("(h) => { location.hash = h; }", pair_hash(pair, view))
        t.f.locator(ready).first.wait_for(timeout=120000)

    def sorted_rows(view: str, label_key: str):
        """The table's rows once it is the view's table (its aria-label names the view)."""
        sel = f'{CONTENT} table.t[aria-label^="{label_key}"]'
        t.f.locator(sel).first.wait_for(timeout=120000)
        return table_rows(t.frame, sel), t.frame

    # -- MindSpore: Kernel view, then Operator, Module and Memory (hash changes)
    show(MS_PAIR, "kernel", TABLE, first=True)
    rows, fr = sorted_rows("kernel", "Kernel")
    cols = fr.evaluate(f"() => [...document.querySelectorAll('{TABLE} thead th')].map((th) => th.innerText.trim())")
    dcol = next(i for i, c in enumerate(cols) if c.startswith("Diff"))
    top2 = rows[:2]
    assert [r["cells"][0] for r in top2] == [MS["op_type"]] * 2, rows[:3]
    for r in top2:
        assert close(num(r["cells"][dcol]), MS["kernel_rows"][0]["diff_us"]), r
    shoot(t.page, ART / "formats_mindspore_kernel.png", full=False)

    show(MS_PAIR, "operator", f'{CONTENT} table.t[aria-label^="Operator"]')
    rows, fr = sorted_rows("operator", "Operator")
    cols = fr.evaluate(f"() => [...document.querySelectorAll('{TABLE} thead th')].map((th) => th.innerText.trim())")
    dcol = next(i for i, c in enumerate(cols) if c.startswith("Device Diff"))
    assert rows[0]["name"] == MS["operator_row"]["operator"], rows[:3]
    assert close(num(rows[0]["cells"][dcol]) * 1000, MS["operator_row"]["diff_us"]), rows[0]
    shoot(t.page, ART / "formats_mindspore_operator.png", full=False)

    show(MS_PAIR, "module", f"{CONTENT} [data-role=table-notes]")
    note = t.f.locator(f"{CONTENT} [data-role=table-notes]").first.inner_text()
    assert "scope tree" in note
    shoot(t.page, ART / "formats_mindspore_module.png", full=False)

    # views with nothing on a side say why: memory (neither side holds any: the tab says so without
    # asking), API (MindSpore records no host API events: the page's notes, above the empty table)
    show(MS_PAIR, "memory", f"{CONTENT} [data-state=not-available]")
    assert "neither side has memory data" in t.f.locator(f"{CONTENT} [data-state=not-available]").inner_text()
    show(MS_PAIR, "api", f"{CONTENT} [data-role=table-notes]")
    notes = t.f.locator(f"{CONTENT} [data-role=table-notes]").first.inner_text()
    assert "records no host API or operator events" in notes and "mindspore-text" in notes
    shoot(t.page, ART / "formats_mindspore_api.png", full=False)

    # -- msprof CANN: the Steps view's top difference
    show(MSPROF_PAIR, "steps", f"{CONTENT} table.steps-metrics")
    top = t.frame.evaluate("() => [...document.querySelectorAll('#pc-content [data-role=top-differences] li')]"
                           ".map((li) => li.dataset.metric)")
    assert top[0] == "phases.iteration_gap", top
    cells = t.frame.evaluate("""() => [...document.querySelector(
        '#pc-content table.steps-metrics tr.metric-row[data-metric="phases.iteration_gap"]').children]
        .map((td) => td.innerText.trim())""")
    assert close(num(cells[3]), AUG_MEAN_MS), cells
    shoot(t.page, ART / "formats_msprof_steps.png", full=False,
          scroll_to=t.f.locator(f"{CONTENT} [data-role=top-differences]"))

    # -- graph mode: the overview's host-overhead row group
    show(GRAPH_PAIR, "overview", f"{CONTENT} table.metrics")
    t.wait(lambda: "Host Overhead (graph mode)" in t.f.locator(f"{CONTENT} table.metrics").first.inner_text())
    lines = t.f.locator(f"{CONTENT} table.metrics").first.inner_text().splitlines()
    (py,) = [ln for ln in lines if ln.startswith("TorchAir Python (input handling)")]
    diff = next(c for c in py.split("\t") if c.strip().startswith("+"))     # "+3.000 ms host ▲"
    assert close(num(diff), GRAPH["total_ms"]), py
    others = [ln for ln in lines if ln.startswith(("Framework (", "TorchAir C++", "GE ("))]
    assert len(others) == 3 and all("\t0 ms host" in ln for ln in others), others
    shoot(t.page, ART / "formats_graph_overview.png")

    # -- graph mode in the Steps view: per step, the three host parts of each side and their difference
    show(GRAPH_PAIR, "steps", f"{CONTENT} [data-role=steps-host-overhead] table")
    ho = t.frame.evaluate("""() => [...document.querySelectorAll(
        '#pc-content [data-role=steps-host-overhead] tbody tr')].map((tr) => ({step: tr.dataset.step,
        side: tr.dataset.side, cells: [...tr.children].map((td) => td.innerText.trim())}))""")
    per_step = GRAPH["per_graph_run_ms"] * GRAPH_RUNS
    diffs = [r for r in ho if r["side"] == "diff"]
    assert len(diffs) == GRAPH_STEPS and len(ho) == 3 * GRAPH_STEPS, ho
    for r in diffs:                     # Framework, TorchAir Python, TorchAir C++, GE, Total
        assert close(num(r["cells"][3]), per_step) and close(num(r["cells"][6]), per_step), r
        assert [num(c) for c in (r["cells"][2], r["cells"][4], r["cells"][5])] == [0, 0, 0], r
    shoot(t.page, ART / "formats_graph_steps.png", full=False,
          scroll_to=t.f.locator(f"{CONTENT} [data-role=steps-host-overhead]"))
    assert t.console.errors() == []
    t.close()
