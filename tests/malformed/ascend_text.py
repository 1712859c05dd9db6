"""Malformed Ascend text exports: trace_view.json (truncations, wrong types), the CSVs beside it
(missing/renamed/reordered columns, bad cells, line endings, raw garbage, ragged rows) and the
small JSON side files (also beside a SQLite export)."""
from __future__ import annotations

import csv
import io
import json
import os
import random
from pathlib import Path

from .common import CASES, add_mut, out, sub_every, wrong

TV = "trace_view.json"


def _tv_bytes(dst: Path) -> bytes:
    return (out(dst) / TV).read_bytes()


for i, frac in enumerate((0.0, 0.00001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999999)):
    add_mut(f"npu-trace-truncate-{i}", "ascend-text", "npu",
            lambda dst, f=frac: (out(dst) / TV).write_bytes((b := _tv_bytes(dst))[:int(len(b) * f)]),
            [TV])
for i, frac in enumerate((0.3, 0.6, 0.9)):
    add_mut(f"corpus-npu-trace-truncate-{i}", "ascend-text", "cnpu",
            lambda dst, f=frac: (out(dst) / TV).write_bytes((b := _tv_bytes(dst))[:int(len(b) * f)]), [TV])


def _tv_mut(fn, replace: bool = False):
    def m(dst: Path) -> None:
        events = json.loads(_tv_bytes(dst))
        res = fn(events)
        (out(dst) / TV).write_text(json.dumps(res if replace else events))
    return m


for fld in ("ph", "name", "cat", "ts", "dur", "pid", "tid", "args", "id"):
    def m(ev, fld=fld):
        sub_every(ev, lambda e: fld in e, lambda e, k: e.__setitem__(fld, wrong(e[fld], k)), 4)
    add_mut(f"npu-trace-wrongtype-{fld}", "ascend-text", "npu", _tv_mut(m), [TV])
for akey in ("Task Type", "Stream Id", "connection_id", "Input Dims", "Sequence number", "Python id"):
    def m(ev, akey=akey):
        sub_every(ev, lambda e: isinstance(e.get("args"), dict) and akey in e["args"],
                  lambda e, k: e["args"].__setitem__(akey, wrong(e["args"][akey], k)), 3)
    add_mut(f"npu-trace-wrongtype-args-{akey.replace(' ', '_')}", "ascend-text", "npu", _tv_mut(m), [TV])
add_mut("npu-trace-object-not-array", "ascend-text", "npu",
        _tv_mut(lambda ev: {"traceEvents": ev}, replace=True), [TV])
add_mut("npu-trace-nanish-ts", "ascend-text", "npu", _tv_mut(lambda ev: sub_every(
    ev, lambda e: "ts" in e, lambda e, k: e.__setitem__("ts", ["NaN", "", "inf", "1e400", "-5"][k % 5]), 7)), [TV])
