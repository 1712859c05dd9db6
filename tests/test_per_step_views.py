"""Every view follows the overview's per-step choice (issue 14, item 1).

The pair: a 6-step GPU trace (resnet50, steps 5..10) against a 1-step NPU export (alexnet rank0).
The overview divides each side by its step count; the Operator, Module, Memory (API, Kernel)
tables, the workbook's statistic sheets and the CLI now do the same, say so (``figures``), and
show raw whole-capture totals when the switch says raw (``per_step=0`` / ``--raw``).
One parse of the pair per module (a shared TB_COMPARE_CACHE_DIR; one client).
"""
from __future__ import annotations

import io
import json
import time

import openpyxl
import pytest

from cli_inproc import run_cli
from conftest import CORPUS, needs_corpus
from test_plugin_routes import PREFIX, make_client

pytestmark = needs_corpus

GPU = "gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
NPU = "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("per_step_cache")


@pytest.fixture(scope="module")
def client(tmp_path_factory, cache_dir):
    mp = pytest.MonkeyPatch()
    mp.setenv("TB_COMPARE_CACHE_DIR", str(cache_dir))
    logdir = tmp_path_factory.mktemp("per_step_logdir")
    (logdir / "gpu").mkdir()
    (logdir / "gpu" / "worker0.1623143089861.pt.trace.json.gz").symlink_to(CORPUS / GPU)
    (logdir / "npu").symlink_to(CORPUS / "npu/alexnet_ddp_2rank_level1")
    c = make_client(logdir)
    runs = None
    for _ in range(200):
        runs = json.loads(c.get(PREFIX + "/runs").get_data())
        if len(runs.get("runs", [])) >= 2:
            break
        time.sleep(0.05)
    ids = [w["id"] for r in runs["runs"] for w in r["workers"]]
    base = next(i for i in ids if i.startswith("gpu"))
    target = next(i for i in ids if i.startswith("npu") and "rank0" in i)
    yield c, {"baseline": base, "target": target}
    mp.undo()


def _post(c, path, body, raw=False):
    for _ in range(2400):
        r = c.post(PREFIX + path, data=json.dumps(body), content_type="application/json")
        if r.status_code != 202:
            assert r.status_code == 200, (path, r.status_code, r.get_data()[:500])
            return r.get_data() if raw else json.loads(r.get_data())
        time.sleep(0.05)
    raise AssertionError(f"{path} never finished")


def _row(table, key, value):
    rows = [r for r in table["rows"] if r.get(key) == value]
    assert rows, (value, [r.get(key) for r in table["rows"]][:20])
    return rows[0]


def test_routes_follow_the_overview(client):
    c, pair = client
    ov = _post(c, "/compare/overall", pair)
    assert ov["per_step"] is True and ov["steps_count"] == {"baseline": 6, "target": 1}
    assert ov["figures"]["divisor"] == {"baseline": 6, "target": 1}
    raw_pair = {**pair, "per_step": "0"}
    ov_raw = _post(c, "/compare/overall", raw_pair)
    assert ov_raw["per_step"] is False and ov_raw["figures"]["divisor"] == {"baseline": 1, "target": 1}

    q = {"q": "aten::conv2d", "limit": 1000}
    op, op_raw = (_post(c, "/compare/operator", {**p, **q}) for p in (pair, raw_pair))
    a, b = _row(op, "name", "aten::conv2d"), _row(op_raw, "name", "aten::conv2d")
    assert b["b_compute_ms"] == pytest.approx(126.6, abs=0.05)                 # the whole capture
    assert a["b_compute_ms"] == pytest.approx(b["b_compute_ms"] / 6, rel=1e-12)  # per step
    assert a["b_count"] == pytest.approx(b["b_count"] / 6, rel=1e-12)
    assert op["figures"]["per_step"] is True and "÷6" in op["figures"]["note"] and "÷1" in op["figures"]["note"]
    assert op_raw["figures"]["per_step"] is False and op_raw["figures"]["note"].startswith("Raw")

    q = {"q": "zero_grad", "limit": 1000}
    mod, mod_raw = (_post(c, "/compare/module", {**p, **q}) for p in (pair, raw_pair))
    name = "Optimizer.zero_grad#SGD.zero_grad"
    assert (_row(mod, "name", name)["b_number"], _row(mod, "name", name)["t_number"]) == (1, 1)
    assert (_row(mod_raw, "name", name)["b_number"], _row(mod_raw, "name", name)["t_number"]) == (6, 1)

    mem, mem_raw = (_post(c, "/compare/memory", {**p, "limit": 1000}) for p in (pair, raw_pair))
    tot = lambda t, k: sum(r[k] for r in t["rows"])     # noqa: E731
    assert tot(mem_raw, "b_memory_mb") > 0
    assert tot(mem, "b_memory_mb") == pytest.approx(tot(mem_raw, "b_memory_mb") / 6, rel=1e-9)
    assert tot(mem, "t_memory_mb") == pytest.approx(tot(mem_raw, "t_memory_mb"), rel=1e-12)
    assert mem["figures"]["divisor"] == {"baseline": 6, "target": 1}

    api, api_raw = (_post(c, "/compare/api", {**p, "q": "aten::conv2d"}) for p in (pair, raw_pair))
    assert _row(api, "name", "aten::conv2d")["b_total_ms"] == pytest.approx(
        _row(api_raw, "name", "aten::conv2d")["b_total_ms"] / 6, rel=1e-12)
    pairs = _post(c, "/compare/operator_pairs", pair)
    assert pairs["figures"] is None                      # per call: nothing divided


