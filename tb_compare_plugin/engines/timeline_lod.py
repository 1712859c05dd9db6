"""Level of detail of the timeline: what one window of one side's lanes draws at a pixel width.

Owns :func:`window_items`.  For a window [start, end) drawn ``px`` pixels wide, each depth run of
each lane (:mod:`timeline_lanes`) is cut with ``searchsorted`` on its sorted starts (and on the
running maximum of its ends, so an event that started before the window and still runs is in);
events at least one bin wide are drawn as they are, and runs of consecutive narrower events that
fall in the same bin are merged into one *summary block* (its extent, its event count and its
class mix in ms; its class the mix's largest).  A bin is one pixel; when the side would still
draw more than ``4 * px`` items in all, the bin widens (at least doubling) until it does not, so the answer is
bounded whatever the window and however many events it covers; while it widens only the items
are counted, the final width makes them.  A run with many events in the window is read per bin
(prefix sums per class, the longest duration per block of events: ``Lane.cum``, ``Lane.wide``),
so a wide window costs about its bins, not its events.  All numpy; Python only touches the
(bounded) items it returns.
"""
from __future__ import annotations

import operator

import numpy as np

from .timeline_lanes import CLASSES, SOURCE_PREFIX, WIDE_RUN

ITEMS_PER_PX = 4
_WORD = {"kernels": "kernels", "ops": "ops", "comm_ops": "collectives", "comm_tasks": "tasks", "": "gaps"}
NCLS = len(CLASSES)


def _ms(ns: np.ndarray, origin: int) -> list:
    return np.round((np.asarray(ns, np.int64) - origin) / 1e6, 6).tolist()


FAST_MIN = WIDE_RUN       # events of a run in the window above which bins are summed from prefix sums
_START = operator.itemgetter(0)


def _int_keys(x: np.ndarray) -> np.ndarray:
    """Per float ``x`` the least int64 ``t`` with ``float64(t) >= x``: searching sorted int64 ``s``
    for ``t`` finds what searching it for ``x`` does (``s`` compared as float64, rounded the same
    way above 2**53 ns), without converting ``s``."""
    hi = np.ceil(x).astype(np.int64)
    lo = hi - 4096                                   # float64(lo) < x: the spacing is <= 1024 below 2**63
    while True:
        live = hi - lo > 1
        if not live.any():
            return hi
        mid = lo + (hi - lo) // 2
        up = mid.astype(np.float64) >= x
        hi = np.where(live & up, mid, hi)
        lo = np.where(live & ~up, mid, lo)


class _Cut:
    """One run's events inside the window at one bin width: ``single`` (global indices of the events
    drawn as they are) and the summary blocks (``bs``, ``be``, ``cnt``, ``mix`` [block, class] ns).

    Few events: each is looked at; consecutive narrow events in the same bin form a block.  Many
    events (a wide window over a big trace): a block is every narrow event of a bin, its count and
    class mix from the run's prefix sums (one ``searchsorted`` per bin edge), its extent the bin's
    first start to the bin's last end, clipped to the bin, so the cost follows the bins, not the events."""
    __slots__ = ("single", "bs", "be", "cnt", "mix", "n_items", "_rest")

    def __init__(self, lane, i: int, start: int, end: int, bin_ns: float, edges: dict) -> None:
        """Counts the items (what the bin widening needs); :meth:`finish` makes them."""
        _, lo, hi = lane.runs[i]
        s = lane.start_ns[lo:hi]
        a = int(np.searchsorted(lane.run_maxend[i], start, side="right"))
        b = int(np.searchsorted(s, end, side="left"))
        if b - a > FAST_MIN:
            self._many(lane, i, lo, a, b, start, end, bin_ns, edges)
        else:
            self._few(lane, lo, a, b, start, bin_ns)

    def finish(self) -> "_Cut":
        if self._rest is not None:
            self._rest()
            self._rest = None
        return self

    def _few(self, lane, lo, a, b, start, bin_ns) -> None:
        idx = np.arange(lo + a, lo + b)
        st, en = lane.start_ns[idx], lane.end_ns[idx]
        keep = (en > start) | (st >= start)
        idx, st, en = idx[keep], st[keep], en[keep]
        wide = (en - st) >= bin_ns
        b_of = np.floor((np.maximum(st, start) - start) / bin_ns).astype(np.int64)
        small = np.flatnonzero(~wide)
        newblk = np.ones(len(small), bool)
        if len(small) > 1:
            newblk[1:] = ~((b_of[small[1:]] == b_of[small[:-1]]) & (small[1:] == small[:-1] + 1))
        blk = np.cumsum(newblk) - 1
        n_blk = int(newblk.sum())
        sizes = np.bincount(blk, minlength=n_blk) if len(small) else np.zeros(0, np.int64)
        lone = sizes[blk] == 1 if len(small) else np.zeros(0, bool)
        keep_blk = np.flatnonzero(sizes > 1)
        nb = len(keep_blk)
        self.n_items = int(np.count_nonzero(wide)) + int(np.count_nonzero(lone)) + nb

        def rest():
            single = wide.copy()
            single[small[lone]] = True              # a block of one event is that event
            self.single = idx[single]
            multi = small[~lone]
            remap = np.full(n_blk, -1, np.int64)
            remap[keep_blk] = np.arange(nb)
            bid = remap[blk[~lone]]
            ms, me = st[multi], en[multi]
            heads = np.flatnonzero(np.concatenate([[True], bid[1:] != bid[:-1]])) if nb else np.zeros(0, np.int64)
            self.bs = np.minimum.reduceat(ms, heads) if nb else np.zeros(0, np.int64)   # a block's events are
            self.be = np.maximum.reduceat(me, heads) if nb else np.zeros(0, np.int64)   # consecutive
            self.cnt = np.bincount(bid, minlength=nb)
            self.mix = np.bincount(bid * NCLS + lane.cls[idx[multi]].astype(np.int64),
                                   weights=(me - ms).astype(np.float64), minlength=nb * NCLS).reshape(nb, NCLS)
        self._rest = rest

    def _many(self, lane, i, lo, a, b, start, end, bin_ns, edges) -> None:
        s = lane.start_ns[lo + a:lo + b]
        e = lane.end_ns[lo + a:lo + b]
        nbins = max(1, int(np.ceil((end - start) / bin_ns)))
        keys = edges.get("keys")
        if keys is None:                        # the same bin edges for every run of the window
            keys = edges["keys"] = _int_keys(start + np.arange(1, nbins) * bin_ns)
        bounds = np.concatenate([[0], np.searchsorted(s, keys, side="left"), [b - a]])
        wide = lane.wide(i, a, b, bin_ns)
        w_bin = np.searchsorted(bounds, wide, side="right") - 1
        cnt_all = np.diff(bounds)
        narrow = cnt_all - np.bincount(w_bin, minlength=nbins)
        lone = (narrow == 1) & (cnt_all == 1)
        blk = np.flatnonzero((narrow >= 1) & ~lone)
        self.n_items = len(wide) + int(np.count_nonzero(lone)) + len(blk)

        def rest():
            cum = lane.cum(i)
            per = cum[a + bounds[1:]] - cum[a + bounds[:-1]]          # [bin, class present] ns, all events
            if len(wide):
                cls_pos = np.searchsorted(lane.classes, lane.cls[lo + a + wide])
                wmix = np.zeros_like(per)
                np.add.at(wmix, (w_bin, cls_pos), (e[wide] - s[wide]))
                per = per - wmix
            singles = [lo + a + wide, lo + a + bounds[:-1][lone]]
            self.single = np.sort(np.concatenate(singles))
            first, last = bounds[:-1][blk], bounds[1:][blk] - 1
            lo_edge = start + blk * bin_ns
            self.bs = np.maximum(s[first], np.int64(start)).astype(np.int64)
            maxend = lane.run_maxend[i][a + last]
            self.be = np.maximum(np.minimum(maxend, (lo_edge + bin_ns).astype(np.int64)), self.bs + 1)
            self.cnt = narrow[blk]
            mix = np.zeros((len(blk), NCLS), np.float64)
            mix[:, lane.classes.astype(np.int64)] = per[blk]
            self.mix = mix
        self._rest = rest


