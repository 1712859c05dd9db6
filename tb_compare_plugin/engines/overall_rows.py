"""The OverallMetrics rows: two SideBreakdowns laid out in the reference's order (spec b.6).

Owns the row list (names without the reference's TAB indentation; ``depth`` = number of
TABs), the group / MC2 / group-overlap row rules and the diff / ratio of each row.  A row is
left out when both sides are exactly 0, except the four top-level rows.  Rows the reference
does not have carry new names only: ``Lccl`` (top level; the reference shows Lccl only in
its screen table although it subtracts it from Free Time).

Also owns :func:`pair_leftover_groups`, the rule (shared with the communication engine) that
pairs communication groups the two sides name differently, e.g. a GPU NCCL process group
``default_pg: 0`` with the Ascend HCCL group ``Group 0 Communication``; a paired row is
labelled ``"<baseline group> ↔ <target group>"`` (``PAIR_SEP``).
"""
from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class GroupSig:
    """What the pairing rule knows of one communication group of one side."""
    name: str                       # as shown (label)
    first_ns: int                   # start of its first collective
    collectives: frozenset          # canonical collective names it carries


PAIR_SEP = " ↔ "


def _colls(c: frozenset) -> str:
    return ", ".join(sorted(c))


def pair_leftover_groups(base: list, target: list, same_platform: bool,
                         names_matched: bool) -> tuple[list, str | None]:
    """Pair the groups left unmatched by name, when that is unambiguous.

    ``base`` / ``target``: GroupSig lists.  Returns ([(i, j)] indices into them, reason or None).
    Rules, tried in order (no pair otherwise, the leftovers stay one-sided):

    * same platform and some names already matched: the sides name groups alike, so a
      different name is a different group: nothing is paired;
    * one group left on each side, carrying a common collective (or none known);
    * the same number n > 1 on each side, each group with a distinct set of collective types
      and the same sets on both sides: paired by that set;
    * the same number n > 1 on each side, no two groups of a side starting at the same time, and
      the same sets of collective types in the order of first appearance: paired by that order.
    """
    if not base or not target or (same_platform and names_matched):
        return [], None
    if len(base) == 1 and len(target) == 1:
        b, t = base[0], target[0]
        if b.collectives and t.collectives and not (b.collectives & t.collectives):
            return [], None
        common = b.collectives & t.collectives
        return [(0, 0)], "the only unmatched group on each side" + (f", both carrying {_colls(common)}"
                                                                       if common else "")
    if len(base) != len(target):
        return [], None
    bs, ts = [g.collectives for g in base], [g.collectives for g in target]
    if len(set(bs)) == len(bs) and set(bs) == set(ts):
        where = {c: j for j, c in enumerate(ts)}
        return [(i, where[c]) for i, c in enumerate(bs)], "each carries its own set of collective types"
    bo = sorted(range(len(base)), key=lambda i: base[i].first_ns)
    to = sorted(range(len(target)), key=lambda j: target[j].first_ns)

    def distinct_starts(side, order):
        return all(side[a].first_ns < side[b].first_ns for a, b in zip(order, order[1:]))
    if (distinct_starts(base, bo) and distinct_starts(target, to)
            and [bs[i] for i in bo] == [ts[j] for j in to]):
        return list(zip(bo, to)), "the same collective types in the same order of first appearance"
    return [], None


def pairing_note(what: str, pairs: list, reason: str) -> str:
    """Note text for paired groups: ``pairs`` = [(baseline name, target name)]."""
    listed = "; ".join(f"baseline {b!r} with target {t!r}" for b, t in pairs)
    return f"{what}: communication groups named differently on the two sides were paired ({listed}): {reason}."


def _sig(g) -> GroupSig:
    return GroupSig(g.label, g.first_ns, g.collectives)


def _group_rows(r: _Rows, b, t, compat: bool = False, notes: list | None = None) -> None:
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
    partner: dict = {}
    for g in bg:
        other = next((y for y in tg if y.key == g.key and id(y) not in partner.values()), None)
        if other is not None:
            partner[id(g)] = id(other)
    matched = bool(pairs or partner)
    by_id = {id(y): y for y in tg}
    labels: dict = {}
    if not compat:
        lb = [g for g in bg if id(g) not in partner]
        lt = [y for y in tg if id(y) not in partner.values()]
        idx, why = pair_leftover_groups([_sig(g) for g in lb], [_sig(y) for y in lt],
                                        b.device == t.device, matched)
        for i, j in idx:
            partner[id(lb[i])] = id(lt[j])
            labels[id(lb[i])] = lb[i].label + PAIR_SEP + lt[j].label
        if idx and notes is not None:
            notes.append(pairing_note("Overview", [(lb[i].label, lt[j].label) for i, j in idx], why))
    taken = set(partner.values())
    for g in bg:
        other = by_id.get(partner.get(id(g)))
        pairs.append((labels.get(id(g), g.label), g, other))
    pairs.extend((g.label, None, g) for g in tg if id(g) not in taken)
    for label, x, y in pairs:
        if all(g is None or g.redundant for g in (x, y)):
            continue          # a GPU side's only, unnamed group: the Uncovered row again
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


def build_rows(b, t, scale_b: float = 1.0, scale_t: float = 1.0, compat: bool = False,
               notes: list | None = None) -> list[dict]:
    """The rows; ``compat`` = the reference's rows only (its group pairing, no ``Lccl`` row);
    group-pairing notes go to ``notes``."""
    r = _Rows(scale_b, scale_t)

    def plain(spec):
        for key, name, depth, with_count in spec:
            if compat and key == "lccl":
                continue            # the reference shows Lccl in its screen table only
            r.add(name, depth, b.metrics.get(key), t.metrics.get(key), with_count, key in ALWAYS)
    plain(ROWS_BEFORE_MC2)
    _mc2_rows(r, b, t)
    plain(ROWS_BEFORE_GROUPS)
    _group_rows(r, b, t, compat, notes)
    _overlap_rows(r, b, t)
    plain(ROWS_AFTER_GROUPS)
    return r.out
