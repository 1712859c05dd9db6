"""The comparison workbook: the streaming xlsx writer, the presenter on a stub comparison
(styles, INF, skipped engines, sheet filters) and, on the real corpus, golden pairs i-v against
the reference's workbooks (sheet names, order, headers, banners, row counts, OverallMetrics
values) and against our own engines (every number in the workbook is the engine's).
"""
from __future__ import annotations

import importlib.util
import io
import json
import math
import re
import shutil
import subprocess
import zipfile
from datetime import datetime, timezone
from types import SimpleNamespace

import openpyxl
import pandas as pd
import pytest

from tb_compare_plugin.comparison import Comparison, Options, Side
from tb_compare_plugin.presenters import xlsx_style as S
from tb_compare_plugin.presenters.xlsx_workbook import ORDER, write_workbook, workbook_filename
from tb_compare_plugin.presenters.xlsx_writer import MAX_CELL_CHARS, Workbook, col_letter

import overall_golden
from conftest import CORPUS, GOLDEN, needs_corpus
from test_engine_overall import PAIRS

OVERALL_DEVIATIONS = overall_golden.deviations()["default"]   # docs/deviations.md, machine-readable


def _fill(c):
    return c.fill.fgColor.rgb[-6:] if c.fill.fill_type == "solid" else None


def _data(ws):
    return [list(r) for r in ws.iter_rows(min_row=4, values_only=True)]


# ------------------------------------------------------------------------------ writer


def test_writer_cells_styles_and_layout(tmp_path):
    import numpy as np
    path = tmp_path / "w.xlsx"
    wb = Workbook(str(path))
    st = wb.styles
    bold = st.xf("#,##0", bold=True, fill="00FF00")
    ind = st.xf(None, indent=2)
    sh = wb.add_sheet("T", 5, 4, widths=[40, 20, 0, 10], merges=[(0, 1, 0, 2)], freeze_rows=3,
                      autofilter=(2, 4, 0, 3))
    sh.row(0, [None, "Base: a & <b>", None, None], [0, bold, bold, 0])
    sh.row(2, ["h1", "h2", "h3", "h4"], [bold] * 4)
    sh.row(3, ["\tTab\r\n", np.float64(1.5), np.int64(3), float("inf")], [ind, bold, bold, bold])
    sh.row(4, ["x\x01y", True, pd.NA, "y" * (MAX_CELL_CHARS + 10)], [ind, 0, bold, 0])
    with pytest.raises(ValueError):
        sh.row(4, [1], [0])
    wb.close()
    ws = openpyxl.load_workbook(path)["T"]
    assert ws["B1"].value == "Base: a & <b>" and ws["B1"].font.b and _fill(ws["B1"]) == "00FF00"
    assert ws["A4"].value == "\tTab_x000D_\n" and ws["A4"].alignment.indent == 2
    assert ws["B4"].value == 1.5 and ws["C4"].value == 3 and ws["D4"].value is None
    assert ws["A5"].value == "x_x0001_y" and ws["B5"].value == 1 and len(ws["D5"].value) == MAX_CELL_CHARS
    assert [str(r) for r in ws.merged_cells.ranges] == ["B1:C1"]
    assert ws.freeze_panes == "A4" and ws.auto_filter.ref == "A3:D5"
    assert ws.column_dimensions["A"].width == pytest.approx(40.7109375)
    assert ws["A4"].font.name == "Arial" and ws["A4"].border.left.style == "thin"
    assert [col_letter(i) for i in (0, 25, 26, 701, 702)] == ["A", "Z", "AA", "ZZ", "AAA"]


