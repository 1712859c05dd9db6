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
                kind, value, quoted = (K_STEP if m.lastgroup == "step" else K_ID), int(m.group()), False
            q = '"' if quoted else ""
            literals.append(close + body[pos:m.start()] + q)   # a string slot: quotes around it
            kinds.append(kind)
            values.append(value)
            pos, close = m.end(), q
        literals.append(close + body[pos:])
        self.template = Template(literals, kinds, values)
        self.pre = [json.dumps(e) for i, (e, o) in enumerate(zip(events, once)) if o and i < first]
        self.post = [json.dumps(e) for i, (e, o) in enumerate(zip(events, once)) if o and i > first]
        self.copy_bytes = len(body)
