"""Malformed input, through the paths users hit: every case (tests/malformed/, one module per format) is
discovered (``find_runs``) and loaded (``service.loading.load_profile``) in-process, and must end in exactly
one of two outcomes:

* a ``LoadError`` whose message names the file and the problem, or
* a best-effort load: then every engine runs on ``Comparison(prof, prof)`` without an exception,
  each side's overall parts still sum to E2E, and when rows were dropped (fewer than the pristine
  source gives, beyond what the case itself removed) a ``meta.warnings`` entry says so.

A sample of cases also goes through the CLI (exit code + one stderr line) and the plugin's
``/worker`` route (200, or 422 with the message).  When the module's tests are done, a fixture
prints a summary of what ran and writes it to ``test-artifacts/malformed_summary.txt``.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
import traceback
from collections import Counter
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT
import malformed as mc

from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.discovery import find_runs
from tb_compare_plugin.loaders.errors import LoadError
from tb_compare_plugin.service.loading import load_profile

RESULTS: list[dict] = []            # one entry per case and channel (load / cli / route)
ENGINES = ("overall", "communication", "kernels", "api", "operators", "modules", "memory", "memory_peak",
           "memory_curves")
ARTIFACT = ROOT / "test-artifacts" / "malformed_summary.txt"
# Cases that currently fail inside loaders/ascend_text.py, which another helper is rewriting;
# reported to them, not fixed here.  strict=False: they may pass once the rewrite lands.
# Empty now: the 7 cases that failed there (wrong-typed pid/tid/name/cat/id in trace_view.json,
# mis-typed profiler_info.json) pass since its rewrite; see docs/robustness.md.
KNOWN_ASCEND_TEXT: dict[str, str] = {}


class Escaped(AssertionError):
    """An exception other than LoadError got out, or an outcome broke the contract."""


def _where(exc: BaseException) -> str:
    """'file.py:line in fn' of the innermost frame inside the package (the culprit)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "tb_compare_plugin" in f.filename]
    f = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return f"{f.filename.split('tb_compare_plugin/')[-1]}:{f.lineno} in {f.name}"


_EXERCISED: set[str] = set()        # profiles the engines already ran on without a problem


def profile_key(prof) -> str:
    """Digest of everything an engine can read (tables, symbols, meta but its paths and its warnings:
    no engine reads the warnings; the overview's payload only lists them, see :func:`exercise`)."""
    import pandas as pd
    h = hashlib.sha1()
    for name in sorted(prof.tables):
        h.update(name.encode())
        h.update(pd.util.hash_pandas_object(prof.tables[name], index=False).to_numpy().tobytes())
    h.update("\0".join(prof.symbols._strings).encode("utf-8", "surrogatepass"))
    meta = {k: v for k, v in prof.meta.to_dict().items() if k not in ("path", "files", "warnings")}
    h.update(json.dumps(meta, sort_keys=True, default=str).encode())
    return h.hexdigest()


def exercise(prof) -> None:
    """Every engine on (prof, prof), the overall JSON payload, and the E2E invariant.

    Engines are pure functions of the profiles: a profile identical to one already exercised
    (e.g. the same CSV with its columns reordered, or the same rows with other load warnings) would
    give identical results, so only the part of the payload its warnings change is made again."""
    from tb_compare_plugin.http import dumps
    from tb_compare_plugin.presenters.overall_json import load_warnings, overall_payload
    key = profile_key(prof)
    if key in _EXERCISED:
        dumps(load_warnings(Comparison(prof, prof)))
        return
    cmp = Comparison(prof, prof)
    for name in ENGINES:
        getattr(cmp, name)()
    res = cmp.overall()
    for side in (res.baseline, res.target):
        assert side.check_sum() == 0, f"overall parts do not sum to E2E ({side.check_sum()} ns off)"
    dumps(overall_payload(cmp))
    _EXERCISED.add(key)


_PRISTINE: dict[str, tuple[dict, set]] = {}