def test_isal_and_zlib_parts_hold_the_same_xml(tmp_path, monkeypatch):
    """The sheet parts deflated by ISA-L (when installed: parts at a quick level, ``big_level``)
    inflate to the XML zlib's hold; parts at level 6 stay zlib's, byte for byte."""
    from tb_compare_plugin.presenters import xlsx_writer
    if xlsx_writer._fast_deflate() is None:
        pytest.skip("isal is not installed")
    members, raw = [], []
    for fast in (xlsx_writer._fast_deflate(), None):
        monkeypatch.setattr(xlsx_writer, "_ISAL", fast)
        path = tmp_path / f"w{len(members)}.xlsx"
        wb = Workbook(str(path))
        st = wb.styles.xf("0.00")
        for name, n in (("small", 50), ("big", 120_000)):
            sh = wb.add_sheet(name, n, 3)
            sh.rows(0, [[f"op {i % 977} & <x>", i * 0.25, i] for i in range(n)], [0, st, 0])
        wb.close()
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None
            members.append({i.filename: z.read(i.filename) for i in z.infolist() if i.filename != "docProps/core.xml"})
            raw.append({i.filename: i.compress_size for i in z.infolist()})
    assert members[0] == members[1]
    small, big = "xl/worksheets/sheet1.xml", "xl/worksheets/sheet2.xml"
    assert len(members[0][big]) > xlsx_writer.Sheet.BIG_PART > len(members[0][small])
    assert raw[0][small] == raw[1][small] and raw[0][big] != raw[1][big]
    assert openpyxl.load_workbook(tmp_path / "w0.xlsx")["big"]["A3"].value == "op 2 & <x>"


def _sheet_xml(write) -> bytes:
    buf = io.BytesIO()
    wb = Workbook(buf)
    write(wb)
    wb.close()
    with zipfile.ZipFile(buf) as z:
        return z.read("xl/worksheets/sheet1.xml")


@pytest.mark.parametrize("case", ["plain", "per_row_styles", "mixed_numbers", "unstyled", "other_type"])
def test_rows_whole_columns_match_row_by_row(case):
    """``Sheet.rows`` (whole columns as bytes, ``xlsx_columns``; or its general path when a
    column is not for it) writes the bytes ``Sheet.row`` writes row by row: zeros of both signs,
    NaN / inf blanks, None, repeated and escaped text (leading space, control characters,
    non-ASCII, over the cell limit), ints, per-row styles."""
    import numpy as np
    texts = ["a & <b>", " lead", "trail\t", "x\x01y\r", "µs ✓", "stack;\nframe", "y" * (MAX_CELL_CHARS + 5), ""]
    floats = [0.0, -0.0, 1.5, float("nan"), float("inf"), -2.25, 1e-7, 0.1 + 0.2, None]
    n = 600
    rows = [[i + 1, texts[i % len(texts)], floats[i % len(floats)], texts[(i * 7) % len(texts)] if i % 3 else None,
             floats[(i * 5) % len(floats)], "INF" if i % 11 == 0 else floats[(i * 3) % len(floats)], i % 4]
            for i in range(n)]
    if case == "mixed_numbers":
        for i in range(0, n, 5):
            rows[i][6] = float(rows[i][6])          # ints and floats in one column: the general path
    if case == "other_type":
        rows[7][4] = np.float64(2.5)

    def styles(wb):
        a, b, c = (wb.styles.xf(f) for f in ("0", "0.00", "@"))
        red = wb.styles.xf("0.00", fill="FF0000")
        per = [red if isinstance(r[5], str) or (r[5] or 0) > 1 else b for r in rows]
        out = [a, c, b, c, b, per if case == "per_row_styles" else b, a]
        if case == "unstyled":
            out[3] = 0
        return out

    def by_rows(wb):
        st = styles(wb)
        sh = wb.add_sheet("T", n + 3, 7)
        sh.row(0, ["h"] * 7, [st[0]] * 7)
        for i, r in enumerate(rows):
            sh.row(3 + i, r, [s if type(s) is int else s[i] for s in st])

    def by_columns(wb):
        st = styles(wb)
        sh = wb.add_sheet("T", n + 3, 7)
        sh.row(0, ["h"] * 7, [st[0]] * 7)
        sh.rows(3, rows, st)

    assert _sheet_xml(by_columns) == _sheet_xml(by_rows)


# ------------------------------------------------------------------------------ stub comparison

