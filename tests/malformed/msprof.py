"""Malformed copies of the generated msprof CANN export (``samples/msprof_tf/target``, format
``msprof-cann``): truncated / empty / header-only slices, a missing column, cut rows, junk times,
a truncated / empty / non-list msprof_*.json timeline, a raw-only PROF folder, an older
duplicate export."""
from __future__ import annotations

import shutil
from pathlib import Path

from .common import SAMPLES, add

SRC = next((SAMPLES / "msprof_tf" / "target").glob("PROF_*"), None)
STAMP = "20261125090115"
S0, S1 = f"op_summary_slice_0_{STAMP}.csv", f"op_summary_slice_1_{STAMP}.csv"
ST = f"step_trace_{STAMP}.csv"
OSTAT = f"op_statistic_{STAMP}.csv"
TL = f"msprof_{STAMP}.json"


def _copy(dst: Path) -> Path:
    out = dst / "run" / SRC.name / "mindstudio_profiler_output"
    shutil.copytree(SRC / "mindstudio_profiler_output", out)
    return out


def _case(id, mutate, culprits):
    def build(dst):
        mutate(_copy(dst))
    add(f"msprof-{id}", "msprof-cann", build, culprits)


def _cut(p: Path, n: int) -> None:
    p.write_bytes(p.read_bytes()[:n])


def _header_only(p: Path) -> None:
    _cut(p, p.read_text().index("\n") + 1)


def _rename_column(p: Path, old: str, new: str) -> None:
    lines = p.read_text().splitlines()
    p.write_text("\n".join([lines[0].replace(old, new, 1)] + lines[1:]) + "\n")


def _junk_cells(p: Path, col: str) -> None:
    lines = p.read_text().splitlines()
    head = lines[0].split(",")
    i = head.index(col)
    out = [lines[0]]
    for k, ln in enumerate(lines[1:]):
        cells = ln.split(",")
        if k % 5 == 0 and len(cells) == len(head):
            cells[i] = "soon"
        out.append(",".join(cells))
    p.write_text("\n".join(out) + "\n")


def _raw_only(dst: Path) -> None:
    prof = dst / "run" / "PROF_000001_20260101000000000_RAWONLYRAWONLYRA"
    (prof / "device_0" / "data").mkdir(parents=True)
    (prof / "device_0" / "data" / "ts_track.data.0.slice_0").write_bytes(b"\0" * 64)
    (prof / "host" / "data").mkdir(parents=True)


def _older_export(out: Path) -> None:
    shutil.copyfile(out / ST, out / "step_trace_20261125080000.csv")


if SRC is not None:
    _case("op-summary-slice-truncated", lambda o: _cut(o / S1, 9000), (S1,))
    _case("op-summary-slice-empty", lambda o: (o / S1).write_text(""), (S1,))
    _case("op-summary-slice-header-only", lambda o: _header_only(o / S0), (S0,))
    _case("op-summary-missing-start", lambda o: _rename_column(o / S0, "Task Start Time(us)", "Start"), (S0,))
    _case("op-summary-missing-op-type", lambda o: [_rename_column(o / s, "OP Type", "Type") for s in (S0, S1)],
          (S0, S1))
    _case("op-summary-junk-duration", lambda o: _junk_cells(o / S0, "Task Duration(us)"), (S0,))
    _case("op-summary-all-gone", lambda o: [(o / s).unlink() for s in (S0, S1)], ("op_summary",))
    _case("step-trace-truncated", lambda o: _cut(o / ST, 700), (ST,))
    _case("step-trace-empty", lambda o: (o / ST).write_text(""), (ST,))
    _case("step-trace-missing-iteration-end", lambda o: _rename_column(o / ST, "Iteration End(us)", "End"), (ST,))
    _case("step-trace-junk-end", lambda o: _junk_cells(o / ST, "Iteration End(us)"), (ST,))
    _case("step-trace-gone", lambda o: (o / ST).unlink(), ("step_trace",))
    _case("op-statistic-truncated", lambda o: _cut(o / OSTAT, 200), (OSTAT,))
    _case("timeline-truncated", lambda o: _cut(o / TL, 5000), (TL,))
    _case("timeline-empty-list", lambda o: (o / TL).write_text("[]"), (TL,))
    _case("timeline-not-a-list", lambda o: (o / TL).write_text('"x"'), (TL,))
    _case("older-duplicate-export", _older_export, ("step_trace_20261125080000.csv",))
    add("msprof-raw-only-prof-folder", "msprof-cann", _raw_only, ("PROF_000001_20260101000000000_RAWONLYRAWONLYRA",))
