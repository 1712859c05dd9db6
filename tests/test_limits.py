"""Hostile sizes, interrupted runs, stale caches and ignored options: the resource side of
"no silent wrong answers".  Every input is generated in tmp_path."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import SAMPLES

GPU_SAMPLE = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"


def tbc(*args, env=None, timeout=300):
    cmd = [sys.executable, "-m", "tb_compare_plugin.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def test_gpu_flow_cat_is_not_accepted():
    """The option changed nothing (the loader links kernels by correlation id, then through the
    flow events of every Kineto category), so it is gone rather than silently ignored."""
    r = tbc(GPU_SAMPLE, GPU_SAMPLE, "--gpu-flow-cat", "ac2g", "--no-cache")
    assert r.returncode == 2
    assert "--gpu-flow-cat" in r.stderr


# -- hostile sizes ---------------------------------------------------------------------------
import gzip  # noqa: E402
import json  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tb_compare_plugin.loaders import LoadError, jsonstream, kineto_json  # noqa: E402

MB = 1 << 20


def _sample_kernels() -> int:
    """Device events (kernels and copies) of the GPU sample: what the loader's kernels table holds."""
    return sum(e.get("cat") in ("kernel", "gpu_memcpy") for e in json.loads(GPU_SAMPLE.read_text())["traceEvents"])


def _event_halves():
    evs = json.loads(GPU_SAMPLE.read_text())["traceEvents"]
    half = len(evs) // 2
    return json.dumps(evs[:half])[1:-1].encode(), json.dumps(evs[half:])[1:-1].encode()