def pristine(source: str, tmp_factory) -> tuple[dict, set]:
    """(table row counts, warnings) of the unmodified source the case was derived from."""
    if source not in _PRISTINE:
        d = tmp_factory.mktemp(f"pristine-{source}")
        mc.SOURCES[source](d)
        (w,) = [w for r in find_runs(str(d)) for w in r.workers]
        prof = load_profile(w)
        _PRISTINE[source] = ({k: len(v) for k, v in prof.tables.items()}, set(prof.meta.warnings))
    return _PRISTINE[source]


def run_case(case: mc.Case, dst: Path, tmp_factory=None) -> dict:
    """Build, discover, load (and exercise) one case; returns its record (never raises)."""
    rec = {"id": case.id, "group": case.group, "channel": "load", "outcome": None, "detail": "", "workers": 0}
    t0 = time.perf_counter()
    try:
        case.build(dst)
        workers = [w for r in find_runs(str(dst)) for w in r.workers]
        rec["workers"] = len(workers)
        if not workers:
            raise Escaped("discovery found no worker")
        outcomes = []
        for w in workers:
            try:
                prof = load_profile(w)
            except LoadError as e:
                msg = str(e).replace(str(dst), "<case>")
                if not any(c in msg for c in case.culprits) or not (e.problem or "").strip():
                    raise Escaped(f"LoadError does not name the file ({case.culprits}): {msg}")
                outcomes.append("LoadError")
                rec["detail"] = msg
                continue
            exercise(prof)
            if case.source and len(workers) == 1 and tmp_factory is not None:
                counts, warns = pristine(case.source, tmp_factory)
                fewer = [t for t, n in counts.items()
                         if t not in case.removes and len(prof.tables[t]) < n]
                new = set(prof.meta.warnings) - warns
                if fewer and not new:
                    raise Escaped(f"rows dropped from {fewer} without a warning")
                if new:
                    rec["detail"] = "; ".join(sorted(new))[:300]
            outcomes.append("best-effort")
        rec["outcome"] = "LoadError" if "LoadError" in outcomes else "best-effort"
    except Escaped as e:
        rec["outcome"], rec["detail"] = "escaped", str(e)
    except Exception as e:  # noqa: BLE001 - the point of the suite
        rec["outcome"] = "escaped"
        rec["detail"] = f"{type(e).__name__}: {str(e)[:200]} [{_where(e)}]"
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec


def _params():
    out = []
    for c in mc.CASES:
        marks = []
        if c.corpus:
            marks.append(pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}"))
        if c.id in KNOWN_ASCEND_TEXT:
            marks.append(pytest.mark.xfail(strict=False, reason=f"{KNOWN_ASCEND_TEXT[c.id]} — owner: "
                                           f"{mc.ASCEND_TEXT_OWNER}"))
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def _can_deny_reads(tmp: Path) -> bool:
    p = tmp / "probe"
    p.write_text("x")
    os.chmod(p, 0)
    try:
        with open(p):
            return False
    except PermissionError:
        return True
    finally:
        os.chmod(p, 0o644)


@pytest.mark.parametrize("case", _params())
def test_case(case, tmp_path, tmp_path_factory):
    if case.needs_unreadable and not _can_deny_reads(tmp_path):
        RESULTS.append({"id": case.id, "group": case.group, "channel": "load", "outcome": "skipped",
                        "detail": "chmod 000 does not deny reads here (running as root)"})
        pytest.skip("chmod 000 does not deny reads when the tests run as root")
    try:
        rec = run_case(case, tmp_path, tmp_path_factory)
    finally:
        for p in tmp_path.rglob("*"):              # let pytest clean up after chmod cases
            if not p.is_symlink():
                p.chmod(0o755)
    if case.id in KNOWN_ASCEND_TEXT and rec["outcome"] == "escaped":
        rec["outcome"] = "escaped-known"
    RESULTS.append(rec)
    assert rec["outcome"] in ("LoadError", "best-effort"), f"{case.id}: {rec['detail']}"


# ------------------------------------------------------------------------------ CLI and routes

CLI_SAMPLE = ("trace-truncate-in_string", "trace-raw-empty", "gzip-truncated-2", "trace-wrongtype-ts",
              "db-random-bytes", "csv-missing-required-kernel_details-Start Time(us)",
              "csv-bad-cells-kernel_details-Duration(us)", "layout-folder-named-like-trace")
