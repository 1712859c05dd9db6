"""Large Kineto (PyTorch Profiler, GPU) traces made by replicating a real trace's events.

The source trace is cut into Kineto's own per-event text blocks (a line ``  {`` opens
each top-level event), so the output keeps Kineto's layout byte for byte: the same
header (``schemaVersion``, ``deviceProperties``, ``distributedInfo``), one block per
event, the same trailer.  Copy ``c`` of the event list has every ``ts`` shifted by
``c`` times (trace span + gap) and every correlation / ``External id`` / flow ``id``
/ Python id / sequence number moved up by ``c * (max id + 1)``; ``ProfilerStep#N``
is renumbered so each copy holds new steps.  Metadata (``ph:"M"``), the profiler's
``Trace`` span and global instants are written once; the span's ``dur`` and the
"Record Window End" instant are stretched to cover all copies.

Output is streamed copy by copy: memory stays near one copy's text plus the template.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import re
from pathlib import Path

from .templates import K_ID, K_STEP, K_TS_US, Shifts, Template, max_or

GAP_US = 1000  # idle time between two copies

_EVENT_START = re.compile(r"^  \{$", re.M)
_EVENT_END = re.compile(r"^  \}", re.M)
_ID_KEYS = ("id", "External id", "correlation", "Python id", "Python parent id",
            "Sequence number", "Profiler Event Index", "Ev Idx")
_SLOT = re.compile(
    r'(?P<ts>(?<="ts": )\d+)'
    + "".join(rf'|(?P<id{i}>(?<="{re.escape(k)}": )-?\d+)' for i, k in enumerate(_ID_KEYS))
    + r'|(?P<step>(?<=ProfilerStep#)\d+)')


def read_text(path: Path) -> str:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read().decode("utf-8")


def _classify(m):
    g = m.lastgroup
    if g == "ts":
        return K_TS_US, int(m.group())
    if g == "step":
        return K_STEP, int(m.group())
    return K_ID, int(m.group())


def _is_once(ev: dict) -> bool:
    """Events written once, not per copy: metadata, the profiler's span, global instants."""
    ph = ev.get("ph")
    return ph == "M" or ev.get("cat") == "Trace" or (ph == "i" and ev.get("s") == "g")


class KinetoSource:
    """One real Kineto trace, cut into header, per-event blocks and trailer."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        text = read_text(self.path)
        events = json.loads(text)["traceEvents"]
        region = text.index('"traceEvents"')
        starts = [m.start() for m in _EVENT_START.finditer(text, region)]
        if len(starts) != len(events) or not starts:
            raise ValueError(f"{path}: found {len(starts)} Kineto event blocks for {len(events)} events;"
                             " the generator needs Kineto's one-block-per-event layout")
        last_end = _EVENT_END.search(text, starts[-1]).end()
        ends = [s for s in starts[1:]] + [last_end]
        blocks = []
        for s, e in zip(starts, ends):
            block = text[s:e]
            if e != last_end:
                block = block.rstrip()
                if not block.endswith(","):
                    raise ValueError(f"{path}: unexpected separator before offset {e}")
                block = block[:-1]
            blocks.append(block)
        self.head = text[:starts[0]]
        self.tail = text[last_end:]
        once = [_is_once(ev) for ev in events]
        first_rep = once.index(False)
        self.pre = [b for i, b in enumerate(blocks) if once[i] and i < first_rep]
        self.post = [(b, events[i]) for i, b in enumerate(blocks) if once[i] and i > first_rep]
        rep = [i for i, o in enumerate(once) if not o]
        self.template = Template.build(",\n".join(blocks[i] for i in rep), _SLOT, _classify)
        self.n_events, self.n_repeated = len(events), len(rep)
        t0 = min(ev["ts"] for ev in (events[i] for i in rep) if "ts" in ev)
        t1 = max(ev["ts"] + ev.get("dur", 0) for ev in (events[i] for i in rep) if "ts" in ev)
        self.span_us = int(math.ceil(t1 - t0))
        ids = self.template.slot_values(K_ID)
        steps = self.template.slot_values(K_STEP)
        self.shifts = Shifts(shift_ns=(self.span_us + GAP_US) * 1000,
                             id_stride=max_or(ids.tolist(), 0) + 1,
                             step_stride=(int(steps.max() - steps.min()) + 1) if len(steps) else 1)
        self.copy_bytes = len(",\n".join(blocks[i] for i in rep).encode("utf-8"))
        self.n_steps = len(set(steps.tolist()))

    def copies_for(self, target_bytes: int) -> int:
        return max(1, round(target_bytes / self.copy_bytes))

    def _post_block(self, block: str, ev: dict, copies: int) -> str:
        extra_us = (copies - 1) * self.shifts.shift_ns // 1000
        if ev.get("cat") == "Trace" and "dur" in ev:
            return re.sub(r'(?<="dur": )\d+', lambda m: str(int(m.group()) + extra_us), block, count=1)
        if ev.get("ph") == "i" and "End" in str(ev.get("name", "")):
            return re.sub(r'(?<="ts": )\d+', lambda m: str(int(m.group()) + extra_us), block, count=1)
        return block

    def write(self, out: Path, copies: int) -> int:
        """Write ``copies`` copies to ``out`` (via a temporary name); returns bytes written."""
        tmp = out.with_name(out.name + ".part")
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(self.head)
            sep = ""
            for block in self.pre:
                f.write(sep + block)
                sep = ",\n"
            for c in range(copies):
                f.write(sep + self.template.render(c, self.shifts))
                sep = ",\n"
            for block, ev in self.post:
                f.write(sep + self._post_block(block, ev, copies))
            f.write(self.tail)
        os.replace(tmp, out)
        return out.stat().st_size
