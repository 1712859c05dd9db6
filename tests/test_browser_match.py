"""The match editor in real headless Chromium against a real TensorBoard on the golden GPU <-> NPU
pair (issue 18 §3 acceptance): in the Operator view a baseline-only operator is paired with a
target-only one from the searchable candidate list, which changes the Operator view, the
Overview's matching hint and the downloaded workbook; split, Undo; the saved map listed in the
settings, used again, and removed (the original rows back); a pair of identical names offers no
split and says why.  One page load; screenshots in test-artifacts/.

The Module view on samples/ (the NPU run as the baseline, the GPU run as the target; the same
TensorBoard): "pair…" on a baseline-only operator of a module pairs it (the Operator view, the
Overview's hint and the saved map follow; Undo from the Module view), and a wrong pair a saved
map made inside a module ("npu::npu_dtype_cast ↔ aten::embedding") is split from the Module view
(the tree, the workbook's ModuleCompareStatistic and the map follow; Undo)."""
from __future__ import annotations

import io
import os
import re

import pytest

from browser_util import ART, CONTENT, P, PluginTab, hash_params, needs_chromium, shoot, table_rows
from conftest import CORPUS, SAMPLES, needs_corpus
from overall_golden import PAIRS
from tbserver import TensorBoard

pytestmark = [needs_chromium, needs_corpus]

GPU_FILE, NPU_DIR = PAIRS["iii"][1], PAIRS["iii"][2]
BASE, TARGET = "gpu_resnet/worker0.1623143089861", "npu_alexnet/rank0_ascend_pt"
B_OP = "MaxPool2DWithIndicesBackward"
T_OP = "autograd::engine::evaluate_function: MaxPool2DWithIndicesBackward0"
MERGED = f"{B_OP} ↔ {T_OP}"
TABLE = f"{CONTENT} table.t"


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("exports")


@pytest.fixture(scope="module")
def tb(tmp_path_factory, export_dir):
    d = tmp_path_factory.mktemp("logs")
    (d / "gpu_resnet").mkdir()
    (d / "gpu_resnet" / os.path.basename(GPU_FILE)).symlink_to(CORPUS / GPU_FILE)
    (d / "npu_alexnet").mkdir()
    (d / "npu_alexnet" / "rank0_ascend_pt").symlink_to(CORPUS / NPU_DIR)
    (d / "s_npu").symlink_to(SAMPLES / "target_npu")           # the Module view test's pair
    (d / "s_gpu").symlink_to(SAMPLES / "baseline_gpu")
    cache = tmp_path_factory.mktemp("cache")
    with TensorBoard(d, env={"TB_COMPARE_EXPORT_DIR": str(export_dir), "TB_COMPARE_CACHE_DIR": str(cache)}) as server:
        yield server


class MapRequests:
    """The page's requests in order, to check that removing a name map (Undo of the edit that
    made it, or Remove) sends no request naming it afterwards, and that the ones still under
    way then are aborted rather than answered 400."""

    def __init__(self, page) -> None:
        self.events: list[tuple[str, str]] = []
        page.on("request", lambda r: self.events.append(("sent", r.url)))
        page.on("requestfinished", lambda r: self.events.append(("done", r.url)))
        page.on("requestfailed", lambda r: self.events.append(("aborted", r.url)))

    def mark(self) -> int:
        return len(self.events)

    def check_removed(self, since: int, name: str) -> None:
        """Since event `since`: after the remove request of `name`, no request names it, and
        none naming it is answered after that."""
        ev = self.events[since:]
        rm = [i for i, (k, u) in enumerate(ev) if k == "sent" and u.endswith("/name_maps/remove")]
        assert rm, "no name_maps/remove request"
        naming = re.compile(rf"[?&]name_map={re.escape(name)}(&|$)")
        late = [(k, u) for k, u in ev[rm[0]:] if naming.search(u) and k != "aborted"]
        assert late == [], f"requests naming the removed map {name} after its removal: {late}"


def statistic_names(data: bytes) -> list[str]:
    import openpyxl
    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    return [str(r[1]) for r in wb["OperatorCompareStatistic"].iter_rows(values_only=True) if r and r[1] is not None]