ROUTE_SAMPLE = CLI_SAMPLE + ("trace-doc-no-traceEvents", "trace-list-form", "db-missing-TASK",
                             "csv-raw-kernel_details-non-utf8", "layout-empty-worker", "gzip-bad-crc",
                             "db-zero-bytes", "trace-ids-2p64", "trace-bare-NaN-ts", "db-wrongtype-task-start-text")


def _single_root(case: mc.Case, dst: Path) -> str:
    case.build(dst)
    (w,) = [w for r in find_runs(str(dst)) for w in r.workers]
    return w.root


def test_cli_sample(tmp_path):
    """Each case is its own CLI run (``tb-compare ROOT ROOT --json -``), judged on its own; one
    long-lived process takes the runs one after another (test_malformed_cli's BatchCli), not one
    interpreter per case."""
    from test_malformed_cli import BatchCli
    cases = mc.by_id()
    jobs = []
    for i, cid in enumerate(CLI_SAMPLE):
        d = tmp_path / f"c{i}"
        d.mkdir()
        root = _single_root(cases[cid], d)
        # most in-process (fast); some through parser processes
        env = {"TB_COMPARE_CACHE": "0", "TB_COMPARE_PROCESSES": "0" if i % 4 else None}
        out = tmp_path / f"o{i}"                     # the run's stdout / stderr, outside the case's folder
        out.mkdir()
        jobs.append((cid, root, env, out))
    failures = []
    cli = BatchCli(tmp_path)
    try:
        for cid, root, env, d in jobs:
            if cli.proc.poll() is not None:          # a previous run took the process down
                cli = BatchCli(tmp_path)
            rc, stdout, stderr = cli.run_argv([root, root, "--json", "-", "--no-progress"], d, env=env)
            rec = {"id": cid, "group": cases[cid].group, "channel": "cli", "detail": stderr.strip()[:300]}
            lines = stderr.strip().splitlines()
            if rc == 0:
                ok = bool(json.loads(stdout).get("overall_metrics") is not None) and "Traceback" not in stderr
                rec["outcome"] = "best-effort" if ok else "escaped"
            else:
                ok = (rc is not None and len(lines) == 1 and lines[0].startswith("tb-compare: error:")
                      and any(c in lines[0] for c in cases[cid].culprits))
                rec["outcome"] = "LoadError" if ok else "escaped"
            RESULTS.append(rec)
            if rec["outcome"] == "escaped":
                failures.append((cid, rc, stderr[-600:]))
    finally:
        cli.close()
    assert not failures, failures


def test_route_sample(tmp_path):
    from test_plugin_routes import PREFIX, make_client
    cases = mc.by_id()
    logdir = tmp_path / "logdir"
    for i, cid in enumerate(ROUTE_SAMPLE):
        d = logdir / f"r{i:02d}"
        d.mkdir(parents=True)
        cases[cid].build(d)
    c = make_client(logdir)
    listing = json.loads(c.get(PREFIX + "/runs").get_data())
    by_run = {r["name"]: [w["id"] for w in r["workers"]] for r in listing["runs"]}
    every = [wid for wids in by_run.values() for wid in wids]
    r = c.post(PREFIX + "/load", data=json.dumps({"workers": every}), content_type="application/json")
    assert r.status_code == 200, r.get_data()[:300]
    failures = []
    for i, cid in enumerate(ROUTE_SAMPLE):
        ids = [wid for run, wids in by_run.items() if run.split("/")[0] == f"r{i:02d}" for wid in wids]
        rec = {"id": cid, "group": cases[cid].group, "channel": "route", "detail": ""}
        outcomes = []
        for wid in ids:
            for _ in range(120):
                r = c.get(PREFIX + "/worker", query_string={"id": wid})
                if r.status_code not in (202, 409):    # 409: not parsed yet (the load is queued)
                    break
                time.sleep(0.25)
            body = json.loads(r.get_data()) if r.headers.get("Content-Type", "").startswith("application/json") else {}
            if r.status_code == 200 and "summary" in body:
                outcomes.append("best-effort")
            elif r.status_code == 422 and any(x in body.get("error", "") for x in cases[cid].culprits):
                outcomes.append("LoadError")
                rec["detail"] = body["error"][:300]
            else:
                outcomes.append("escaped")
                rec["detail"] = f"{wid}: HTTP {r.status_code} {r.get_data()[:300]!r}"
        if not ids:
            outcomes, rec["detail"] = ["escaped"], "not listed by the runs route"
        rec["outcome"] = ("escaped" if "escaped" in outcomes else
                          "LoadError" if "LoadError" in outcomes else "best-effort")
        RESULTS.append(rec)
        if rec["outcome"] == "escaped":
            failures.append((cid, rec["detail"]))
    assert not failures, failures


