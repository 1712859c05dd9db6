"""A toy analysis added through the registry alone (tests/test_analyses_registry.py): rows per
table on each side.  ``TB_COMPARE_ANALYSES=toy_analysis`` (with tests/ on the path) registers it
in the tb-compare command; the tests' fixture calls ``register(ANALYSIS)``."""
from __future__ import annotations

import pandas as pd

from tb_compare_plugin.analyses import Analysis, Column

NAME = "toy_table_rows"


def table_rows(cmp) -> pd.DataFrame:
    names = sorted(set(cmp.base.tables) | set(cmp.target.tables))
    b = [len(cmp.base.tables[n]) if n in cmp.base.tables else 0 for n in names]
    t = [len(cmp.target.tables[n]) if n in cmp.target.tables else 0 for n in names]
    return pd.DataFrame({"name": names, "b_rows": b, "t_rows": t,
                         "diff_rows": [y - x for x, y in zip(b, t)]})


ANALYSIS = TOY = Analysis(
    NAME, "Toy table rows", table_rows,
    (Column("name", "Table"), Column("b_rows", "Base Rows", "count"), Column("t_rows", "Target Rows", "count"),
     Column("diff_rows", "Diff Rows", "count")),
    diff_col="diff_rows", description="rows in each table of both profiles (a test of the registry)")
