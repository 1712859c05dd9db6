"""The match editor's backend (issue 18 §3): saved operator name maps (service/name_maps.py), the
edits (engines/match_edit.py), the candidates (engines/match_candidates.py) and the routes
through a real TensorBoard on the golden GPU <-> NPU pair (iii of tests/overall_golden.py).

Acceptance: pairing two unmatched operators changes the Operator view, the matching figures the
overview's hints show and the workbook; ``tb-compare --op-name-map SAVED.json`` gives the same
operator rows as the tab's route; removing the map restores the original."""
from __future__ import annotations

import io
import json
import os
import urllib.error
import urllib.parse

import pytest

from cli_inproc import run_cli
from conftest import CORPUS, needs_corpus
from overall_golden import PAIRS
from tbserver import TensorBoard, wait_for

from tb_compare_plugin.engines.match_candidates import normalise
from tb_compare_plugin.engines.match_edit import UNPAIRED, CannotSplit, pair_entries, split_entries
from tb_compare_plugin.service.errors import BadParameter
from tb_compare_plugin.service.name_maps import NameMaps, sanitise

GPU_FILE, NPU_DIR = PAIRS["iii"][1], PAIRS["iii"][2]
BASE = "gpu_resnet/worker0.1623143089861"
TARGET = "npu_alexnet/rank0_ascend_pt"
B_OP = "MaxPool2DWithIndicesBackward"                       # baseline only on this pair
T_OP = "autograd::engine::evaluate_function: MaxPool2DWithIndicesBackward0"   # target only


# ----------------------------------------------------------------------------- pure parts

def test_sanitise_and_atomic_save(tmp_path):
    maps = NameMaps(str(tmp_path))
    assert sanitise("../../etc/passwd") == "etc_passwd"
    assert sanitise(" my map #1 ") == "my_map_1"
    with pytest.raises(BadParameter) as e:
        sanitise("../..")
    assert e.value.parameter == "name"
    saved = maps.save("a/b", {"x": "y", "same": "same"})
    assert saved["name"] == "a_b" and saved["pairs"] == {"x": "y"}          # identity entries dropped
    assert os.path.dirname(saved["path"]) == str(tmp_path / "name_maps")
    assert json.loads(open(saved["path"]).read()) == {"x": "y"}
    assert [f for f in os.listdir(tmp_path / "name_maps")] == ["a_b.json"]  # no temporary left
    assert maps.load("a_b") == (("x", "y"),)
    assert [m["name"] for m in maps.list()] == ["a_b"]
    for bad in ({"x": 1}, ["x"], {"": "y"}):
        with pytest.raises(BadParameter) as e:
            maps.save("m", bad)
        assert e.value.parameter == "pairs"
    with pytest.raises(BadParameter) as e:
        maps.load("nope")
    assert e.value.parameter == "name_map" and e.value.choices == ["a_b"]
    maps.remove("a_b")
    assert maps.list() == []


def test_pair_and_split_entries():
    # pairing maps the baseline name onto the target's key; splitting drops that entry
    m = pair_entries({}, "ReluBackward1", "autograd::engine::evaluate_function: ReluBackward0", True)
    assert m == {"ReluBackward1": "autograd::engine::evaluate_function: ReluBackward0"}
    assert split_entries(m, "ReluBackward1", "autograd::engine::evaluate_function: ReluBackward0", True) == {}
    # a pair the alias table makes (GPU aten::mm <-> NPU npu::npu_mm): split by mapping one name away
    s = split_entries({}, "aten::mm", "npu::npu_mm", True)
    assert s == {"npu::npu_mm": "npu::npu_mm" + UNPAIRED}
    assert pair_entries(s, "aten::mm", "npu::npu_mm", True) == {}          # pairing again undoes it
    assert split_entries({}, "aten::mm", "npu::npu_mm", False) == {}       # same device: not paired
    with pytest.raises(CannotSplit, match="same name on both sides"):
        split_entries({}, "aten::add", "aten::add", True)
    assert normalise("npu::npu_fusion_attention") == "fusionattention"


# ----------------------------------------------------------------------------- through TensorBoard

