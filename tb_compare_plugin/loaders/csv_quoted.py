"""A compiled reader for the quoted CSVs of an Ascend export (``kernel_details.csv``): the columns
``ascend_csv.read_kernel_details`` makes of the frame pandas reads, without pandas' tokenizer and
without a Python string per cell.

Used only when this process has the Ascend scanner loaded already (a large ``trace_view.json`` is
read here), whose compiled ``_ascend_scan_jit.csv_read`` walks the rows once: the wanted number
cells read into columns, each wanted text cell's span and two 64-bit hashes of its bytes kept.  A
text column then comes back as its distinct values in order of first appearance and a code per
row (what ``pd.factorize`` gives of the strings pandas reads), each distinct cell decoded once;
cells are told apart by both hashes and their length, as the trace scanner tells its texts apart.
It reads a file only when that gives what pandas gives:

* UTF-8 (a BOM skipped), no NUL, every line ended by LF or every one by CRLF, the last one too;
* a header without quotes and without a name twice;
* every row with the header's number of cells; a cell either without quotes, or quoted from its
  first to its last byte (``""`` inside is a quote) with no line break in it;
* the number columns: every cell "" or "N/A" (NaN) or ``[-]digits[.digits]`` with at most 15
  digits, unquoted (read exactly: the integer over 10**decimals, both exact doubles, so the
  correctly rounded value, which pandas' C parser gives too); the text columns as written.

Anything else returns None and the caller reads the file with pandas as before (its warnings and
errors unchanged).  tests/test_csv_quoted.py compares both readings.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from . import csv_simple
from .regular import open_regular

_PAD = 64


def read_columns(path: str, want: dict, floats, times=()) -> tuple[dict, list] | None:
    """({canonical name: column}, canonical names in file order) of the columns of ``path`` whose
    stripped header is a key of ``want`` (-> its canonical name; the first of two spellings of one
    name), or None (read it with pandas).  A column of ``floats`` (spellings) is float64; one of
    ``times`` is int64 ns when its cells are µs text of one width with 3 decimals and a TAB
    (``csv_simple``'s "ts" rule: ``ascend_columns.ts_ns``'s values, "" -> -1); another is (codes,
    distinct values): int64 codes into the values in order of first appearance."""
    kern = csv_simple._kernels()          # (the scanner's helpers, when loaded here)
    if kern is None:
        return None
    try:
        with open_regular(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            whole = bytearray(size + _PAD)          # (the helpers read up to 8 bytes past the end)
            if fh.readinto(memoryview(whole)[:size]) != size or fh.read(1):
                return None
    except OSError:
        return None
    skip = 3 if whole[:3] == b"\xef\xbb\xbf" else 0
    if size - skip < 2 or whole[size - 1] != 10 or whole.find(b"\0", skip, size) >= 0:
        return None
    if not whole.isascii():
        try:
            str(memoryview(whole)[skip:size], "utf-8")
        except UnicodeDecodeError:
            return None
    crlf = whole[size - 2] == 13
    if not crlf and whole.find(b"\r", skip, size) >= 0:
        return None
    head_end = whole.find(b"\r\n" if crlf else b"\n", skip)
    line = bytes(whole[skip:head_end])
    if b'"' in line or b"\n" in line or b"\r" in line:   # (a lone LF or CR: a line break to pandas)
        return None
    header = line.decode("utf-8").split(",")
    if len(set(header)) != len(header):
        return None
    names, canon = [], []                   # the columns read (as written), their canonical names
    for h in header:
        c = want.get(h.strip())
        if c is not None and c not in canon:
            names.append(h)
            canon.append(c)
    nums_of = [h for h in names if h.strip() in floats]
    texts_of = [h for h in names if h.strip() not in floats]
    kind = np.array([0 if h not in names else 2 if h in nums_of else 1 for h in header], np.int8)
    slot = np.array([nums_of.index(h) if h in nums_of else texts_of.index(h) if h in texts_of else -1
                     for h in header], np.int64)
    body = head_end + (2 if crlf else 1)
    cap = (size - body) // len(header) + 1          # (a row is at least its separators; pages never
    nums = np.empty((len(nums_of), cap), np.float64)     # written are never mapped)
    tlo, thi = np.empty((len(texts_of), cap), np.int64), np.empty((len(texts_of), cap), np.int64)
    th1, th2 = np.empty((len(texts_of), cap), np.uint64), np.empty((len(texts_of), cap), np.uint64)
    b = np.frombuffer(whole, np.uint8)
    rows = kern.csv_read(b, body, size, 13 if crlf else 10, bool(crlf), kind, slot, nums, tlo, thi, th1, th2)
    if rows <= 0:
        return None
    nums, tlo, thi, th1, th2 = (a[:, :rows] for a in (nums, tlo, thi, th1, th2))
    out = {}
    for h, c in zip(names, canon):
        if h in nums_of:
            out[c] = nums[nums_of.index(h)].copy()
        else:
            k = texts_of.index(h)
            ts = csv_simple.times(b, tlo[k], thi[k]) if h.strip() in times else None
            out[c] = ts if ts is not None else _distinct(b, tlo[k], thi[k], th1[k], th2[k])
    return out, canon


def _distinct(b, lo, hi, h1, h2) -> tuple:
    """(codes, distinct values) of a text column: cells equal in both hashes and in length are
    one value, decoded from its first cell (``""`` read as a quote: only quoted cells hold quotes)."""
    codes = None
    for key in (h1, h2, hi - lo):
        more, uniq = pd.factorize(key)
        codes = more if codes is None else pd.factorize(codes.astype(np.int64) * len(uniq) + more)[0]
    codes = codes.astype(np.int64)
    first = np.full(int(codes.max()) + 1 if len(codes) else 0, len(codes), np.int64)
    np.minimum.at(first, codes, np.arange(len(codes)))
    mv = memoryview(b)
    values = [bytes(mv[s:e]).replace(b'""', b'"').decode("utf-8") for s, e in zip(lo[first].tolist(), hi[first].tolist())]
    return codes, values
