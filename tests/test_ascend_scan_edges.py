"""The Ascend byte scanner (loaders/_ascend_scan_jit.py) on the edges of its word-at-a-time reads:
escapes, quotes and control characters at every offset around an 8-byte word, a quote right after
an escaped backslash, \\u escapes, numbers and ts texts of every length, strings and keys ending at
the chunk's end.  It accepts exactly what msgspec accepts (a \\u escape in a value it skips may send
the chunk to the general decoder instead), and reads the same texts and numbers."""
from __future__ import annotations

import json

import msgspec
import numpy as np
import pytest

from tb_compare_plugin.loaders import ascend_fast

pytestmark = pytest.mark.skipif(not ascend_fast.available(),
                                reason=f"numba is not installed: {ascend_fast.unavailable_reason()}")


def _scan(raw: bytes):
    """(status, events, scanner) of one chunk."""
    s = ascend_fast.Scanner()
    st, n = s._scan(np.frombuffer(bytearray(raw), np.uint8))
    return st, n, s


def _accepted(raw: bytes) -> bool:
    try:
        msgspec.json.decode(raw)
        return True
    except msgspec.DecodeError:
        return False


# string bodies (raw JSON bytes between the quotes) around the 8-byte words the scanner tests
_PIECES = [b'\\r\\n', b'\\"', b'\\\\', b'\\\\\\"', b'\\/', b'\\b\\f\\t', b'\\u00e9', b'\\u12Ab', b'\\u12G4',
           b'\\x', b'\\', b'\\ ', b'\x01', b'\x1f', b'\t', b'\n', b'\x7f', 'é€'.encode(), b'"']
_BODIES = [b'a' * k + p + b'b' * t for p in _PIECES for k in range(0, 18) for t in (0, 1, 7, 8, 9)]


@pytest.mark.parametrize("where", ["name", "skipped", "args text", "key"])
def test_strings_accepted_exactly_as_msgspec(where):
    j = ascend_fast._jit
    for body in _BODIES:
        if where == "name":
            raw = b'[{"ph": "C", "name": "' + body + b'", "pid": 1}]'
        elif where == "skipped":
            raw = b'[{"ph": "C", "zz": "' + body + b'", "pid": 1}]'
        elif where == "args text":
            raw = b'[{"ph": "C", "args": {"Call stack": "' + body + b'", "Task Id": 2}}]'
        else:
            raw = b'[{"ph": "C", "' + body + b'": 1, "pid": 1}]'
        st, n, s = _scan(raw)
        ok = _accepted(raw)
        if not ok:
            assert st != j.OK, raw
            continue
        if b"\\u" in body and where in ("skipped", "key"):
            assert st in (j.OK, j.ODD), raw                # (left to the general decoder)
            continue
        assert st == j.OK and n == 1, raw
        if where in ("name", "args text"):
            text = msgspec.json.decode(b'"' + body + b'"')
            assert text in s.texts, raw


@pytest.mark.parametrize("cut", range(1, 40))
def test_chunk_ending_anywhere_is_refused(cut):
    """A chunk cut short (inside a string, a key, a number, a ts) is never OK."""
    raw = b'[{"ph": "C", "name": "ab\\r\\ncdefghij\\"k", "pid": 1234567890123, "ts": "1736408883688177.930"}]'
    st, _, _ = _scan(raw[:len(raw) - cut])
    assert st != ascend_fast._jit.OK


def test_keys_near_the_chunk_end():
    """A key read in the last 8 bytes of the chunk (no full word to compare)."""
    j = ascend_fast._jit
    for raw in (b'[{"ph":"s","ts":"1.000","id":0}]', b'[{"id":7,"ph":"f","id":0}]',
                b'[{"ph":"s","ts":"1.000","cat":"x","id":"q"}]', b'[{"ph":"s","ts":"1.000","idx":0}]', b'[{"ph":"C","pid":12}]', b'[{"pid":1,"ph":"C","pid":12}]'):
        st, n, s = _scan(raw)
        ev = json.loads(raw)[0]
        if raw.count(b'"id"') > 1 or raw.count(b'"pid"') > 1:
            assert st == j.ODD                             # a repeated key: the general decoder decides
            continue
        assert st == j.OK and n == 1
        if "pid" in ev:
            assert s.K[0, j.F_PID] == j.K_INT and s.V[0, j.F_PID] == ev["pid"]
        if isinstance(ev.get("id"), int):
            assert s.K[0, j.F_ID] == j.K_INT and s.V[0, j.F_ID] == ev["id"]


