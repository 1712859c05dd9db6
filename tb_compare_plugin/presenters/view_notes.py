"""Why one side of a table page is empty: a sentence per side that has no row in the whole table
of a view (operator, module, memory, api, kernel), naming the side's framework, device and format
and what that view reads which the side does not hold; and, for the operator view by name across
frameworks, that names never match there and the per-instance view pairs them through the alias
table.  Pure: reads the tables and the profiles' meta."""
from __future__ import annotations

_NO_OPS = "records no host operators (and no scope-path kernel names to derive them from)"
REASONS = {
    "operator": _NO_OPS,
    "operator_pairs": _NO_OPS,
    "api": "records no host API or operator events",
    "module": "records neither nn.Module events nor scope-path kernel names",
    "memory": "holds no memory records (memory profiling was off, or its format carries none)",
    "memory_peak": "holds no memory records (memory profiling was off, or its format carries none)",
    "kernel": "holds no device kernels with a type",
}


_MEMORY = ("memory", "memory_peak")


def empty_side_notes(cmp, view: str, df) -> list[str]:
    """One note per side with no row of its own (status ``both`` or ``<side>_only``) in ``df``; for
    the memory views, per side without memory records (its operators may still be listed, at 0)."""
    if "status" not in getattr(df, "columns", ()):
        return []
    seen = set(df["status"].dropna().tolist())
    out = []
    for role, prof in (("baseline", cmp.base), ("target", cmp.target)):
        if view in _MEMORY and hasattr(prof, "has"):      # rows of 0 bytes do not count as memory data
            if prof.has()["memory"]:
                continue
        elif "both" in seen or f"{role}_only" in seen:
            continue
        meta = getattr(prof, "meta", None)
        who = ", ".join(str(x) for x in (getattr(meta, "framework", None), getattr(meta, "device", None),
                                         getattr(meta, "format", None)) if x)
        why = REASONS.get(view, "holds nothing this view reads")
        out.append(f"The {role}{f' ({who})' if who else ''} {why}: its side of this table is empty.")
    return out


def cross_framework_note(cmp, view: str, df) -> list[str]:
    """The operator view by name of a pair of two frameworks: no name is shared, so say where the
    aliased pairs are (``operator_pairs``), with an example."""
    if view != "operator" or "status" not in getattr(df, "columns", ()) or (df["status"] == "both").any():
        return []
    fb = getattr(getattr(cmp.base, "meta", None), "framework", None)
    ft = getattr(getattr(cmp.target, "meta", None), "framework", None)
    if not fb or not ft or fb == ft:
        return []
    pairs = cmp.operators().pairs
    aliased = pairs[(pairs["status"] == "both") & (pairs["b_name"] != pairs["t_name"])]
    text = (f"The two sides name their operators in their own framework's terms ({fb}, {ft}): this table, "
            f"one row per name, can pair none of them.")
    if len(aliased):
        ex = aliased.iloc[0]
        text += (f" The per-instance view pairs {len(aliased):,} call(s) through the alias table "
                 f"(e.g. {ex['b_name']} with {ex['t_name']}).")
    return [text]