# ------------------------------------------------------------------------------ the fixes this suite drove

def test_discovery_error_names_the_trace(tmp_path):
    """classify: the trace peek gives the problem only; the worker's error must name the file."""
    (tmp_path / "a.pt.trace.json").write_text('{"schemaVersion": 1, "traceEvents": 7}')
    (w,) = [w for r in find_runs(str(tmp_path)) for w in r.workers]
    assert w.error.startswith(str(tmp_path / "a.pt.trace.json") + ": "), w.error
    with pytest.raises(LoadError, match="a.pt.trace.json"):
        load_profile(w)


def test_unlistable_output_folder_says_permission_denied(tmp_path, monkeypatch):
    """classify: an ASCEND_PROFILER_OUTPUT that cannot be listed was reported as "not collected or
    not parsed yet"; now the OS error is named (simulated: the tests run as root)."""
    from tb_compare_plugin.formats import ascend_family as classify
    out = tmp_path / mc.WORKER / mc.OUT
    out.mkdir(parents=True)
    real = os.listdir

    def listdir(p="."):
        if str(p) == str(out):
            raise PermissionError(13, "Permission denied", str(p))
        return real(p)
    monkeypatch.setattr(classify.os, "listdir", listdir)
    spec = classify.classify_ascend_dir(".", str(tmp_path / mc.WORKER))
    assert spec.error == f"{out}: cannot list the folder (Permission denied)", spec.error


def test_deeply_nested_json_is_a_load_error(tmp_path):
    """jsonstream: msgspec's RecursionError becomes a LoadError naming the file."""
    from tb_compare_plugin.loaders import kineto_json
    p = tmp_path / "deep.pt.trace.json"
    p.write_text('{"traceEvents": [{"ph": "X", "args": ' + "[" * 3000 + "]" * 3000 + "}]}")
    with pytest.raises(LoadError, match="deep.pt.trace.json.*nested too deeply"):
        kineto_json.load(str(p))


def test_csv_helpers_survive_odd_values(tmp_path):
    """ascend_csv: int64 overflow -> -1 (not INT64_MIN), unhashable trace names, a cut-off last row."""
    import numpy as np
    from tb_compare_plugin.loaders import ascend_csv
    assert ascend_csv._int(np.array([1e23, -1e30, np.inf, np.nan, 7.0])).tolist() == [-1, -1, -1, -1, 7]
    rows = ascend_csv.match_rows([["a"], "k", None], np.array([1, 2, 3]), np.array(["k", None], dtype=object),
                                 np.array([2, 3]))
    assert rows.tolist() == [-1, 0, 1]
    assert ascend_csv.kind_of([["AI_CORE"], "AI_CORE"], np.array([None, None], dtype=object)).tolist()[1] == 0
    p = tmp_path / "kernel_details.csv"
    p.write_bytes(b"Name,Start Time(us)\r\nk,1.000\t\r\nk2,2.0")
    warnings: list = []
    cols, _ = ascend_csv.read_kernel_details(str(p), warnings)
    assert cols["start_ns"].tolist() == [1000, 2000]
    assert any("does not end with a line break" in w for w in warnings), warnings
    # a first row with extra cells must not shift every column (pandas would make an index of them)
    p.write_bytes(b"Name,Start Time(us)\r\nk,1.000\t,x,y\r\nk2,2.000\r\n")
    cols, _ = ascend_csv.read_kernel_details(str(p), [])
    assert cols["name"].tolist() == ["k", "k2"] and cols["start_ns"].tolist() == [1000, 2000]