def test_pair_split_undo_save_reload_remove(browser, tb, export_dir):
    t = PluginTab(PluginTab.new_page(browser, 1400, 900))
    reqs = MapRequests(t.page)
    f, page = t.f, t.page
    page.goto(tb.url + f"/#profile_compare&{P}b={BASE}&{P}t={TARGET}")
    hint = f.locator(f'{CONTENT} li[data-role="matching-hint"]')
    hint.wait_for(timeout=180000)
    only0 = int(hint.get_attribute("data-baseline-only"))
    matched0 = int(hint.get_attribute("data-matched"))
    assert only0 > 0

    def rows() -> dict:
        return {r["name"]: r for r in (table_rows(t.frame, TABLE) or [])}

    def row_button(name: str, role: str):
        return f.locator(f"{TABLE} tbody tr").filter(has=f.locator("td.name .label", has_text=name)) \
            .locator(f'button[data-role="{role}"]').first

    # the Operator view, filtered to the two operators
    f.locator('button.tab[data-view="operator"]').click()
    f.locator(f"{CONTENT} .paged").wait_for(timeout=60000)
    f.locator(f'{CONTENT} input[type="search"]').first.fill("MaxPool2DWithIndices")
    t.wait(lambda: set(rows()) == {B_OP, T_OP}, 30)             # the filter applied
    before = rows()
    assert "only-baseline" in before[B_OP]["cls"] and "only-target" in before[T_OP]["cls"]

    # pair…: the candidate list, searchable; the true partner first
    row_button(B_OP, "pair").click()
    cands = f.locator('.match-pop [data-role="candidates"] button.cand')
    cands.first.wait_for(timeout=30000)
    assert cands.first.get_attribute("data-name") == T_OP
    f.locator('.match-pop [data-role="candidate-filter"]').fill("relu")
    names = lambda: t.frame.evaluate(  # noqa: E731
        "() => [...document.querySelectorAll('.match-pop button.cand')].map((b) => b.dataset.name)")
    t.wait(lambda: (lambda ns: ns and all("relu" in n.lower() for n in ns))(names()), 20)
    shoot(page, ART / "match_candidates.png", full=False)
    f.locator('.match-pop [data-role="candidate-filter"]').fill("MaxPool2DWithIndices")
    t.wait(lambda: names() == [T_OP], 20)
    cands.first.click()
    t.wait(lambda: MERGED in rows(), 60)
    after = rows()
    assert B_OP not in after and T_OP not in after and "only" not in after[MERGED]["cls"]
    nm = hash_params(page).get(P + "nm")
    assert nm and nm.startswith("edits_gpu_resnet_vs_npu_alexnet")
    assert (export_dir / "name_maps" / f"{nm}.json").is_file()
    assert "pair" in f.locator('[data-role="match-status"]').inner_text().lower()
    shoot(page, ART / "match_paired.png")

    # the workbook follows the map
    href = f.locator('a[data-role="xlsx"]').get_attribute("href")
    assert f"name_map={nm}" in href
    full = t.frame.evaluate("() => document.querySelector('a[data-role=xlsx]').href")
    resp = page.request.get(full, timeout=180000)
    assert resp.status == 200 and MERGED in statistic_names(resp.body())

    # split, then Undo
    row_button(MERGED, "split").click()
    t.wait(lambda: B_OP in rows() and MERGED not in rows(), 60)
    f.locator('button[data-role="match-undo"]').click()
    t.wait(lambda: MERGED in rows(), 60)

    # per instance: the pair's calls are matched (3 target calls for 6 baseline ones), a matched row offers the split
    f.locator('button.seg[data-mode="pairs"]').click()
    f.locator(f'{CONTENT} input[type="search"]').first.fill("MaxPool2DWithIndices")
    paired = f.locator(f"{TABLE} tbody tr:not(.only-baseline):not(.only-target)").filter(
        has=f.locator("td.name .label", has_text=B_OP))
    t.wait(lambda: paired.count() > 0, 60)
    assert not paired.first.locator('button[data-role="split"]').is_disabled()
    f.locator('button.seg[data-mode="name"]').click()

    # an identical-name pair offers no split and says why
    f.locator(f'{CONTENT} input[type="search"]').first.fill("aten::add_")
    t.wait(lambda: "aten::add_" in rows(), 30)
    same = row_button("aten::add_", "split")
    assert same.is_disabled() and "same name on both sides" in same.get_attribute("title")

    # the Overview's matching hint follows the map
    f.locator('button.tab[data-view="overview"]').click()
    t.wait(lambda: hint.count() == 1 and int(hint.get_attribute("data-baseline-only")) < only0, 120)
    assert int(hint.get_attribute("data-matched")) > matched0
    shoot(page, ART / "match_overview_hint.png")

    # the settings list the saved map: original matching, use it again, remove it
    f.locator("details.settings > summary").click()
    item = f.locator(f'[data-role="name-maps"] li[data-map="{nm}"]')
    item.wait_for(timeout=10000)
    shoot(page, ART / "match_settings.png", full=False)
    f.locator('[data-role="name-maps"] button[data-role="no-map"]').click()
    t.wait(lambda: P + "nm" not in hash_params(page) and hint.count() == 1
           and int(hint.get_attribute("data-baseline-only")) == only0, 120)
    item.locator('button[data-role="use-map"]').click()
    t.wait(lambda: hash_params(page).get(P + "nm") == nm and hint.count() == 1
           and int(hint.get_attribute("data-baseline-only")) < only0, 120)
    since = reqs.mark()
    item.locator('button[data-role="remove-map"]').click()
    t.wait(lambda: f.locator(f'[data-role="name-maps"] li[data-map="{nm}"]').count() == 0, 20)
    t.wait(lambda: P + "nm" not in hash_params(page) and hint.count() == 1
           and int(hint.get_attribute("data-baseline-only")) == only0, 120)
    assert not (export_dir / "name_maps" / f"{nm}.json").exists()
    reqs.check_removed(since, nm)
    f.locator("details.settings > summary").click()
    f.locator('button.tab[data-view="operator"]').click()
    f.locator(f'{CONTENT} input[type="search"]').first.fill("MaxPool2DWithIndices")
    t.wait(lambda: B_OP in rows() and T_OP in rows() and MERGED not in rows(), 60)
    assert t.console.errors() == []
    t.close()


