"""The cache never changes a result (issue 21, section 3): a bound too small for the profiles
makes a run slower, never failed; an entry in use is never evicted; a damaged entry (a flipped
byte, entry folders swapped, a JSON result or record stored under another key) is dropped with
one warning and the profile parsed again; a cache folder that cannot be written costs one
warning line.  The real CLI on the samples (and on a corpus trace), real cache entries damaged
on disk."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tb_compare_plugin import loaders
from tb_compare_plugin.cache import ProfileCache
from tb_compare_plugin.discovery import classify_path

from conftest import CORPUS, SAMPLES, needs_corpus

BASE, TARGET = SAMPLES / "baseline_gpu", SAMPLES / "target_npu"
GPU = BASE / "worker0.pt.trace.json"
HTA_CONTROL = CORPUS / "gpu" / "hta_trace_diff" / "control" / "control.pt.trace.json.gz"


def start_tbc(*args, cache=None, env=None) -> subprocess.Popen:
    """The CLI on ``args``, started (``tbc`` waits for it)."""
    e = dict(os.environ)
    e.pop("TB_COMPARE_CACHE_MAX_MB", None)
    if cache is not None:
        e["TB_COMPARE_CACHE_DIR"] = str(cache)
    e.update(env or {})
    cmd = [sys.executable, "-m", "tb_compare_plugin.cli", *map(str, args), "--no-progress"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)


def finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def tbc(*args, cache=None, env=None):
    return finish(start_tbc(*args, cache=cache, env=env))


def ok(r, reference: str) -> None:
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == reference


def warnings_of(r) -> list[str]:
    return [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]


@pytest.fixture(scope="module")
def samples_reference(tmp_path_factory):
    """The samples pair without any cache, and a cache filled by one run (copied by the tests
    that damage it); the two runs side by side."""
    filled = tmp_path_factory.mktemp("filled")
    runs = [start_tbc(BASE, TARGET, "--no-cache"), start_tbc(BASE, TARGET, cache=filled)]
    r, f = (finish(p) for p in runs)
    assert r.returncode == 0, r.stderr
    ok(f, r.stdout)
    return r.stdout, filled


def entry_of(cache_dir, path) -> str:
    (spec,) = classify_path(str(path))
    return ProfileCache(str(cache_dir)).entry_path(spec.fingerprint)


def entry_bytes(path) -> int:
    return sum(e.stat().st_size for e in os.scandir(path))


# -- a small bound: slower, never failed ------------------------------------------------------------
def test_a_bound_below_one_profile_parses_again_and_never_fails(samples_reference, tmp_path):
    """Was: "the parsed profile vanished from the cache" (storing an entry evicted the entry
    just stored, before the CLI could map it)."""
    reference, filled = samples_reference
    smallest = min(entry_bytes(entry_of(filled, p)) for p in (BASE, TARGET))
    mb = smallest / 2 / 2 ** 20
    for _ in range(2):
        r = tbc(BASE, TARGET, cache=tmp_path / "cache", env={"TB_COMPARE_CACHE_MAX_MB": repr(mb)})
        ok(r, reference)
        assert warnings_of(r) == []
    left = ProfileCache(str(tmp_path / "cache"))
    assert sum(size for _, size, _ in left.entries() + left.json_entries()) <= mb * 2 ** 20
    assert os.listdir(left.pins) == []        # nothing left in use


@needs_corpus
def test_room_for_one_profile_never_fails(tmp_path):
    """Was: 2 runs in 3 failed: one side's parser process, storing its entry, evicted the other
    side's entry before the CLI had mapped it.  Two copies of one corpus trace (the same work,
    so both parser processes finish together)."""
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        shutil.copy(HTA_CONTROL, tmp_path / side)
    a, b = tmp_path / "a", tmp_path / "b"
    roomy = tmp_path / "roomy"
    r = tbc(a, b, cache=roomy)
    assert r.returncode == 0, r.stderr
    reference = r.stdout
    one = entry_bytes(entry_of(roomy, a / HTA_CONTROL.name))
    mb = 1.5 * one / 2 ** 20                       # room for one entry, not for two
    for i in range(3):
        r = tbc(a, b, cache=tmp_path / f"small{i}", env={"TB_COMPARE_CACHE_MAX_MB": repr(mb)})
        ok(r, reference)
        # the bound holds once nothing is in use; profile entries and JSON results share it, least
        # recently used out first, so whether a profile entry is left depends on which was written last
        cache = ProfileCache(str(tmp_path / f"small{i}"))
        left = cache.entries()
        assert len(left) <= 1 and sum(size for _, size, _ in left + cache.json_entries()) <= mb * 2 ** 20
        assert os.listdir(cache.pins) == []       # nothing left in use


def _store_in_another_process(cache_dir, fingerprint, max_bytes: int) -> None:
    code = ("import sys; from tb_compare_plugin import loaders; from tb_compare_plugin.cache import ProfileCache;"
            "c = ProfileCache(sys.argv[1], max_bytes=int(sys.argv[2]));"
            "assert c.put(('other', sys.argv[3]), loaders.load('trace-json', sys.argv[4]))")
    subprocess.run([sys.executable, "-c", code, str(cache_dir), str(max_bytes), fingerprint[1], str(GPU)],
                   check=True, timeout=120)


def test_an_entry_in_use_is_never_evicted_by_another_process(tmp_path):
    """A pinned entry (being read or parsed) survives another process's eviction; once released,
    the bound holds again.  A pin left by a killed process does not keep its entry."""
    cache = ProfileCache(str(tmp_path / "cache"))
    prof = loaders.load("trace-json", str(GPU))
    mine = ("mine", "x")
    path = cache.put(mine, prof)
    one = entry_bytes(path)
    cache.max_bytes = int(1.5 * one)
    with cache.pin(mine):
        _store_in_another_process(tmp_path / "cache", ("other", "1"), cache.max_bytes)
        assert cache.get(mine) is not None                   # still there while pinned
        assert len(cache.entries()) == 2                     # the bound waits for the pin
    cache.evict()
    assert cache.has(mine) and len(cache.entries()) == 1     # the most recently used one stays
    # a process that pinned an entry and was killed
    code = ("import sys, time; from tb_compare_plugin.cache import ProfileCache;"
            "c = ProfileCache(sys.argv[1]); p = c.pin(('mine', 'x')); p.__enter__();"
            "print('pinned', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cache")], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "pinned"
        _store_in_another_process(tmp_path / "cache", ("other", "2"), cache.max_bytes)
        assert cache.has(mine)                               # its holder is alive
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    cache.evict()
    assert not cache.has(mine) and cache.has(("other", "2"))
    assert os.listdir(cache.pins) == []


# -- damaged entries: dropped with one warning, parsed again ----------------------------------------
def flip_byte(path) -> None:
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size // 2 + 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x01]))


def test_a_flipped_byte_in_a_cached_column_is_caught(samples_reference, tmp_path):
    """Was: the flipped byte changed Computing Time silently, on every later run."""
    reference, filled = samples_reference
    cache = tmp_path / "cache"
    shutil.copytree(filled, cache)
    entry = entry_of(cache, GPU)
    flip_byte(os.path.join(entry, "kernels.dur_ns.npy"))
    r = tbc(BASE, TARGET, cache=cache)
    ok(r, reference)
    (w,) = warnings_of(r)
    assert entry in w and str(GPU) in w and "kernels.dur_ns.npy" in w
    r = tbc(BASE, TARGET, cache=cache)                   # stored again, whole: no more warnings
    ok(r, reference)
    assert warnings_of(r) == []


def test_swapped_entry_folders_are_caught(samples_reference, tmp_path):
    """Was: the baseline got the target's figures and the target the baseline's."""
    reference, filled = samples_reference
    cache = tmp_path / "cache"
    shutil.copytree(filled, cache)
    eb, et = entry_of(cache, BASE), entry_of(cache, TARGET)
    os.rename(eb, eb + ".swap")
    os.rename(et, eb)
    os.rename(eb + ".swap", et)
    r = tbc(BASE, TARGET, cache=cache)
    ok(r, reference)
    got = warnings_of(r)
    assert len(got) == 2, got                               # one per damaged entry
    assert any(eb in w and str(GPU) in w for w in got)
    r = tbc(BASE, TARGET, cache=cache)
    ok(r, reference)
    assert warnings_of(r) == []


def test_damaged_metadata_is_caught(samples_reference, tmp_path):
    reference, filled = samples_reference
    cache = tmp_path / "cache"
    shutil.copytree(filled, cache)
    entry = entry_of(cache, BASE)
    meta = os.path.join(entry, "meta.json")
    raw = open(meta, "rb").read()
    open(meta, "wb").write(raw.replace(b'"device": "GPU"', b'"device": "NPU"', 1))
    r = tbc(BASE, TARGET, cache=cache)
    ok(r, reference)
    (w,) = warnings_of(r)
    assert entry in w


def test_a_json_result_never_serves_another_key(tmp_path, monkeypatch):
    """The plugin's cached overview of one pair, swapped with another pair's: each pair still
    gets its own figures."""
    monkeypatch.setenv("TB_COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    from test_plugin_routes import make_client, post_until_done
    gpu, npu = "baseline_gpu/worker0", "target_npu/rank0_ascend_pt"
    pairs = [{"baseline": gpu, "target": npu}, {"baseline": npu, "target": gpu}]
    c = make_client(SAMPLES)
    first = [post_until_done(c, "/compare/overall", p) for p in pairs]
    assert first[0] != first[1]
    folder = os.path.join(ProfileCache(str(tmp_path / "cache")).root, "json")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
    assert len(names) == 2
    a, b = (os.path.join(folder, n) for n in names)
    os.rename(a, a + ".swap")
    os.rename(b, a)
    os.rename(a + ".swap", b)
    c = make_client(SAMPLES)                    # a new plugin: nothing in memory, the disk cache only
    again = [post_until_done(c, "/compare/overall", p) for p in pairs]
    assert again == first
    assert sorted(os.listdir(folder)) == names  # the swapped files were dropped and stored again


def test_a_record_never_serves_another_key(tmp_path):
    cache = ProfileCache(str(tmp_path / "cache"))
    source = ["rank0_ascend_pt", 1, 2]
    assert cache.put_record(["rank-summary", 0], "summary", source, {"rank": 0})
    assert cache.put_record(["rank-summary", 1], "summary", source, {"rank": 1})
    a, b = cache._record_path(["rank-summary", 0], "summary"), cache._record_path(["rank-summary", 1], "summary")
    os.rename(a, a + ".swap")
    os.rename(b, a)
    os.rename(a + ".swap", b)
    assert cache.get_record(["rank-summary", 0], "summary", source) is None
    assert cache.get_record(["rank-summary", 1], "summary", source) is None


# -- a cache folder that cannot be written: the right answer, one warning line --------------------
@pytest.mark.parametrize("processes", ["1", "0"])
@pytest.mark.parametrize("where", ["folder", "v1"])
def test_a_cache_folder_that_cannot_be_written_costs_one_warning(samples_reference, tmp_path, processes, where):
    """A file in the place of the cache folder (or of its version folder).  Was: no warning at all
    with parser processes (theirs went to their own stderr), one per side without."""
    reference, _ = samples_reference
    cache = tmp_path / "cache"
    if where == "folder":
        cache.write_text("not a folder")
    else:
        cache.mkdir()
        (cache / "v1").write_text("not a folder")
    r = tbc(BASE, TARGET, cache=cache, env={"TB_COMPARE_PROCESSES": processes})
    ok(r, reference)
    (w,) = warnings_of(r)
    assert str(cache) in w and "cannot be written" in w


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_cache_folder_still_serves_and_warns_once(samples_reference, tmp_path):
    reference, filled = samples_reference
    cache = tmp_path / "cache"
    shutil.copytree(filled, cache)
    shutil.rmtree(entry_of(cache, TARGET))
    for d, dirs, files in os.walk(cache):
        os.chmod(d, 0o555)
    try:
        r = tbc(BASE, TARGET, cache=cache)
        ok(r, reference)
        assert len(warnings_of(r)) == 1
    finally:
        for d, dirs, files in os.walk(cache):
            os.chmod(d, 0o755)


def test_an_entry_gone_before_it_is_read_is_parsed_again_without_the_cache(tmp_path):
    """The parser process stored the profile, and the entry was removed from outside (or found
    damaged) before this process read it: the profile is parsed once more and handed back
    without the cache, never a failed parse."""
    from tb_compare_plugin.service.parsepool import ParsePool

    class Removed(ProfileCache):
        removed = 0

        def get(self, fingerprint):
            if not Removed.removed and self.has(fingerprint):
                shutil.rmtree(self.entry_path(fingerprint))      # as `rm -rf` by hand would
                Removed.removed += 1
            return super().get(fingerprint)

    cache = Removed(str(tmp_path / "cache"))
    pool = ParsePool(1, cache)
    try:
        (spec,) = classify_path(str(GPU))
        prof = pool.parse(spec.format, spec.root, spec.fingerprint)
    finally:
        pool.shutdown()
    assert Removed.removed == 1
    want = loaders.load("trace-json", str(GPU))
    assert prof.summary()["counts"] == want.summary()["counts"]
