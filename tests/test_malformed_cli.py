"""Broken copies of REAL corpus files through the real CLI (``python -m tb_compare_plugin.cli`` in a
subprocess, parser processes on, as users run it), the good original on the other side.

Every run ends in exactly one of two ways:

* failure: a non-zero exit and one short ``tb-compare: error: ...`` line on stderr naming the file;
* success with a word: exit 0, ``warning: FILE: ...`` lines on stderr (one naming the broken file
  and the reason), and every one of them also in the JSON ``notes``.

Never a traceback, never a silent success.  Each case also says which of the two it must be and
a phrase its message must hold, so a loader that starts accepting what it should refuse (or the
reverse) fails here too.  Skipped when ../shared/corpus is absent.
"""
from __future__ import annotations

import csv
import io
import json
import os
import queue
import random
import re
import select
import sqlite3
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from conftest import CORPUS, ROOT, needs_corpus
from malformed.common import C_DB_L0, C_GPU, C_NPU_L1, DB, TEXT_FILES, TRACE, copy_npu, corpus_gpu_bytes, out

pytestmark = needs_corpus
KD, TV = "kernel_details.csv", "trace_view.json"


@dataclass
class CliCase:
    id: str
    side: str                                   # gpu | npu | db: which good corpus profile is the baseline
    build: Callable[[Path], Path]               # writes the broken profile, returns what to pass the CLI
    expect: str                                 # "error" | "warning"
    says: str                                   # a phrase the error / one warning must hold


CASES: list[CliCase] = []


def case(id, side, expect, says):
    def deco(fn):
        CASES.append(CliCase(id, side, fn, expect, says))
        return fn
    return deco


# ------------------------------------------------------------------------------ GPU (Kineto) trace

def gpu_doc() -> dict:
    return json.loads(corpus_gpu_bytes())


def write_doc(dst: Path, doc) -> Path:
    p = dst / TRACE
    p.write_text(json.dumps(doc))
    return p


def kernels(doc) -> list:
    return [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]


def _gpu_cut(dst: Path, frac: float) -> Path:
    data = corpus_gpu_bytes()
    (dst / TRACE).write_bytes(data[:int(len(data) * frac)])
    return dst / TRACE


for frac in (0.1, 0.5, 0.9):
    case(f"gpu-truncated-{int(frac * 100)}", "gpu", "error", "truncated")(lambda dst, f=frac: _gpu_cut(dst, f))


@case("gpu-gzip-cut", "gpu", "error", TRACE + ".gz")
def _gz_cut(dst):
    raw = C_GPU.read_bytes()
    p = dst / (TRACE + ".gz")
    p.write_bytes(raw[:int(len(raw) * 0.6)])
    return p


@case("gpu-garbage-bytes", "gpu", "error", TRACE)
def _garbage(dst):
    p = dst / TRACE
    p.write_bytes(random.Random(1).randbytes(20_000))
    return p


@case("gpu-only-whitespace-in-traceEvents", "gpu", "error", "no events")
def _whitespace(dst):
    p = dst / TRACE
    p.write_bytes(b'{"schemaVersion": 1, "traceEvents": [' + b" \n\t" * 5000 + b"]}")
    return p


for label, val in (("negative", lambda e, i: -(i + 1)), ("nan-string", lambda e, i: "NaN"),
                   ("text", lambda e, i: "abc"), ("null", lambda e, i: None)):
    @case(f"gpu-dur-{label}", "gpu", "warning", "negative, missing or non-numeric dur")
    def _dur(dst, val=val):
        doc = gpu_doc()
        for i, e in enumerate(kernels(doc)[::3]):
            e["dur"] = val(e, i)
        return write_doc(dst, doc)


@case("gpu-ids-beyond-64-bits", "gpu", "warning", "do not fit in 64 bits")
def _huge_ids(dst):
    doc = gpu_doc()
    for e in doc["traceEvents"]:
        a = e.get("args")
        if isinstance(a, dict) and isinstance(a.get("correlation"), int):
            a["correlation"] += 2 ** 70
    return write_doc(dst, doc)


