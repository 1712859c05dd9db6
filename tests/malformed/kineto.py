"""Malformed Kineto (PyTorch Profiler) traces: truncations, wrong types, NaN/huge values and ids,
unbalanced flows, odd documents, raw garbage, broken gzip."""
from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

from .common import (C_GPU, C_GPU_SMALL, TRACE, add, add_mut, corpus_gpu_bytes, gpu_bytes, sub_every, write_trace,
                     wrong)

def truncation_offsets(data: bytes, n: int = 30) -> dict[str, int]:
    """n offsets spread over the file plus the awkward spots: after '[', in a string, in a number."""
    offs = {f"at{i:02d}": max(1, (len(data) * i) // n) for i in range(n)}
    lb = data.index(b"[", data.index(b'"traceEvents"'))
    offs["after_bracket"] = lb + 1
    m = re.search(rb'"name": "[A-Za-z]{4}', data[len(data) // 3:])
    offs["in_string"] = len(data) // 3 + m.start() + 12
    m = re.search(rb'"ts": \d{6}', data[len(data) // 2:])
    offs["in_number"] = len(data) // 2 + m.start() + 10
    m = re.search(rb'"ts": \d+\.\d', data[2 * len(data) // 3:])
    offs["in_fraction"] = 2 * len(data) // 3 + m.end() - 1
    offs["before_last_brace"] = len(data.rstrip()) - 1
    offs["in_key"] = data.index(b'"ph"', len(data) // 4) + 2
    return offs


def _truncate(data_fn, off: int, name: str = TRACE):
    def build(dst: Path) -> None:
        (dst / name).write_bytes(data_fn()[:off])
    return build


for key, off in truncation_offsets(gpu_bytes()).items():
    add(f"trace-truncate-{key}", "trace", _truncate(gpu_bytes, off), [TRACE], source="gpu")


def _corpus_truncations():
    # offsets as fractions: the corpus file is only read when the case runs
    for i, frac in enumerate((0.001, 0.05, 0.2, 0.37, 0.5, 0.77, 0.999)):
        add(f"corpus-trace-truncate-{i}", "trace",
            lambda dst, f=frac: (dst / TRACE).write_bytes(corpus_gpu_bytes()[:int(len(corpus_gpu_bytes()) * f)]),
            [TRACE], source="cgpu", corpus=True)
    for i, frac in enumerate((0.01, 0.3, 0.6, 0.95, 0.9999)):
        add(f"corpus-gzip-truncate-{i}", "trace",
            lambda dst, f=frac: (dst / (TRACE + ".gz")).write_bytes(
                (raw := C_GPU.read_bytes())[:int(len(raw) * f)]),
            [TRACE + ".gz"], source="cgpu", corpus=True)
    add("corpus-small-gzip-bitflip", "trace",
        lambda dst: (dst / (TRACE + ".gz")).write_bytes(_flip(C_GPU_SMALL.read_bytes(), 0.5)),
        [TRACE + ".gz"], corpus=True)


def _flip(data: bytes, frac: float) -> bytes:
    b = bytearray(data)
    i = int(len(b) * frac)
    b[i] ^= 0xFF
    return bytes(b)


_corpus_truncations()


def _doc_mut(fn, replace: bool = False):
    """Mutation of the parsed sample trace document, written back as JSON (``replace``: ``fn``
    returns the new document instead of editing it in place)."""
    def mutate(dst: Path) -> None:
        doc = json.loads((dst / TRACE).read_bytes())
        res = fn(doc)
        write_trace(dst, res if replace else doc)
    return mutate


def _is_x(e):
    return e.get("ph") == "X"


# rows recognised by their name: a null name (valid JSON, no warning due) removes them
NAMED_ROWS = frozenset({"steps", "comm_ops", "mem_records", "mem_allocs"})
# wrong JSON types in each top-level field and in each args.* field the loader reads
for fld in ("ph", "name", "cat", "ts", "dur", "pid", "tid", "args", "id"):
    def m(doc, fld=fld):
        sub_every(doc["traceEvents"], lambda e: fld in e, lambda e, k: e.__setitem__(fld, wrong(e[fld], k)))
    add_mut(f"trace-wrongtype-{fld}", "trace", "gpu", _doc_mut(m), [TRACE],
            removes=NAMED_ROWS if fld == "name" else frozenset())

ARGS_GROUPS = {    # args.* keys the loader reads, by what they feed
    "ids": ("External id", "external id", "correlation", "Sequence number"),
    "device": ("stream", "device", "bytes"),
    "shapes": ("Input Dims", "Input type", "Call stack"),
    "python": ("Python id", "Python parent id"),
    "memory": ("Device Id", "Bytes", "Addr", "Total Allocated", "Total Reserved"),
    "nccl": ("Process Group Name", "Process Group Ranks", "In msg nelems", "dtype", "Collective name"),
}
for group, keys in ARGS_GROUPS.items():
    def m(doc, keys=keys):
        for akey in keys:
            def f(e, k, akey=akey):
                e["args"][akey] = wrong(e["args"][akey], k)
            n = sub_every(doc["traceEvents"], lambda e: isinstance(e.get("args"), dict) and akey in e["args"], f, 2)
            if not n:                           # key absent from the sample: add it, wrongly typed
                sub_every(doc["traceEvents"], lambda e: isinstance(e.get("args"), dict),
                          lambda e, k, akey=akey: e["args"].__setitem__(akey, wrong(None, k)), 5)
    add_mut(f"trace-wrongtype-args-{group}", "trace", "gpu", _doc_mut(m), [TRACE])

# every event's field of one wrong type (the whole column unusable)
for fld, val in (("ts", None), ("ts", [1]), ("dur", "x"), ("pid", {"a": 1}), ("cat", 7), ("name", None)):
    def m(doc, fld=fld, val=val):
        for e in doc["traceEvents"]:
            if fld in e:
                e[fld] = val
    add_mut(f"trace-all-{fld}-{type(val).__name__}", "trace", "gpu", _doc_mut(m), [TRACE],
            removes=NAMED_ROWS if fld == "name" else frozenset())


def _strings(doc, keys):
    for e in doc["traceEvents"]:
        for k in keys:
            if isinstance(e.get(k), (int, float)):
                e[k] = repr(e[k])


add_mut("trace-ts-dur-as-strings", "trace", "gpu", _doc_mut(lambda d: _strings(d, ("ts", "dur"))), [TRACE])
add_mut("trace-ts-as-int-strings", "trace", "gpu", _doc_mut(
    lambda d: [e.__setitem__("ts", str(int(e["ts"]))) for e in d["traceEvents"] if "ts" in e]), [TRACE])

# NaN / Infinity: bare tokens are invalid JSON; NaN-ish strings are values a loader must skip
for tok in ("NaN", "Infinity", "-Infinity"):
    for fld in ("ts", "dur"):
        def m(dst, tok=tok, fld=fld):
            data = (dst / TRACE).read_bytes()
            pat = re.compile(rb'"%s": [0-9.]+' % fld.encode())
            hits = list(pat.finditer(data))
            h = hits[len(hits) // 2]
            (dst / TRACE).write_bytes(data[:h.start()] + b'"%s": %s' % (fld.encode(), tok.encode()) + data[h.end():])
        add_mut(f"trace-bare-{tok}-{fld}", "trace", "gpu", m, [TRACE])
for fld in ("ts", "dur"):
    def m(doc, fld=fld):
        vals = ["NaN", "nan", "inf", "-Infinity", "", " ", "1e400", "0x10", "1,5", "١٢٣"]
        sub_every(doc["traceEvents"], lambda e: fld in e, lambda e, k: e.__setitem__(fld, vals[k % len(vals)]), 4)
    add_mut(f"trace-nanish-strings-{fld}", "trace", "gpu", _doc_mut(m), [TRACE])

# negative / huge values
HUGE = {"neg_dur": ("dur", lambda v, k: -abs(v) - 1), "ts_1e300": ("ts", lambda v, k: 1e300),
        "ts_neg_1e300": ("ts", lambda v, k: -1e300), "ts_int_1e25": ("ts", lambda v, k: 10 ** 25),
        "ts_2p63": ("ts", lambda v, k: 2 ** 63), "dur_1e30": ("dur", lambda v, k: 1e30),
        "pid_2p64": ("pid", lambda v, k: 2 ** 64 + 5), "tid_neg": ("tid", lambda v, k: -7 - k),
        "ts_huge_string": ("ts", lambda v, k: "99999999999999999999999.5"),
        "ts_neg": ("ts", lambda v, k: -v)}
for key, (fld, fn) in HUGE.items():
    def m(doc, fld=fld, fn=fn):
        sub_every(doc["traceEvents"], lambda e: isinstance(e.get(fld), (int, float)) and _is_x(e),
                  lambda e, k: e.__setitem__(fld, fn(e[fld], k)), 5)
    add_mut(f"trace-huge-{key}", "trace", "gpu", _doc_mut(m), [TRACE])
for key, val in (("2p53", 2 ** 53 + 1), ("2p64", 2 ** 64 + 5), ("1e30", 10 ** 30), ("neg", -(2 ** 63) - 9)):
    def m(doc, val=val):
        for e in doc["traceEvents"]:
            a = e.get("args")
            if isinstance(a, dict):
                for k in ("External id", "correlation", "Python id", "Addr", "Sequence number"):
                    if k in a:
                        a[k] = val + (a[k] if isinstance(a[k], int) and a[k] > 0 else 0)
            if "id" in e:
                e["id"] = val + e["id"]
    add_mut(f"trace-ids-{key}", "trace", "gpu", _doc_mut(m), [TRACE])


# unbalanced / duplicated events
def _drop(pred):
    def f(doc):
        doc["traceEvents"] = [e for e in doc["traceEvents"] if not pred(e)]
    return f


add_mut("trace-flow-f-without-s", "trace", "gpu",
        _doc_mut(_drop(lambda e: e.get("ph") == "s" and e.get("cat") == "ac2g")), [TRACE])
add_mut("trace-flow-s-without-f", "trace", "gpu",
        _doc_mut(_drop(lambda e: e.get("ph") == "f" and e.get("cat") == "ac2g")), [TRACE])
add_mut("trace-fwdbwd-unbalanced", "trace", "gpu",
        _doc_mut(_drop(lambda e: e.get("cat") == "fwdbwd" and e.get("id", 0) % 2 == 0 and e.get("ph") == "s")),
        [TRACE], removes=frozenset({"fwdbwd"}))
add_mut("trace-flow-duplicate-ids", "trace", "gpu", _doc_mut(
    lambda d: [e.__setitem__("id", 1) for e in d["traceEvents"] if e.get("ph") in ("s", "f")]), [TRACE],
    removes=frozenset({"fwdbwd"}))
add_mut("trace-correlation-duplicates", "trace", "gpu", _doc_mut(
    lambda d: [e["args"].__setitem__("correlation", 1) for e in d["traceEvents"]
               if isinstance(e.get("args"), dict) and "correlation" in e["args"]]), [TRACE])
add_mut("trace-duplicated-kernels", "trace", "gpu", _doc_mut(
    lambda d: d.__setitem__("traceEvents", d["traceEvents"] + [e for e in d["traceEvents"]
                                                                if e.get("cat") == "kernel"])), [TRACE])
add_mut("trace-all-events-twice", "trace", "gpu", _doc_mut(
    lambda d: d.__setitem__("traceEvents", d["traceEvents"] * 2)), [TRACE])
add_mut("trace-kernel-before-launch", "trace", "gpu", _doc_mut(
    lambda d: sub_every(d["traceEvents"], lambda e: e.get("cat") == "kernel",
                        lambda e, k: e.__setitem__("ts", e["ts"] - 1e6), 2)), [TRACE])
add_mut("trace-end-before-start-steps", "trace", "gpu", _doc_mut(
    lambda d: [e.__setitem__("dur", -e["dur"]) for e in d["traceEvents"]
               if str(e.get("name", "")).startswith("ProfilerStep")]), [TRACE])
add_mut("trace-steps-same-number", "trace", "gpu", _doc_mut(
    lambda d: [e.__setitem__("name", "ProfilerStep#1") for e in d["traceEvents"]
               if str(e.get("name", "")).startswith("ProfilerStep")]), [TRACE])
add_mut("trace-memory-free-without-alloc", "trace", "gpu", _doc_mut(_drop(
    lambda e: e.get("name") == "[memory]" and isinstance(e.get("args"), dict) and e["args"].get("Bytes", 0) > 0)),
    [TRACE], removes=frozenset({"mem_records", "mem_allocs"}))
# an allocation whose free reports another size is dropped, as the reference does (spec, memory
# pairing); real traces have hundreds (kineto_resnet50), so no warning: see docs/robustness.md
add_mut("trace-memory-size-mismatch", "trace", "gpu", _doc_mut(lambda d: sub_every(
    d["traceEvents"], lambda e: e.get("name") == "[memory]" and isinstance(e.get("args"), dict),
    lambda e, k: e["args"].__setitem__("Bytes", e["args"].get("Bytes", 0) + 1), 2)), [TRACE],
    removes=frozenset({"mem_allocs"}))
add_mut("trace-duplicate-keys", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (dst / TRACE).read_bytes().replace(b'"ph": "X", ', b'"ph": "X", "ph": "i", ', 20)), [TRACE])
add_mut("trace-events-not-objects", "trace", "gpu", _doc_mut(lambda d: d.__setitem__(
    "traceEvents", [x for i, e in enumerate(d["traceEvents"])
                    for x in ((e, [1, 2], 3, "s", None, True) if i % 50 == 0 else (e,))])), [TRACE])
add_mut("trace-deep-nesting", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (dst / TRACE).read_bytes().replace(b'"args": {', b'"args": {"deep": ' + b"[" * 5000 + b"]" * 5000 + b", ", 1)),
    [TRACE])
add_mut("trace-long-name", "trace", "gpu", _doc_mut(lambda d: d["traceEvents"][5].__setitem__("name", "x" * 3_000_000)),
        [TRACE])

# the document itself
DOCS = {
    "no-traceEvents": {"schemaVersion": 1, "deviceProperties": []},
    "traceEvents-null": {"traceEvents": None},
    "traceEvents-object": {"traceEvents": {"0": {"ph": "X"}}},
    "traceEvents-string": {"traceEvents": "[]"},
    "traceEvents-empty": {"traceEvents": []},
    "top-string": "traceEvents",
    "top-number": 42,
    "top-null": None,
    "nested-only": {"data": {"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "cat": "cpu_op"}]}},
}
for key, doc in DOCS.items():
    add(f"trace-doc-{key}", "trace", lambda dst, doc=doc: write_trace(dst, doc), [TRACE])
add_mut("trace-list-form", "trace", "gpu", _doc_mut(lambda d: d["traceEvents"], replace=True), [TRACE])
add_mut("trace-list-form-of-nulls", "trace", "gpu", _doc_mut(lambda d: [None] * 50, replace=True), [TRACE])
add_mut("trace-two-traceEvents-keys", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (dst / TRACE).read_bytes().replace(b'"traceEvents": [', b'"traceEvents": [], "traceEvents": [', 1)), [TRACE])
add_mut("trace-trailing-garbage", "trace", "gpu",
        lambda dst: (dst / TRACE).write_bytes((dst / TRACE).read_bytes() + b"\n}{garbage"), [TRACE])
add_mut("trace-missing-comma", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (b := (dst / TRACE).read_bytes())[:len(b) // 2] + re.sub(rb"\}\s*,\s*\{", b"} {", b[len(b) // 2:], count=1)),
    [TRACE])

RAW = {"empty": b"", "whitespace": b" \n\t\r\n  ", "bom-only": b"\xef\xbb\xbf", "nul-bytes": b"\x00" * 64,
       "binary": random.Random(7).randbytes(4096), "utf16": '{"traceEvents": []}'.encode("utf-16"),
       "just-brace": b"{", "just-bracket": b"[", "closed-array": b"[]", "xml": b"<?xml version='1.0'?><trace/>"}
for key, data in RAW.items():
    add(f"trace-raw-{key}", "trace", lambda dst, data=data: (dst / TRACE).write_bytes(data), [TRACE])
add_mut("trace-bom-then-json", "trace", "gpu",
        lambda dst: (dst / TRACE).write_bytes(b"\xef\xbb\xbf" + (dst / TRACE).read_bytes()), [TRACE])


def _nonutf8(seed: int):
    def m(dst: Path) -> None:
        data = bytearray((dst / TRACE).read_bytes())
        rnd = random.Random(seed)
        for _ in range(3):
            data[rnd.randrange(len(data) // 10, len(data))] = rnd.choice([0xFF, 0xC3, 0x80, 0xFE])
        (dst / TRACE).write_bytes(bytes(data))
    return m


for seed in range(5):
    add_mut(f"trace-non-utf8-{seed}", "trace", "gpu", _nonutf8(seed), [TRACE])
add_mut("trace-latin1-name", "trace", "gpu", lambda dst: (dst / TRACE).write_bytes(
    (dst / TRACE).read_bytes().replace(b'"name": "aten::', b'"name": "\xe9aten::', 3)), [TRACE])

# gzip: not gzip, truncated, garbage, empty, concatenated
GZ = TRACE + ".gz"


def _gz(fn):
    def build(dst: Path) -> None:
        (dst / GZ).write_bytes(fn(gpu_bytes()))
    return build


add("gzip-plain-json-named-gz", "trace", _gz(lambda d: d), [GZ], source="gpu")
add("gzip-random-bytes", "trace", _gz(lambda d: random.Random(3).randbytes(5000)), [GZ])
add("gzip-magic-then-garbage", "trace", _gz(lambda d: b"\x1f\x8b" + b"garbage" * 100), [GZ])
add("gzip-empty-member", "trace", _gz(lambda d: gzip.compress(b"")), [GZ])
add("gzip-whitespace", "trace", _gz(lambda d: gzip.compress(b"   \n")), [GZ])
add("gzip-trailing-garbage", "trace", _gz(lambda d: gzip.compress(d) + b"not gzip"), [GZ], source="gpu")
add("gzip-two-members", "trace", _gz(lambda d: gzip.compress(d[:1000]) + gzip.compress(d[1000:])), [GZ],
    source="gpu")
add("gzip-of-truncated-json", "trace", _gz(lambda d: gzip.compress(d[: len(d) // 2])), [GZ])
add("gzip-double-compressed", "trace", _gz(lambda d: gzip.compress(gzip.compress(d))), [GZ])
for i, frac in enumerate((0.0005, 0.1, 0.5, 0.9, 0.999)):
    add(f"gzip-truncated-{i}", "trace", _gz(lambda d, f=frac: (z := gzip.compress(d))[:max(1, int(len(z) * f))]),
        [GZ])
add("gzip-bitflip-middle", "trace", _gz(lambda d: _flip(gzip.compress(d), 0.5)), [GZ])
add("gzip-bad-crc", "trace", _gz(lambda d: (z := gzip.compress(d))[:-8] + b"\0\0\0\0" + z[-4:]), [GZ])