def _orow(name, depth, b, bc, t, tc, ratio):
    return {"name": name, "depth": depth, "baseline": {"duration_ms": b, "count": bc},
            "target": {"duration_ms": t, "count": tc}, "diff_ms": t - b, "ratio": ratio,
            "kernels": {"baseline": [], "target": []}}


class _Overall:
    rows = [_orow("Computing Time", 0, 10.0, 5, 12.0, 5, 1.2), _orow("Vector", 1, 0.0, 0, 3.0, 2, None),
            _orow("Vector (Trans)", 2, 0.0, 0, 3.0, 2, None), _orow("Free Time", 0, 10.0, None, 7.0, None, 0.7),
            _orow("Free", 1, 10.0, None, 7.0, None, 0.7), _orow("E2E Time", 0, 20.0, None, 19.0, None, 0.95)]
    notes = ["a note from the overall engine"]

    def to_dict(self):
        return {"overall_metrics": self.rows, "notes": self.notes, "per_step": False,
                "memory": {"baseline": {"peak_reserved_gb": None}, "target": {"peak_reserved_gb": 1.5}},
                "bandwidth": {"baseline": {}, "target": {}}}


class _Ops:
    """An operator result: the sheets are [[1, "aten::mm", 1.0, 2, 3.0, 2, 2.0, 3.0]] and
    [[1, "aten::mm", "N/A", "N/A", None, 1.0, "aten::mm", "N/A", "N/A", None, 0.5, -0.5, 0.5]]."""
    base_device = target_device = "NPU"
    stats = pd.DataFrame({"name": ["aten::mm"], "b_device_ms": [1.0], "b_count": [2], "t_device_ms": [3.0],
                          "t_count": [2]})
    pairs = pd.DataFrame({f"{p}_{k}": [v] for p, dev in (("b", 1.0), ("t", 0.5))
                          for k, v in (("op", 0), ("name", "aten::mm"), ("input_shape", ""), ("input_type", ""),
                                       ("kernel_details", ""), ("device_us", dev))})


def _missing(what):
    def f():
        raise ImportError(f"no {what} engine")
    return f


def _stub(options=None):
    prof = SimpleNamespace(meta=SimpleNamespace(device="NPU", format="ascend-text", path="/p"),
                           step_ids=lambda: [1], has=lambda: {"modules": False})
    api = pd.DataFrame({"name": ["aten::add", "aten::new"], "b_total_ms": [1.0, 0.0], "b_self_ms": [0.5, 0.0],
                        "b_calls": [2, 0], "t_total_ms": [2.0, 4.0], "t_self_ms": [0.25, 4.0], "t_calls": [2, 1]})
    return SimpleNamespace(base=prof, target=prof, options=options or Options(),
                           base_side=Side("run a", "rank0/w:1", "/data/base"),
                           target_side=Side("run b", "rank 1", "/data/target"),
                           overall=lambda: _Overall(), communication=_missing("communication"),
                           operators=lambda: _Ops(), modules=_missing("module"), memory=_missing("memory"),
                           api=lambda: api, kernels=_missing("kernel"))


