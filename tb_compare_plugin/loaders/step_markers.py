"""The ``ProfilerStep#N`` windows of a trace-event JSON file (Ascend ``trace_view.json``, Kineto)
without parsing it: a byte scan for the step events' name, ``ts`` and ``dur``.

Used where a light per-rank summary needs the step time (the text export's step_trace_time.csv
has none; the database's STEP_TIME holds the same ProfilerStep window).  The file is read in
chunks (never whole into memory).  A step seen twice keeps its first window (one warning).
"""
from __future__ import annotations

import re

from .regular import open_regular

CHUNK = 8 << 20
OVERLAP = 64 << 10
_EVENT = re.compile(
    rb'"name"\s*:\s*"ProfilerStep#(\d+)"(?P<rest>[^{}]{0,2000}?)(?=[{}])')
_TS = re.compile(rb'"ts"\s*:\s*"?(-?[0-9.]+)"?')
_DUR = re.compile(rb'"dur"\s*:\s*"?(-?[0-9.]+)"?')


def _us_to_ns(text: bytes) -> int:
    """Microseconds as written ("1736408883686740.710") -> int ns, exact for 3 decimals."""
    s = text.decode()
    whole, _, frac = s.partition(".")
    neg = whole.startswith("-")
    ns = abs(int(whole or "0")) * 1000 + int((frac + "000")[:3] or "0")
    return -ns if neg else ns


def read_step_windows(path: str) -> tuple[dict, list]:
    """``({step: (start_ns, dur_ns)}, warnings)``."""
    out: dict = {}
    warnings: list = []
    dup = 0
    with open_regular(path, "rb") as f:
        tail = b""
        while True:
            chunk = f.read(CHUNK)
            buf = tail + chunk
            for m in _EVENT.finditer(buf):
                if chunk and m.end() > len(buf) - OVERLAP // 2:
                    continue         # may be cut: seen again in the next buffer
                rest = m.group("rest")
                ts, dur = _TS.search(rest), _DUR.search(rest)
                if not ts or not dur:
                    continue
                step = int(m.group(1))
                window = (_us_to_ns(ts.group(1)), _us_to_ns(dur.group(1)))
                if step in out:
                    if out[step] != window:
                        dup += 1
                    continue
                out[step] = window
            if not chunk:
                break
            tail = buf[-OVERLAP:]
    if dup:
        warnings.append(f"{path}: {dup} repeated ProfilerStep event(s) with another window; "
                        "the first kept")
    return out, warnings
