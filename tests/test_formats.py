"""Format descriptors (formats/): the registry, the facts a descriptor records for engines, a
toy format added through its descriptor alone (discovery, CLI JSON, a route, the workbook), and
ProfileSet on the corpus' 2-rank runs."""
from __future__ import annotations

import argparse
import ast
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tb_compare_plugin.discovery import classify_path, find_runs
from tb_compare_plugin.formats import registry
from tb_compare_plugin.formats.base import CAPABILITIES
from tb_compare_plugin.loaders import LoadError, load
from tb_compare_plugin.model.profileset import NAME_COLUMNS, ProfileSet

import toyformat
from conftest import CORPUS, needs_corpus

PKG = Path(__file__).resolve().parent.parent / "tb_compare_plugin"


# ------------------------------------------------------------------------------ the registry

def test_builtin_formats_in_order():
    assert registry.builtin_ids() == ("trace-json", "ascend-text", "ascend-db", "mindspore-text", "mindspore-db",
                                      "mindspore-legacy", "msprof-cann", "mindspore-msprof")
    for d in registry.BUILTIN:
        assert registry.get(d.id) is d
        assert d.capabilities <= CAPABILITIES, d
        assert {"task_types_from_db", "us_text", "unreleased_text"} <= set(d.facts), d
    assert registry.get("ascend-db").facts["task_types_from_db"] is True
    assert registry.get("mindspore-db").framework == "MindSpore"
    with pytest.raises(registry.UnknownFormat):
        registry.get("nope")


def test_unknown_format_is_a_load_error(tmp_path):
    with pytest.raises(LoadError, match="unknown profile format 'nope'"):
        load("nope", str(tmp_path))


