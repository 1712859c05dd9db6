"""Analyses of a comparison, listed in one registry (:mod:`.registry`).

Each analysis is a name, a function of a :class:`~tb_compare_plugin.comparison.Comparison`
returning a table, its columns and the capabilities it needs.  The routes (``compare/<name>``,
``analyses``), the workbook and the CLI JSON read the registry; adding an analysis is one
``register(Analysis(...))`` call (the built-in ones are in :mod:`.builtin`).

Analyses from outside the package: ``TB_COMPARE_ANALYSES=pkg.mod[:ATTR],...`` registers
``pkg.mod.ANALYSIS`` (or ``ATTR``: an Analysis or a list of them) when this package is first
imported, in TensorBoard and the CLI alike; one that cannot be used is skipped with a warning
naming it.
"""
import importlib
import logging
import os

from .registry import (CAPABILITIES, Analysis, Column, Unavailable, analyses, get, missing_inputs,
                       register, unregister)
from . import builtin  # noqa: F401,E402 - registers the built-in analyses

ENV = "TB_COMPARE_ANALYSES"
log = logging.getLogger(__name__)

__all__ = ["CAPABILITIES", "Analysis", "Column", "Unavailable", "analyses", "get", "missing_inputs",
           "register", "unregister"]


def _from_env() -> None:
    for item in filter(None, (x.strip() for x in os.environ.get(ENV, "").split(","))):
        mod, _, attr = item.partition(":")
        try:
            got = getattr(importlib.import_module(mod), attr or "ANALYSIS")
            items = [got] if isinstance(got, Analysis) else list(got)
            if not items or not all(isinstance(a, Analysis) for a in items):
                raise TypeError("not an Analysis (or a list of them)")
            for a in items:
                register(a, replace=True)
        except Exception as e:  # noqa: BLE001 - a broken add-on must not stop TensorBoard or the CLI
            log.warning("tb-compare: %s=%s: cannot use %s: %s", ENV, os.environ.get(ENV), item, e)


_from_env()
