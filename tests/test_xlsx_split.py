"""`tb-compare --xlsx` with the workbook made by two processes (``presenters.xlsx_split``): the
same workbook and JSON as the one-process writer, and a failure of the forked process is the
CLI's one-line error with no workbook (or temporary file) left behind."""
from __future__ import annotations

import os
import zipfile
from typing import NamedTuple

import pytest

from cli_inproc import run_cli
from conftest import SAMPLES, needs_samples
from tb_compare_plugin.presenters import xlsx_split

PAIRS = [("baseline_gpu", "target_npu"), ("target_npu", "target_npu_v2"),
         ("target_npu", "target_npu_v2", "--disable-module")]      # (operator sheets: the pairs sent over)


def _run(tmp_path, base, target, split: str, tag: str, *extra):
    out = tmp_path / tag
    out.mkdir()
    r = run_cli(SAMPLES / base, SAMPLES / target, "--no-cache", "--quiet", "--json", out / "o.json",
                "--xlsx", out / "o.xlsx", *extra, env={xlsx_split.ENV: split})
    return r, out


def _members(path) -> tuple[list, dict]:
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        return z.namelist(), {n: z.read(n) for n in z.namelist() if n != "docProps/core.xml"}


@pytest.fixture
def count_splits(monkeypatch):
    calls = []
    real = xlsx_split.SplitWorkbook.finish

    def finish(self):
        calls.append(self.pid)
        return real(self)
    monkeypatch.setattr(xlsx_split.SplitWorkbook, "finish", finish)
    return calls


class Reference(NamedTuple):
    """A one-process run (``TB_COMPARE_XLSX_SPLIT=0``) and what it did."""
    returncode: int
    stderr: str
    json: bytes
    names: list
    parts: dict
    splits: list            # writers it forked (SplitWorkbook.finish calls)
    operator_calls: int     # operator comparisons made in this process


_REFERENCES: dict = {}


def _reference(tmp_path_factory, base, target, *extra) -> Reference:
    """The one-process run of a pair, made once for the tests that compare a split run with it
    (the ``target_npu``/``target_npu_v2`` one served four tests, each making it again), with
    what the tests check of it counted while it runs."""
    key = (base, target, *extra)
    if key not in _REFERENCES:
        from tb_compare_plugin.engines import operator
        parent, splits, calls = os.getpid(), [], []
        real_finish, real_compare = xlsx_split.SplitWorkbook.finish, operator.compare_operators

        def finish(self):
            splits.append(self.pid)
            return real_finish(self)

        def compare(*a, **k):
            if os.getpid() == parent:
                calls.append(1)
            return real_compare(*a, **k)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(xlsx_split.SplitWorkbook, "finish", finish)
            mp.setattr(operator, "compare_operators", compare)
            r, out = _run(tmp_path_factory.mktemp("reference"), base, target, "0", "one", *extra)
        names, parts = _members(out / "o.xlsx") if r.returncode == 0 else ([], {})
        json = (out / "o.json").read_bytes() if r.returncode == 0 else b""
        _REFERENCES[key] = Reference(r.returncode, r.stderr, json, names, parts, splits, len(calls))
    return _REFERENCES[key]


@needs_samples
@pytest.mark.parametrize("base,target,extra", [(p + ("",))[:3] for p in PAIRS])
def test_split_workbook_is_the_one_process_workbook(tmp_path, tmp_path_factory, base, target, extra, count_splits):
    extra = (extra,) if extra else ()
    r1 = _reference(tmp_path_factory, base, target, *extra)
    assert r1.returncode == 0, r1.stderr
    assert not r1.splits
    r2, two = _run(tmp_path, base, target, "1", "two", *extra)
    assert r2.returncode == 0, r2.stderr
    assert len(count_splits) == 1 and count_splits[0] is not None       # it did fork
    assert r2.stderr == r1.stderr
    names2, parts2 = _members(two / "o.xlsx")
    assert names2 == r1.names                               # the parts in the same order ...
    assert parts2 == r1.parts                               # ... and byte for byte the same
    assert (two / "o.json").read_bytes() == r1.json
    assert sorted(os.listdir(two)) == ["o.json", "o.xlsx"]


@needs_samples
@pytest.mark.parametrize("how", ["raise", "killed"])
def test_child_failure_is_one_line_and_leaves_no_workbook(tmp_path, monkeypatch, how):
    parent = os.getpid()
    real = xlsx_split.plan_sheets

    def plan(cmp, engines, notes, *groups):
        if os.getpid() != parent:                       # only in the forked process
            if how == "raise":
                raise RuntimeError("disk on fire")
            os.kill(os.getpid(), 9)
        return real(cmp, engines, notes, *groups)
    monkeypatch.setattr(xlsx_split, "plan_sheets", plan)
    r, out = _run(tmp_path, "target_npu", "target_npu_v2", "1", "fail")
    assert r.returncode == 1
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    want = "RuntimeError: disk on fire" if how == "raise" else "killed by signal 9"
    assert err.startswith(f"tb-compare: error: cannot write {out / 'o.xlsx'}: ") and want in err, err
    assert set(os.listdir(out)) <= {"o.json"}               # no workbook, no temporary file