def _write(path, parts, gz: bool):
    """Write ``parts`` (bytes, or (byte, count) for a run of ``count`` copies of one byte)."""
    z = zlib.compressobj(1, zlib.DEFLATED, 31) if gz else None
    with open(path, "wb") as f:
        for p in parts:
            pieces = [p] if isinstance(p, bytes) else [p[0] * MB] * (p[1] // MB) + [p[0] * (p[1] % MB)]
            for piece in pieces:
                f.write(z.compress(piece) if z else piece)
        if z:
            f.write(z.flush())
    return path


SYMBOL_COLS = {"name", "cat", "task_type", "input_shapes", "input_types", "call_stack", "group", "op_type"}


def _same_tables(a, b):
    """Equal tables, symbol columns compared as text (chunking changes the interning order)."""
    assert a.tables.keys() == b.tables.keys()
    for name in a.tables:
        ta, tb = a.tables[name].copy(), b.tables[name].copy()
        for c in SYMBOL_COLS & set(ta.columns):
            ta[c] = [a.symbols.string(int(i)) for i in ta[c]]
            tb[c] = [b.symbols.string(int(i)) for i in tb[c]]
        assert ta.equals(tb), name


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_whitespace_between_events_loads(tmp_path, gz):
    """50 MB of whitespace between two events (and around the array's key) load the same events."""
    a, b = _event_halves()
    ref = kineto_json.load(_write(tmp_path / "ref.json", [b'{"traceEvents": [', a, b",", b, b"]}"], False))
    f = _write(tmp_path / ("ws.json.gz" if gz else "ws.json"),
               [b'{"schemaVersion": 1,', (b"\n", 2 * MB), b'"traceEvents":', (b" ", 2 * MB), b"[",
                (b" ", MB), a, (b"\n", 50 * MB), b",", (b"\t", 50 * MB), b, (b" ", 2 * MB), b"]",
                (b"\r\n", 2 * MB), b"}"], gz)
    got = kineto_json.load(f)
    _same_tables(got, ref)
    assert not got.meta.warnings


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_whitespace_only_array_is_not_buffered(tmp_path, gz):
    """An events array of nothing but whitespace ends with no chunk, and a gzip stream does not
    keep the whitespace: the reader's buffer stays small."""
    f = _write(tmp_path / ("only.json.gz" if gz else "only.json"),
               [b'{"traceEvents": [', (b" ", 40 * MB), b'], "x": 1}'], gz)
    import tracemalloc
    seen = []
    res = jsonstream.StreamResult()
    tracemalloc.start()
    try:
        assert list(jsonstream.iter_event_chunks(str(f), lambda v: seen.append(len(v)), result=res)) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.outside == {"x": 1} and res.total_bytes == 40 * MB + 27
    assert seen == [] and peak < 20 * MB


def test_whitespace_after_an_event_is_not_buffered(tmp_path):
    """In a gzip stream, a long run of whitespace after 'event,' ends the chunk before it and
    is then dropped, so memory does not grow with the run."""
    import tracemalloc
    a, b = _event_halves()
    f = _write(tmp_path / "mid.json.gz", [b'{"traceEvents": [', a, b",", (b" \n", 40 * MB), b, b"]}"], True)
    tracemalloc.start()
    try:
        prof = kineto_json.load(str(f))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(prof.tables["kernels"]) == _sample_kernels()
    assert peak < 30 * MB, peak


def test_last_non_ws_matches_a_byte_loop():
    rng = np.random.default_rng(1)
    for n in (0, 1, 300, 5000, 4096 * 3 + 5, 2 * jsonstream.WS_BLOCK + 9000):
        buf = bytearray(rng.choice(list(b" \t\r\n"), n).astype(np.uint8).tobytes())
        assert jsonstream.last_non_ws(buf, 0, n) == -1
        for at in sorted({0, n // 3, n - 1}):
            if 0 <= at < n:
                b = bytearray(buf)
                b[at] = ord("}")
                assert jsonstream.last_non_ws(b, 0, n) == at
                assert jsonstream.last_non_ws(b, at + 1, n) == at
                b += b"x"                        # the buffer must stay resizable


def test_skip_ws_matches_a_byte_loop():
    rng = np.random.default_rng(0)
    for n in (0, 1, 255, 256, 257, 5000, 3 * jsonstream.WS_BLOCK + 7):
        buf = bytearray(rng.choice(list(b" \t\r\n"), n).astype(np.uint8).tobytes())
        for stop in sorted({0, n // 2, n - 1}):
            if 0 <= stop < n:
                b = bytearray(buf)
                b[stop] = ord("x")
                assert jsonstream.skip_ws(b, 0, n) == stop
                b += b"tail"                     # the buffer must stay resizable
        assert jsonstream.skip_ws(buf, 0, n) == n


def test_gzip_past_the_expanded_limit(tmp_path, monkeypatch):
    """A small gzip that expands past the configured limit fails with the file and the limit named."""
    a, b = _event_halves()
    f = _write(tmp_path / "bomb.json.gz", [b'{"traceEvents": [', a, b",", (b" ", 12 * MB), b, b"]}"], True)
    assert os.path.getsize(f) < 600_000                 # 12+ MB expanded
    monkeypatch.setenv("TB_COMPARE_MAX_EXPANDED_MB", "5")
    with pytest.raises(LoadError) as e:
        kineto_json.load(str(f))
    msg = str(e.value)
    assert "bomb.json.gz" in msg and "5.00 MB" not in msg and "5 MB" in msg and "TB_COMPARE_MAX_EXPANDED_MB" in msg
    monkeypatch.setenv("TB_COMPARE_MAX_EXPANDED_MB", "20")
    assert len(kineto_json.load(str(f)).tables["kernels"]) == _sample_kernels()


def test_plain_file_past_the_limit_and_a_bad_setting(tmp_path, monkeypatch):
    f = _write(tmp_path / "big.json", [b'{"traceEvents": [', (b" ", 3 * MB), b"]}"], False)
    monkeypatch.setenv("TB_COMPARE_MAX_EXPANDED_MB", "2")
    with pytest.raises(LoadError, match=r"big\.json: the file is 3,145,7\d\d bytes, more than the limit of 2 MB"):
        kineto_json.load(str(f))
    monkeypatch.setenv("TB_COMPARE_MAX_EXPANDED_MB", "lots")
    with pytest.raises(LoadError, match="TB_COMPARE_MAX_EXPANDED_MB='lots' is not a positive number"):
        kineto_json.load(str(f))


def test_cli_max_expanded_mb(tmp_path):
    a, b = _event_halves()
    f = _write(tmp_path / "w.pt.trace.json.gz", [b'{"traceEvents": [', a, b",", (b" ", 3 * MB), b, b"]}"], True)
    r = tbc(f, f, "--max-expanded-mb", "2", "--no-cache", "--json", "-")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "w.pt.trace.json.gz" in err and "limit of 2 MB" in err, err
    assert tbc(f, f, "--max-expanded-mb", "0").returncode == 1
    assert tbc(f, f, "--max-expanded-mb", "8", "--no-cache", "-q").returncode == 0


# -- stopped by a signal ---------------------------------------------------------------------
import glob  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory):
    """A real trace (the sample's events, repeated) big enough to take seconds to parse."""
    a, b = _event_halves()
    body = a + b"," + b
    path = tmp_path_factory.mktemp("big") / "big.pt.trace.json.gz"
    _write(path, [b'{"traceEvents": [', body] + [b"," + body] * 300 + [b"]}"], True)
    return path


def _descendants(pid: int) -> set[int]:
    parent = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            parent[int(stat.split("/")[2])] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.update(kids)
        todo.extend(kids)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_cli_stopped_mid_parse_leaves_nothing_behind(tmp_path, big_trace, sig):
    scratch, cache = tmp_path / "shm", tmp_path / "cache"
    scratch.mkdir()
    env = {**os.environ, "TB_COMPARE_CACHE_DIR": str(cache), "TB_COMPARE_SCRATCH_DIR": str(scratch)}
    p = subprocess.Popen([sys.executable, "-m", "tb_compare_plugin.cli", str(big_trace), str(big_trace),
                          "--no-progress", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 120
        started = False
        while not started and time.monotonic() < deadline and p.poll() is None:
            for f in glob.glob(str(scratch / "tbc-pool-*" / "*")):
                try:
                    started |= float(open(f).read() or 0) > 0.01
                except (OSError, ValueError):
                    pass
            time.sleep(0.05)
        assert started, "the parse never started"
        kids = _descendants(p.pid)
        assert kids
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + sig, err
    lines = err.decode().strip().splitlines()
    assert lines == [f"tb-compare: interrupted ({sig.name})"], err.decode()
    deadline = time.monotonic() + 10
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [k for k in kids if _alive(k)], "parser processes outlived the CLI"
    assert os.listdir(scratch) == []
    for dirpath, dirs, files in os.walk(cache):
        assert not [d for d in dirs if d.startswith(".")], (dirpath, dirs)     # half-written entries
        if os.path.basename(dirpath) not in ("json",) and files and os.path.dirname(dirpath) != str(cache):
            assert "meta.json" in files, dirpath


# -- caches keyed by the code that made them ---------------------------------------------------
from tb_compare_plugin import cache as cache_mod  # noqa: E402
from tb_compare_plugin.cache import ProfileCache  # noqa: E402


def test_changed_code_misses_the_profile_and_results_caches(tmp_path, monkeypatch):
    prof = kineto_json.load(str(GPU_SAMPLE))
    c = ProfileCache(str(tmp_path / "cache"))
    fp = ("trace-json", str(GPU_SAMPLE), 1)
    assert c.put(fp, prof)
    c.put_json(["overall", "a", "b"], {"rows": [1, 2]})
    assert c.get(fp) is not None and c.get_json(["overall", "a", "b"]) == {"rows": [1, 2]}
    real = cache_mod.code_hash
    monkeypatch.setattr(cache_mod, "code_hash", lambda kind="profile": real(kind) + "-new" if kind == "results" else real(kind))
    assert c.get(fp) is not None                         # loader code unchanged: the profile still serves
    assert c.get_json(["overall", "a", "b"]) is None     # engine/presenter code changed: the result does not
    monkeypatch.setattr(cache_mod, "code_hash", lambda kind="profile": real(kind) + "-new")
    assert not c.has(fp) and c.get(fp) is None           # loader code changed: neither serves


def test_code_hash_follows_the_sources(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "loaders" / "__pycache__").mkdir(parents=True)
    (pkg / "loaders" / "a.py").write_text("x = 1\n")
    (pkg / "cache.py").write_text("y = 2\n")
    h = cache_mod.hash_sources(str(pkg), ("loaders", "cache.py"))
    (pkg / "loaders" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"junk")
    (pkg / "loaders" / "notes.txt").write_text("not code")
    assert cache_mod.hash_sources(str(pkg), ("loaders", "cache.py")) == h
    (pkg / "loaders" / "a.py").write_text("x = 2\n")
    h2 = cache_mod.hash_sources(str(pkg), ("loaders", "cache.py"))
    assert h2 != h
    (pkg / "loaders" / "b.py").write_text("")
    assert cache_mod.hash_sources(str(pkg), ("loaders", "cache.py")) != h2
    # the real package: profiles and results hashed apart, once per process
    assert cache_mod.code_hash("profile") != cache_mod.code_hash("results")
    assert cache_mod.code_hash("results") == cache_mod.code_hash("results")


def test_results_are_bounded_with_the_profiles(tmp_path):
    c = ProfileCache(str(tmp_path / "cache"), max_bytes=50_000)
    for i in range(40):
        c.put_json(["overall", i], {"pad": "x" * 4000, "i": i})
    kept = c.json_entries()
    assert 0 < len(kept) <= 12
    assert sum(size for _, size, _ in kept) <= 50_000
    assert c.get_json(["overall", 39]) == {"pad": "x" * 4000, "i": 39}     # the newest stays
    assert c.get_json(["overall", 0]) is None


def test_stale_temporary_entries_are_removed(tmp_path):
    c = ProfileCache(str(tmp_path / "cache"))
    os.makedirs(os.path.join(c.root, "json"))
    old_dir = os.path.join(c.root, ".abc.x1")
    new_dir = os.path.join(c.root, ".abc.x2")
    old_tmp = os.path.join(c.root, "json", ".tmpold")
    for d in (old_dir, new_dir):
        os.makedirs(d)
    open(old_tmp, "w").close()
    past = time.time() - 2 * cache_mod.STALE_TEMP_SECONDS
    os.utime(old_dir, (past, past))
    os.utime(old_tmp, (past, past))
    c.put_json(["x"], {})
    assert not os.path.exists(old_dir) and not os.path.exists(old_tmp)
    assert os.path.exists(new_dir)            # a writer may still be at work on it


def test_offsets_stay_exact_across_dropped_whitespace(tmp_path):
    """Dropped whitespace still counts: a ',' before ']' and a bad byte after a long run are
    reported at their true offsets."""
    a, _ = _event_halves()
    head = b'{"traceEvents": [' + a
    f = _write(tmp_path / "comma.json.gz", [head, b",", (b" ", 12 * MB), b"]}"], True)
    with pytest.raises(LoadError, match=f"malformed JSON at byte {len(head):,}: ',' before ']'"):
        kineto_json.load(str(f))
    f = _write(tmp_path / "junk.json.gz", [head, b",", (b" ", 12 * MB), b"@]}"], True)
    with pytest.raises(LoadError, match=f"malformed JSON at byte {len(head) + 1 + 12 * MB:,}"):
        kineto_json.load(str(f))


def test_tensorboard_flag_sets_the_limit(monkeypatch):
    """--profile_compare_max_expanded_mb is a TensorBoard flag, and reaches the loaders (and,
    through the environment, the parser processes the plugin starts later)."""
    import argparse
    from tensorboard.plugins import base_plugin
    from tb_compare_plugin.loader import ProfileCompareLoader
    from tb_compare_plugin.loaders import bytesource
    parser = argparse.ArgumentParser()
    ProfileCompareLoader().define_flags(parser)
    flags = parser.parse_args(["--profile_compare_max_expanded_mb", "3"])
    monkeypatch.delenv("TB_COMPARE_MAX_EXPANDED_MB", raising=False)
    assert bytesource.max_expanded_bytes() == 8192 * MB
    plugin = ProfileCompareLoader().load(base_plugin.TBContext(logdir=str(SAMPLES), flags=flags))
    try:
        assert bytesource.max_expanded_bytes() == 3 * MB
    finally:
        plugin.close()
        # not monkeypatch.delenv: its undo would put back the 3 MB the plugin set, for every later test
        os.environ.pop("TB_COMPARE_MAX_EXPANDED_MB", None)
