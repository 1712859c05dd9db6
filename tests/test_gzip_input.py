"""Compressed input (issue 21 §5): a multi-member ``.gz`` (``cat a.gz b.gz``, parallel
compressors) reads as ``gzip -dc`` reads it, whatever the members' sizes.  Every file is made from
a real corpus trace in a temporary folder; results go through the real CLI."""
from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from cli_inproc import run_cli
from conftest import CORPUS, needs_corpus
from tb_compare_plugin.loaders.bytesource import ByteSource

MB = 1 << 20
RESNET = CORPUS / "gpu/kineto_resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz"
NAME = "w.pt.trace.json.gz"


def _members(data: bytes, sizes) -> bytes:
    """``data`` gzip-compressed as consecutive members of the given uncompressed sizes (cycled)."""
    out, i, k = [], 0, 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        out.append(gzip.compress(data[i:i + n], compresslevel=1, mtime=0))
        i, k = i + n, k + 1
    return b"".join(out)


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    """The same trace as one member, two members over 4 MiB each, and thousands of tiny members."""
    if not RESNET.is_file():
        pytest.skip(f"corpus trace {RESNET} is missing")
    data = gzip.decompress(RESNET.read_bytes())
    assert len(data) > 20 * MB
    half = len(data) // 2 + 12345
    made, root = {}, tmp_path_factory.mktemp("members")
    for name, blob in [("single", gzip.compress(data, compresslevel=1, mtime=0)),
                       ("two", _members(data, [half, len(data)])),
                       ("tiny", _members(data, [4093, 17, 9000, 1]) + b"\0" * 512)]:
        d = root / name / "run"                    # the same run and worker names for each
        d.mkdir(parents=True)
        (d / NAME).write_bytes(blob)
        made[name] = d / NAME
    sha = hashlib.sha1(data).hexdigest()
    return made, sha, len(data)


def _sha_of_stream(path: Path) -> tuple[str, int]:
    src, h, n = ByteSource(str(path)), hashlib.sha1(), 0
    try:
        while True:
            b = src.read()
            if not b:
                return h.hexdigest(), n
            h.update(b)
            n += len(b)
    finally:
        src.close()


def _cli_json(path: Path, target: Path = None) -> str:
    r = run_cli(path, target or path, "--no-cache", "--no-progress", "-q", "--json", "-")     # in this process
    assert r.returncode == 0, r.stderr
    return r.stdout


@needs_corpus
def test_multi_member_gzip_reads_like_gzip_dc(variants):
    """Two members of more than 4 MiB each (the decompressor's output cap) and many tiny ones
    (with zero padding after the last) give the same bytes as ``gzip -dc``."""
    made, sha, n = variants
    two = made["two"].read_bytes()
    assert two.count(b"\x1f\x8b\x08") >= 2
    dc = subprocess.run(["gzip", "-dc", str(made["two"])], capture_output=True, check=True).stdout
    assert hashlib.sha1(dc).hexdigest() == sha
    for name in ("single", "two", "tiny"):
        assert _sha_of_stream(made[name]) == (sha, n), name


@needs_corpus
def test_multi_member_gzip_gives_the_single_member_result(variants):
    """Two CLI runs, not three: the two-member file against the tiny-member one gives the
    single member compared with itself (either side misread would change the result)."""
    made, _, _ = variants
    single = _cli_json(made["single"])
    assert '"overall_metrics"' in single
    assert _cli_json(made["two"], made["tiny"]) == single


