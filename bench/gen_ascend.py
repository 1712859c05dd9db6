"""Large Ascend PyTorch text exports (``*_ascend_pt``) made by replicating a real one.

``trace_view.json``: every non-metadata event is written once per copy with its
string ``ts`` shifted in exact integer ns (never through float), flow ids refreshed
(ts-derived ``async_npu`` ids move with the time shift, small ids — queue/fwdbwd flows,
``connection_id``, ``correlation_id``, Python ids, sequence numbers — move up by
``copy * (max id + 1)``) and ``ProfilerStep#N`` renumbered; ``ph:"M"`` events are
written once.  Events are re-serialised with ``json.dumps``'s default separators,
which is how the profiler writes them (checked: identical bytes for the corpus).

CSVs keep their header, line ending (CRLF or LF) and TAB-suffixed timestamps; rows
are repeated with the same time shift and step renumbering.  ``op_statistic.csv`` and
``api_statistic.csv`` are aggregates: their rows are kept and the counts/totals
scaled.  ``communication*.json`` get one ``stepN`` entry per copy.  ``profiler_info``
and ``profiler_metadata`` are rewritten with the end time moved to the last copy.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from pathlib import Path

from .templates import (K_BIGID, K_ID, K_NSID, K_STEP, K_TS_NS3, K_TS_US, Shifts, Template,
                        ceil_us_ns, max_or, us_str_slot)

GAP_NS = 1_000_000
_SENT = 7 * 10 ** 30            # sentinel ints (31 digits) mark slots in the dumped text
_SLOT = re.compile(r'(?P<sent>\b7\d{30}\b)|(?P<step>(?<=ProfilerStep#)\d+(?="))'
                   r'|(?P<h2d>(?<="HostToDevice)\d+(?="))')
_ARG_IDS = ("connection_id", "correlation_id", "Python id", "Python parent id", "Sequence number")
TIME_COLS = {"Start Time(us)", "End Time(us)", "Allocation Time(us)", "Release Time(us)",
             "Active Release Time(us)", "Timestamp(us)"}
STEP_COLS = {"Step Id", "Step ID", "Step"}
STAT_FILES = {"op_statistic.csv": ("Count", "Total Time(us)"), "api_statistic.csv": ("Count", "Time(us)")}


class _TraceView:
    """trace_view.json as once-only metadata plus a slot template of the repeated events."""

    def __init__(self, path: Path) -> None:
        events = json.loads(path.read_text(encoding="utf-8"))
        slots: list = []      # (kind, value, quoted)

        def mark(kind, value, quoted):
            slots.append((kind, value, quoted))
            return _SENT + len(slots) - 1

        once = [ev.get("ph") == "M" for ev in events]
        first = once.index(False)
        texts, t_lo, t_hi = [], None, None
        for ev in (e for e, o in zip(events, once) if not o):
            ev = dict(ev)
            if isinstance(ev.get("ts"), str):
                kind, v = us_str_slot(ev["ts"])
                ns = v * 1000 if kind == K_TS_US else v
                end = ns + int(round(float(ev.get("dur", 0) or 0) * 1000))
                t_lo = ns if t_lo is None else min(t_lo, ns)
                t_hi = end if t_hi is None else max(t_hi, end)
                ev["ts"] = mark(kind, v, True)
            fid = ev.get("id")
            if isinstance(fid, int) and not isinstance(fid, bool):
                ev["id"] = mark(K_NSID if fid >= 10 ** 15 else K_ID, fid, False)
            elif isinstance(fid, str) and fid.isdigit():
                ev["id"] = mark(K_BIGID, int(fid), True)
            elif isinstance(fid, str) and fid.count(".") == 1 and fid.replace(".", "").isdigit():
                ev["id"] = mark(*us_str_slot(fid), True)      # MindSpore: the flow id is its end's µs ts
            args = ev.get("args")
            if isinstance(args, dict) and any(k in args for k in _ARG_IDS):
                args = dict(args)
                for k in _ARG_IDS:
                    if isinstance(args.get(k), int) and not isinstance(args[k], bool):
                        args[k] = mark(K_ID, args[k], False)
                ev["args"] = args
            texts.append(json.dumps(ev))
        self.t_lo, self.t_hi = t_lo, t_hi
        body = ", ".join(texts)
        literals, kinds, values = [], [], []
        pos, close = 0, ""
        for m in _SLOT.finditer(body):
            if m.lastgroup == "sent":
                kind, value, quoted = slots[int(m.group()) - _SENT]
            else:
                kind, value, quoted = (K_STEP if m.lastgroup == "step" else K_BIGID), int(m.group()), False
            q = '"' if quoted else ""
            literals.append(close + body[pos:m.start()] + q)   # a string slot: quotes around it
            kinds.append(kind)
            values.append(value)
            pos, close = m.end(), q
        literals.append(close + body[pos:])
        self.template = Template(literals, kinds, values)
        self.n_events, self.n_repeated = len(events), len(texts)
        self.pre = [json.dumps(e) for i, (e, o) in enumerate(zip(events, once)) if o and i < first]
        self.post = [json.dumps(e) for i, (e, o) in enumerate(zip(events, once)) if o and i > first]
        self.copy_bytes = len(self.template.render(0, Shifts(0, 0, 0)))

    def write(self, path: Path, copies: int, shifts: Shifts) -> None:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write("[")
            sep = ""
            for text in self.pre:
                f.write(sep + text)
                sep = ", "
            for c in range(copies):
                f.write(sep + self.template.render(c, shifts))
                sep = ", "
            for text in self.post:
                f.write(sep + text)
            f.write("]")


def _cell_slot(cell: str, col_kind: str, slots: list):
    """A CSV time/step cell -> its sentinel text (trailing TAB kept), or None to leave it."""
    stripped = cell.rstrip()
    if col_kind == "step":
        if not stripped.isdigit():
            return None
        slots.append((K_STEP, int(stripped)))
    else:
        try:
            slots.append(us_str_slot(stripped))
        except ValueError:
            return None                      # '', 'N/A', ...
    return str(_SENT + len(slots) - 1) + cell[len(stripped):]


class _Csv:
    """One CSV: header, line ending, and either a per-copy template or constant text."""

    def __init__(self, path: Path) -> None:
        with open(path, encoding="utf-8", newline="") as f:
            raw = f.read()
        first = raw.split("\n", 1)[0]
        self.eol = "\r\n" if first.endswith("\r") else "\n"
        rows = list(csv.reader(io.StringIO(raw, newline="")))
        self.header, rows = rows[0], rows[1:]
        self.head_text = self._fmt([self.header])
        self.exact = self.head_text + self._fmt(rows) == raw
        cols = {i: "time" for i, h in enumerate(self.header) if h.strip() in TIME_COLS}
        cols.update({i: "step" for i, h in enumerate(self.header) if h.strip() in STEP_COLS})
        self.stat = STAT_FILES.get(path.name)
        self.rows, self.template, self.times_ns, self.steps = rows, None, [], []
        if cols and not self.stat:
            slots: list = []
            marked = []
            for row in rows:
                row = list(row)
                for i, kind in cols.items():
                    if i < len(row):
                        sent = _cell_slot(row[i], kind, slots)
                        if sent is not None:
                            row[i] = sent
                marked.append(row)
            self.times_ns = [v * 1000 if k == K_TS_US else v for k, v in slots if k in (K_TS_US, K_TS_NS3)]
            self.steps = [v for k, v in slots if k == K_STEP]
            self.template = Template.build(self._fmt(marked), re.compile(r"\b7\d{30}\b"),
                                           lambda m: slots[int(m.group()) - _SENT])
            self.copy_bytes = len(self.template.render(0, Shifts(0, 0, 0)))
        else:
            self.body = self._fmt(rows)
            self.copy_bytes = 0 if self.stat else len(self.body)

    def _fmt(self, rows) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator=self.eol).writerows(rows)
        return buf.getvalue()

    def _scaled(self, copies: int) -> str:
        idx = [self.header.index(c) for c in self.stat if c in self.header]
        out = []
        for row in self.rows:
            row = list(row)
            for i in idx:
                try:
                    v = float(row[i])
                except (ValueError, IndexError):
                    continue
                row[i] = str(int(v) * copies) if row[i].strip().isdigit() else repr(round(v * copies, 3))
            out.append(row)
        return self._fmt(out)

    def write(self, path: Path, copies: int, shifts: Shifts) -> None:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(self.head_text)
            if self.stat:
                f.write(self._scaled(copies))
            elif self.template is not None:
                for c in range(copies):
                    f.write(self.template.render(c, shifts))
            else:
                for _ in range(copies):
                    f.write(self.body)


_STEP_KEY = re.compile(r"^step(\d+)$")


def _shift_start_times(obj, shift_us: int):
    if isinstance(obj, dict):
        return {k: (v + shift_us if k == "Start Timestamp(us)" and isinstance(v, (int, float))
                    else _shift_start_times(v, shift_us)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shift_start_times(v, shift_us) for v in obj]
    return obj


def _start_times(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "Start Timestamp(us)" and isinstance(v, (int, float)):
                yield v
            else:
                yield from _start_times(v)


class AscendSource:
    """A real ``*_ascend_pt`` folder (text export), ready to be written ``copies`` times over."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        out = self.folder / "ASCEND_PROFILER_OUTPUT"
        self.trace = _TraceView(out / "trace_view.json")
        self.csvs = {p.name: _Csv(p) for p in sorted(out.glob("*.csv"))}
        self.comms = {p.name: json.loads(p.read_text(encoding="utf-8"))
                      for p in sorted(out.glob("communication*.json"))}
        self.others = [p for p in sorted(out.iterdir())
                       if p.name not in self.csvs and p.name not in self.comms and p.name != "trace_view.json"]
        lo, hi = self.trace.t_lo, self.trace.t_hi
        times = [t for c in self.csvs.values() for t in c.times_ns]
        times += [int(round(t * 1000)) for d in self.comms.values() for t in _start_times(d)]
        if times:
            lo, hi = min(lo, min(times)), max(hi, max(times))
        steps = self.trace.template.slot_values(K_STEP).tolist()
        steps += [s for c in self.csvs.values() for s in c.steps]
        steps += [int(m.group(1)) for d in self.comms.values() for k in d for m in [_STEP_KEY.match(k)] if m]
        ids = self.trace.template.slot_values(K_ID).tolist()
        self.shifts = Shifts(shift_ns=ceil_us_ns(hi - lo + GAP_NS), id_stride=max_or(ids, 0) + 1,
                             step_stride=(max(steps) - min(steps) + 1) if steps else 1)
        self.copy_bytes = self.trace.copy_bytes + sum(c.copy_bytes for c in self.csvs.values())
        self.inexact_csvs = [n for n, c in self.csvs.items() if not c.exact]

    def copies_for(self, target_bytes: int) -> int:
        return max(1, round(target_bytes / self.copy_bytes))

    def _comm(self, data: dict, copies: int) -> dict:
        out = {}
        for c in range(copies):
            for key, val in data.items():
                m = _STEP_KEY.match(key)
                if m:
                    step = int(m.group(1)) + c * self.shifts.step_stride
                    out[f"step{step}"] = _shift_start_times(val, c * self.shifts.shift_ns // 1000)
                elif c == 0:
                    out[key] = val
        return out

    def write(self, dest: Path, copies: int) -> int:
        """Write the folder ``dest`` (named like the source, e.g. rank0_ascend_pt); returns bytes."""
        tmp = dest.with_name(dest.name + ".part")
        if tmp.exists():
            shutil.rmtree(tmp)
        out = tmp / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        sh = self.shifts
        self.trace.write(out / "trace_view.json", copies, sh)
        for name, c in self.csvs.items():
            c.write(out / name, copies, sh)
        for name, data in self.comms.items():
            (out / name).write_text(json.dumps(self._comm(data, copies)), encoding="utf-8")
        for p in self.others:
            if p.is_file():
                shutil.copyfile(p, out / p.name)
        extra_ns = (copies - 1) * sh.shift_ns
        for p in sorted(self.folder.glob("*.json")):
            info = json.loads(p.read_text(encoding="utf-8"))
            end = info.get("end_info") if isinstance(info, dict) else None
            if isinstance(end, dict):
                for k in ("collectionTimeEnd", "MonotonicTimeEnd"):
                    if isinstance(end.get(k), int):
                        end[k] += extra_ns
            (tmp / p.name).write_text(json.dumps(info, indent=4), encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
        return sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
