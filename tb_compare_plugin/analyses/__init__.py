"""Analyses of a comparison, listed in one registry (:mod:`.registry`).

Each analysis is a name, a function of a :class:`~tb_compare_plugin.comparison.Comparison`
returning a table, its columns and the capabilities it needs.  The routes (``compare/<name>``,
``analyses``), the workbook and the CLI JSON read the registry; adding an analysis is one
``register(Analysis(...))`` call (the built-in ones are in :mod:`.builtin`).
"""
from .registry import (CAPABILITIES, Analysis, Column, Unavailable, analyses, get, missing_inputs,
                       register, unregister)
from . import builtin  # noqa: F401,E402 - registers the built-in analyses

__all__ = ["CAPABILITIES", "Analysis", "Column", "Unavailable", "analyses", "get", "missing_inputs",
           "register", "unregister"]