def test_stub_workbook_styles_and_skipped_engines():
    bio = io.BytesIO()
    names = write_workbook(_stub(), bio)
    assert names == ["OverallMetrics", "OperatorCompareStatistic", "OperatorCompare", "ApiCompare", "Summary"]
    wb = openpyxl.load_workbook(io.BytesIO(bio.getvalue()))
    ws = wb["OverallMetrics"]
    assert ws["B1"].value == "Base Profiling: /data/base" and _fill(ws["B1"]) == S.GREEN and ws["B1"].font.b
    assert ws["E1"].value == "Comparison Profiling: /data/target" and _fill(ws["E1"]) == S.YELLOW
    assert [_fill(c) for c in ws[3]] == [S.GREEN] * 4 + [S.YELLOW] * 3 + [S.GREEN] * 2
    rows = _data(ws)
    assert rows[0] == ["Computing Time", 10.0, 0.5, 5, 12.0, 12.0 / 19.0, 5, 2.0, 1.2]
    assert rows[1][0] == "\tVector" and rows[1][8] == "INF" and rows[3][3] == "/"
    fills = [_fill(ws.cell(r, 1)) for r in range(4, 10)]
    assert fills == [S.BLUE, S.LIGHT_BLUE, None, S.BLUE, None, S.BLUE]
    assert [ws.cell(r, 1).alignment.indent for r in range(4, 10)] == [0, 1, 2, 0, 1, 0]
    assert _fill(ws["I4"]) == S.RED and ws["I4"].number_format == S.FMT_PCT       # 1.2 > 1
    assert _fill(ws["I5"]) == S.RED                                               # INF
    assert _fill(ws["I7"]) == S.BLUE and ws["C4"].number_format == S.FMT_PCT      # 0.7: row fill kept
    assert ws["B4"].number_format == S.FMT_FLOAT and ws["D4"].number_format == S.FMT_INT
    api = wb["ApiCompare"]
    assert _data(api)[1][1] == "aten::new" and _data(api)[1][10] == "INF" and api["B4"].font.b
    assert api.freeze_panes == "A4" and api.auto_filter.ref == "A3:N5"
    summary = wb["Summary"]
    rows = _data(summary)
    assert [r[0] for r in rows[:6]] == [r["name"] for r in _Overall.rows]
    assert _fill(summary["H4"]) == S.WORSE and _fill(summary["H7"]) == S.BETTER
    text = "\n".join(str(c) for r in rows for c in r if c)
    for engine in ("communication", "memory", "kernel"):
        assert f"The {engine} sheets were not written" in text
    assert "a note from the overall engine" in text and "rank0/w:1" in text


def test_sheet_filter_details_and_errors():
    assert write_workbook(_stub(), io.BytesIO(), sheets={"api"}) == ["ApiCompare"]
    names = write_workbook(_stub(Options(disable_details=True)), io.BytesIO(), sheets={"operator", "api"})
    assert names == ["OperatorCompareStatistic", "ApiCompare"]
    with pytest.raises(ValueError, match="unknown sheet group"):
        write_workbook(_stub(), io.BytesIO(), sheets={"nope"})
    # nothing to write at all: a Summary with the notes keeps the file valid
    assert write_workbook(_stub(), io.BytesIO(), sheets={"kernel"}) == ["Summary"]
    # both sides have modules but the module engine fails: operator sheets instead, with a note
    cmp = _stub()
    cmp.base = cmp.target = SimpleNamespace(**{**vars(cmp.base), "has": lambda: {"modules": True}})
    bio = io.BytesIO()
    assert write_workbook(cmp, bio, sheets={"operator"}) == ["OperatorCompareStatistic", "OperatorCompare", "Summary"]
    notes = [r[0] for r in _data(openpyxl.load_workbook(bio)["Summary"]) if r[0]]
    assert any(n.startswith("Module sheets not written (ImportError") for n in notes)


def test_path_target_and_filename(tmp_path, monkeypatch):
    path = tmp_path / "out.xlsx"
    write_workbook(_stub(), str(path), sheets={"api"})
    assert openpyxl.load_workbook(path).sheetnames == ["ApiCompare"]
    assert [p.name for p in tmp_path.iterdir()] == ["out.xlsx"]
    from tb_compare_plugin.presenters import xlsx_workbook

    def broken(*a):
        raise RuntimeError("disk full")
    monkeypatch.setattr(xlsx_workbook, "write_sheet", broken)     # failure while writing: no file left
    with pytest.raises(RuntimeError):
        write_workbook(_stub(), str(tmp_path / "bad.xlsx"), sheets={"api"})
    assert [p.name for p in tmp_path.iterdir()] == ["out.xlsx"]
    name = workbook_filename(_stub(), datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone.utc))
    assert name == "tb_compare_run_a_rank0_w_1_vs_run_b_rank_1_20240506070809.xlsx"