@needs_samples
def test_value_error_in_the_child_is_the_one_process_message(tmp_path, monkeypatch):
    parent = os.getpid()
    real = xlsx_split.plan_sheets

    def plan(cmp, engines, notes, *groups):
        if os.getpid() != parent:
            raise ValueError("these steps cannot be compared")
        return real(cmp, engines, notes, *groups)
    monkeypatch.setattr(xlsx_split, "plan_sheets", plan)
    r, out = _run(tmp_path, "target_npu", "target_npu_v2", "1", "bad")
    assert r.returncode == 1
    assert r.stderr.strip() == "tb-compare: error: these steps cannot be compared"
    assert set(os.listdir(out)) <= {"o.json"}


@needs_samples
@pytest.mark.parametrize("child", ["makes", "fails", "late", "no pairs", "no extras"])
def test_the_child_makes_the_operator_statistics(tmp_path, tmp_path_factory, monkeypatch, count_splits, child):
    """Module sheets with --json: the op pairs and the operator statistics (the JSON's operator
    table, the Operators sheet) come from the forked process, so this one never makes the
    operator comparison, nor the memory peak it makes too (message E); when the child cannot
    make them (its matching or its peak fails), or they are not in when the JSON wants them,
    this process makes them, with the same answers."""
    from tb_compare_plugin.engines import operator
    r1 = _reference(tmp_path_factory, "target_npu", "target_npu_v2")
    assert r1.returncode == 0, r1.stderr
    assert r1.operator_calls                        # (the one-process writer makes it here)
    monkeypatch.setattr(xlsx_split, "OPS_WAIT", 0.0 if child == "late" else 60.0)
    parent, calls = os.getpid(), []
    real = operator.compare_operators

    def compare(*a, **k):
        if os.getpid() == parent:
            calls.append(1)
        elif child == "fails":
            raise RuntimeError("no operators here")
        elif child == "late":
            import time
            time.sleep(1.0)
        return real(*a, **k)
    monkeypatch.setattr(operator, "compare_operators", compare)
    from tb_compare_plugin.engines import memory_peak
    real_match, real_peak, peaks = operator.match_ops, memory_peak.peak_attribution, []

    def match(*a, **k):
        if os.getpid() != parent and child == "no pairs":
            raise RuntimeError("no pairs here")
        return real_match(*a, **k)

    def peak(*a, **k):
        if os.getpid() == parent:
            peaks.append(1)
        elif child == "no extras":
            raise RuntimeError("no peak here")
        return real_peak(*a, **k)
    monkeypatch.setattr(operator, "match_ops", match)
    monkeypatch.setattr(memory_peak, "peak_attribution", peak)
    r2, two = _run(tmp_path, "target_npu", "target_npu_v2", "1", "two")
    assert r2.returncode == 0, r2.stderr
    assert len(count_splits) == 1
    assert len(calls) == (0 if child in ("makes", "no extras") else 1)   # (made here once when not from the child)
    assert len(peaks) == (1 if child == "no extras" else 0) or child == "late"
    assert r2.stderr == r1.stderr
    assert (two / "o.json").read_bytes() == r1.json
    names2, parts2 = _members(two / "o.xlsx")
    assert names2 == r1.names and parts2 == r1.parts


@needs_samples
def test_operator_sheets_send_back_the_operator_statistics(tmp_path, tmp_path_factory, monkeypatch, count_splits):
    """Operator sheets with --json: the child makes the operator comparison for its sheets and
    sends its statistics back for the JSON's operator table, so this process makes none."""
    from tb_compare_plugin.engines import operator
    r1 = _reference(tmp_path_factory, "target_npu", "target_npu_v2", "--disable-module")
    assert r1.returncode == 0, r1.stderr
    monkeypatch.setattr(xlsx_split, "PAIRS_OPS_WAIT", 60.0)
    parent, calls = os.getpid(), []
    real = operator.compare_operators

    def compare(*a, **k):
        if os.getpid() == parent:
            calls.append(1)
        return real(*a, **k)
    monkeypatch.setattr(operator, "compare_operators", compare)
    r2, two = _run(tmp_path, "target_npu", "target_npu_v2", "1", "two", "--disable-module")
    assert r2.returncode == 0, r2.stderr
    assert len(count_splits) == 1 and not calls
    assert r2.stderr == r1.stderr and (two / "o.json").read_bytes() == r1.json
    names2, parts2 = _members(two / "o.xlsx")
    assert names2 == r1.names and parts2 == r1.parts


@needs_samples
def test_no_split_without_the_operator_sheets(tmp_path, count_splits):
    r, out = _run(tmp_path, "target_npu", "target_npu_v2", "1", "mem", "--enable-memory-compare")
    assert r.returncode == 0, r.stderr
    assert not count_splits
    assert zipfile.ZipFile(out / "o.xlsx").testzip() is None


