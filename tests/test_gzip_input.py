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


def _cli_json(path: Path) -> str:
    r = subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", str(path), str(path), "--no-cache",
                        "--no-progress", "-q", "--json", "-"], capture_output=True, text=True, timeout=300)
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
    made, _, _ = variants
    single = _cli_json(made["single"])
    assert '"overall_metrics"' in single
    assert _cli_json(made["two"]) == single
    assert _cli_json(made["tiny"]) == single


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