@pytest.mark.parametrize("base, target, want", [
    # the same worker in two runs (two NPU runs): the runs say it all
    (("target_npu", "rank0_ascend_pt"), ("target_npu_v2", "rank0_ascend_pt"), "target_npu_vs_target_npu_v2"),
    # two workers of one run: the workers tell the sides apart
    (("exp/l1", "rank0_ascend_pt"), ("exp/l1", "rank1_ascend_pt"),
     "exp_l1_rank0_ascend_pt_vs_exp_l1_rank1_ascend_pt"),
    # no run name (the logdir itself, or the CLI's stand-ins): the worker
    ((".", "worker0"), ("", "target"), "worker0_vs_target"),
    # long names are shortened in the middle: both ends stay
    (("sweep_" + "x" * 80 + "_lr0.1", "w"), ("sweep_" + "y" * 80 + "_lr0.2", "w"),
     f"sweep_{'x' * 17}--{'x' * 17}_lr0.1_vs_sweep_{'y' * 17}--{'y' * 17}_lr0.2"),
])
def test_workbook_filename_names_the_runs(base, target, want):
    cmp = SimpleNamespace(base_side=Side(*base), target_side=Side(*target))
    name = workbook_filename(cmp, datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone.utc))
    assert name == f"tb_compare_{want}_20240506070809.xlsx"
    assert re.fullmatch(r"[A-Za-z0-9._-]+", name) and len(name) < 160


