"""The built wheel carries the frontend bundle and registers the TensorBoard entry point and
the CLI, so `pip install` needs no Node."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# what a source distribution holds: the build reads nothing else from the tree
SOURCES = ("setup.py", "pyproject.toml", "README.md", "tb_compare_plugin")


def _tree_state() -> set:
    return {p.name for p in ROOT.iterdir()}


def test_wheel_contents(tmp_path):
    """Built from a copy of the sources in a temporary folder: setuptools writes build/ and an
    egg-info beside setup.py, and the source tree must not change under the other tests."""
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    before = _tree_state()
    out = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                        "-w", str(out), str(src)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _tree_state() == before, "building the wheel wrote into the source tree"
    (whl,) = out.glob("tb_compare_plugin-*.whl")
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
