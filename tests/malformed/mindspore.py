"""Malformed copies of the corpus's real MindSpore folders (``mindspore-legacy`` and
``mindspore-msprof``): truncated files, a missing column, cut rows, empty slices, junk times."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from .common import CORPUS, add

LEGACY = CORPUS / "npu/mindspore_legacy_run1/profiler"
LEGACY_FILES = ("step_trace_raw_1_detail_time.csv", "timeline_display_1.json", "min_cycle_counter_1.txt",
                "framework_raw_1.csv")
ST, TL = LEGACY_FILES[0], LEGACY_FILES[1]
MSPROF = CORPUS / "npu/mindspore_msprof_2dev/profiler"


def _legacy(dst: Path) -> Path:
    d = dst / "profiler"
    d.mkdir()
    for n in LEGACY_FILES:
        shutil.copyfile(LEGACY / n, d / n)
    return d


def _msprof(dst: Path) -> Path:
    (src,) = sorted(MSPROF.glob("PROF_*567*/device_1"))
    d = dst / src.parent.name / "device_1"
    (d / "timeline").mkdir(parents=True)
    for p in sorted((src / "timeline").glob("*.json")):
        if not p.name.startswith("msprof_"):            # not read; keeps the cases small
            shutil.copyfile(p, d / "timeline" / p.name)
    return d / "timeline"


def _cut(p: Path, n: int) -> None:
    p.write_bytes(p.read_bytes()[:n])


def _legacy_case(id, mutate, culprits):
    def build(dst):
        mutate(_legacy(dst))
    add(f"ms-legacy-{id}", "mindspore-legacy", build, culprits, corpus=True)


def _msprof_case(id, mutate, culprits):
    def build(dst):
        mutate(_msprof(dst))
    add(f"ms-msprof-{id}", "mindspore-msprof", build, culprits, corpus=True)


def _missing_column(d):
    p = d / ST
    lines = p.read_text().splitlines()
    p.write_text("\n".join([lines[0].replace("start_point", "start", 1)] + lines[1:]) + "\n")


def _cut_row(d):
    p = d / ST
    lines = p.read_text().splitlines()
    p.write_text("\n".join(lines[:50] + [lines[50][:30]]) + "\n")


def _junk_ts(d):
    p = d / TL
    ev = json.loads(p.read_text())
    for e in ev[::7]:
        e["ts"] = "soon"
    p.write_text(json.dumps(ev))


_legacy_case("timeline-truncated", lambda d: _cut(d / TL, 100_000), (TL,))
_legacy_case("timeline-not-a-list", lambda d: (d / TL).write_text('"x"'), (TL,))
_legacy_case("timeline-empty", lambda d: (d / TL).write_text("[]"), (TL,))
_legacy_case("timeline-junk-ts", _junk_ts, (TL,))
_legacy_case("step-trace-header-only", lambda d: _cut(d / ST, (d / ST).read_text().index("\n") + 1), (ST,))
_legacy_case("step-trace-empty", lambda d: (d / ST).write_text(""), (ST,))
_legacy_case("step-trace-missing-column", _missing_column, (ST,))
_legacy_case("step-trace-cut-row", _cut_row, (ST,))
_legacy_case("no-cycle-counter", lambda d: (d / LEGACY_FILES[2]).unlink(), (ST,))
_legacy_case("framework-garbage", lambda d: (d / LEGACY_FILES[3]).write_bytes(b"\xff\xfe\x00junk"), (ST,))
_msprof_case("task-slice-truncated", lambda t: _cut(t / "task_time_1_0_5.json", 3000), ("task_time_1_0_5.json",))
_msprof_case("task-slice-empty", lambda t: (t / "task_time_1_0_5.json").write_text("[]"), ("task_time_1_0_5.json",))
_msprof_case("hccl-slice-truncated", lambda t: _cut(t / "hccl_1_0_2.json", 5000), ("hccl_1_0_2.json",))
_msprof_case("step-trace-slices-gone", lambda t: [p.unlink() for p in t.glob("step_trace_*")], ("timeline",))
