"""loaders/csv_simple.py: the numpy reader of the plain Ascend memory CSVs gives exactly the
columns, warnings and errors the pandas reading gives, and leaves every file it does not read
exactly to pandas -- with its numpy code and with the Ascend scanner's compiled CSV helpers
(``csv_seps``, ``cell_words``, ``cell_floats``, used when the scanner is loaded), each test run
both ways; ascend_csv.match_rows (numpy) pairs rows by its join rule."""
from __future__ import annotations

import numpy as np
import pytest

from tb_compare_plugin.loaders import ascend_csv, ascend_fast, csv_simple
from tb_compare_plugin.loaders.ascend_columns import as_objects
from tb_compare_plugin.loaders.errors import LoadError

from conftest import CORPUS, SAMPLES

MR_HEAD = "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type"
MR_ROWS = ["APP,1736408883573957.920\t,,2109.6015625,,,NPU:0",
           "PTA,1736408883593933.920\t,954.3701171875,1452.0,954.3701171875,897357296,NPU:0",
           "PTA+GE,1736408883593934.001\t,N/A,-3.5,0.1,897357296,NPU:0",
           "GE,1736408883593935.120\t,00.25,7,123456789012345,1,NPU:1"]
OM_HEAD = ("Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),"
           "Stream Ptr,Device Type")
OM_ROWS = ["aten::empty_strided,18816.5,1736408883694624.810\t,,,,897357296,NPU:0",
           "aten::add,0.5,1736408883694625.810\t,1736408883694626.000\t,,,897357296,NPU:0",
           "cann::x,N/A,1736408883694627.810\t,1736408883694628.000\t,,,1,NPU:0"]


@pytest.fixture(params=["numpy", "compiled"], autouse=True)
def helpers(request, monkeypatch):
    """Each test with csv_simple's numpy code and with the compiled helpers (the scanner loaded)."""
    if request.param == "compiled":
        if not ascend_fast.available():
            pytest.skip(f"numba is not installed: {ascend_fast.unavailable_reason()}")
        assert csv_simple._kernels() is not None
    else:
        monkeypatch.setattr(csv_simple, "_kernels", lambda: None)
    return request.param


def _same(a, b) -> None:
    assert (a is None) == (b is None)
    if a is None:
        return
    assert set(a) == set(b)
    for k in a:
        x, y = np.asarray(as_objects(a[k])), np.asarray(as_objects(b[k]))
        assert x.dtype == y.dtype and x.shape == y.shape, k
        if x.dtype == object:
            assert list(x) == list(y), k
        else:
            assert np.array_equal(x, y, equal_nan=True), k
            if x.dtype.kind == "f":
                assert (np.signbit(x) == np.signbit(y)).all(), k


def _both(path, monkeypatch):
    """(fast result or error, warnings, pandas result or error, warnings, whether the fast reader took it)."""
    fn = ascend_csv.read_memory_record if "record" in path.name else ascend_csv.read_operator_memory
    out, took, real = [], [], csv_simple.read
    for off in (False, True):
        with monkeypatch.context() as m:
            m.setattr(csv_simple, "read", (lambda *a, **k: None) if off else
                      (lambda *a, **k: took.append(real(*a, **k)) or took[-1]))
            w: list = []
            try:
                got = fn(str(path), w)
            except LoadError as e:
                got = ("error", str(e))
            out += [got, w]
    return (*out, bool(took) and took[0] is not None)


def _check(path, monkeypatch, taken: bool | None) -> None:
    fast, wf, slow, ws, took = _both(path, monkeypatch)
    assert taken is None or took == taken
    assert wf == ws
    if isinstance(fast, tuple) or isinstance(slow, tuple):
        assert fast == slow
    else:
        _same(fast, slow)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_plain_files_read_as_pandas_reads_them(tmp_path, monkeypatch, eol, bom):
    for name, head, rows in (("memory_record.csv", MR_HEAD, MR_ROWS), ("operator_memory.csv", OM_HEAD, OM_ROWS)):
        p = tmp_path / name
        p.write_bytes((bom + eol.join([head, *rows]) + eol).encode())
        _check(p, monkeypatch, True)


