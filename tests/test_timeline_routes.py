"""The timeline routes through one real TensorBoard on samples/: compare/timeline (lanes of a step,
the item budget), compare/timeline/item (the planted fc1 matmul and its baseline counterpart),
compare/timeline/range (a step's totals = the overview route's figures for that step) and 400s
naming every bad parameter."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import SAMPLES
from tbserver import TensorBoard

P = "/data/plugin/profile_compare/"
BASE, TARGET = "baseline_gpu/worker0", "target_npu/rank0_ascend_pt"


@pytest.fixture(scope="module")
def tb():
    if not (SAMPLES / "expected.json").is_file():
        pytest.skip("samples/ is missing")
    with TensorBoard(SAMPLES) as server:
        for _ in range(600):
            ids = {w["id"] for r in server.get_json(P + "runs")["runs"] for w in r["workers"]}
            if {BASE, TARGET} <= ids:
                break
            time.sleep(0.1)
        yield server


def post(tb, route: str, **params):
    body = {"baseline": BASE, "target": TARGET, **params}
    for _ in range(1200):
        req = urllib.request.Request(tb.url + P + route, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                if r.status == 200:
                    return json.loads(r.read())
        except urllib.error.HTTPError as e:
            return {"_status": e.code, **json.loads(e.read())}
        time.sleep(0.1)
    raise AssertionError(f"{route} kept answering 202")


def get(tb, route: str, **params):
    q = urllib.parse.urlencode({"baseline": BASE, "target": TARGET, **params})
    try:
        with urllib.request.urlopen(f"{tb.url}{P}{route}?{q}", timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_timeline_of_a_step(tb):
    ans = post(tb, "compare/timeline", step=2, px=1500)
    assert ans["step"] == 2 and ans["px"] == 1500
    assert ans["classes"][:7] == ["matmul", "conv", "flash_attention", "vector", "communication", "sdma", "other"]
    for side in ("baseline", "target"):
        s = ans[side]
        assert {ln["kind"] for ln in s["lanes"]} == {"host", "device", "communication", "free"}
        assert 0 < s["items"] == sum(len(ln["items"]) for ln in s["lanes"]) <= 4 * 1500
        assert s["extent"]["start_ms"] == 0.0 and isinstance(s["origin_ns"], int)
        for ln in s["lanes"]:
            for it in ln["items"]:
                assert len(it) == 6 and it[2] in ans["classes"]
    assert ans["window"] == ans["extent"]
    zoom = post(tb, "compare/timeline", step=2, px=300, start_ms=2.5, end_ms=4.5)
    assert zoom["window"] == {"start_ms": 2.5, "end_ms": 4.5}
    assert all(it[0] < 4.5 and it[0] + it[1] >= 2.5 for side in ("baseline", "target")
               for ln in zoom[side]["lanes"] for it in ln["items"])


def test_item_and_its_counterpart(tb):
    ans = post(tb, "compare/timeline", step=3, px=4000)
    slow = [it for ln in ans["target"]["lanes"] if ln["kind"] == "device" for it in ln["items"]
            if it[2] == "matmul" and it[4] and abs(it[1] - 0.8) < 0.02]
    assert len(slow) == 1
    code, det = get(tb, "compare/timeline/item", side="target", id=slow[0][4], step=3)
    assert code == 200, det
    cp = det["counterpart"]
    assert cp["side"] == "baseline" and slow[0][1] - cp["dur_ms"] == pytest.approx(0.4)
    assert abs(cp["start_ms"] - slow[0][0]) < 0.2 and det["links"]["view"] == "kernel"


def test_find_a_table_row(tb):
    code, body = get(tb, "compare/timeline/find", side="baseline", kind="op", name="aten::addmm", step=2)
    assert code == 200 and body["id"].startswith("o") and body["counterpart"]["side"] == "target", body
    code, body = get(tb, "compare/timeline/find", side="target", kind="op", name="nothing", step=2)
    assert code == 200 and body["id"] is None


NPU2 = "target_npu_v2/rank0_ascend_pt"


@pytest.mark.parametrize("base,target", [(TARGET, NPU2), (BASE, "baseline_gpu/worker0")])
def test_a_kernel_row_and_its_timeline_items(tb, base, target):
    """Kernel view rows (NPU: named by the kernel's Type, e.g. MatMulV2 for aclnnAddmm_MatMulCommon_MatMulV2)
    <-> timeline items: find by the row's kernel and shapes gives a kernel of that row, whose
    details link back to the row by its name (what the Kernel view's search finds)."""
    pair = {"baseline": base, "target": target}
    table = post(tb, "compare/kernel", limit=12, **pair)
    assert table["rows"], table
    for row in table["rows"][:12]:
        shapes = row["input_shape"] if row["input_shape"] != "N/A" else None
        found = post(tb, "compare/timeline/find", side="baseline", kind="kernel", name=row["kernel"], step=2,
                     **({"shapes": shapes} if shapes else {}), **pair)
        assert found["id"] and found["id"].startswith("k"), (row, found)
        assert found["links"]["view"] == "kernel" and found["links"]["key"] == row["name"], (row, found["links"])
        assert (found["links"]["kernel"], found["links"]["shapes"]) == (row["kernel"], row["input_shape"])
        if base == TARGET:                                   # the NPU row names the type, a part of the kernel's name
            assert found["name"] != row["kernel"] and row["kernel"] in found["name"], (row, found["name"])
        # the row's search (the Kernel view's q) finds the row
        again = post(tb, "compare/kernel", q=found["links"]["key"], **pair)
        assert row["name"] in [r["name"] for r in again["rows"]]
    # the kernel's own full name is found too; shapes no row has find nothing
    mm = post(tb, "compare/timeline/find", side="baseline", kind="kernel", name=table["rows"][0]["kernel"], step=2, **pair)
    own = post(tb, "compare/timeline/find", side="baseline", kind="kernel", name=mm["name"], step=2, **pair)
    assert own["id"] == mm["id"]
    none = post(tb, "compare/timeline/find", side="baseline", kind="kernel", name=table["rows"][0]["kernel"],
                shapes="1,2,3;4", step=2, **pair)
    assert none["id"] is None


def test_operator_rows_and_their_timeline_items(tb):
    """An Operator row <-> its timeline items: a per-instance row's call found by its name and input
    shapes; an op the Operator view does not list (a child op) and a kernel link to the row of the
    nearest enclosing op it lists."""
    pairs = post(tb, "compare/operator_pairs", limit=40)["rows"]
    listed = {r["name"] for r in post(tb, "compare/operator", limit=500)["rows"]}
    both = [r for r in pairs if r["status"] == "both" and r["b_input_shape"] not in (None, "", "N/A")]
    assert both
    for r in both[:6]:
        found = post(tb, "compare/timeline/find", side="baseline", kind="op", name=r["b_name"],
                     shapes=r["b_input_shape"], step=2)
        assert found["id"] and found["name"] == r["b_name"], (r, found)
        assert found["shapes"].replace('"', "").replace(" ", "") == r["b_input_shape"].replace('"', "").replace(" ", "")
        assert found["links"] == {"view": "operator", "key": r["b_name"]}
    # the planted fc1 matmul on the target: its launching op (aclnnAddmm) is no Operator row, its
    # enclosing aten::linear is; the kernel and that host op both link there
    ans = post(tb, "compare/timeline", step=3, px=4000)
    slow = next(it for ln in ans["target"]["lanes"] if ln["kind"] == "device" for it in ln["items"]
                if it[2] == "matmul" and it[4] and abs(it[1] - 0.8) < 0.02)
    code, det = get(tb, "compare/timeline/item", side="target", id=slow[4], step=3)
    assert code == 200 and det["op_link"]["view"] == "operator" and det["op_link"]["key"] in listed, det
    assert det["launch_op"]["name"] not in listed
    code, op = get(tb, "compare/timeline/item", side="target", id=det["launch_op"]["id"], step=3)
    assert code == 200 and op["links"] == det["op_link"], op


@pytest.mark.parametrize("step", [1, 4])
def test_range_of_a_step_equals_the_overview(tb, step):
    rng = post(tb, "compare/timeline/range", step=step)
    ov = post(tb, "compare/overall", base_step=step, target_step=step)
    rows = {r["name"]: r for r in ov["overall_metrics"]}
    want = {"matmul": "Matmul", "vector": "Vector", "computing": "Computing Time",
            "communication": "Uncovered Communication Time", "free": "Free Time", "range": "E2E Time"}
    for side in ("baseline", "target"):
        for key, row in want.items():
            ov_ms = rows[row][side]["duration_ms"] if row in rows else 0.0
            assert rng[side][key] == pytest.approx(ov_ms, rel=0.01, abs=1e-6), (side, key)
    # an explicit window over the target's step window gives the same target totals
    w = rng["window"]["target"]
    again = post(tb, "compare/timeline/range", step=step, start_ms=w["start_ms"], end_ms=w["end_ms"])
    assert again["target"] == rng["target"]


@pytest.mark.parametrize("route,params,parameter", [
    ("compare/timeline", {"px": "0"}, "px"),
    ("compare/timeline", {"px": "wide"}, "px"),
    ("compare/timeline", {"step": "99"}, "step"),
    ("compare/timeline", {"step": "two"}, "step"),
    ("compare/timeline", {"start_ms": "soon"}, "start_ms"),
    ("compare/timeline", {"start_ms": "5", "end_ms": "1"}, "end_ms"),
    ("compare/timeline", {"align": "left:k1"}, "align"),
    ("compare/timeline", {"align": "target:k99999999"}, "align"),
    ("compare/timeline/range", {"end_ms": "inf"}, "end_ms"),
    ("compare/timeline/item", {"side": "middle", "id": "k1"}, "side"),
    ("compare/timeline/item", {"side": "target", "id": "q1"}, "id"),
    ("compare/timeline/item", {"side": "target", "id": "k99999999"}, "id"),
    ("compare/timeline/item", {"side": "target"}, "id"),
    ("compare/timeline/find", {"side": "target", "kind": "module", "name": "x"}, "kind"),
    ("compare/timeline/find", {"side": "target", "kind": "op"}, "name"),
    ("compare/timeline/find", {"side": "up", "name": "x"}, "side"),
])
def test_bad_parameters_answer_400(tb, route, params, parameter):
    post(tb, "compare/timeline", step=1, px=10)             # both sides parsed
    code, body = get(tb, route, **params)
    assert code == 400 and body["parameter"] == parameter, body
