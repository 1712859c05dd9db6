"""The program's teardown handed to a process that outlives it (``exit_handover``): the exit code
and the output are the program's, a reader of its pipes sees their end at once (not after the
other process's wait), the unlinked files it held are still open in the other process until it
ends, and nothing is left behind."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tb_compare_plugin import exit_handover

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine not in
                                ("x86_64", "aarch64"), reason="Linux x86-64 / aarch64 only")

CHILD = r"""
import os, sys, tempfile
from tb_compare_plugin import exit_handover
exit_handover.LINGER_US = int(sys.argv[2])
f = tempfile.NamedTemporaryFile(dir=sys.argv[1], delete=False)
f.write(b"x" * (1 << 20)); f.flush()
os.unlink(f.name)
print("answer", flush=True)
print("said", file=sys.stderr, flush=True)
ok = exit_handover.hand_over()
try:
    os.write(1, b"late\n")  # stdout is closed by now: nothing more gets out
except OSError:
    pass
os._exit(3 if ok else 4)
"""


def test_exit_code_output_and_pipes_end_at_once(tmp_path):
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), "2000000"], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 3, r.stderr
    assert r.stdout == "answer\n" and r.stderr == "said\n"
    # run() returned once both pipes ended and the child exited: the other process (2 s) held neither
    assert took < 1.9
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _holders(tmp_path):
        time.sleep(0.02)
    assert not _holders(tmp_path)           # the other process ended too, the file with it


def test_the_other_process_holds_the_unlinked_file_then_ends(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), "3000000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 3 and out == b"answer\n"
    held = _holders(tmp_path)
    assert held and p.pid not in held       # open in the other process only (it lingers 3 s here)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _holders(tmp_path):
        time.sleep(0.02)
    assert not _holders(tmp_path)


def test_cli_answers_the_same_without_it(tmp_path):
    """The program's way out with and without the hand-over: same exit code, same output."""
    from conftest import SAMPLES
    trace = next(iter(sorted(SAMPLES.glob("**/*.json"))), None)
    if trace is None:
        pytest.skip("no sample trace")
    outs = []
    for flag in ("1", "0"):
        env = dict(os.environ, TB_COMPARE_EXIT_HANDOVER=flag)
        r = subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", str(trace), str(trace), "--no-cache",
                            "--json", "-"], capture_output=True, text=True, env=env, timeout=300)
        outs.append((r.returncode, r.stdout, r.stderr))
    assert outs[0] == outs[1]


def _holders(folder) -> set:
    """Process ids with a deleted file of ``folder`` open."""
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith(str(folder)) and target.endswith("(deleted)"):
                    found.add(int(pid))
        except OSError:
            continue
    return found


def test_not_linux_or_failure_changes_nothing(monkeypatch):
    monkeypatch.setattr(exit_handover.sys, "platform", "darwin")
    assert exit_handover.hand_over() is False