@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("exports")


@pytest.fixture(scope="module")
def tb(tmp_path_factory, cache_dir, export_dir):
    if not CORPUS.is_dir():
        pytest.skip("no corpus")
    d = tmp_path_factory.mktemp("logs")
    (d / "gpu_resnet").mkdir()
    (d / "gpu_resnet" / os.path.basename(GPU_FILE)).symlink_to(CORPUS / GPU_FILE)
    (d / "npu_alexnet").mkdir()
    (d / "npu_alexnet" / "rank0_ascend_pt").symlink_to(CORPUS / NPU_DIR)
    env = {"TB_COMPARE_EXPORT_DIR": str(export_dir), "TB_COMPARE_CACHE_DIR": str(cache_dir)}
    with TensorBoard(d, env=env) as server:
        server.logdir = d
        yield server


def q(**kw) -> str:
    return urllib.parse.urlencode({"baseline": BASE, "target": TARGET, **kw})


def get(tb, path: str):
    return tb.get_json("/data/plugin/profile_compare/" + path, timeout=120)


def post(tb, path: str, body: dict):
    return tb.post_json("/data/plugin/profile_compare/" + path, body)


def error(fn, *a):
    with pytest.raises(urllib.error.HTTPError) as e:
        fn(*a)
    return e.value.code, json.loads(e.value.read())


def ready(tb, path: str):
    """POST the route (may parse) until it answers 200."""
    def once():
        try:
            body = post(tb, path.split("?")[0], dict(urllib.parse.parse_qsl(path.split("?")[1])))
            # urllib raises for 4xx/5xx only: a 202 (still loading) comes back as its JSON
            return None if isinstance(body, dict) and body.get("status") == "loading" else body
        except urllib.error.HTTPError as e:
            if e.code == 202:
                return None
            raise AssertionError(f"{path}: {e.code} {e.read()[:600]!r}")
    return wait_for(once, 240, 0.5)


def operator_rows(tb, **kw) -> list[dict]:
    return ready(tb, "compare/operator?" + q(limit=1000, **kw))["rows"]


def workbook(tb, **kw) -> bytes:
    status, data = tb.get("/data/plugin/profile_compare/compare/xlsx?" + q(**kw), timeout=240)
    assert status == 200
    return data


def sheet_names(data: bytes, sheet: str) -> list[str]:
    import openpyxl
    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    return [str(r[1]) for r in wb[sheet].iter_rows(values_only=True) if r and r[1] is not None]