def test_no_engine_reads_the_format_id():
    """Engines ask what a profile holds (meta facts, capabilities), never which format it is."""
    offenders = []
    for path in sorted((PKG / "engines").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "format" and \
                    isinstance(node.value, ast.Attribute) and node.value.attr == "meta":
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders


@needs_corpus
def test_every_corpus_worker_has_its_descriptor():
    for run in find_runs(str(CORPUS)):
        for w in run.workers:
            d = registry.get(w.format)
            assert d.device == w.device or w.device == "CPU", w


@needs_corpus
def test_loaded_profiles_carry_their_format_facts():
    db = load("ascend-db", str(CORPUS / "npu/alexnet_ddp_2rank_db_level0/rank0_ascend_pt"))
    assert db.meta.task_types_from_db and db.meta.us_text == "float" and db.meta.unreleased_text == "0.0"
    assert "pmu" in db.meta.capabilities
    gpu = load("trace-json", str(CORPUS / "gpu/hta_2rank/rank0.pt.trace.json.gz"))
    assert not gpu.meta.task_types_from_db and gpu.meta.us_text == "trim" and "kernels" in gpu.meta.capabilities


def test_finish_restores_facts_on_a_profile_from_an_old_cache_entry():
    from tb_compare_plugin.model import Profile, ProfileMeta, SymbolTable
    p = Profile(SymbolTable(), ProfileMeta(device="NPU", format="mindspore-db"))
    assert not p.meta.task_types_from_db
    registry.finish(p)
    assert p.meta.task_types_from_db and p.meta.unreleased_text == "0.0"


# ------------------------------------------------------------------------------ a toy format

@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(registry, "_formats", list(registry._formats))
    registry.register(toyformat.DESCRIPTOR)
    monkeypatch.setenv("TB_COMPARE_PROCESSES", "0")
    return toyformat


def _toy_logdir(tmp_path):
    for run, scale in (("base", 1.0), ("target", 1.5)):
        (tmp_path / run).mkdir()
        toyformat.write_toy(tmp_path / run / f"w0{toyformat.SUFFIX}", scale)
    return tmp_path


def test_toy_format_is_discovered(toy, tmp_path):
    logdir = _toy_logdir(tmp_path)
    ws = {w.id: w for r in find_runs(str(logdir)) for w in r.workers}
    assert set(ws) == {"base/w0", "target/w0"}
    assert ws["base/w0"].format == "toy" and ws["base/w0"].rank == 0 and ws["base/w0"].steps == (1, 2)
    assert [w.format for w in classify_path(str(logdir / "base" / f"w0{toy.SUFFIX}"))] == ["toy"]


def test_toy_format_unknown_without_its_descriptor(tmp_path):
    logdir = _toy_logdir(tmp_path)
    assert find_runs(str(logdir)) == []


def test_unrecognised_file_names_the_registered_formats(toy, tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    with pytest.raises(ValueError, match=r"profiler output folder, or a \*\.toyprof\.json\)"):
        classify_path(str(f))


def test_a_failing_recogniser_does_not_stop_discovery(toy, tmp_path, caplog):
    class Broken(toyformat.ToyFormat):
        id = "broken"

        def recognise(self, path, run=None):
            raise RuntimeError("bug in an add-on")
    registry.register(Broken(), first=True)
    logdir = _toy_logdir(tmp_path)
    ws = {w.id: w.format for r in find_runs(str(logdir)) for w in r.workers}
    assert ws == {"base/w0": "toy", "target/w0": "toy"}
    assert "format broken failed to recognise" in caplog.text and "bug in an add-on" in caplog.text


def test_toy_format_in_the_cli_json_and_workbook(toy, tmp_path, capsys):
    from tb_compare_plugin import cli
    logdir = _toy_logdir(tmp_path)
    out, book = tmp_path / "out.json", tmp_path / "out.xlsx"
    rc = cli.main([str(logdir / "base" / f"w0{toy.SUFFIX}"), str(logdir / "target" / f"w0{toy.SUFFIX}"),
                   "--json", str(out), "--xlsx", str(book), "--no-cache", "--no-progress", "-q"])
    assert rc == 0, capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert doc["baseline"]["format"] == "toy" and doc["target"]["format"] == "toy"
    rows = {r["key"] if "key" in r else r.get("name"): r for r in doc["overall_metrics"]}
    assert rows, doc["overall_metrics"]
    with zipfile.ZipFile(book) as z:
        text = "".join(z.read(n).decode("utf-8", "replace") for n in z.namelist() if n.endswith(".xml"))
    assert "toy" in text


def test_toy_format_from_the_environment_in_tb_compare(tmp_path):
    """A format named by TB_COMPARE_FORMATS is known to every process: the `tb-compare` command as
    users run it, with its parser processes (they parse the toy files) and the profile cache."""
    import os
    import subprocess
    import sys
    logdir = _toy_logdir(tmp_path)
    env = dict(os.environ, TB_COMPARE_FORMATS="toyformat", TB_COMPARE_PROCESSES="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    args = [sys.executable, "-m", "tb_compare_plugin.cli", str(logdir / "base"), str(logdir / "target"),
            "--json", "-", "--no-progress"]
    for _ in range(2):                                  # parsed, then read back from the cache
        r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr and "warning" not in r.stderr.lower(), r.stderr
        doc = json.loads(r.stdout)
        assert doc["baseline"]["format"] == "toy" and doc["target"]["worker"] == "w0"
    r = subprocess.run(args, capture_output=True, text=True, timeout=300,
                       env=dict(env, TB_COMPARE_FORMATS="no_such_module"))
    assert r.returncode != 0 and "no_such_module" in r.stderr and "Traceback" not in r.stderr


def test_toy_format_through_a_route(toy, tmp_path):
    from werkzeug.test import Client
    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from tb_compare_plugin.loader import ProfileCompareLoader
    logdir = _toy_logdir(tmp_path)
    ctx = base_plugin.TBContext(logdir=str(logdir), flags=argparse.Namespace(profile_compare_scan_interval=1.0))
    plugin = ProfileCompareLoader().load(ctx)
    c = Client(application.TensorBoardWSGI([plugin]))
    prefix = "/data/plugin/profile_compare"
    runs = json.loads(c.get(prefix + "/runs").get_data())["runs"]
    assert {w["id"]: w["format"] for r in runs for w in r["workers"]} == {"base/w0": "toy", "target/w0": "toy"}
    body = json.dumps({"baseline": "base/w0", "target": "target/w0"})
    for _ in range(100):
        r = c.post(prefix + "/compare/overall", data=body, content_type="application/json")
        if r.status_code != 202:
            break
    assert r.status_code == 200, r.get_data()[:500]
    doc = json.loads(r.get_data())
    assert doc["baseline"]["format"] == "toy" and doc["overall_metrics"]
    r = c.post(prefix + "/compare/xlsx", data=body, content_type="application/json")
    assert r.status_code == 200
    with zipfile.ZipFile(io.BytesIO(r.get_data())) as z:
        assert any(n.startswith("xl/worksheets/") for n in z.namelist())
    if hasattr(plugin, "close"):
        plugin.close()


# ------------------------------------------------------------------------------ ProfileSet

def _run_set(rel: str) -> ProfileSet:
    ws = [w for r in find_runs(str(CORPUS / rel)) for w in r.workers]
    return ProfileSet([load(w.format, w.root) for w in ws], ranks=[w.rank for w in ws], run=rel)


@needs_corpus
@pytest.mark.parametrize("rel", ["npu/alexnet_ddp_2rank_level1", "gpu/hta_2rank"])
def test_profileset_shares_one_name_lookup(rel):
    ps = _run_set(rel)
    assert ps.ranks == (0, 1) and len(ps) == 2
    shared = ps.symbols.as_array()
    for rank, prof in ps.items():
        local = prof.symbols.as_array()
        for table, cols in NAME_COLUMNS.items():
            df = prof.tables[table]
            for c in cols:
                ids = df[c].to_numpy()
                assert (shared[ps.shared_ids(rank, ids)] == local[ids]).all(), (rank, table, c)
    # one name, one id on both ranks
    names = [set(p.symbols.to_list()) for p in ps]
    common = sorted((names[0] & names[1]) - {""})[:50]
    for n in common:
        ids = {int(ps.shared_ids(r, [p.symbols.lookup(n)])[0]) for r, p in ps.items()}
        assert ids == {ps.id_of(n)}
    k = ps.table("kernels")
    assert list(k.columns[:1]) == ["rank"] and len(k) == sum(len(p.kernels) for p in ps)
    assert set(np.unique(k["rank"])) == {0, 1}
    assert ps.has()["kernels"] and "kernels" in ps.capabilities()


def test_profileset_refuses_duplicate_or_missing_ranks():
    from tb_compare_plugin.model import Profile, ProfileMeta, SymbolTable
    a = Profile(SymbolTable(), ProfileMeta(rank=0, path="a"))
    b = Profile(SymbolTable(), ProfileMeta(rank=0, path="b"))
    with pytest.raises(ValueError, match="rank 0 appears more than once"):
        ProfileSet([a, b])
    with pytest.raises(ValueError, match="no rank"):
        ProfileSet([Profile(SymbolTable(), ProfileMeta(path="c"))])
    assert ProfileSet([a, b], ranks=[1, 0]).ranks == (0, 1)