def test_mixed_capture_folder_is_reported(tmp_path):
    """ascend_db: a text export of rank 0 plus the .db of rank 1 in one output folder loads the .db
    (discovery prefers it) and says so, rank mismatch included."""
    case = mc.by_id()["layout-text-plus-other-rank-db"]
    case.build(tmp_path)
    (w,) = [w for r in find_runs(str(tmp_path)) for w in r.workers]
    prof = load_profile(w)
    text = "\n".join(prof.meta.warnings)
    assert "profiler_info_0.json says rank 0 but ascend_pytorch_profiler_1.db holds rank 1" in text, text
    assert "also holds trace_view.json (a text export); only ascend_pytorch_profiler_1.db is read" in text, text


def test_two_trace_events_arrays_are_a_load_error(tmp_path):
    """kineto_json: with a second "traceEvents" key the first array was used and the second one
    silently ignored (only "the trace has no events" when the first is empty)."""
    from tb_compare_plugin.loaders import kineto_json
    p = tmp_path / "two.pt.trace.json"
    p.write_text('{"traceEvents": [], "x": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1}]}')
    with pytest.raises(LoadError, match='two.pt.trace.json: .*two "traceEvents" arrays'):
        kineto_json.load(str(p))


def test_db_tolerates_duplicates_unknown_types_and_mistyped_json(tmp_path):
    """ascend_db: repeated CONNECTION_IDS rows keep the fwd->bwd pairs; PYTORCH_API rows of an
    unknown type are counted in a warning; mis-typed profiler_info / metadata values are ignored."""
    import sqlite3
    from tb_compare_plugin.loaders import ascend_db
    db = tmp_path / "x_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / mc.DB
    db.parent.mkdir(parents=True)
    mc.make_tiny_db(db)
    c = sqlite3.connect(db)
    c.executescript("INSERT INTO CONNECTION_IDS VALUES (1, 5000), (3, 5000);"          # a fwd->bwd link
                    "INSERT INTO CONNECTION_IDS SELECT * FROM CONNECTION_IDS;"         # every row twice
                    "INSERT INTO PYTORCH_API VALUES ('1','2',1,NULL,1,NULL,NULL,NULL,NULL,NULL,'op',0);")
    c.commit()
    c.close()
    (db.parent.parent / "profiler_info_0.json").write_text('{"config": {"experimental_config": "L1"}, "rank_id": [1]}')
    (db.parent.parent / "profiler_metadata.json").write_text('{"parallel_group_info": {"0": {"group_name": [1]}}}')
    prof = ascend_db.load(str(db))
    assert len(prof.fwdbwd) == 1
    assert any("PYTORCH_API: 1 row(s)" in w for w in prof.meta.warnings), prof.meta.warnings
    assert prof.meta.profiler_level is None and prof.meta.pg_names == {"0": "[1]"}


def test_db_junk_times_are_skipped_not_read_as_zero(tmp_path):
    """ascend_db: SQLite's CAST turns 'abc' into 0, a time 54 years before the capture: such rows
    (and NULL / blob / out-of-range times) are skipped with a warning; reversed rows get dur 0."""
    import sqlite3
    from tb_compare_plugin.engines.overall import breakdown
    from tb_compare_plugin.loaders import load
    db = tmp_path / mc.DB
    mc.make_tiny_db(db)
    c = sqlite3.connect(db)
    c.executescript("UPDATE TASK SET startNs = 'abc' WHERE rowid = 1; UPDATE TASK SET endNs = 1e300 WHERE rowid = 2;"
                    "UPDATE TASK SET endNs = startNs - 5 WHERE rowid = 3;"
                    "UPDATE PYTORCH_API SET startNs = '' WHERE rowid = 3; UPDATE OVERLAP_ANALYSIS SET type = 'x';"
                    "UPDATE MEMORY_RECORD SET totalAllocated = 'lots' WHERE rowid = 1;")
    c.commit()
    c.close()
    prof = load("ascend-db", str(db))                 # through its descriptor: engines read its facts
    w = "\n".join(prof.meta.warnings)
    for text in ("TASK: 2 row(s) without a readable startNs/endNs", "TASK: 1 row(s) ending before they start",
                 "PYTORCH_API: 1 row(s) without", "OVERLAP_ANALYSIS: 10 row(s) of an unknown type"):
        assert text in w, w
    assert (prof.kernels["start_ns"] > 10 ** 18).all() and (prof.kernels["dur_ns"] >= 0).all()
    assert breakdown(prof).ns("e2e") < 10 ** 9
    assert prof.mem_records["allocated_bytes"].isna().sum() == 1


