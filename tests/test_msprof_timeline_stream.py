"""The msprof CANN timeline (``msprof_*.json``) is decoded chunk by chunk keeping only the CANN
track: the ``ops`` table must equal one built from a whole-file ``json.load`` of the same file
(samples/msprof_tf, both runs), also when the chunks are tiny, when the CANN process's name comes
after its events (the reader starts again keeping everything), and with elements that are not
objects."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import SAMPLES
from tb_compare_plugin.loaders import load, msprof_cann
from tb_compare_plugin.loaders.ascend_columns import ts_ns

RUNS = [SAMPLES / "msprof_tf" / "baseline", SAMPLES / "msprof_tf" / "target"]


def _out(run: Path) -> Path:
    (p,) = run.glob("PROF_*/mindstudio_profiler_output")
    return p


def whole_file_ops(path: Path) -> list:
    """(start_ns, dur_ns, tid, name) of the CANN X events, from one json.load (the old reader)."""
    doc = json.loads(path.read_text())
    cann = {e.get("pid") for e in doc if isinstance(e, dict) and e.get("ph") == "M"
            and e.get("name") == "process_name" and (e.get("args") or {}).get("name") == "CANN"}
    xs = [e for e in doc if isinstance(e, dict) and e.get("ph") == "X" and e.get("pid") in cann]
    start = ts_ns([e["ts"] for e in xs])
    return sorted((int(s), int(round(float(e["dur"]) * 1000)), int(e["tid"]), e["name"]) for s, e in zip(start, xs))


def table_ops(prof) -> list:
    ops = prof.tables["ops"]
    names = prof.symbols.strings(ops["name"].to_numpy())
    return sorted(zip(ops["start_ns"].tolist(), ops["dur_ns"].tolist(), ops["tid"].tolist(), names))


@pytest.mark.parametrize("run", RUNS, ids=["baseline", "target"])
def test_streamed_timeline_equals_whole_file_decode(run, monkeypatch):
    (tl,) = _out(run).glob("msprof_*.json")
    want = whole_file_ops(tl)
    assert len(want) > 10
    assert table_ops(load("msprof-cann", str(run / _out(run).parent.name))) == want
    monkeypatch.setattr(msprof_cann, "CHUNK_BYTES", 512)           # many cuts inside a small file
    assert table_ops(load("msprof-cann", str(_out(run)))) == want


def test_cann_name_after_its_events_and_non_objects(tmp_path):
    src = _out(RUNS[1])
    dst = tmp_path / src.parent.name / src.name
    shutil.copytree(src, dst)
    (tl,) = dst.glob("msprof_*.json")
    want = whole_file_ops(tl)
    doc = json.loads(tl.read_text())
    meta = [e for e in doc if e.get("ph") == "M"]
    rest = [e for e in doc if e.get("ph") != "M"]
    # the CANN process first named as something else, renamed CANN only at the end; junk elements
    cann_pid = next(e["pid"] for e in meta if e["name"] == "process_name" and e["args"]["name"] == "CANN")
    doc2 = ([{"name": "process_name", "ph": "M", "pid": cann_pid, "args": {"name": "Host"}}]
            + [m for m in meta if not (m["name"] == "process_name" and m["pid"] == cann_pid)]
            + rest[:5] + [7, "x", None] + rest[5:]
            + [{"name": "process_name", "ph": "M", "pid": cann_pid, "args": {"name": "CANN"}}])
    tl.write_text(json.dumps(doc2))
    prof = load("msprof-cann", str(dst))
    assert table_ops(prof) == want
    assert not any("CANN" in w for w in prof.meta.warnings)
    assert np.all(prof.tables["ops"]["depth"].to_numpy() >= 0)


@pytest.mark.parametrize("run", RUNS, ids=["baseline", "target"])
def test_op_summary_float_read_equals_string_read(run):
    """op_summary's numeric columns read as floats by the CSV parser equal num() of the strings."""
    from tb_compare_plugin.loaders.ascend_csv import PMU_COLUMNS, num, read_csv
    cols = ["Task Duration(us)", "Task Wait Time(us)", "Stream ID", "Task ID", "Device_id", *PMU_COLUMNS]
    for p in sorted(_out(run).glob("op_summary_*.csv")):
        w1, w2 = [], []
        fast = read_csv(str(p), ["Op Name"], cols, w1, warn_missing=False, floats=cols)
        slow = read_csv(str(p), ["Op Name"], cols, w2, warn_missing=False)
        assert w1 == w2 and list(fast.columns) == list(slow.columns)
        assert any(fast[c].dtype == np.float64 for c in cols if c in fast.columns)
        for c in cols:
            np.testing.assert_array_equal(num(fast, c), num(slow, c))
