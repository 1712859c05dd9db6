"""Formatting helpers shared by the Kineto and Ascend writers: times, shapes, dtypes."""
from __future__ import annotations

from .common import C, V
from .figures import walk


def tsu(ns: int) -> float:
    """ns -> µs float (Kineto JSON numbers)."""
    return ns / 1000


def tss(ns: int) -> str:
    """ns -> Ascend µs string with 3 decimals."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def r3(x: float) -> float:
    return round(x, 3)


def host_nodes(run):
    """Every host node of the capture (cpu ops, annotations, launches), in time order."""
    out = []
    for st in run.steps:
        for n in walk(st["node"]):
            out.append(n)
            out.extend(n.launches)
        for ev in st["bwd"]:
            for n in walk(ev):
                out.append(n)
                out.extend(n.launches)
    out.sort(key=lambda n: (n.start, -(n.end - n.start)))
    return out


def dtype(t: str) -> str:
    return "INT64" if t == "long int" else "FLOAT"


def kernel_io(task):
    """NPU kernel_details Input/Output Shapes, types, formats of a task (from its launching op)."""
    op = task["op"]
    if task["kind"].startswith("fe_"):
        n_in = {"fe_mul": 1, "fe_lerp": 2, "fe_addcmul": 3, "fe_addcdiv": 3}[task["kind"]]
        ins = PARAM_SHAPES * n_in
        return ins, ["FLOAT"] * len(ins), PARAM_SHAPES, ["FLOAT"] * len(PARAM_SHAPES)
    ins = [(d, "FLOAT") for d in op.kin] if op.kin else [(d, dtype(t)) for d, t in zip(op.dims, op.types) if d]
    outs = op.out or ([ins[0][0]] if ins else [])
    return [d for d, _ in ins], [t for _, t in ins], outs, [ins[0][1] if ins else "FLOAT"] * len(outs)


PARAM_SHAPES = [[V, C]] + [s for _ in range(2) for s in ([C], [C], [3 * C, C], [3 * C], [C, C], [C], [C], [C],
                                                         [4 * C, C], [4 * C], [C, 4 * C], [C])] + [[C], [C], [V, C]]


def shapes_cell(shapes) -> str:
    return '"' + ";".join(",".join(str(x) for x in d) for d in shapes) + '"'
