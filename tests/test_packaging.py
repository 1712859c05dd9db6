"""The built wheel carries the frontend bundle and registers the TensorBoard entry point and
the CLI, so `pip install` needs no Node."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contents(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (whl,) = tmp_path.glob("tb_compare_plugin-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    assert "tb_compare_plugin/static/index.js" in names
    assert "tb_compare_plugin/loader.py" in names
    ep = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(whl).read(ep).decode()
    assert "[tensorboard_plugins]" in text and "tb_compare_plugin.loader:ProfileCompareLoader" in text
    assert "tb-compare = tb_compare_plugin.cli:main" in text


def test_entry_module_is_light():
    """Importing the entry point must not import pandas/numpy (a broken heavy import would
    otherwise stop TensorBoard from starting)."""
    code = ("import sys, tb_compare_plugin.loader; "
            "bad = [m for m in ('pandas', 'numpy', 'msgspec', 'tb_compare_plugin.plugin') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
