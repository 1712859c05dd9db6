"""The registry of analyses: name -> :class:`Analysis` (function, columns, needed inputs,
where it is shown).

An analysis is a pure function of a Comparison returning a pandas DataFrame (one row per
compared item); the Comparison memoises it (``Comparison.analysis(name)``), so the tab, the
workbook and the CLI read the very same table.  ``outputs`` says where it appears:

* ``"route"``: ``compare/<name>`` pages it (sort, search, filter) and ``analyses`` lists it;
* ``"json"``: ``tb-compare --json`` and ``compare/overall`` carry it under ``"analyses"``;
* ``"sheet"``: the workbook gets a sheet of it (after the reference's sheets and ours).

The built-in table views are ``route`` only: the workbook writes their figures in the
reference's layouts, and the overview JSON keeps its schema.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from ..formats.base import CAPABILITIES as FORMAT_CAPABILITIES

# what an analysis may need: what a format declares it can hold (formats.base.CAPABILITIES);
# ``missing_inputs`` checks them against both sides
CAPABILITIES = tuple(sorted(FORMAT_CAPABILITIES))
# held or not according to the data itself (a format that can hold kernels may hold none)
DATA_CAPABILITIES = ("kernels", "communication", "memory", "modules", "steps")
OUTPUTS = frozenset({"route", "json", "sheet"})


class Unavailable(Exception):
    """The analysis does not apply to this pair (the text says why, for the user)."""


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    type: str = "text"      # text | ms | us | count | ratio | bytes | mb | kb | number | percent
    optional: str = ""      # a group name: the group's columns are left out of a page when the table
                            # holds no value in any of them (e.g. GPU-only columns on an NPU pair)


@dataclass(frozen=True)
class Analysis:
    name: str                                   # route segment and JSON key: [a-z0-9_]+
    label: str                                  # what the tab and the workbook call it
    table: Callable                             # table(comparison) -> pandas.DataFrame
    columns: tuple                              # Column, ... in display order
    needs: frozenset = frozenset()              # CAPABILITIES at least one side must hold
    diff_col: str | None = None                 # the default sort (descending) and min_diff filter
    search: tuple = ("name",)                   # columns the ``q`` search looks in
    tree: bool = False                          # rows in the engine's (tree) order unless sorted
    outputs: frozenset = OUTPUTS
    description: str = ""
    per_step: bool = False                      # totals follow the comparison's per-step choice

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c == "_" for c in self.name) or self.name != self.name.lower():
            raise ValueError(f"analysis name {self.name!r}: use lower-case letters, digits and _")
        unknown = set(self.needs) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"analysis {self.name}: unknown capabilities {sorted(unknown)}; "
                             f"known: {', '.join(CAPABILITIES)}")
        bad = set(self.outputs) - OUTPUTS
        if bad:
            raise ValueError(f"analysis {self.name}: unknown outputs {sorted(bad)}")
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "needs", frozenset(self.needs))
        object.__setattr__(self, "outputs", frozenset(self.outputs))

    def describe(self) -> dict:
        return {"name": self.name, "label": self.label, "description": self.description,
                "needs": sorted(self.needs), "outputs": sorted(self.outputs), "tree": self.tree,
                "diff_col": self.diff_col, "per_step": self.per_step,
                "columns": [{"key": c.key, "label": c.label, "type": c.type} for c in self.columns]}


_lock = threading.Lock()
_registry: dict[str, Analysis] = {}


def register(analysis: Analysis, replace: bool = False) -> Analysis:
    """Add ``analysis``; a second one under the same name is an error unless ``replace``."""
    with _lock:
        if analysis.name in _registry and not replace:
            raise ValueError(f"an analysis named {analysis.name!r} is registered already")
        _registry[analysis.name] = analysis
    return analysis


def unregister(name: str) -> None:
    with _lock:
        _registry.pop(name, None)


def get(name: str) -> Analysis:
    """The analysis called ``name`` (KeyError naming the known ones)."""
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown analysis {name!r}; analyses: {', '.join(sorted(_registry))}") from None


def analyses(output: str | None = None) -> list[Analysis]:
    """Every registered analysis, in registration order (only those shown in ``output``)."""
    with _lock:
        items = list(_registry.values())
    return [a for a in items if output is None or output in a.outputs]


def capabilities(source) -> set:
    """What one side holds, in CAPABILITIES' terms: a parsed Profile, or a discovered worker
    (``WorkerSpec``: what discovery saw without parsing).  kernels, communication, memory,
    modules and steps count when the data holds them; the others (links, pmu, ...) when the
    side's format declares it can hold them."""
    if hasattr(source, "has_dict"):
        has = {k for k, v in source.has_dict().items() if v}
        steps, fmt = source.steps, source.format
    else:
        has = {k for k, v in source.has().items() if v}
        steps, fmt = source.step_ids(), getattr(source.meta, "format", None)
    if steps:
        has.add("steps")
    try:
        from ..formats import registry
        declared = set(registry.get(fmt).capabilities) if fmt else set()
    except KeyError:                    # a format no longer registered: only what the data shows
        declared = set()
    return (has | (declared - set(DATA_CAPABILITIES))) & set(CAPABILITIES)


def missing_inputs(analysis: Analysis, base, target) -> list[str]:
    """The capabilities ``analysis`` needs that neither side holds (empty: it applies)."""
    held = capabilities(base) | capabilities(target)
    return sorted(analysis.needs - held)