@needs_samples
def test_a_failed_memory_engine_costs_the_same_sheets(tmp_path, monkeypatch, count_splits):
    """The memory tables are the child's, its peak and curve sheets this process's: when the
    memory engine fails, neither process writes any of them, and the Summary says so once."""
    from tb_compare_plugin.presenters import xlsx_workbook

    def broken(cmp):
        raise RuntimeError("no memory today")
    monkeypatch.setattr(xlsx_workbook, "memory_tables", broken)
    r1, one = _run(tmp_path, "target_npu", "target_npu_v2", "0", "one")
    r2, two = _run(tmp_path, "target_npu", "target_npu_v2", "1", "two")
    assert r1.returncode == r2.returncode == 0
    assert len(count_splits) == 1
    names1, parts1 = _members(one / "o.xlsx")
    names2, parts2 = _members(two / "o.xlsx")
    assert names2 == names1 and parts2 == parts1
    assert b"no memory today" in parts1["xl/workbook.xml"] + b"".join(parts1.values())
    assert b"MemoryPeak" not in parts1["xl/workbook.xml"]


@pytest.fixture(scope="module")
def slow_pair(tmp_path_factory):
    """Two traces (the GPU sample's events, repeated) whose tail takes a moment."""
    import json
    import zlib
    evs = json.loads((SAMPLES / "baseline_gpu" / "worker0.pt.trace.json").read_text())["traceEvents"]
    body = json.dumps(evs)[1:-1].encode()
    folder = tmp_path_factory.mktemp("slow")
    paths = []
    for name, reps in (("base", 40), ("target", 41)):
        path = folder / f"{name}.pt.trace.json"
        path.write_bytes(b'{"traceEvents": [' + b",".join([body] * reps) + b"]}")
        paths.append(path)
    return paths


@needs_samples
@pytest.mark.parametrize("moment", ["xlsx: forking", "xlsx: first sheets written"])
def test_stop_during_the_split_leaves_nothing(tmp_path, slow_pair, moment):
    """SIGTERM to the command while the workbook is being made by two processes (at the fork
    itself: its handler must not be lost in os.fork's exit hooks): exit 143 with the one line,
    no workbook or temporary file, no writer process left."""
    import signal
    import subprocess
    import sys
    import time
    marks = tmp_path / "marks"
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "TB_COMPARE_TIMING": str(marks), "TB_COMPARE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop(xlsx_split.ENV, None)
    proc = subprocess.Popen([sys.executable, "-m", "tb_compare_plugin.cli", *map(str, slow_pair), "-q", "--no-cache",
                             "--xlsx", str(out / "o.xlsx")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if marks.exists() and moment in marks.read_text():
                break
            time.sleep(0.002)
        if proc.poll() is not None:
            pytest.skip("the run ended before the moment")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        err = proc.stderr.read().decode()
        if proc.returncode == 0:
            pytest.skip("the run ended before the signal")
        if "cli: xlsx written" in marks.read_text():     # finished (renamed into place) first: a
            pytest.skip("the workbook was finished before the signal")   # whole file, not half a one
        assert proc.returncode == 143, err
        assert err.splitlines() == ["tb-compare: interrupted (SIGTERM)"], err
        assert os.listdir(out) == []
        time.sleep(0.3)
        left = [p for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/stat")
                and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[4] == str(proc.pid)]
        assert left == [], "processes of the stopped run's session outlived it"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


@needs_samples
@pytest.mark.parametrize("extra,setting,splits", [(("--disable-module",), None, True), ((), None, True),
                                                  ((), "0", False)])
def test_the_program_splits_its_workbook(tmp_path, extra, setting, splits):
    """By default the command forks its workbook writer for the module sheets and for the
    operator sheets (``TB_COMPARE_XLSX_SPLIT=0``: never); the fork server is stopped once both
    sides are in, so the tail's summed memory stays under the parse's."""
    import subprocess
    import sys
    marks = tmp_path / "marks"
    env = {**os.environ, "TB_COMPARE_TIMING": str(marks), "TB_COMPARE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop(xlsx_split.ENV, None)
    if setting is not None:
        env[xlsx_split.ENV] = setting
    r = subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", SAMPLES / "target_npu",
                        SAMPLES / "target_npu_v2", "-q", "--no-cache", "--xlsx", tmp_path / "o.xlsx", *extra],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    text = marks.read_text()
    assert ("xlsx: forking" in text) == splits
    assert ("xlsx: pairs sent" in text) == (splits and bool(extra))
    assert zipfile.ZipFile(tmp_path / "o.xlsx").testzip() is None


@needs_samples
def test_split_works_with_a_thousand_files_open(tmp_path, count_splits):
    """The CLI process waits for the child's messages with poll, not select (select refuses a
    descriptor numbered 1024 or more: a process with many files open, as a long test run is)."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1300:
        pytest.skip(f"the open-files limit ({hard}) leaves no room above 1024")
    if soft != resource.RLIM_INFINITY and soft < 1300:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1300 if hard == resource.RLIM_INFINITY else min(1300, hard),
                                                    hard))
    held = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        r, out = _run(tmp_path, "target_npu", "target_npu_v2", "1", "fds")
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert r.returncode == 0, r.stderr
    assert len(count_splits) == 1 and count_splits[0] is not None       # it did fork
    assert sorted(os.listdir(out)) == ["o.json", "o.xlsx"]
