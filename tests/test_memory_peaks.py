"""Peak memory figures on real data (issue 14, item 0): the 2021 Kineto traces whose [memory]
events carry Bytes but no Total Allocated, and one NPU job exported as text and as db.

* GPU: allocated-over-time is the running sum of Bytes per device (the loader says so in the
  profile's warnings); its peak is 2,662.3 MiB and the curve falls back to 0, both in the Memory
  view (``compare/memory_curve``) and in the overview JSON (``memory.<side>.peak_allocated_gb``).
* NPU: the db export's MEMORY_RECORD has no APP rows; the loader reads that series from NPU_MEM,
  so text and db give the same peak reserved memory (Mem Usage).
"""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from tb_compare_plugin.engines.memory_curve import memory_curves, peak_allocated_gb, peak_reserved_gb
from tb_compare_plugin.engines.overall import compare_overall

from conftest import CORPUS, needs_corpus
from test_plugin_routes import make_client, post_until_done

MIB = float(1 << 20)
RESNET_RUN = "gpu/kineto_resnet50_num_workers_0"
RESNET = [f"{RESNET_RUN}/worker0.1623143089861.pt.trace.json.gz",
          f"{RESNET_RUN}/worker0.1623143566756.pt.trace.json.gz"]
RESNET_PEAK_MIB = 2662.31201171875      # Σ Bytes of the GPU device's events in time order, max
TEXT = "npu/alexnet_ddp_2rank_level1/rank{}_ascend_pt"
DB = "npu/alexnet_ddp_2rank_db_level1/rank{}_ascend_pt"
_LOADED: dict = {}


def _load(fmt: str, rel: str):
    from tb_compare_plugin.loaders import load
    if (fmt, rel) not in _LOADED:
        _LOADED[(fmt, rel)] = load(fmt, str(CORPUS / rel))
    return _LOADED[(fmt, rel)]


# ----------------------------------------------------------------------------- GPU, Bytes only

@needs_corpus
@pytest.mark.parametrize("rel", RESNET)
def test_kineto_allocated_rebuilt_from_bytes(rel):
    p = _load("trace-json", rel)
    rec = p.mem_records
    assert len(rec) == 8220 and set(rec["device"]) == {0}          # the CPU events (Device Id -1) are apart
    assert rec["reserved_bytes"].isna().all()                      # unknown, not invented
    c = memory_curves(p)
    assert c["source"] == "records"
    assert c["peak"]["allocated_mb"] == pytest.approx(RESNET_PEAK_MIB, rel=1e-12)
    assert c["peak"]["reserved_mb"] is None
    assert c["allocated_mb"][-1] == 0.0                            # every allocation freed by the end
    assert min(c["allocated_mb"]) == 0.0
    assert peak_reserved_gb(p) == 0.0
    assert peak_allocated_gb(c) == pytest.approx(RESNET_PEAK_MIB / 1024, rel=1e-12)
    w = [x for x in p.meta.warnings if "Total Allocated" in x]
    assert len(w) == 1 and "8,220 events" in w[0] and "reserved memory is unknown" in w[0], p.meta.warnings


@needs_corpus
def test_kineto_peak_allocated_in_overview_json_and_memory_view(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    c = make_client(CORPUS / "gpu")
    pair = {"baseline": "kineto_resnet50_num_workers_0/worker0.1623143089861",
            "target": "kineto_resnet50_num_workers_0/worker0.1623143566756"}
    ov = post_until_done(c, "/compare/overall", pair)
    curve = post_until_done(c, "/compare/memory_curve", pair)
    for side in ("baseline", "target"):
        view_mb = curve[side]["peak"]["allocated_mb"]
        json_gb = ov["memory"][side]["peak_allocated_gb"]
        assert abs(view_mb - 2662) / 2662 < 0.01, (side, view_mb)
        assert json_gb * 1024 == pytest.approx(view_mb, rel=1e-12)          # one figure
        assert ov["memory"][side]["peak_reserved_gb"] is None               # no Total Reserved


# ----------------------------------------------------------------------------- NPU text vs db

def _npu_mem_app_max(rank: int) -> float:
    """Max of the db's NPU_MEM rows of type "app" (ddr + hbm bytes), read with plain SQL."""
    db = next((CORPUS / DB.format(rank)).rglob("ascend_pytorch_profiler_*.db"))
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        return float(con.execute("SELECT MAX(ddr + hbm) FROM NPU_MEM JOIN STRING_IDS ON NPU_MEM.type = "
                                 "STRING_IDS.id WHERE STRING_IDS.value = 'app'").fetchone()[0])
    finally:
        con.close()


@needs_corpus
@pytest.mark.parametrize("rank", [0, 1])
def test_npu_db_app_memory_from_npu_mem(rank):
    p = _load("ascend-db", DB.format(rank))
    rec = p.mem_records
    app = rec[rec["component"].to_numpy() == p.symbols.lookup("APP")]
    assert len(app) in (13, 14)
    assert app["allocated_bytes"].isna().all() and app["active_bytes"].isna().all()
    assert app["reserved_bytes"].max() == _npu_mem_app_max(rank)
    assert peak_reserved_gb(p) == app["reserved_bytes"].max() / 2 ** 30
    assert {"PTA", "GE", "PTA+GE", "APP"} <= {p.symbols.string(int(i)) for i in np.unique(rec["component"])}


@needs_corpus
@pytest.mark.parametrize("rank", [0, 1])
def test_npu_text_and_db_give_the_same_peak_reserved(rank):
    """The two exports are two captures of the same job: the APP series differ by a few KiB,
    so the peak agrees to the figure shown (2.064 GB), no longer 2.064 against 1.491."""
    text, db = _load("ascend-text", TEXT.format(rank)), _load("ascend-db", DB.format(rank))
    t_gb, d_gb = peak_reserved_gb(text), peak_reserved_gb(db)
    assert f"{t_gb:.3f}" == f"{d_gb:.3f}" == "2.064"
    assert abs(t_gb - d_gb) < 1e-4
    res = compare_overall(text, db)
    mem = res.to_dict()["memory"]
    assert round(mem["baseline"]["peak_reserved_gb"], 3) == round(mem["target"]["peak_reserved_gb"], 3) == 2.064
    # the Memory view's default curve (PTA) is the same on both exports too
    assert memory_curves(text)["peak"]["allocated_mb"] == memory_curves(db)["peak"]["allocated_mb"]
