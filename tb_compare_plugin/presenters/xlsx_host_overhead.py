"""The workbook's ``HostOverhead`` sheet (graph mode, ``Comparison.host_overhead()``): per part
(framework, TorchAir with its Python and C++ parts, GE, total) each side's total over the chosen
step or capture, its share of the graph runs' host time and its mean per graph run, the difference
and the ratio; then per step each side's graph runs and parts.  Not written when neither side has
graph-mode events."""
from __future__ import annotations

from . import xlsx_style as S
from .host_overhead_json import ROWS

HOST_OVERHEAD = "HostOverhead"
_SIDE = [("Total(ms)", "ms3", 14), ("Per Graph Run(ms)", "ms3", 18), ("Graph Runs", "id", 12)]
LAYOUT = S._layout(HOST_OVERHEAD, [("Part", "text", 40), *_SIDE, *_SIDE, ("Diff(ms)", "diff", 14),
                                   ("Ratio", "rratio", 10)], (1, 3), (4, 6))
PER_STEP_HEAD = ["Side", "Step", "Graph Runs", "Framework(ms)", "TorchAir Python(ms)", "TorchAir C++(ms)",
                 "GE(ms)", "TorchAir(ms)"]
PER_STEP_KINDS = ("text", "id", "id", "ms3", "ms3", "ms3", "ms3", "ms3")


def host_overhead_sheet(cmp) -> list:
    ho = cmp.host_overhead()
    if ho.baseline is None and ho.target is None:
        return []
    rows, indents = [], []
    for key, label, depth in ROWS:
        cells = [label]
        vals = {}
        for who in ("baseline", "target"):
            side = getattr(ho, who)
            if side is None:
                cells += [None, None, None]
                continue
            vals[who] = side.total_ns(key) / 1e6
            n = len(side.runs)
            cells += [vals[who], vals[who] / n if n else None, n]
        b, t = vals.get("baseline"), vals.get("target")
        cells += [t - b if b is not None and t is not None else None, t / b if b and t is not None else None]
        rows.append(cells)
        indents.append(depth)
    data = S.SheetData(LAYOUT, rows, indents=indents)
    per = []
    for who in ("baseline", "target"):
        side = getattr(ho, who)
        for st in (side.per_step() if side is not None else []):
            per.append([who, st["step"], st["graph_runs"], st["framework_ms"], st["torchair_python_ms"],
                        st["torchair_cpp_ms"], st["ge_ms"], st["torchair_ms"]])
    if per:
        data.blocks.append(S.Block(PER_STEP_HEAD, per, PER_STEP_KINDS, [False] * len(per)))
    return [data]