def test_a_damaged_second_member_is_still_an_error(tmp_path):
    """Reading members one after another must not hide damage in a later one."""
    a = gzip.compress(b'{"traceEvents": [' + b" " * (5 * MB), mtime=0)
    b = bytearray(gzip.compress(b"]}" + b" " * (5 * MB), mtime=0))
    b[len(b) // 2] ^= 0xFF
    f = tmp_path / "bad.json.gz"
    f.write_bytes(a + bytes(b))
    from tb_compare_plugin.loaders import LoadError
    with pytest.raises(LoadError, match=r"bad\.json\.gz: the gzip data is (corrupt|truncated)"):
        _sha_of_stream(f)
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    f.write_bytes(a + z.compress(b"]}" * 1000))          # second member cut short
    with pytest.raises(LoadError, match="truncated"):
        _sha_of_stream(f)


# -- a gzip bomb of whitespace: memory stays bounded whatever the expanded size ----------------
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

from conftest import SAMPLES  # noqa: E402
from tb_compare_plugin.loaders import LoadError, jsonstream, kineto_json  # noqa: E402

GPU_SAMPLE = SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"
WS_BLOCK = 4 << 20


def write_gz(path: Path, parts) -> Path:
    """A one-member gzip of ``parts``: bytes, or an int for that many spaces.  The spaces are
    one deflate block pair compressed once and repeated (each ends with a full flush, so it
    stands alone): GBs of whitespace are written in well under a second, in a few MB."""
    blank = b" " * WS_BLOCK
    zb = zlib.compressobj(9, zlib.DEFLATED, -15)
    blank_z = zb.compress(blank) + zb.flush(zlib.Z_FULL_FLUSH)
    z = zlib.compressobj(6, zlib.DEFLATED, -15)
    crc = size = 0
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        for p in parts:
            if isinstance(p, int):
                for _ in range(p // WS_BLOCK):
                    f.write(blank_z)
                    crc = zlib.crc32(blank, crc)
                p = b" " * (p % WS_BLOCK)
            f.write(z.compress(p) + z.flush(zlib.Z_FULL_FLUSH))
            crc, size = zlib.crc32(p, crc), size + len(p)
        size += sum(p - p % WS_BLOCK for p in parts if isinstance(p, int))
        f.write(z.flush())
        f.write((crc & 0xFFFFFFFF).to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little"))
    return path


def _halves():
    evs = json.loads(GPU_SAMPLE.read_text())["traceEvents"]
    half = len(evs) // 2
    return json.dumps(evs[:half])[1:-1].encode(), json.dumps(evs[half:])[1:-1].encode()


def bomb_parts(ws_total: int):
    """The GPU sample's events with whitespace where the stream parser used to buffer it: after
    the '[', between an event and its ',', between two tokens of one event, after the ']'."""
    a, b = _halves()
    q = ws_total // 4
    return [b'{"traceEvents": [', q, a, q, b',{"name": "marker", "ph": "i",', q, b'"ts": 1, "pid": 1, "tid": 1},',
            b, b"]", ws_total - 3 * q, b"}"]


def test_bomb_writer_makes_a_valid_gzip(tmp_path):
    parts = [b"{", 5 * MB + 3, b'"x": 1}', 7]
    f = write_gz(tmp_path / "t.json.gz", parts)
    assert gzip.decompress(f.read_bytes()) == b"{" + b" " * (5 * MB + 3) + b'"x": 1}' + b" " * 7


def _tree(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _hwm_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_cli_watching_memory(args, stop_above_mb: float, timeout: float = 300):
    """The real CLI in its own process group; the largest VmHWM of any process of the group
    (the CLI, the fork server, each parser) is polled while it runs.  Past ``stop_above_mb``
    the group is killed (this machine is shared) and the peak so far returned."""
    p = subprocess.Popen([sys.executable, "-m", "tb_compare_plugin.cli", *map(str, args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    peak, killed, end = 0.0, False, time.monotonic() + timeout
    try:
        while p.poll() is None:
            for pid in _tree(p.pid):
                peak = max(peak, _hwm_mb(pid))
            if peak > stop_above_mb or time.monotonic() > end:
                os.killpg(p.pid, signal.SIGKILL)
                killed = True
                break
            time.sleep(0.05)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return p.returncode, out.decode(), err.decode(), peak, killed


def test_whitespace_bomb_keeps_memory_bounded(tmp_path):
    """768 MiB of whitespace (a 0.9 MB .gz) in four places of a real trace: the CLI finishes
    with the trace's own result, and no process of it grows past 250 MB.  Measured: 80 MB at
    1 GiB after the change; before it, 455 MB at 512 MiB and 840 MB at 1 GiB (it grew with the
    expanded size)."""
    run = tmp_path / "bomb"
    run.mkdir()
    bomb = write_gz(run / "worker0.pt.trace.json.gz", bomb_parts(768 * MB))
    assert bomb.stat().st_size < MB
    out = tmp_path / "out.json"
    rc, _, err, peak, killed = run_cli_watching_memory(
        [GPU_SAMPLE, bomb, "--max-expanded-mb", "100000", "--no-cache", "--no-progress", "-q", "--json", out],
        stop_above_mb=600)
    assert not killed, f"peak RSS passed {peak:.0f} MB (stopped)"
    assert rc == 0, err
    assert peak < 250, peak
    res = json.loads(out.read_text())
    assert res["target"]["worker"] == "worker0"
    for m in res["overall_metrics"]:
        if m["name"] == "Computing Time":
            assert m["baseline"] == m["target"], m


def test_collapsed_whitespace_keeps_values_and_offsets(tmp_path):
    """Long runs cut from the stream are still counted (an error after them names its true
    byte), and whitespace inside a string is text, kept whole."""
    a, b = _halves()
    name = "op" + " " * 20_000 + "end"
    ev = json.dumps({"name": name, "ph": "X", "cat": "cpu_op", "ts": 5, "dur": 1, "pid": 1, "tid": 1}).encode()
    sep = b"\n" + b" " * 9000
    good = b'{"traceEvents":' + sep + b"[" + a + b"," + sep + ev + sep + b"," + b + sep + b"]" + sep + b"}"
    f = write_gz(tmp_path / "good.json.gz", [good])
    prof = kineto_json.load(str(f))
    ref = kineto_json.load(str(GPU_SAMPLE))
    assert {k: len(v) for k, v in prof.tables.items() if k != "ops"} == \
           {k: len(v) for k, v in ref.tables.items() if k != "ops"}
    assert name in {prof.symbols.string(int(i)) for i in prof.tables["ops"]["name"]}
    for bad in (b"@", b'"x"'):
        text = good.replace(ev + sep, ev + sep + bad, 1)
        f = write_gz(tmp_path / "bad.json.gz", [text])
        with pytest.raises(LoadError) as e:
            kineto_json.load(str(f))
        got = int(re.search(r"at byte ([\d,]+)", str(e.value)).group(1).replace(",", ""))
        at = text.index(ev + sep + bad) + len(ev + sep)
        assert got == at, str(e.value)


def test_one_event_past_the_span_limit_is_an_error(tmp_path, monkeypatch):
    """Whitespace that cannot be dropped (inside a string) is bounded instead: an error naming
    the file, before memory follows the expanded size."""
    a, _ = _halves()
    monkeypatch.setattr(jsonstream, "MAX_SPAN", 8 * MB)
    f = write_gz(tmp_path / "long.json.gz", [b'{"traceEvents": [' + a + b',{"name": "', 40 * MB, b'"}]}'])
    with pytest.raises(LoadError, match=r"long\.json\.gz: more than 8 MB without a boundary between events"):
        kineto_json.load(str(f))


def test_whitespace_anywhere_reads_the_same_events(tmp_path):
    """Whitespace runs of every length (0 to 12 KB, any of the four characters) between every
    token, long runs of spaces inside strings, a gzip stream: the events read are those of
    ``json.loads``, whatever the chunk size."""
    import random

    import msgspec
    rng = random.Random(21)
    evs = json.loads(GPU_SAMPLE.read_text())["traceEvents"][:100]
    for e in evs[::7]:
        e["name"] = e.get("name", "") + " " * rng.choice([100, 5000, 9000]) + "|"

    pool = ["".join(rng.choice(" \t\r\n") for _ in range(64)) for _ in range(8)]

    def ws() -> str:
        n = rng.choice([0, 0, 0, 1, 2, 50, 4095, 4096, 4097, 12000])
        run = rng.choice(pool) * (n // 64 + 1)
        return run[:n]

    def emit(x) -> str:
        if isinstance(x, dict):
            return "{" + ws() + ("," + ws()).join(f"{json.dumps(k)}{ws()}:{ws()}{emit(v)}{ws()}"
                                                  for k, v in x.items()) + "}"
        if isinstance(x, list):
            return "[" + ws() + ("," + ws()).join(emit(v) + ws() for v in x) + "]"
        return json.dumps(x)

    text = ws() + emit({"schemaVersion": 1, "traceEvents": evs, "displayTimeUnit": "ms"}) + ws()
    assert json.loads(text)["traceEvents"] == evs
    f = write_gz(tmp_path / "ws.json.gz", [text.encode()])
    for chunk in (3000, 1 << 20):
        got, res = [], jsonstream.StreamResult()
        for part in jsonstream.iter_event_chunks(str(f), lambda v: msgspec.json.decode(v), chunk_bytes=chunk,
                                                 result=res):
            got.extend(part)
        assert got == evs, chunk
        assert res.outside == {"schemaVersion": 1, "displayTimeUnit": "ms"}
        assert res.total_bytes == len(text.encode())
