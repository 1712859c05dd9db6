"""No import cycle in tb_compare_plugin/ (issue 13 §3): data flows one way, files -> loaders ->
model -> engines -> presenters, and discovery asks formats/ what a path is.

The module graph is built from the source with ``ast``: every ``import`` / ``from ... import``
anywhere in a module, including those inside functions (a lazy import is still a dependency; it
only moves the moment it runs).  ``from pkg import name`` is an edge to ``pkg.name`` when that
is a module, else to ``pkg``.  A submodule import is not counted as an edge to its parent
package's ``__init__``: Python runs the parent first, but a package re-exporting its own
children is a tree, not a cycle, and counting it would make every such package one.
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG = "tb_compare_plugin"
ROOT = Path(__file__).resolve().parent.parent / PKG


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _resolve(mod: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = _resolve(mod, is_pkg, node.level, node.module)
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    targets.append(sub if sub in mods else src)
            for t in targets:
                while t and t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]       # import a.b.c of a non-module attribute
                if t in mods and t != mod:
                    graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_graph_sees_lazy_imports():
    g = import_graph()
    assert "tb_compare_plugin.formats.registry" in g["tb_compare_plugin.loaders"]      # lazy, in load()
    assert "tb_compare_plugin.engines.options" in g["tb_compare_plugin.comparison"]
    assert "tb_compare_plugin.discovery.walk" not in g["tb_compare_plugin.discovery.classify"]


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles in tb_compare_plugin/: " + "; ".join(" <-> ".join(c) for c in found)