def test_download_name_on_two_npu_runs():
    """Through a real TensorBoard on the samples: the workbook of two NPU runs is named for them."""
    import time
    import urllib.error
    from conftest import SAMPLES
    from tbserver import TensorBoard, wait_for
    if not (SAMPLES / "target_npu_v2").is_dir():
        pytest.skip("samples/ is missing")
    body = json.dumps({"baseline": "target_npu/rank0_ascend_pt",
                       "target": "target_npu_v2/rank0_ascend_pt"}).encode()
    with TensorBoard(SAMPLES) as tb:
        wait_for(lambda: any(r["name"] == "target_npu_v2"
                             for r in tb.get_json("/data/plugin/profile_compare/runs")["runs"]))
        import urllib.request
        for _ in range(600):
            req = urllib.request.Request(tb.url + "/data/plugin/profile_compare/compare/xlsx", data=body,
                                         headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(req, timeout=120) as r:
                if r.status == 200:
                    disp, data = r.headers["Content-Disposition"], r.read()
                    break
            time.sleep(0.2)
        else:
            raise AssertionError("compare/xlsx kept answering 202")
    m = re.fullmatch(r'attachment; filename="(.+)"', disp)
    assert m and re.fullmatch(r"tb_compare_target_npu_vs_target_npu_v2_\d{14}\.xlsx", m.group(1)), disp
    assert "OverallMetrics" in openpyxl.load_workbook(io.BytesIO(data), read_only=True).sheetnames


# ------------------------------------------------------------------------------ golden pairs

# sheets whose row count differs from the reference on purpose, and where that is documented
ROW_COUNT_DEVIATIONS = {
    ("iii", "OperatorCompare"): "operator engine: LCS alignment, not difflib (docs/deviations.md, memory 7)",
    ("iii", "MemoryCompare"): "rows are the operator engine's pairs (docs/deviations.md, memory 7)",
    ("iv", "OperatorCompare"): "operator engine: LCS alignment, not difflib (docs/deviations.md, memory 7)",
    ("iv", "CommunicationCompare"): "one row per NCCL collective (docs/deviations.md, communication 1)",
}
ABSENT = {("iv", "MemoryCompareStatistic"): "no memory data, no memory sheets (docs/deviations.md, memory 1)",
          ("iv", "MemoryCompare"): "no memory data, no memory sheets (docs/deviations.md, memory 1)"}
ENGINE_MODULE = {"CommunicationCompare": "communication", "ModuleCompareStatistic": "module",
                 "ModuleCompare": "module", "OperatorCompareStatistic": "operator", "OperatorCompare": "operator",
                 "MemoryCompareStatistic": "memory", "MemoryCompare": "memory", "ApiCompare": "api",
                 "KernelCompare": "kernel", "OverallMetrics": "overall"}
_BUILT: dict = {}


def _engine_exists(sheet: str) -> bool:
    return importlib.util.find_spec(f"tb_compare_plugin.engines.{ENGINE_MODULE[sheet]}") is not None


def _xml_layout(path, index: int) -> tuple[list, dict]:
    """(merged ranges, {column: width}) of the index-th sheet (0-based), read from its XML: both
    writers name sheet parts sheet1.xml, sheet2.xml, ... in workbook order, and this is much
    faster than a full openpyxl load."""
    with zipfile.ZipFile(path) as z:
        xml = z.read(f"xl/worksheets/sheet{index + 1}.xml").decode()
    merges = sorted(re.findall(r'<mergeCell ref="([A-Z]+[0-9]+:[A-Z]+[0-9]+)"', xml))
    widths = {}
    for lo, hi, w in re.findall(r'<col min="([0-9]+)" max="([0-9]+)" width="([0-9.]+)"', xml):
        for c in range(int(lo), int(hi) + 1):
            widths[c] = float(w)
    return merges, widths


def _row(ws, n: int) -> list:
    return list(next(ws.iter_rows(min_row=n, max_row=n)))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """pair -> (Comparison, sheet names, our workbook (read-only), golden.json, reference path,
    reference workbook (read-only), our path)."""
    from tb_compare_plugin.loaders import load

    def get(pair):
        if pair not in _BUILT:
            folder, (bf, bp), (tf, tp) = PAIRS[pair]
            sides = [Side(pair, "baseline", str(CORPUS / bp)), Side(pair, "target", str(CORPUS / tp))]
            cmp = Comparison(load(bf, str(CORPUS / bp)), load(tf, str(CORPUS / tp)), Options(per_step=False),
                             *sides)
            path = tmp_path_factory.mktemp("xlsx") / f"{pair}.xlsx"
            names = write_workbook(cmp, str(path))
            golden = json.loads((GOLDEN / folder / "golden.json").read_text())
            ref_path = GOLDEN / folder / "reference.xlsx"
            _BUILT[pair] = (cmp, names, openpyxl.load_workbook(path, read_only=True), golden, ref_path,
                            openpyxl.load_workbook(ref_path, read_only=True), path)
        return _BUILT[pair]
    return get


@needs_corpus
@pytest.mark.parametrize("pair", list(PAIRS))
def test_reference_sheets_layout(pair, golden, built):
    cmp, names, wb, g, ref_path, ref, path = built(pair)
    assert wb.sheetnames == names
    expected = [s for s in g["sheet_order"] if (pair, s) not in ABSENT and _engine_exists(s)]
    ours = [s for s in names if s in expected]
    assert ours == expected, f"{pair}: reference sheets missing or out of order"
    last_ref = max(names.index(s) for s in expected)
    extras = [s for s in names if s not in g["sheet_order"]]
    assert all(names.index(s) > last_ref for s in extras), f"{pair}: extra sheets before reference ones"
    assert [s for s in names if s in ORDER] == names
    for s in expected:
        ws, rs = wb[s], ref[s]
        head, ref_head = _row(ws, 3), _row(rs, 3)
        assert [c.value for c in head] == g["sheets"][s]["headers"], (pair, s)
        assert [_fill(c) for c in head] == [_fill(c) for c in ref_head], (pair, s)
        assert [c.font.b for c in head] == [c.font.b for c in ref_head], (pair, s)
        assert _xml_layout(ref_path, g["sheet_order"].index(s)) == _xml_layout(path, names.index(s))
        banner = [c.value for c in _row(ws, 1) if c.value]
        assert banner == [f"Base Profiling: {cmp.base_side.path}", f"Comparison Profiling: {cmp.target_side.path}"]
        n = ws.max_row - 3
        if s != "OverallMetrics" and (pair, s) not in ROW_COUNT_DEVIATIONS:
            assert n == g["sheets"][s]["row_count"], (pair, s, n)


def _close(a, b, rel=1e-3, abs_=1e-3):
    return abs(a - b) <= max(abs_, rel * abs(b))


@needs_corpus
@pytest.mark.parametrize("pair", list(PAIRS))
def test_overall_metrics_against_reference(pair, golden, built):
    cmp, names, wb, g, *_ = built(pair)
    ours = {r[0]: r for r in _data(wb["OverallMetrics"])}
    dev = OVERALL_DEVIATIONS[pair]
    checked = 0
    for gr in g["sheets"]["OverallMetrics"]["rows"]:
        name = gr[0].strip("\t")
        if name in dev:
            continue
        r = ours[gr[0]]
        for i in (1, 4):                                         # durations within 0.1 %
            assert _close(r[i], gr[i]), (pair, name, i, r[i], gr[i])
        for i, e2e in ((2, ours["E2E Time"][1]), (5, ours["E2E Time"][4])):     # shares of E2E
            assert r[i] == pytest.approx(r[i - 1] / e2e, rel=1e-12)
            if "E2E Time" not in dev:
                assert _close(r[i], gr[i], abs_=1e-5), (pair, name, i, r[i], gr[i])
        assert r[3] == gr[3] and r[6] == gr[6], (pair, name)     # Number
        assert abs(r[7] - gr[7]) <= 0.0051 + 1e-3 * abs(gr[7]), (pair, name)   # reference rounds diff to 2 dp
        if "Free" not in name and "E2E" not in name:
            assert r[8] == gr[8] if isinstance(gr[8], str) else abs(r[8] - gr[8]) <= 6e-5 + 1e-3 * gr[8]
        checked += 1
    assert checked >= 8
    res = cmp.overall()
    assert len(ours) == len(res.rows)


@needs_corpus
@pytest.mark.parametrize("pair", list(PAIRS))
def test_overall_metrics_reference_compat_is_the_reference_sheet(pair, golden, built, tmp_path):
    """With reference_compat the OverallMetrics sheet holds the reference workbook's rows, in
    its order, and no other (the one exception: docs/deviations.md's machine-readable block)."""
    cmp, *_ = built(pair)
    compat = Comparison(cmp.base, cmp.target, Options(reference_compat=True), cmp.base_side, cmp.target_side)
    path = tmp_path / "compat.xlsx"
    write_workbook(compat, str(path), sheets={"overall"})
    ours = _data(openpyxl.load_workbook(path, read_only=True)["OverallMetrics"])
    skip = set(overall_golden.deviations()["compat"].get(pair, {}))
    ref = [r for r in overall_golden.golden_rows(pair) if r["name"] not in skip]
    assert [r[0] for r in ours] == ["\t" * r["depth"] + r["name"] for r in ref], pair
    e2e = {"baseline": ours[-1][1], "target": ours[-1][4]}
    for r, g in zip(ours, ref):
        as_row = {"name": g["name"], "depth": g["depth"], "diff_ms": r[7],
                  "ratio": None if r[8] == "INF" else r[8],
                  "baseline": {"duration_ms": r[1], "count": None if r[3] == "/" else r[3]},
                  "target": {"duration_ms": r[4], "count": None if r[6] == "/" else r[6]}}
        assert not overall_golden.row_mismatches(as_row, g, e2e), (pair, g["name"], r)
        assert r[2] == pytest.approx(r[1] / e2e["baseline"]) and r[5] == pytest.approx(r[4] / e2e["target"])


def _cell(v):
    """What openpyxl reads back for a value the presenter wrote."""
    if v is None or v == "":
        return None
    if isinstance(v, float) and math.isinf(v):
        return "INF"
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, str):
        return v.replace("\r", "_x000D_")[:MAX_CELL_CHARS]
    if hasattr(v, "item"):
        return v.item()
    return v