@needs_corpus
def test_pair_changes_every_view_and_the_cli_agrees(tb, export_dir, cache_dir, tmp_path):
    before = operator_rows(tb)
    by = {r["name"]: r for r in before}
    assert by[B_OP]["status"] == "baseline_only" and by[T_OP]["status"] == "target_only"
    matching0 = ready(tb, "compare/matching?" + q())
    book0 = workbook(tb)

    # candidates for the baseline-only operator: its true partner ranks first; q filters
    cand = ready(tb, "compare/match_candidates?" + q(name=B_OP))
    assert cand["status"] in ("baseline_only", "mixed") and cand["candidates"][0]["name"] == T_OP, cand["candidates"][:3]
    assert all(c["score"] >= d["score"] for c, d in zip(cand["candidates"], cand["candidates"][1:]))
    filtered = ready(tb, "compare/match_candidates?" + q(name=B_OP, q="relu"))
    assert filtered["candidates"] and all("relu" in c["name"].lower() for c in filtered["candidates"])

    # the edit saves at once into the named map
    saved = post(tb, "name_maps/edit", {"name": "golden iii", "baseline": BASE, "target": TARGET,
                                        "action": "pair", "b_name": B_OP, "t_name": T_OP})
    assert saved["name"] == "golden_iii" and saved["pairs"] == {B_OP: T_OP} and saved["previous"] == {}
    path = saved["path"]
    assert os.path.dirname(path) == str(export_dir / "name_maps")
    assert not str(path).startswith(str(tb.logdir))
    listed = get(tb, "name_maps")
    assert [m["name"] for m in listed["maps"]] == ["golden_iii"] and listed["maps"][0]["pairs"] == {B_OP: T_OP}

    after = operator_rows(tb, name_map="golden_iii")
    names = [r["name"] for r in after]
    assert B_OP not in names and T_OP not in names
    merged = next(r for r in after if r["name"] == f"{B_OP} ↔ {T_OP}")
    assert merged["status"] == "both" and merged["b_count"] > 0 and merged["t_count"] > 0
    pairs = ready(tb, "compare/operator_pairs?" + q(limit=1000, name_map="golden_iii", q="MaxPool2DWithIndices"))["rows"]
    assert any(r["status"] == "both" and r["b_name"] == B_OP and r["t_name"] == T_OP for r in pairs)
    matching1 = ready(tb, "compare/matching?" + q(name_map="golden_iii"))
    assert matching1["matched"]["count"] > matching0["matched"]["count"]
    assert matching1["baseline_only"]["count"] < matching0["baseline_only"]["count"]
    assert matching1["name_map_entries"] == 1
    book1 = workbook(tb, name_map="golden_iii")
    assert B_OP in sheet_names(book0, "OperatorCompareStatistic")
    assert f"{B_OP} ↔ {T_OP}" in sheet_names(book1, "OperatorCompareStatistic")

    # the CLI reading the saved file gives the tab's rows
    out = tmp_path / "cli.json"
    r = run_cli(CORPUS / GPU_FILE, CORPUS / NPU_DIR, "--op-name-map", path, "--json", out, "-q",
                env={"TB_COMPARE_CACHE_DIR": cache_dir})
    assert r.returncode == 0, r.stderr
    cli = json.loads(out.read_text())["operators"]
    assert cli["rows"] == after

    # split: back to the original rows; an identical-name pair cannot be split
    split = post(tb, "name_maps/edit", {"name": "golden_iii", "baseline": BASE, "target": TARGET,
                                        "action": "split", "b_name": B_OP, "t_name": T_OP})
    assert split["pairs"] == {} and split["previous"] == {B_OP: T_OP}
    assert operator_rows(tb, name_map="golden_iii") == before
    code, body = error(post, tb, "name_maps/edit", {"name": "golden_iii", "baseline": BASE, "target": TARGET,
                                                    "action": "split", "b_name": "aten::add_", "t_name": "aten::add_"})
    assert code == 422 and "same name on both sides" in body["error"]
    same = ready(tb, "compare/match_candidates?" + q(name="aten::add_"))
    assert same["paired_with"] == [{"target": "aten::add_", "splittable": False, "reason": same["paired_with"][0]["reason"]}]

    # undo = save the previous map; remove restores the original
    post(tb, "name_maps/save", {"name": "golden_iii", "pairs": split["previous"]})
    assert operator_rows(tb, name_map="golden_iii") == after
    assert post(tb, "name_maps/remove", {"name": "golden_iii"})["removed"] == "golden_iii"
    assert get(tb, "name_maps")["maps"] == []
    assert operator_rows(tb) == before
    code, body = error(get, tb, "compare/operator?" + q(name_map="golden_iii"))
    assert code == 400 and body["parameter"] == "name_map"


@needs_corpus
def test_bad_requests_name_their_parameter(tb):
    code, body = error(post, tb, "name_maps/save", {"name": "x", "pairs": ["a"]})
    assert code == 400 and body["parameter"] == "pairs"
    code, body = error(post, tb, "name_maps/save", {"name": "..", "pairs": {}})
    assert code == 400 and body["parameter"] == "name"
    code, body = error(post, tb, "name_maps/remove", {"name": "never_saved"})
    assert code == 400 and body["parameter"] == "name"
    code, body = error(post, tb, "name_maps/edit", {"name": "x", "baseline": BASE, "target": TARGET,
                                                    "action": "merge", "b_name": "a", "t_name": "b"})
    assert code == 400 and body["parameter"] == "action"
    code, body = error(get, tb, "compare/match_candidates?" + q())
    assert code == 400 and body["parameter"] == "name"
    code, _ = error(post, tb, "name_maps", {})
    assert code == 405
