"""loaders/csv_quoted.py: the compiled reader of quoted Ascend CSVs (kernel_details.csv) gives
exactly the frame -- and so the columns, warnings and errors -- the pandas reading gives, and
leaves every file it does not read exactly to pandas."""
from __future__ import annotations

import numpy as np
import pytest

from tb_compare_plugin.loaders import ascend_csv, ascend_fast, csv_quoted
from tb_compare_plugin.loaders.ascend_columns import Texts
from tb_compare_plugin.loaders.errors import LoadError

from conftest import CORPUS, SAMPLES

pytestmark = pytest.mark.skipif(not ascend_fast.available(),
                                reason=f"numba is not installed: {ascend_fast.unavailable_reason()}")

KD_HEAD = ("Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
           "Wait Time(us),Input Shapes,Input Data Types,Input Formats,aicore_time(us),aic_mac_ratio")
KD_ROWS = ['50,4294967295,11051,2,trans_TransData_0,TransData,dynamic,AI_VECTOR_CORE,1736408883704643.212\t,'
           '53.741,0,"""32,3,224,224""",FLOAT,NCHW,0.0,N/A',
           '50,4294967295,11053,2,Conv2D1,Conv2D,dynamic,AI_CORE,1736408883704903.918\t,313.886,96.222,'
           '"""32,1,224,224,8;121,4,16,8;64""",FLOAT;FLOAT;FLOAT,NC1HWC0;FRACTAL_Z;NCHW,-0.5,0.186',
           'N/A,4294967295,11054,2,"quoted, name",MatMul,N/A,AI_CORE,,,N/A,"",INT64,ND,,',
           '51,4294967295,11055,3,caf\u00e9,,dynamic,AI_CPU,1736408883705000.000\t,1.0,0,N/A,N/A,N/A,12.25,1']


def _same(a, b) -> None:
    assert (a is None) == (b is None)
    if a is None:
        return
    (ca, ia), (cb, ib) = a, b
    assert ia == ib and set(ca) == set(cb)
    for k in ca:
        x, y = ca[k], cb[k]
        if isinstance(x, Texts):
            assert isinstance(y, Texts) and x.values == y.values and np.array_equal(x.codes, y.codes), k
            continue
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, k
        if x.dtype == object:
            assert list(x) == list(y), k
        else:
            assert np.array_equal(x, y, equal_nan=True), k
            if x.dtype.kind == "f":
                assert (np.signbit(x) == np.signbit(y)).all(), k


def _check(path, monkeypatch, taken: bool | None) -> None:
    """read_kernel_details with and without the compiled reader: the same answer."""
    out, took, real = [], [], csv_quoted.read_columns
    for off in (False, True):
        with monkeypatch.context() as m:
            m.setattr(csv_quoted, "read_columns", (lambda *a: None) if off else
                      (lambda *a: took.append(real(*a)) or took[-1]))
            w: list = []
            try:
                got = ascend_csv.read_kernel_details(str(path), w)
            except LoadError as e:
                got = ("error", str(e))
            out += [got, w]
    fast, wf, slow, ws = out
    assert taken is None or (took[0] is not None) == taken
    assert wf == ws
    if isinstance(fast, tuple) and fast[0] == "error" or isinstance(slow, tuple) and slow[0] == "error":
        assert fast == slow
    else:
        _same(fast, slow)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_quoted_files_read_as_pandas_reads_them(tmp_path, monkeypatch, eol, bom):
    p = tmp_path / "kernel_details.csv"
    p.write_bytes((bom + eol.join([KD_HEAD, *KD_ROWS]) + eol).encode())
    _check(p, monkeypatch, True)


@pytest.mark.parametrize("change", [
    lambda t: t.replace('"quoted, name"', 'quo"ted'),                    # a quote inside a plain cell
    lambda t: t.replace('"quoted, name"', '"quoted" name'),               # text after a closing quote
    lambda t: t.replace('"quoted, name"', '"quoted\nname"'),              # a line break in a quoted cell
    lambda t: t.replace('"quoted, name"', '"never closed'),               # a quote never closed
    lambda t: t.replace("\n", "\r\n", 1),                                 # mixed line ends
    lambda t: t + "1,2,3\n",                                              # a ragged row
    lambda t: t + "\n",                                                   # a blank line
    lambda t: t[:-1],                                                     # no final line break
    lambda t: t.replace("53.741", "5.3741e1"),                            # a number it does not read
    lambda t: t.replace("53.741", '"53.741"'),                            # a quoted number
    lambda t: t.replace("53.741", "1234567890.1234567"),                  # more than 15 digits
    lambda t: t.replace("53.741", "junk"),                                # not a number: strings
    lambda t: t.replace("53.741", " 53.741"),                             # a space
    lambda t: t.replace(",Type,", ",Name,"),                              # a header twice
    lambda t: t.replace("Step Id", '"Step Id"'),                          # a quoted header
    lambda t: t.replace("Step Id", "Step ID"),                            # an alias: read
    lambda t: t.replace("Duration(us)", " Duration(us) "),                # spaces around a name: read
    lambda t: t.replace(",Name,", ",Other,"),                             # a required column missing
    lambda t: t.split("\n")[0] + "\n",                                    # no rows
    lambda t: t.replace("\u00e9", "\x00"),                                # a NUL
    lambda t: t.replace("\n", "\r\n").replace("OP State", "OP\nState", 1),  # an LF in a CRLF header
    lambda t: t.replace("\n", "\r\n").replace("OP State", "OP\rState", 1),  # a CR in it
    lambda t: t.replace("\n", "\r\n").replace("dynamic", "dyn\namic", 1),   # an LF in a CRLF cell
    lambda t: t.replace("caf\u00e9", '"caf\u00e9"""'),                     # a quote at a quoted cell's end
    lambda t: t.replace("caf\u00e9", '""'),                                # an empty quoted cell
])
def test_other_files_are_left_to_pandas(tmp_path, monkeypatch, change):
    p = tmp_path / "kernel_details.csv"
    text = change("\n".join([KD_HEAD, *KD_ROWS]) + "\n")
    p.write_bytes(text.encode())
    _check(p, monkeypatch, None)


def test_not_utf8_is_the_same_error(tmp_path, monkeypatch):
    p = tmp_path / "kernel_details.csv"
    p.write_bytes(("\n".join([KD_HEAD, *KD_ROWS]) + "\n").encode().replace(b"Conv2D1", b"Conv2D\xff"))
    _check(p, monkeypatch, False)


def test_every_kernel_details_in_the_corpus_and_samples(monkeypatch):
    paths = sorted(p for root in (CORPUS, SAMPLES) for p in root.rglob("kernel_details*.csv"))
    assert paths
    for p in paths:
        _check(p, monkeypatch, True)          # (all of the form it reads)


def test_not_used_without_the_scanner_loaded(tmp_path, monkeypatch):
    p = tmp_path / "kernel_details.csv"
    p.write_bytes(("\n".join([KD_HEAD, *KD_ROWS]) + "\n").encode())
    monkeypatch.setattr(ascend_fast, "_jit", None)
    assert csv_quoted.read_columns(str(p), {"Name": "Name"}, set()) is None