@case("gpu-kernels-without-stream", "gpu", "warning", "args.stream")
def _no_stream(dst):
    doc = gpu_doc()
    for e in kernels(doc)[::2]:
        e["args"].pop("stream", None)
    return write_doc(dst, doc)


@case("gpu-no-kernel-readable", "gpu", "error", "device events")
def _kernels_bad_ts(dst):
    doc = gpu_doc()
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            e["ts"] = "soon"
    return write_doc(dst, doc)


@case("gpu-events-not-objects", "gpu", "warning", "events skipped")
def _not_objects(dst):
    doc = gpu_doc()
    doc["traceEvents"] = [x for i, e in enumerate(doc["traceEvents"]) for x in ((e, 7, "x") if i % 40 == 0 else (e,))]
    return write_doc(dst, doc)


# ------------------------------------------------------------------------------ Ascend text export

def npu(dst: Path) -> Path:
    return copy_npu(dst, C_NPU_L1, TEXT_FILES)


@case("npu-kernel-details-cut-mid-row", "npu", "warning", "does not end with a line break")
def _kd_cut(dst):
    w = npu(dst)
    p = out(dst) / KD
    b = p.read_bytes()
    cut = b.index(b"\n", len(b) // 2) + 20              # inside the row after the middle
    p.write_bytes(b[:cut])
    return w


@case("npu-kernel-details-without-duration", "npu", "warning", "'Duration(us)' is missing")
def _kd_no_dur(dst):
    w = npu(dst)
    p = out(dst) / KD
    lines = p.read_text(encoding="utf-8-sig").splitlines()
    i = lines[0].split(",").index("Duration(us)")
    p.write_text("\r\n".join(",".join(c for j, c in enumerate(ln.split(",")) if j != i) for ln in lines) + "\r\n")
    return w


@case("npu-kernel-details-garbage", "npu", "error", KD)
def _kd_garbage(dst):
    w = npu(dst)
    (out(dst) / KD).write_bytes(b"\x89PNG\r\n\x1a\n" + random.Random(2).randbytes(3000))
    return w


def _tv_cut(dst: Path, frac: float) -> Path:
    w = npu(dst)
    b = (out(dst) / TV).read_bytes()
    (out(dst) / TV).write_bytes(b[:int(len(b) * frac)])
    return w


for frac in (0.3, 0.8):
    case(f"npu-trace-view-truncated-{int(frac * 100)}", "npu", "error", TV)(lambda dst, f=frac: _tv_cut(dst, f))


@case("npu-trace-view-empty-array", "npu", "error", "no events")
def _tv_empty(dst):
    w = npu(dst)
    (out(dst) / TV).write_bytes(b"[\n   \n]")
    return w


def hardware_pids(events) -> set:
    return {e.get("pid") for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
            and (e.get("args") or {}).get("name") == "Ascend Hardware"}


@case("npu-trace-view-negative-dur", "npu", "warning", "negative or non-numeric 'dur'")
def _tv_neg_dur(dst):
    w = npu(dst)
    ev = json.loads((out(dst) / TV).read_bytes())
    hw = hardware_pids(ev)
    for e in [e for e in ev if e.get("ph") == "X" and e.get("pid") in hw][::4]:
        e["dur"] = -abs(float(e.get("dur", 1))) - 1
    (out(dst) / TV).write_text(json.dumps(ev))
    return w


@case("npu-trace-view-no-task-readable", "npu", "error", "'Ascend Hardware' events")
def _tv_hw_bad_ts(dst):
    w = npu(dst)
    ev = json.loads((out(dst) / TV).read_bytes())
    hw = hardware_pids(ev)
    assert hw, "the corpus trace has no 'Ascend Hardware' process"
    for e in ev:
        if e.get("ph") == "X" and e.get("pid") in hw:
            e["ts"] = "later"
    (out(dst) / KD).unlink()                          # (its rows would stand in for the tasks)
    (out(dst) / TV).write_text(json.dumps(ev))
    return w


# ------------------------------------------------------------------------------ Ascend SQLite export

def db(dst: Path) -> Path:
    copy_npu(dst, C_DB_L0, [DB])
    return out(dst) / DB


def sql(path: Path, *statements: str) -> None:
    c = sqlite3.connect(path)
    for s in statements:
        c.execute(s)
    c.commit()
    c.close()


@case("db-fake", "db", "error", DB)
def _db_fake(dst):
    p = db(dst)
    p.write_bytes(b"SQLite format 3\x00" + random.Random(3).randbytes(8192))
    return p.parent.parent


@case("db-truncated", "db", "error", DB)
def _db_cut(dst):
    p = db(dst)
    p.write_bytes(p.read_bytes()[: os.path.getsize(p) // 2])
    return p.parent.parent


@case("db-some-tasks-unreadable", "db", "warning", "without a readable startNs/endNs")
def _db_some_junk(dst):
    p = db(dst)
    sql(p, "UPDATE TASK SET startNs = 'abc' WHERE rowid % 3 = 0")
    return p.parent.parent


@case("db-no-task-readable", "db", "error", "none could be loaded")
def _db_all_junk(dst):
    p = db(dst)
    sql(p, "UPDATE TASK SET startNs = 'abc'")
    return p.parent.parent


@case("db-memory-record-junk", "db", "warning", "not numbers were read as unknown")
def _db_memrec(dst):
    p = db(dst)
    sql(p, "UPDATE MEMORY_RECORD SET totalAllocated = 'lots' WHERE rowid % 4 = 0")
    return p.parent.parent


@case("db-string-ids-missing", "db", "warning", "STRING_IDS")
def _db_strings(dst):
    p = db(dst)
    sql(p, "DELETE FROM STRING_IDS WHERE id % 5 = 0")
    return p.parent.parent


@case("npu-operator-memory-bad-times", "npu", "warning", "without a readable 'Allocation Time(us)'")
def _om_times(dst):
    w = npu(dst)
    p = out(dst) / "operator_memory.csv"
    rows = list(csv.reader(io.StringIO(p.read_text(encoding="utf-8-sig"), newline="")))
    i = rows[0].index("Allocation Time(us)")
    for r in rows[1::3]:
        r[i] = "soon"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    p.write_text(buf.getvalue(), newline="")
    return w


# ------------------------------------------------------------------------------ running them

GOOD = {"gpu": lambda: C_GPU, "npu": lambda: C_NPU_L1, "db": lambda: C_DB_L0}


def run_cli(base: Path, target: Path, json_out: Path, tmp: Path) -> subprocess.Popen:
    env = dict(os.environ, TB_COMPARE_CACHE_DIR=str(tmp / "cache"))
    env.pop("TB_COMPARE_PROCESSES", None)              # parser processes on, as users run it
    cmd = [sys.executable, "-m", "tb_compare_plugin.cli", str(base), str(target), "--json", str(json_out),
           "--no-progress", "-q"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def judge(c: CliCase, target: Path, rc: int, stderr: str, json_out: Path) -> list[str]:
    """What is wrong with one run (empty: it kept the contract)."""
    bad = []
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if "Traceback" in stderr or any(ln.startswith(("  File ", "Process ")) for ln in lines):
        bad.append(f"a traceback on stderr:\n{stderr[-1500:]}")
    name = target.name
    if rc != 0:
        if c.expect != "error":
            bad.append(f"failed (exit {rc}) where a load with warnings was expected")
        if len(lines) != 1 or not lines[0].startswith("tb-compare: error: "):
            bad.append(f"not one 'tb-compare: error:' line: {lines!r}")
        elif name not in lines[0] or c.says not in lines[0] or len(lines[0]) > 600:
            bad.append(f"the error does not name {name!r} and say {c.says!r} in one short line: {lines[0]!r}")
        return bad
    if c.expect != "warning":
        bad.append("exit 0 where an error was expected")
    notes = json.loads(json_out.read_text()).get("notes", [])
    warned = [ln for ln in lines if ln.startswith("warning: ")]
    if len(warned) != len(lines):
        bad.append(f"stderr lines that are not warnings: {[ln for ln in lines if ln not in warned]!r}")
    if not any(name in ln and c.says in ln for ln in warned):
        bad.append(f"no warning naming {name!r} says {c.says!r} (a silent success): {warned!r}")
    for ln in warned:
        text = re.sub(r"^warning: .*?: ", "", ln, count=1)
        if not any(n.endswith(text) for n in notes):
            bad.append(f"warning not in the JSON notes: {ln!r} (notes: {notes!r})")
    return bad


BATCH = Path(__file__).parent / "malformed" / "cli_batch.py"


class BatchCli:
    """One Python process running CLI command lines one after another (``malformed/cli_batch.py``):
    each run is the CLI's ``main`` with its own stdout / stderr files, parser processes on."""

    def __init__(self, tmp: Path) -> None:
        env = dict(os.environ, TB_COMPARE_CACHE_DIR=str(tmp / "cache"))
        env.pop("TB_COMPARE_PROCESSES", None)          # parser processes on, as users run it
        self.proc = subprocess.Popen([sys.executable, str(BATCH)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)

    def run(self, base: Path, target: Path, json_out: Path, timeout: float = 300) -> tuple[int | None, str]:
        """(exit code, stderr) of ``tb-compare BASE TARGET --json JSON_OUT``; None: the process died or hung."""
        argv = [str(base), str(target), "--json", str(json_out), "--no-progress", "-q"]
        rc, _, stderr = self.run_argv(argv, json_out.parent, timeout)
        return rc, stderr

    def run_argv(self, argv: list, folder: Path, timeout: float = 300, env: dict | None = None) -> tuple:
        """(exit code, stdout, stderr) of ``tb-compare ARGV`` (``env``: variables for this run only,
        None unsets); stdout / stderr kept in FOLDER; exit code None: the process died or hung."""
        err, out = folder / "stderr.txt", folder / "stdout.txt"
        self.proc.stdin.write(json.dumps({"argv": [str(a) for a in argv], "stdout": str(out), "stderr": str(err),
                                          "env": env or {}}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        stderr = err.read_text(errors="replace") if err.exists() else ""
        stdout = out.read_text(errors="replace") if out.exists() else ""
        if not line:
            self.close()
            return None, stdout, stderr + (self.proc.stderr.read() or "")
        return json.loads(line)["rc"], stdout, stderr

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def test_broken_corpus_copies_through_the_cli(tmp_path):
    """Every case is its own CLI run, judged on its own; two processes (the machine has two cores)
    take the cases one after another, so the interpreter and its imports are paid twice, not per case."""
    jobs, failures, lock = queue.Queue(), {}, threading.Lock()
    for i, c in enumerate(CASES):
        jobs.put((i, c))

    def worker() -> None:
        cli = BatchCli(tmp_path)
        try:
            while True:
                try:
                    i, c = jobs.get_nowait()
                except queue.Empty:
                    return
                d = tmp_path / f"c{i:02d}"
                d.mkdir()
                try:
                    target = c.build(d)
                    if cli.proc.poll() is not None:    # a previous run took the process down
                        cli = BatchCli(tmp_path)
                    rc, stderr = cli.run(GOOD[c.side](), target, d / "out.json")
                    bad = [f"the process died or hung: {stderr[-1500:]}"] if rc is None else \
                        judge(c, target, rc, stderr, d / "out.json")
                except Exception as e:  # noqa: BLE001 - a case that cannot be built or judged fails, named
                    bad = [f"{type(e).__name__}: {e}"]
                if bad:
                    with lock:
                        failures[c.id] = bad
        finally:
            cli.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, "\n".join(f"{k}: {'; '.join(v)}" for k, v in sorted(failures.items()))


def test_a_side_without_step_markers_is_never_divided(tmp_path):
    """Per-step division needs step markers on both sides: a trace without ProfilerStep# covers an
    unknown number of steps, so the automatic choice keeps raw figures and says why."""
    doc = gpu_doc()
    for e in doc["traceEvents"]:
        if str(e.get("name", "")).startswith("ProfilerStep#"):
            e["name"] = "training loop"
    target = write_doc(tmp_path, doc)
    p = run_cli(C_GPU, target, tmp_path / "out.json", tmp_path)
    _, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stderr
    res = json.loads((tmp_path / "out.json").read_text())
    assert res["steps_count"]["baseline"] > 1 and res["per_step"] is False, res["steps_count"]
    assert any("target has no step markers" in n and "neither side is divided" in n for n in res["notes"]), \
        res["notes"]


def test_cases_are_distinct():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and CORPUS.is_dir()