_NUMS = ["0", "-0", "7", "-7", "12", "1234567", "12345678", "123456789", "1234567890123456",
         "12345678901234567", "123456789012345678", "1234567890123456789", "9223372036854775807",
         "9223372036854775808", "12345678901234567890", "1.5", "0.125", "145.57", "5.06009375",
         "-2.25", "1234567.12345678901", "123456789012345678.5", "1e3", "1.5E-2", "2e+10",
         "01", "1.", "-", "1e", "1.e5", "--1", "1x", ".5", "00"]


@pytest.mark.parametrize("pad", range(0, 9))
def test_numbers_read_as_python_reads_them(pad):
    j = ascend_fast._jit
    for t in _NUMS:
        raw = b'[{"ph": "C", "name": "' + b'n' * pad + b'", "pid": ' + t.encode() + b', "dur": ' + t.encode() + b'}]'
        st, n, s = _scan(raw)
        if not _accepted(raw):
            assert st != j.OK, t
            continue
        assert st == j.OK, t
        v = json.loads(t)
        if isinstance(v, int) and 0 <= abs(v) < 2 ** 53:
            assert s.K[0, j.F_PID] == j.K_INT and s.V[0, j.F_PID] == v, t
        else:
            assert s.K[0, j.F_PID] == j.K_OTHER, t
        k = s.K[0, j.F_DUR]
        if k in (j.K_INT, j.K_FLOAT):
            assert s.DV[0] == float(v), t
        else:
            assert k in (j.K_HARD, j.K_OTHER), t


_TS = ["1.000", "0.000", "12.345", "1736408883688177.930", "8999999999999999.999", "9000000000000000.000",
       "123456.125", "1234567.125", "12345678.125", "123456789.125", "1234567890123.5", "1.0a0", "1x.000",
       "17364088x3688177.930", "1736408883688177:930", "1736408883688177.93", "1.0000", ".000", "-1.000",
       "1 .000", "123456789012345678.000"]


@pytest.mark.parametrize("pad", range(0, 9))
def test_ts_texts(pad):
    j = ascend_fast._jit
    for t in _TS:
        raw = b'[{"ph": "C", "name": "' + b'n' * pad + b'", "ts": "' + t.encode() + b'"}]'
        st, n, s = _scan(raw)
        assert st == j.OK, t
        whole, dot, frac = t.rpartition(".")
        good = (dot and len(frac) == 3 and 1 <= len(whole) <= 16 and (whole + frac).isdigit()
                and int(whole + frac) < 9_000_000_000_000_000_000)
        if good:
            assert s.K[0, j.F_TS] == j.K_STR and s.V[0, j.F_TS] == int(whole + frac), t
        else:
            assert s.K[0, j.F_TS] == j.K_OTHER, t