# ------------------------------------------------------------------------------ summary

def summary_text(results: list[dict]) -> str:
    lines = ["malformed-input suite: outcomes per channel", ""]
    kinds = ("LoadError", "best-effort", "escaped", "escaped-known", "skipped")
    lines.append(f"{'channel':<8} {'tried':>6} " + " ".join(f"{k:>13}" for k in kinds))
    for ch in ("load", "cli", "route"):
        rs = [r for r in results if r["channel"] == ch]
        cnt = Counter(r["outcome"] for r in rs)
        lines.append(f"{ch:<8} {len(rs):>6} " + " ".join(f"{cnt.get(k, 0):>13}" for k in kinds))
    load = [r for r in results if r["channel"] == "load"]
    lines += ["", "load channel by group:"]
    for g in sorted({r["group"] for r in load}):
        cnt = Counter(r["outcome"] for r in load if r["group"] == g)
        lines.append(f"  {g:<12} " + ", ".join(f"{k} {v}" for k, v in sorted(cnt.items())))
    bad = [r for r in results if r["outcome"] in ("escaped", "escaped-known")]
    lines += ["", f"escaped: {sum(r['outcome'] == 'escaped' for r in results)} "
                  f"(+{sum(r['outcome'] == 'escaped-known' for r in results)} known, owned by ascend_text.py)"]
    lines += [f"  [{r['channel']}] {r['id']}: {r['detail']}" for r in bad]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module", autouse=True)
def _write_summary():
    """After this module's tests, whichever of them ran and in whatever order, print what they
    recorded and write it to test-artifacts/ (a report, not a check: each test asserts itself)."""
    yield
    if RESULTS:
        text = summary_text(RESULTS)
        ARTIFACT.parent.mkdir(exist_ok=True)
        ARTIFACT.write_text(text)
        print("\n" + text)


def test_summary_counts_every_channel_and_lists_escapes():
    """The summary's own arithmetic, on records made here (no dependence on other tests)."""
    recs = [{"id": "a", "group": "trace", "channel": "load", "outcome": "LoadError", "detail": ""},
            {"id": "b", "group": "trace", "channel": "load", "outcome": "best-effort", "detail": ""},
            {"id": "c", "group": "ascend-db", "channel": "load", "outcome": "escaped", "detail": "boom"},
            {"id": "d", "group": "layout", "channel": "load", "outcome": "skipped", "detail": "root"},
            {"id": "a", "group": "trace", "channel": "cli", "outcome": "LoadError", "detail": ""},
            {"id": "e", "group": "trace", "channel": "route", "outcome": "escaped-known", "detail": "known"}]
    lines = summary_text(recs).splitlines()
    rows = {ln.split()[0]: [int(x) for x in ln.split()[1:]] for ln in lines[3:6]}
    #                  tried LoadError best-effort escaped escaped-known skipped
    assert rows["load"] == [4, 1, 1, 1, 0, 1]
    assert rows["cli"] == [1, 1, 0, 0, 0, 0]
    assert rows["route"] == [1, 0, 0, 0, 1, 0]
    assert "  trace        LoadError 1, best-effort 1" in lines
    assert "  ascend-db    escaped 1" in lines
    assert "escaped: 1 (+1 known, owned by ascend_text.py)" in lines
    assert "  [load] c: boom" in lines and "  [route] e: known" in lines