def _same_rows(ws, want, label):
    got = _data(ws)
    assert len(got) == len(want), label
    for i, (a, b) in enumerate(zip(got, want)):
        b = [_cell(x) for x in b]
        a = [None if x == "" else x for x in a]
        assert a == b, (label, i, a, b)


@needs_corpus
@pytest.mark.parametrize("pair", list(PAIRS))
def test_workbook_numbers_are_the_engines(pair, golden, built):
    from tb_compare_plugin.presenters import reference_rows as R
    cmp, names, wb, *_ = built(pair)
    d = cmp.overall().to_dict()
    summary = _data(wb["Summary"])
    for r, want in zip(summary, d["overall_metrics"]):
        assert r[0] == want["name"]
        assert r[1] == want["baseline"]["duration_ms"] and r[4] == want["target"]["duration_ms"]
        assert r[2] == want["baseline"]["count"] and r[5] == want["target"]["count"]
        assert r[7] == want["diff_ms"]
        assert r[8] == (want["ratio"] if want["ratio"] is not None else "INF")
    om = _data(wb["OverallMetrics"])
    assert [r[0] for r in om] == ["\t" * x["depth"] + x["name"] for x in d["overall_metrics"]]
    sources = {"CommunicationCompare": lambda: R.communication_compare_rows(cmp.communication()),
               "ApiCompare": lambda: R.api_compare_rows(cmp.api()),
               "KernelCompare": lambda: R.kernel_compare_rows(cmp.kernels()),
               "OperatorCompareStatistic": lambda: R.operator_compare_statistic_rows(cmp.operators()),
               "OperatorCompare": lambda: R.operator_compare_rows(cmp.operators()),
               "ModuleCompareStatistic": lambda: R.module_compare_statistic_rows(cmp.modules()),
               "ModuleCompare": lambda: R.module_compare_rows(cmp.modules()),
               "MemoryCompareStatistic": lambda: R.memory_compare_statistic_rows(cmp.memory()),
               "MemoryCompare": lambda: R.memory_compare_rows(cmp.memory())}
    for sheet, rows in sources.items():
        if sheet in names:
            _same_rows(wb[sheet], rows(), (pair, sheet))
    groups = _data(wb["CommunicationByGroup"]) if "CommunicationByGroup" in names else []
    top = [r for r in groups if r[1] != "|"]
    assert [(r[1], r[5], r[6]) for r in top] == [
        (x["name"], x["baseline"]["calls"], x["baseline"]["total_ms"]) for x in cmp.communication().to_list()]