def test_key_predictions_any_order():
    """Keys of 1..22 bytes, known, unknown (some a known key's prefix or extension) and listed as
    skipped (ascend_fast.SKIP_*_KEYS), in shuffled orders: the next-key prediction (one or two word
    compares) never takes a wrong key, and a skipped key's value goes nowhere."""
    import random
    j = ascend_fast._jit
    from tb_compare_plugin.loaders.ascend_events import Args
    names = {f: ascend_fast.ARG_FIELDS.index(f) for f in ("task_id", "stream_id", "phys_stream_id",
                                                         "connection_id", "seq", "py_parent", "src_rank")}
    enc = {f.name: f.encode_name for f in msgspec.structs.fields(Args)}
    args_keys = [enc[f] for f in names] + ["Task Idx", "Task I", "Stream Id ", "connection_i", "Python parent idx",
                                           "x", "Physic Stream Ie", *ascend_fast.SKIP_ARG_KEYS[:4], "id",
                                           "duration estimated(us)"]
    top_keys = ["pid", "tid", "pidx", "pi", "zz", "dur", *ascend_fast.SKIP_TOP_KEYS]
    rng = random.Random(7)
    evs = []
    for e in range(400):
        a = {k: rng.randrange(1000) for k in rng.sample(args_keys, rng.randrange(len(args_keys) + 1))}
        ev = {k: rng.randrange(1000) for k in rng.sample(top_keys, rng.randrange(len(top_keys) + 1))}
        ev["ph"] = "C"
        ev["args"] = a
        items = list(ev.items())
        rng.shuffle(items)
        evs.append(dict(items))
    raw = json.dumps(evs).encode()
    st, n, s = _scan(raw)
    assert st == j.OK and n == len(evs)
    for r, ev in enumerate(evs):
        for key, col in (("pid", j.F_PID), ("tid", j.F_TID)):
            if key in ev:
                assert s.K[r, col] == j.K_INT and s.V[r, col] == ev[key]
            else:
                assert s.K[r, col] == j.K_ABSENT
        for f, i in names.items():
            col = j.F_A0 + i
            if enc[f] in ev["args"]:
                assert s.K[r, col] == j.K_INT and s.V[r, col] == ev["args"][enc[f]], (r, f)
            else:
                assert s.K[r, col] == j.K_ABSENT, (r, f)


@pytest.mark.parametrize("colon", [': ', ':', ' : ', ':  ', ':\t', ':\r\n ', ' :', ': \x0b'])
@pytest.mark.parametrize("comma", [', ', ',', ' , ', ',  ', ',\n  ', ', \x0c', ' ,'])
def test_whitespace_around_members(colon, comma):
    """'": ' after a key and ', "' after a value are read with one compare; any other spacing (or
    a byte that is not JSON whitespace) goes the byte-by-byte way."""
    j = ascend_fast._jit
    c, s = colon.encode(), comma.encode()
    raw = (b'[{"ph"' + c + b'"C"' + s + b'"pid"' + c + b'12' + s + b'"args"' + c + b'{"Task Id"' + c + b'5' + s
           + b'"zz"' + c + b'"q"}' + s + b'"tid"' + c + b'7}]')
    st, n, sc = _scan(raw)
    if not _accepted(raw):
        assert st != j.OK
        return
    assert st == j.OK and n == 1
    assert sc.V[0, j.F_PID] == 12 and sc.V[0, j.F_TID] == 7
    assert sc.V[0, j.F_A0 + ascend_fast.ARG_FIELDS.index("task_id")] == 5


@pytest.mark.parametrize("slots, spans", [(4, 1), (16, 2), (1 << 17, 1)])
def test_text_ids_when_the_tables_fill(slots, spans):
    """Texts are looked up an event after they are read (their table slot fetched meanwhile): a
    distinct-text table or new-span list that fills mid-chunk (the chunk scanned again with bigger
    ones), and the last event's texts, still give every row its own text."""
    j = ascend_fast._jit
    evs = [{"ph": "C", "name": f"n{i % 37}" + "\\r\\n" * (i % 3), "cat": f"c{i % 5}", "pid": i} for i in range(300)]
    raw = json.dumps(evs).encode()
    s = ascend_fast.Scanner()
    s._table(slots)
    s.new_cap = 0
    s._new(spans)
    st, n = s._scan(np.frombuffer(bytearray(raw), np.uint8))
    assert st == j.OK and n == len(evs)
    assert [s.texts[v] for v in s.V[:n, j.F_NAME]] == [e["name"] for e in evs]
    assert [s.texts[v] for v in s.V[:n, j.F_CAT]] == [e["cat"] for e in evs]
    assert s.V[:n, j.F_PID].tolist() == list(range(300))
