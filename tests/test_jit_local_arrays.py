"""The numba functions never keep only the address of an array they made themselves.

A compiled function's variables die at their last use: an array made inside the function whose
only use is ``a.ctypes.data`` is freed right there, and the code that goes on through the
address reads and writes freed memory (the scanners' next-key tables did, in session 15: a crash
on a corpus trace read in 64 KB chunks, or silently wrong tables when the memory is reused).
Such arrays are made by the caller and handed down (``_ascend_scan_jit.scan`` ->
``_scan``).  Checked on the source, and on a corpus trace read in small chunks (in a child
process: a crash must not take the test run with it)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "tb_compare_plugin"
MAKERS = {"full", "zeros", "empty", "ones", "full_like", "zeros_like", "empty_like", "ones_like", "arange", "array"}


def _made_here(fn: ast.FunctionDef) -> set:
    """Names bound in ``fn`` to a new numpy array (``np.full(...)`` and the like)."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and f.attr in MAKERS and isinstance(f.value, ast.Name) \
                    and f.value.id in ("np", "numpy"):
                out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def _address_only(fn: ast.FunctionDef) -> list:
    """Arrays made in ``fn`` whose every use is ``name.ctypes.data``."""
    made = _made_here(fn)
    uses: dict = {}
    parents = {child: node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in made:
            p = parents.get(node)
            q = parents.get(p)
            uses.setdefault(node.id, []).append(isinstance(p, ast.Attribute) and p.attr == "ctypes"
                                                and isinstance(q, ast.Attribute) and q.attr == "data")
    return sorted(n for n, u in uses.items() if u and all(u))


def test_no_compiled_function_keeps_only_the_address_of_its_own_array():
    bad = []
    for path in sorted(PKG.rglob("_*_jit.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            bad += [f"{path.name}:{fn.name}: {name}" for name in _address_only(fn)]
    assert not bad, ("arrays made inside a numba function and used only through their address "
                     f"(freed at once; make them in the caller and pass them in): {bad}")


def test_the_guard_sees_the_pattern():
    src = ("def f(n):\n    t_ = np.full(n, 0)\n    t = t_.ctypes.data\n    k = np.zeros(3)\n"
           "    p = k.ctypes.data\n    k[0] = 1\n    return t, p\n")
    fn = ast.parse(src).body[0]
    assert _address_only(fn) == ["t_"]


def test_ascend_trace_in_small_chunks_same_as_in_big(corpus):
    from tb_compare_plugin.loaders import ascend_fast
    if not ascend_fast.available():
        pytest.skip("the Ascend scanner is unavailable (numba)")
    trace = corpus / "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"
    if not trace.is_file():
        pytest.skip(f"corpus trace not found: {trace}")
    code = ("import sys, hashlib, numpy as np\n"
            "from tb_compare_plugin.loaders import ascend_trace\n"
            "out = []\n"
            "for cb in (40000, 65536, 100000, 4 << 20):\n"
            "    t = ascend_trace.parse_trace(sys.argv[1], chunk_bytes=cb)\n"
            "    h = hashlib.sha1()\n"
            "    for part in sorted(t.b):\n"
            "        for col in sorted(t.b[part]):\n"
            "            v = t.b[part][col]\n"
            "            a = v.objects() if hasattr(v, 'objects') else np.asarray(v)\n"
            "            h.update(repr((part, col, a.dtype.str, a.shape)).encode())\n"
            "            h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())\n"
            "    out.append((t.n_events, h.hexdigest()))\n"
            "print(out)\n"
            "assert len(set(out)) == 1, out\n")
    env = dict(os.environ, TB_COMPARE_FAST_ASCEND="1", PYTHONPATH=str(PKG.parent))
    r = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True, text=True, env=env,
                       cwd=str(PKG.parent), timeout=600)
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
