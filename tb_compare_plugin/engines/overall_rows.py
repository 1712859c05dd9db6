"""The OverallMetrics rows: two SideBreakdowns laid out in the reference's order (spec b.6).

Owns the row list (names without the reference's TAB indentation; ``depth`` = number of
TABs), the group / MC2 / group-overlap row rules and the diff / ratio of each row.  A row is
left out when both sides are exactly 0, except the four top-level rows.  Rows the reference
does not have carry new names only: ``Lccl`` (top level; the reference shows Lccl only in
its screen table although it subtracts it from Free Time).
"""
from __future__ import annotations

# (metric key, row name, depth, has a count)
ROWS_BEFORE_MC2 = [("computing", "Computing Time", 0, True)]
ROWS_BEFORE_GROUPS = [
    ("fa_fwd", "Flash Attention (Forward)", 1, True),
    ("fa_fwd_cube", "Flash Attention (Forward) (Cube)", 2, True),
    ("fa_fwd_vec", "Flash Attention (Forward) (Vector)", 2, True),
    ("fa_bwd", "Flash Attention (Backward)", 1, True),
    ("fa_bwd_cube", "Flash Attention (Backward) (Cube)", 2, True),
    ("fa_bwd_vec", "Flash Attention (Backward) (Vector)", 2, True),
    ("conv_fwd", "Conv (Forward)", 1, True),
    ("conv_fwd_cube", "Conv (Forward) (Cube)", 2, True),
    ("conv_fwd_vec", "Conv (Forward) (Vector)", 2, True),
    ("conv_bwd", "Conv (Backward)", 1, True),
    ("conv_bwd_cube", "Conv (Backward) (Cube)", 2, True),
    ("conv_bwd_vec", "Conv (Backward) (Vector)", 2, True),
    ("mm", "Matmul", 1, True),
    ("mm_cube", "Matmul (Cube)", 2, True),
    ("mm_vec", "Matmul (Vector)", 2, True),
    ("pa", "Page Attention", 1, True),
    ("vector", "Vector", 1, True),
    ("vec_trans", "Vector (Trans)", 2, True),
    ("vec_notrans", "Vector (No Trans)", 2, True),
    ("cube", "Cube", 1, True),
    ("sdma_tm", "SDMA (Tensor Move)", 1, True),
    ("other", "Other", 1, False),
    ("lccl", "Lccl", 0, True),
    ("uncovered", "Uncovered Communication Time", 0, False),
]
ROWS_AFTER_GROUPS = [
    ("free_time", "Free Time", 0, False),
    ("sdma", "SDMA", 1, False),
    ("free", "Free", 1, False),
    ("e2e", "E2E Time", 0, False),
]
ALWAYS = frozenset({"computing", "uncovered", "free_time", "e2e"})
OVERLAPPED = "Uncovered Communication Overlapped"


def _ratio(b: float, t: float):
    if b == 0:
        return 1.0 if t == 0 else None
    return t / b


def _side(metric, scale: float, with_count: bool) -> tuple[dict, list]:
    if metric is None:
        return {"duration_ms": 0.0, "count": 0 if with_count else None}, []
    count = None
    if with_count:
        count = metric.count if metric.count is not None else 0
        if scale != 1.0:
            count = round(count * scale, 3)
    kernels = [{"name": n, "duration_ms": ns * scale / 1e6, "count": (c if scale == 1.0 else round(c * scale, 3))}
               for n, ns, c in metric.kernels]
    return {"duration_ms": metric.duration_ns * scale / 1e6, "count": count}, kernels


class _Rows:
    def __init__(self, sb, st) -> None:
        self.sb, self.st = sb, st
        self.out: list[dict] = []

    def add(self, name: str, depth: int, mb, mt, with_count: bool, always: bool = False) -> None:
        bns = mb.duration_ns if mb is not None else 0
        tns = mt.duration_ns if mt is not None else 0
        if bns == 0 and tns == 0 and not always:
            return
        b, bk = _side(mb, self.sb, with_count)
        t, tk = _side(mt, self.st, with_count)
        self.out.append({"name": name, "depth": depth, "baseline": b, "target": t,
                         "diff_ms": t["duration_ms"] - b["duration_ms"],
                         "ratio": _ratio(b["duration_ms"], t["duration_ms"]),
                         "kernels": {"baseline": bk, "target": tk}})


class _Ns:
    """A bare duration in Metric's shape (for rows computed here)."""

    def __init__(self, ns: int, kernels=None) -> None:
        self.duration_ns, self.count, self.kernels = ns, None, kernels or []


def _mc2_rows(r: _Rows, b, t) -> None:
    names = list(b.mc2) + [n for n in t.mc2 if n not in b.mc2]
    for n in names:
        mb, mt = b.mc2.get(n), t.mc2.get(n)
        r.add(n, 1, mb["total"] if mb else None, mt["total"] if mt else None, True)
        for part, label in (("computing", "Computing"), ("communication", "Communication")):
            r.add(label, 2, _Ns(mb[part]) if mb else None, _Ns(mt[part]) if mt else None, False)


def _group_rows(r: _Rows, b, t) -> None:
    def by_pg(side):
        out: dict = {}
        for g in side.groups:
            if g.pg_name:
                out.setdefault(g.pg_name, []).append(g)
        return out
    bg, tg = list(b.groups), list(t.groups)
    bp, tp = by_pg(b), by_pg(t)
    pairs = []
    for pg, gl in bp.items():
        if len(gl) == 1 and len(tp.get(pg, [])) == 1:
            pairs.append((f"{pg}: Communication", gl[0], tp[pg][0]))
    for _, x, y in pairs:
        bg.remove(x)
        tg.remove(y)
    for g in bg:
        other = next((y for y in tg if y.key == g.key), None)
        if other is not None:
            tg.remove(other)
        pairs.append((g.label, g, other))
    pairs.extend((g.label, None, g) for g in tg)
    for label, x, y in pairs:
        r.add(label, 1, x.total if x else None, y.total if y else None, False)
        r.add("Wait", 2, x.wait if x else None, y.wait if y else None, False)
        r.add("Transmit", 2, x.transmit if x else None, y.transmit if y else None, False)


def _overlap_rows(r: _Rows, b, t) -> None:
    bo = {f"{a} & {c}": ns for a, c, ns in b.overlaps}
    to = {f"{a} & {c}": ns for a, c, ns in t.overlaps}
    if not bo and not to:
        return
    r.add(OVERLAPPED, 1, _Ns(sum(bo.values())), _Ns(sum(to.values())), False)
    for label in list(bo) + [x for x in to if x not in bo]:
        r.add(label, 2, _Ns(bo[label]) if label in bo else None, _Ns(to[label]) if label in to else None, False)


def build_rows(b, t, scale_b: float = 1.0, scale_t: float = 1.0) -> list[dict]:
    r = _Rows(scale_b, scale_t)

    def plain(spec):
        for key, name, depth, with_count in spec:
            r.add(name, depth, b.metrics.get(key), t.metrics.get(key), with_count, key in ALWAYS)
    plain(ROWS_BEFORE_MC2)
    _mc2_rows(r, b, t)
    plain(ROWS_BEFORE_GROUPS)
    _group_rows(r, b, t)
    _overlap_rows(r, b, t)
    plain(ROWS_AFTER_GROUPS)
    return r.out