@pytest.mark.parametrize("change", [
    lambda t: t.replace("NPU:0", '"NPU:0"', 1),                 # a quote
    lambda t: t.replace("\n", "\r\n", 1),                       # mixed line ends
    lambda t: t + "APP,1736408883593936.120\t,1,2\n",          # a ragged row
    lambda t: t + "\n",                                         # a blank line
    lambda t: t[:-1],                                           # no final line break
    lambda t: t.replace("2109.6015625", "2.1e3"),               # a number it does not read
    lambda t: t.replace("2109.6015625", "1234567890.1234567"),  # more than 15 digits
    lambda t: t.replace("2109.6015625", "junk"),                # not a number
    lambda t: t.replace("1736408883573957.920\t", "1736408883573957.92\t"),   # another width
    lambda t: t.replace("1736408883573957.920\t", "x736408883573957.920\t"),  # not a time
    lambda t: t.replace(",Device Type", ",Component"),          # a header twice
    lambda t: t.replace(",Total Active(MB)", ",Other"),         # a column missing
    lambda t: t.split("\n")[0] + "\n",                          # no rows
    lambda t: t.replace("APP", "AP\u00e9", 1),                  # UTF-8 text: read
    lambda t: t.replace("2109.6015625", "2109."),               # no decimals after the dot
    lambda t: t.replace("2109.6015625", ".5"),                  # no digit before it
    lambda t: t.replace("2109.6015625", "-"),                   # a sign alone
    lambda t: t.replace("2109.6015625", "1.2.3"),               # two dots
    lambda t: t.replace("2109.6015625", "+2"),                  # a plus sign
    lambda t: t.replace("2109.6015625", "123456789012.345"),    # 15 digits: read
    lambda t: t.replace("2109.6015625", "-0"),                  # minus zero: read
    lambda t: t.replace(",NPU:0", ",NPU:0,x", 1),               # a row with a cell more
    lambda t: t.replace(",NPU:0", "\rNPU:0", 1),               # a CR for a comma
    lambda t: t.replace("\n", "\r\n").replace("Stream Ptr", "Stream\nPtr", 1),   # an LF in the header
    lambda t: t.replace("\n", "\r\n").replace("PTA,", "P\nTA,", 1),              # an LF in a cell
])
def test_other_files_are_left_to_pandas(tmp_path, monkeypatch, change):
    p = tmp_path / "memory_record.csv"
    text = change("\n".join([MR_HEAD, *MR_ROWS]) + "\n")
    p.write_bytes(text.encode())
    _check(p, monkeypatch, "\u00e9" in text or "123456789012.345" in text or ",-0," in text)


def test_not_utf8_is_the_same_error(tmp_path, monkeypatch):
    p = tmp_path / "operator_memory.csv"
    plain = ("\n".join([OM_HEAD, *OM_ROWS]) + "\n").encode()
    for old, new in ((b"aten::add", b"aten::\xff"),                  # a cell it reads
                     (b"626.000\t,,", b"626.000\t,\xff,")):           # one it does not
        assert old in plain
        p.write_bytes(plain.replace(old, new, 1))
        _check(p, monkeypatch, False)


def test_every_export_in_the_corpus_and_samples(monkeypatch):
    paths = sorted(p for root in (CORPUS, SAMPLES) for name in ("memory_record.csv", "operator_memory.csv")
                   for p in root.rglob(name))
    assert paths
    for p in paths:
        _check(p, monkeypatch, True)          # (all plain: the fast reader takes each)


def _match_oracle(tnames, tstart, cnames, cstart) -> list:
    """The join rule of ascend_csv.match_rows, row by row: a CSV row with a name pairs with the
    next unpaired trace row of the same (start, name); then a CSV row without one with the next
    trace row of the same start still unpaired."""
    out = [-1] * len(tstart)
    for want_name in (True, False):
        for c, (cn, cs) in enumerate(zip(cnames, cstart)):
            if cs < 0 or (cn is not None) != want_name:
                continue
            for t, (tn, ts) in enumerate(zip(tnames, tstart)):
                if out[t] < 0 and ts == cs and (not want_name or tn == cn):
                    out[t] = c
                    break
    return out


def test_match_rows_pairs_by_the_join_rule():
    from tb_compare_plugin.loaders.ascend_columns import Texts
    rng = np.random.default_rng(7)
    names = ["a", "b", "c", None]
    for _ in range(200):
        nt, nc = int(rng.integers(0, 30)), int(rng.integers(0, 30))
        tn = [names[x] for x in rng.integers(0, 4, nt)]
        cn = [names[x] for x in rng.integers(0, 4, nc)]
        ts, cs = rng.integers(0, 4, nt), rng.integers(-1, 4, nc)
        want = _match_oracle(tn, ts.tolist(), cn, cs.tolist())
        carr = np.array(cn + [None], dtype=object)[:-1]
        assert ascend_csv.match_rows(tn, ts, carr, cs).tolist() == want
        codes = np.array([-1 if n is None else "abc".index(n) for n in tn], np.int32)
        assert ascend_csv.match_rows(Texts(codes, ["a", "b", "c"]), ts, carr, cs).tolist() == want
