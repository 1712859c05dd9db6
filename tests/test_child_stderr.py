"""The CLI never shows what its parser processes print: a loader that writes a traceback to
stderr, bytes to file descriptor 2 and a Python warning (tests/noisyformat.py, registered through
TB_COMPARE_FORMATS in the real ``tb-compare`` with parser processes on) leaves the CLI's stderr
clean; a child that dies is reported in one error line quoting its last words."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from noisyformat import LAST_WORDS, SUFFIX
from toyformat import write_toy

HERE = Path(__file__).resolve().parent


def run_cli(tmp_path, base, target, **env):
    env = dict(os.environ, TB_COMPARE_FORMATS="noisyformat", TB_COMPARE_CACHE="0",
               PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]), **env)
    env.pop("TB_COMPARE_PROCESSES", None)
    env.pop("TB_COMPARE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "tb_compare_plugin.cli", str(base), str(target),
                           "--json", str(tmp_path / "out.json"), "--no-progress", "-q"],
                          capture_output=True, text=True, env=env, timeout=300)


def test_children_do_not_write_on_the_cli_stderr(tmp_path):
    base, target = write_toy(tmp_path / ("a" + SUFFIX)), write_toy(tmp_path / ("b" + SUFFIX), scale=2)
    r = run_cli(tmp_path, base, target)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    assert json.loads((tmp_path / "out.json").read_text())["target"]["format"] == "noisy"


def test_a_dying_child_is_one_error_line_with_its_last_words(tmp_path):
    base = write_toy(tmp_path / ("a" + SUFFIX))
    target = tmp_path / ("b" + SUFFIX)
    doc = json.loads(Path(write_toy(target)).read_text())
    target.write_text(json.dumps(dict(doc, die=True)))
    r = run_cli(tmp_path, base, target)
    lines = r.stderr.splitlines()
    assert r.returncode == 1 and "Traceback" not in r.stderr and "RuntimeWarning" not in r.stderr, r.stderr
    assert lines[-1].startswith(f"tb-compare: error: {target}: the parser process died"), r.stderr
    assert LAST_WORDS in lines[-1], r.stderr
    assert all(ln.startswith("warning: ") for ln in lines[:-1]), r.stderr      # the retry, said once


EXIT_NOISE = """
import sys
from tb_compare_plugin import cli
cli._quiet_stderr(%r)
class Closed:
    def __del__(self):          # what an exit hook racing a closed pipe raises
        raise OSError(9, "Bad file descriptor")
x = Closed()
del x
print("answered")
"""


def test_an_error_ignored_at_exit_is_no_traceback_on_the_cli_stderr():
    """CPython prints "Exception ignored in ..." with a traceback for errors in finalisers and
    exit hooks (3.11's process-pool exit hook can race its manager thread); the CLI sends them
    to its debug log, and --debug still shows them."""
    quiet = subprocess.run([sys.executable, "-c", EXIT_NOISE % False], capture_output=True, text=True,
                           timeout=60)
    assert quiet.returncode == 0 and quiet.stdout == "answered\n" and quiet.stderr == "", quiet.stderr
    loud = subprocess.run([sys.executable, "-c", EXIT_NOISE % True], capture_output=True, text=True,
                          timeout=60)
    assert "Exception ignored" in loud.stderr and "Bad file descriptor" in loud.stderr, loud.stderr