def _cuts(lanes, start: int, end: int, bin_ns: float) -> list:
    edges: dict = {}
    return [[(depth, _Cut(ln, i, start, end, bin_ns, edges)) for i, (depth, _, _) in enumerate(ln.runs)]
            for ln in lanes.lanes]


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
        for depth, cut in runs:                 # the runs by depth: each sorted by start, in turn
            if left <= 0:
                break
            got = _materialise(ln, lanes.symbols, cut.finish(), depth, origin_ns, left)
            left -= len(got)
            got.sort(key=_START)
            items.extend(got)
        out.append({"name": ln.name, "kind": ln.kind, "items": items})
    return out


def _materialise(ln, symbols, cut: _Cut, depth: int, origin: int, limit: int) -> list:
    host = ln.kind == "host"
    prefix = SOURCE_PREFIX[ln.source]
    items = []
    one = cut.single[:limit]
    if len(one):
        s, e = ln.start_ns[one], ln.end_ns[one]
        labels = symbols.strings(ln.label[one]) if ln.source else [""] * len(one)
        rows = ln.row[one].tolist()
        cls = ln.cls[one].tolist()
        ids = [f"{prefix}{r}" if r >= 0 else None for r in rows] if prefix else [None] * len(rows)
        if host:
            items = [[s_ms, d_ms, CLASSES[c], lab, i, {"depth": depth}] for s_ms, d_ms, c, lab, i in
                     zip(_ms(s, origin), np.round((e - s) / 1e6, 6).tolist(), cls, labels, ids)]
        else:
            items = [[s_ms, d_ms, CLASSES[c], lab, i, {}] for s_ms, d_ms, c, lab, i in
                     zip(_ms(s, origin), np.round((e - s) / 1e6, 6).tolist(), cls, labels, ids)]
    take = min(len(cut.cnt), limit - len(items))
    if take > 0:
        mix = cut.mix[:take]
        dom = mix.argmax(axis=1).tolist()
        mix_ms = np.round(mix / 1e6, 6)
        word = _WORD[ln.source]
        cnt = cut.cnt[:take].tolist()
        cols = np.flatnonzero(mix.any(axis=0))          # the classes any block holds
        names = [CLASSES[c] for c in cols.tolist()]
        vals, nzs = mix_ms[:, cols].tolist(), (mix[:, cols] != 0).tolist()
        rows = zip(_ms(cut.bs[:take], origin), np.round((cut.be[:take] - cut.bs[:take]) / 1e6, 6).tolist(),
                   cnt, dom, vals, nzs)
        if host:
            items.extend([s_ms, d_ms, CLASSES[c], f"{n} {word}", None,
                          {"n": n, "mix": {k: x for k, x, z in zip(names, v, nz) if z}, "depth": depth}]
                         for s_ms, d_ms, n, c, v, nz in rows)
        else:
            items.extend([s_ms, d_ms, CLASSES[c], f"{n} {word}", None,
                          {"n": n, "mix": {k: x for k, x, z in zip(names, v, nz) if z}}]
                         for s_ms, d_ms, n, c, v, nz in rows)
    return items