def _sheet(data: bytes, name: str) -> list:
    wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    return [list(r) for r in wb[name].iter_rows(values_only=True)]


def _conv2d(data: bytes) -> tuple:
    """(base ms, base number) of aten::conv2d in OperatorCompareStatistic."""
    rows = _sheet(data, "OperatorCompareStatistic")
    hdr = rows[2]
    r = next(r for r in rows[3:] if r[1] == "aten::conv2d")
    return r[hdr.index("Base Device Duration(ms)")], r[hdr.index("Base Operator Number")]


def _memory_total(data: bytes) -> float:
    rows = _sheet(data, "MemoryCompareStatistic")
    col = rows[2].index("Base Allocated Memory(MB)")
    return sum(float(r[col] or 0) for r in rows[3:])


def test_workbook_follows_the_overview(client):
    c, pair = client
    books = {k: _post(c, "/compare/xlsx", p, raw=True) for k, p in (("per", pair), ("raw", {**pair, "per_step": "0"}))}
    (ms, n), (ms_raw, n_raw) = _conv2d(books["per"]), _conv2d(books["raw"])
    assert ms_raw == pytest.approx(126.6, abs=0.05) and n_raw == 318
    assert ms == pytest.approx(ms_raw / 6, rel=1e-9) and n == 53
    s, s_raw = _memory_total(books["per"]), _memory_total(books["raw"])
    assert s_raw > 0 and s == pytest.approx(s_raw / 6, rel=1e-9)
    notes = {k: [str(r[0]) for r in _sheet(v, "Summary")] for k, v in books.items()}
    assert any("baseline ÷6, target ÷1" in n for n in notes["per"])
    assert any(n.startswith("Statistic sheets") and "Raw" in n for n in notes["raw"])


def _cli(*args, cache_dir):
    return run_cli(CORPUS / GPU, CORPUS / NPU, "--no-progress", *args, env={"TB_COMPARE_CACHE_DIR": cache_dir})


def test_cli_json_and_workbook_follow_the_switch(tmp_path, cache_dir):
    outs = {}
    for flag in ("", "--raw"):
        xlsx = tmp_path / f"book{flag}.xlsx"
        r = _cli("--json", "-", "--xlsx", xlsx, *([flag] if flag else []), cache_dir=cache_dir)
        assert r.returncode == 0, r.stderr
        outs[flag] = (json.loads(r.stdout), xlsx.read_bytes())
    per, raw = outs[""][0], outs["--raw"][0]
    assert per["figures"]["divisor"] == {"baseline": 6, "target": 1} and per["per_step"] is True
    assert raw["figures"]["divisor"] == {"baseline": 1, "target": 1} and raw["per_step"] is False
    (ms, n), (ms_raw, n_raw) = _conv2d(outs[""][1]), _conv2d(outs["--raw"][1])
    assert n == 53 and n_raw == 318 and ms == pytest.approx(ms_raw / 6, rel=1e-9)
