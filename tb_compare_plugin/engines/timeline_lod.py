"""Level of detail of the timeline: what one window of one side's lanes draws at a pixel width.

Owns :func:`window_items`.  For a window [start, end) drawn ``px`` pixels wide, each depth run of
each lane (:mod:`timeline_lanes`) is cut with ``searchsorted`` on its sorted starts (and on the
running maximum of its ends, so an event that started before the window and still runs is in);
events at least one bin wide are drawn as they are, and runs of consecutive narrower events that
fall in the same bin are merged into one *summary block* (its extent, its event count and its
class mix in ms; its class the mix's largest).  A bin is one pixel; when the side would still
draw more than ``4 * px`` items in all, the bin widens (at least doubling) until it does not, so the answer is
bounded whatever the window and however many events it covers.  All numpy; Python only touches
the (bounded) items it returns.
"""
from __future__ import annotations

import numpy as np

from .timeline_lanes import CLASSES, SOURCE_PREFIX

ITEMS_PER_PX = 4
_WORD = {"kernels": "kernels", "ops": "ops", "comm_ops": "collectives", "comm_tasks": "tasks", "": "gaps"}
NCLS = len(CLASSES)


def _ms(ns: np.ndarray, origin: int) -> list:
    return np.round((np.asarray(ns, np.int64) - origin) / 1e6, 6).tolist()


class _Cut:
    """One run's events inside the window at one bin width: singles (drawn as they are) and blocks."""
    __slots__ = ("idx", "single", "block_of", "n_items")

    def __init__(self, lane, lo: int, hi: int, maxend: np.ndarray, start: int, end: int, bin_ns: float) -> None:
        s = lane.start_ns[lo:hi]
        a = int(np.searchsorted(maxend, start, side="right"))
        b = int(np.searchsorted(s, end, side="left"))
        idx = np.arange(lo + a, lo + b)
        e = lane.end_ns[idx]
        keep = (e > start) | (lane.start_ns[idx] >= start)
        idx = idx[keep]
        self.idx = idx
        st = lane.start_ns[idx]
        wide = (lane.end_ns[idx] - st) >= bin_ns
        b_of = np.floor((np.maximum(st, start) - start) / bin_ns).astype(np.int64)
        small = np.flatnonzero(~wide)
        # consecutive narrow events in the same bin form one block
        newblk = np.ones(len(small), bool)
        if len(small) > 1:
            same_bin = b_of[small[1:]] == b_of[small[:-1]]
            adjacent = small[1:] == small[:-1] + 1
            newblk[1:] = ~(same_bin & adjacent)
        blk = np.cumsum(newblk) - 1
        n_blk = int(newblk.sum())
        sizes = np.bincount(blk, minlength=n_blk) if len(small) else np.zeros(0, np.int64)
        lone = sizes[blk] == 1 if len(small) else np.zeros(0, bool)
        single = wide.copy()
        single[small[lone]] = True              # a block of one event is that event
        block_of = np.full(len(idx), -1, np.int64)
        multi = small[~lone]
        if len(multi):
            # renumber the blocks of two or more events 0..m-1
            keep_blk = np.flatnonzero(sizes > 1)
            remap = np.full(n_blk, -1, np.int64)
            remap[keep_blk] = np.arange(len(keep_blk))
            block_of[multi] = remap[blk[~lone]]
        self.single = single
        self.block_of = block_of
        self.n_items = int(single.sum()) + (int(block_of.max()) + 1 if len(multi) else 0)


def _cuts(lanes, start: int, end: int, bin_ns: float) -> list:
    out = []
    for ln in lanes.lanes:
        out.append([(depth, _Cut(ln, lo, hi, ln.run_maxend[i], start, end, bin_ns))
                    for i, (depth, lo, hi) in enumerate(ln.runs)])
    return out


def window_items(lanes, origin_ns: int, start_ns: int, end_ns: int, px: int,
                 budget: int | None = None) -> list:
    """The drawable items of every lane of ``lanes`` in [start_ns, end_ns) at ``px`` pixels:
    ``[{"name", "kind", "items": [[start_ms, dur_ms, class, label, id, extra], ...]}]`` with times
    in ms from ``origin_ns``; at most ``4 * px`` items in all (``budget`` overrides)."""
    px = max(1, int(px))
    start_ns, end_ns = int(start_ns), int(max(end_ns, start_ns + 1))
    budget = ITEMS_PER_PX * px if budget is None else int(budget)
    bin_ns = (end_ns - start_ns) / px
    cuts = _cuts(lanes, start_ns, end_ns, bin_ns)
    total = sum(c.n_items for lane in cuts for _, c in lane)
    while total > budget and bin_ns < (end_ns - start_ns) * 4:
        # items fall about in proportion to the bin width: jump there at once, then double
        bin_ns *= max(2.0, 0.8 * total / budget)
        cuts = _cuts(lanes, start_ns, end_ns, bin_ns)
        total = sum(c.n_items for lane in cuts for _, c in lane)
    left = budget
    out = []
    for ln, runs in zip(lanes.lanes, cuts):
        items: list = []
        for depth, cut in runs:
            if left <= 0:
                break
            got = _materialise(ln, lanes.symbols, cut, depth, origin_ns, left)
            left -= len(got)
            items.extend(got)
        items.sort(key=lambda it: (it[5].get("depth", 0), it[0]))
        out.append({"name": ln.name, "kind": ln.kind, "items": items})
    return out


def _materialise(ln, symbols, cut: _Cut, depth: int, origin: int, limit: int) -> list:
    host = ln.kind == "host"
    prefix = SOURCE_PREFIX[ln.source]
    items = []
    one = cut.idx[cut.single][:limit]
    if len(one):
        s, e = ln.start_ns[one], ln.end_ns[one]
        labels = symbols.strings(ln.label[one]) if ln.source else [""] * len(one)
        rows = ln.row[one].tolist()
        cls = ln.cls[one].tolist()
        for s_ms, d_ms, c, lab, r in zip(_ms(s, origin), np.round((e - s) / 1e6, 6).tolist(), cls, labels, rows):
            items.append([s_ms, d_ms, CLASSES[c], lab, f"{prefix}{r}" if prefix and r >= 0 else None,
                          {"depth": depth} if host else {}])
    multi = cut.block_of >= 0
    if multi.any() and len(items) < limit:
        pos = cut.idx[multi]
        blk = cut.block_of[multi]
        nb = int(blk.max()) + 1
        s, e = ln.start_ns[pos], ln.end_ns[pos]
        bs = np.full(nb, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(bs, blk, s)
        be = np.zeros(nb, np.int64)
        np.maximum.at(be, blk, e)
        cnt = np.bincount(blk, minlength=nb)
        mix = np.bincount(blk * NCLS + ln.cls[pos].astype(np.int64), weights=(e - s).astype(np.float64),
                          minlength=nb * NCLS).reshape(nb, NCLS)
        dom = mix.argmax(axis=1)
        word = _WORD[ln.source]
        take = min(nb, limit - len(items))
        mix_ms = np.round(mix / 1e6, 6)
        for b, (s_ms, d_ms) in enumerate(zip(_ms(bs[:take], origin), np.round((be - bs)[:take] / 1e6, 6).tolist())):
            nz = np.flatnonzero(mix[b])
            extra = {"n": int(cnt[b]), "mix": {CLASSES[c]: float(mix_ms[b, c]) for c in nz.tolist()}}
            if host:
                extra["depth"] = depth
            items.append([s_ms, d_ms, CLASSES[int(dom[b])], f"{int(cnt[b])} {word}", None, extra])
    return items