@needs_corpus
def test_red_ratio_cells_match_the_reference(golden, built):
    """Cells the reference fills red (ratio > 1) are red in ours wherever the values agree."""
    cmp, names, wb, g, _, ref, _ = built("i")
    for sheet in ("CommunicationCompare", "ApiCompare", "KernelCompare", "ModuleCompare"):
        ws, rs = wb[sheet], ref[sheet]
        for col, h in enumerate(g["sheets"][sheet]["headers"], 1):
            if h not in S.RATIO_COLUMNS:
                continue
            for r, (a, b) in enumerate(zip(ws.iter_rows(min_row=4, min_col=col, max_col=col),
                                           rs.iter_rows(min_row=4, min_col=col, max_col=col)), 4):
                a, b = a[0], b[0]
                if a.value == b.value and a.value is not None:
                    assert (_fill(a) == S.RED) == (_fill(b) == S.RED), (sheet, r, col)


@needs_corpus
@pytest.mark.skipif(not (shutil.which("soffice") or shutil.which("libreoffice")),
                    reason="LibreOffice not installed (apt-get install libreoffice-calc-nogui to run this check)")
def test_libreoffice_converts_the_workbook(golden, built, tmp_path):
    *_, path = built("i")
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    proc = subprocess.run([exe, "--headless", "--convert-to", "pdf", "--outdir", str(tmp_path), str(path)],
                          capture_output=True, text=True, timeout=240)
    pdf = tmp_path / (path.stem + ".pdf")
    assert proc.returncode == 0 and pdf.is_file() and pdf.stat().st_size > 1000, proc.stderr
