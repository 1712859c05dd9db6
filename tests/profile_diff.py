"""What differs between two profiles, table by table, column by column (dtype and values; NaN
equal to NaN in float columns), their symbol tables and their meta: the identity check of the
fast parsers against the general decoders (tests/test_fast_parse*.py)."""
from __future__ import annotations

import numpy as np


def profile_diff(a, b, ignore_warning: str = "") -> list[str]:
    """The differences between profiles ``a`` and ``b`` (empty: the same).  Warnings containing
    ``ignore_warning`` (the note that a general decoder parsed part of the file) are removed from
    both profiles' meta first."""
    if ignore_warning:
        for p in (a, b):
            p.meta.warnings = [w for w in p.meta.warnings if ignore_warning not in w]
    bad = []
    if a.symbols._strings != b.symbols._strings:
        bad.append("symbol tables differ")
    if sorted(a.tables) != sorted(b.tables):
        bad.append(f"tables {sorted(a.tables)} vs {sorted(b.tables)}")
    for t in sorted(set(a.tables) & set(b.tables)):
        x, y = a.tables[t], b.tables[t]
        if list(x.columns) != list(y.columns) or len(x) != len(y):
            bad.append(f"{t}: columns or rows differ")
            continue
        for c in x.columns:
            u, v = x[c].to_numpy(), y[c].to_numpy()
            same = (u.dtype == v.dtype and
                    (np.array_equal(u, v, equal_nan=True) if u.dtype.kind == "f" else np.array_equal(u, v)))
            if not same:
                bad.append(f"{t}.{c}")
    if a.meta != b.meta:
        bad.append(f"meta differs (warnings {a.meta.warnings} vs {b.meta.warnings})")
    return bad