add_mut("npu-trace-non-utf8", "ascend-text", "npu", lambda dst: (out(dst) / TV).write_bytes(
    (b := _tv_bytes(dst))[: len(b) // 2] + b"\xff\xfe" + b[len(b) // 2:]), [TV])
add_mut("npu-trace-empty", "ascend-text", "npu", lambda dst: (out(dst) / TV).write_bytes(b""), [TV])


# ------------------------------------------------------------------------------ Ascend CSVs

def csv_mut(name: str, fn, crlf: bool | None = None, bom: bool = False):
    """Rewrite ``name`` through ``fn(header, rows) -> (header, rows)`` (csv module, quoting kept)."""
    def m(dst: Path) -> None:
        p = out(dst) / name
        raw = p.read_bytes()
        text = raw.decode("utf-8-sig")
        eol = "\r\n" if (crlf if crlf is not None else "\r\n" in text) else "\n"
        rows = list(csv.reader(io.StringIO(text, newline="")))
        header, body = fn(rows[0], rows[1:])
        buf = io.StringIO()
        csv.writer(buf, lineterminator=eol).writerows([header] + body)
        p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + buf.getvalue().encode("utf-8"))
    return m


def drop_col(col):
    def fn(h, rows):
        i = h.index(col)
        return h[:i] + h[i + 1:], [r[:i] + r[i + 1:] for r in rows]
    return fn


def rename_col(col, new):
    return lambda h, rows: ([new if c == col else c for c in h], rows)


def bad_cells(col, every: int = 3):
    vals = ["abc", "", "N/A", "1e400", "-5", "99999999999999999999999", "nan", "inf", "1.2.3", "\t"]

    def fn(h, rows):
        i = h.index(col)
        for k, r in enumerate(rows[::every]):
            r[i] = vals[k % len(vals)]
        return h, rows
    return fn


def reverse_cols(h, rows):
    return h[::-1], [r[::-1] for r in rows]


KD, OM, MR = "kernel_details.csv", "operator_memory.csv", "memory_record.csv"
for f, col in ((KD, "Name"), (KD, "Start Time(us)"), (OM, "Name"), (OM, "Allocation Time(us)"),
               (MR, "Timestamp(us)")):
    add_mut(f"csv-missing-required-{f[:-4]}-{col}", "ascend-csv", "npu", csv_mut(f, drop_col(col)), [f])
for f, col in ((KD, "Duration(us)"), (KD, "Type"), (KD, "Step Id"), (KD, "aiv_vec_time(us)"),
               (OM, "Size(KB)"), (OM, "Release Time(us)"), (MR, "Total Reserved(MB)")):
    add_mut(f"csv-missing-optional-{f[:-4]}-{col}", "ascend-csv", "npu", csv_mut(f, drop_col(col)), [f])
add_mut("csv-renamed-start-time", "ascend-csv", "npu",
        csv_mut(KD, rename_col("Start Time(us)", "Start Time (us)")), [KD])
add_mut("csv-renamed-alias-step-id", "ascend-csv", "npu", csv_mut(KD, rename_col("Step Id", "Step ID")), [KD])
add_mut("csv-renamed-name-lowercase", "ascend-csv", "npu", csv_mut(OM, rename_col("Name", "name")), [OM])
for f in (KD, OM, MR):
    add_mut(f"csv-reordered-{f[:-4]}", "ascend-csv", "npu", csv_mut(f, reverse_cols), [f])
for f, col in ((KD, "Start Time(us)"), (KD, "Duration(us)"), (KD, "Step Id"), (KD, "Stream ID"),
               (KD, "aicore_time(us)"), (KD, "Name"), (OM, "Size(KB)"), (OM, "Allocation Time(us)"),
               (OM, "Release Time(us)"), (OM, "Device Type"), (MR, "Timestamp(us)"), (MR, "Total Allocated(MB)")):
    add_mut(f"csv-bad-cells-{f[:-4]}-{col}", "ascend-csv", "npu", csv_mut(f, bad_cells(col)), [f])


def _eol_mix(name):
    def m(dst: Path) -> None:
        p = out(dst) / name
        lines = p.read_bytes().replace(b"\r\n", b"\n").split(b"\n")
        p.write_bytes(b"".join(line + (b"\r\n" if i % 2 else b"\n") for i, line in enumerate(lines) if line))
    return m


for f in (KD, MR):
    add_mut(f"csv-crlf-lf-mix-{f[:-4]}", "ascend-csv", "npu", _eol_mix(f), [f])
    add_mut(f"csv-bom-{f[:-4]}", "ascend-csv", "npu", csv_mut(f, lambda h, r: (h, r), bom=True), [f])
    add_mut(f"csv-lf-only-{f[:-4]}", "ascend-csv", "npu", csv_mut(f, lambda h, r: (h, r), crlf=False), [f])
add_mut("csv-cr-only", "ascend-csv", "npu", lambda dst: (out(dst) / KD).write_bytes(
    (out(dst) / KD).read_bytes().replace(b"\r\n", b"\r")), [KD])

CSV_RAW = {"empty": b"", "whitespace": b"  \r\n\r\n", "header-only": None, "non-utf8": b"\x89PNG\xff\xfe\x00junk\n",
           "nul-bytes": b"\x00" * 200, "utf16": "Name,Start Time(us)\n".encode("utf-16"),
           "binary": random.Random(11).randbytes(3000)}
for f in (KD, OM, MR):
    for key, data in CSV_RAW.items():
        def m(dst, f=f, data=data):
            p = out(dst) / f
            p.write_bytes(p.read_bytes().splitlines(keepends=True)[0] if data is None else data)
        add_mut(f"csv-raw-{f[:-4]}-{key}", "ascend-csv", "npu", m, [f],
                removes=frozenset({"kernels", "mem_allocs", "mem_records"}))


def _ragged(extra: bool):
    def fn(h, rows):
        for r in rows[::4]:
            r.extend(["x", "y"]) if extra else r.pop()
        return h, rows
    return fn


add_mut("csv-ragged-extra-cells", "ascend-csv", "npu", csv_mut(KD, _ragged(True)), [KD])
add_mut("csv-ragged-missing-cells", "ascend-csv", "npu", csv_mut(KD, _ragged(False)), [KD])
add_mut("csv-unterminated-quote", "ascend-csv", "npu", lambda dst: (out(dst) / KD).write_bytes(
    (b := (out(dst) / KD).read_bytes())[: len(b) // 2] + b',"unterminated\r\n' + b[len(b) // 2:]), [KD])
add_mut("csv-duplicate-header", "ascend-csv", "npu", csv_mut(KD, lambda h, r: (
    h + ["Start Time(us)"], [x + ["1.0"] for x in r])), [KD])
add_mut("csv-non-utf8-cell", "ascend-csv", "npu", lambda dst: (out(dst) / OM).write_bytes(
    (out(dst) / OM).read_bytes().replace(b"aten::", b"\xffaten::", 1)), [OM])
add_mut("csv-step-trace-junk", "ascend-csv", "npu", lambda dst: (out(dst) / "step_trace_time.csv").write_bytes(
    b"Step,Computing\r\nabc,\xff\xfe\r\n-1,1\r\n99999999999999999999999,2\r\n"), ["step_trace_time.csv"])
add_mut("csv-huge-field", "ascend-csv", "npu", csv_mut(KD, lambda h, r: (
    h, [r[0][:h.index("Name")] + ["n" * 200_000] + r[0][h.index("Name") + 1:]] + r[1:])), [KD])

# small JSON side files (beside a text export and beside a SQLite export)
SIDE_JSON = (("communication.json", b"{not json"), ("communication.json", b"[1, 2, 3]"),
             ("communication.json", b'{"step1": {"collective": {"Total Op Info": []}}}'),
             ("communication.json", b""),
             ("../profiler_info_0.json", b"{broken"), ("../profiler_info_0.json", b'{"rank_id": "abc", "config": []}'),
             ("../profiler_info_0.json", b'{"config": {"experimental_config": "Level1"}}'),
             ("../profiler_info_0.json", b'{"rank_id": [0], "config": {"common_config": 7}}'),
             ("../profiler_metadata.json", b'{"parallel_group_info": [1, 2]}'),
             ("../profiler_metadata.json", b"\xff\xfe"),
             ("../profiler_metadata.json", b'{"parallel_group_info": {"0": {"group_name": ["x"]}}}'))
for src, group in (("npu", "ascend-text"), ("tinydb", "ascend-db")):
    for f, content in SIDE_JSON:
        if src == "tinydb" and f == "communication.json":
            continue                            # the SQLite loader does not read it
        base = os.path.basename(f)
        pre = f"sidefile-{'db-' if src == 'tinydb' else ''}{base}"
        n = sum(c.id.startswith(pre) for c in CASES)
        add_mut(f"{pre}-{n}", group, src, lambda dst, f=f, content=content: (out(dst) / f).write_bytes(content),
                [base])

# corpus text export, CSV variants (level0 CSVs with a level1 trace is under "layout")
add_mut("corpus-csv-bad-cells-kd-start", "ascend-csv", "cnpu", csv_mut(KD, bad_cells("Start Time(us)")), [KD])
add_mut("corpus-csv-missing-required-om", "ascend-csv", "cnpu", csv_mut(OM, drop_col("Allocation Time(us)")), [OM])
add_mut("corpus-csv-truncated-kd", "ascend-csv", "cnpu", lambda dst: (out(dst) / KD).write_bytes(
    (b := (out(dst) / KD).read_bytes())[: len(b) // 2 + 7]), [KD], removes=frozenset({"kernels"}))