S_NPU, S_GPU = "s_npu/rank0_ascend_pt", "s_gpu/worker0"
ATTN, EMB = "/TinyLM_0/Block_0/Attention_0", "/TinyLM_0/Embedding_0"


def module_sheet_names(data: bytes) -> list[str]:
    """Every text cell of the workbook's ModuleCompareStatistic sheet."""
    import openpyxl
    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    return [str(v) for r in wb["ModuleCompareStatistic"].iter_rows(values_only=True) for v in r if isinstance(v, str)]


def test_module_view_pair_split_undo(browser, tb, export_dir):
    t = PluginTab(PluginTab.new_page(browser, 1400, 900))
    reqs = MapRequests(t.page)
    f, page = t.f, t.page
    page.goto(tb.url + f"/#profile_compare&{P}b={S_NPU}&{P}t={S_GPU}")
    hint = f.locator(f'{CONTENT} li[data-role="matching-hint"]')
    hint.wait_for(timeout=180000)
    only0 = int(hint.get_attribute("data-baseline-only"))
    assert only0 > 0

    def rows() -> dict:
        """The module tree's rows by (module path, name)."""
        return {(r["path"], r["name"]): r for r in (table_rows(t.frame, TABLE) or [])}

    def row_button(path: str, name: str, role: str):
        label = f.locator(f'td.name .label[title="{path}"]', has_text=name)
        return f.locator(f"{TABLE} tbody tr").filter(has=label).locator(f'button[data-role="{role}"]').first

    f.locator('button.tab[data-view="module"]').click()
    t.wait(lambda: (ATTN, "aten::npu_format_cast") in rows(), 120)
    r0 = rows()
    assert "only-baseline" in r0[(ATTN, "aten::npu_format_cast")]["cls"]
    # the module tree offers pair… on its baseline-only operators, and no split on rows of one name
    assert row_button(ATTN, "aten::npu_format_cast", "pair").count() == 1
    assert f.locator(f'{TABLE} tbody button[data-role="split"]').count() == 0

    # pair… from the module tree: the candidates are the target's unmatched operators
    row_button(ATTN, "aten::npu_format_cast", "pair").click()
    cands = f.locator('.match-pop [data-role="candidates"] button.cand')
    cands.first.wait_for(timeout=30000)
    assert cands.first.get_attribute("data-name") == "cudaDeviceSynchronize"
    cands.first.click()
    t.wait(lambda: (hash_params(page).get(P + "nm") or "").startswith("edits_s_npu_vs_s_gpu"), 60)
    nm = hash_params(page)[P + "nm"]
    import json
    assert json.loads((export_dir / "name_maps" / f"{nm}.json").read_text()) == {
        "aten::npu_format_cast": "cudaDeviceSynchronize"}
    t.wait(lambda: (ATTN, "aten::npu_format_cast") in rows(), 60)          # the tree drawn again, under the map
    assert "pair" in f.locator('[data-role="match-status"]').inner_text().lower()
    # the other views follow: the Overview's hint (under the map; the calls stay unmatched: the GPU's
    # cudaDeviceSynchronize runs elsewhere in the step, so the per-call alignment pairs none), the
    # Operator view's statistics row of the pair
    f.locator('button.tab[data-view="overview"]').click()
    t.wait(lambda: hint.count() == 1 and f"with the name map {nm} (1 entry)" in hint.inner_text(), 120)
    f.locator('button.tab[data-view="operator"]').click()
    f.locator(f"{CONTENT} .paged").wait_for(timeout=60000)
    t.wait(lambda: any(r["name"] == "aten::npu_format_cast ↔ cudaDeviceSynchronize"
                       for r in (table_rows(t.frame, TABLE) or [])), 60)
    # that row's timeline link opens the Timeline at the baseline's operator (the map goes along)
    f.locator(f"{TABLE} tbody tr").filter(has=f.locator("td.name .label", has_text="aten::npu_format_cast ↔")) \
        .locator("[data-role=timeline-link]").first.click()
    name = f.locator(f"{CONTENT} [data-role=timeline-details] .tl-name")
    t.wait(lambda: name.count() == 1 and name.inner_text() == "aten::npu_format_cast", 120)
    assert hash_params(page).get(P + "v") == "timeline" and hash_params(page).get(P + "nm") == nm
    # Undo from the Module view: the map made by the edit is gone, the original matching back
    f.locator('button.tab[data-view="module"]').click()
    t.wait(lambda: (ATTN, "aten::npu_format_cast") in rows(), 60)
    since = reqs.mark()
    f.locator('button[data-role="match-undo"]').click()
    t.wait(lambda: P + "nm" not in hash_params(page), 60)
    t.wait(lambda: not (export_dir / "name_maps" / f"{nm}.json").exists(), 30)
    t.wait(lambda: (ATTN, "aten::npu_format_cast") in rows(), 60)
    reqs.check_removed(since, nm)

    # a wrong pair inside a module, from a saved map: loaded from the settings, split in the tree
    tb.post_json("/data/plugin/profile_compare/name_maps/save",
                 {"name": "wrong_embedding", "pairs": {"npu::npu_dtype_cast": "aten::embedding"}})
    f.locator("details.settings > summary").click()              # opening the settings lists the saved maps anew
    f.locator('[data-role="name-maps"] li[data-map="wrong_embedding"] button[data-role="use-map"]').click()
    f.locator("details.settings > summary").click()
    merged = "npu::npu_dtype_cast ↔ aten::embedding"
    t.wait(lambda: (EMB, merged) in rows(), 120)
    assert "only" not in rows()[(EMB, merged)]["cls"]
    shoot(page, ART / "match_module_wrong_pair.png", full=False, scroll_to=f.locator(f"{TABLE} tbody tr").filter(
        has=f.locator("td.name .label", has_text=merged)).first)
    href = t.frame.evaluate("() => document.querySelector('a[data-role=xlsx]').href")
    assert "name_map=wrong_embedding" in href
    assert merged in module_sheet_names(page.request.get(href, timeout=180000).body())
    row_button(EMB, merged, "split").click()
    t.wait(lambda: (EMB, merged) not in rows() and (EMB, "npu::npu_dtype_cast") in rows(), 60)
    after = rows()
    assert "only-baseline" in after[(EMB, "npu::npu_dtype_cast")]["cls"] and "only" not in after[(EMB, "aten::embedding")]["cls"]
    assert json.loads((export_dir / "name_maps" / "wrong_embedding.json").read_text()) == {}
    href = t.frame.evaluate("() => document.querySelector('a[data-role=xlsx]').href")
    assert merged not in module_sheet_names(page.request.get(href, timeout=180000).body())
    shoot(page, ART / "match_module_split.png", full=False)
    f.locator('button[data-role="match-undo"]').click()
    t.wait(lambda: (EMB, merged) in rows(), 60)
    assert json.loads((export_dir / "name_maps" / "wrong_embedding.json").read_text()) == {
        "npu::npu_dtype_cast": "aten::embedding"}
    assert t.console.errors() == []
    t.close()
