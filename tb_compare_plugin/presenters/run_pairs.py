"""Suggested baseline -> target pairs of the runs listing, ranked and bounded.

Two runs make a suggestion when they sit side by side (in one folder, or at the same path under
two folders that differ in one place, ``gpu/resnet`` and ``npu/resnet``) and either run on two
devices (GPU and NPU) or have names that differ only by a version-like part (``v1``/``v2``,
``base``/``new``, a version added: ``target_npu``/``target_npu_v2``) or by the profiler level.

Nothing here compares every run with every other: runs are bucketed by the skeleton of their
names (the name without its version-like parts), a run is paired with the next few versions in
its bucket and with the few other-device runs whose names are nearest to its own, each run is in
at most ``MAX_PER_RUN`` suggestions and the listing holds at most ``MAX_PAIRS``; what the bounds
leave off is counted (``pairs_left_off`` in the runs answer). So the cost grows as N log N with
the number of runs, and the answer stays small.
"""
from __future__ import annotations

import os
import re
from bisect import bisect_left
from functools import lru_cache

MAX_PAIRS = 100          # suggestions in one listing
MAX_PER_RUN = 4          # suggestions one run takes part in
PARTNERS = 3             # per run and rule: the next versions, the nearest other-device runs

_VERSION_RE = re.compile(r"(v?\d+(?:[._]\d+)*|new|old|baseline|base|target|before|after|control|test)",
                         re.I)
_RANK_FOLDER_RE = re.compile(r"rank[_-]?\d+", re.I)
# a profiler level (Ascend's profiler_level Level0/1/2: "level1", "lvl_2"): a setting, not a version
_LEVEL_RE = re.compile(r"(?<![a-z])(?:level|lvl)[_-]?(\d)(?!\d)", re.I)
_TOKEN_SPLIT_RE = re.compile(r"[_\-.\s]+")
_DEVICE_WORDS = {"gpu", "npu", "cuda", "ascend", "nvidia"}
# the order of two versions: words meaning "earlier" before words meaning "later", numbers as numbers
_EARLY_RE = re.compile(r"(?<![a-z])(?:old|baseline|base|before|control)(?![a-z])")
_LATE_RE = re.compile(r"(?<![a-z])(?:new|target|after|test)(?![a-z])")
_DIGITS_RE = re.compile(r"(\d+)")


def run_device(run_payload: dict) -> str | None:
    devs = {w["device"] for w in run_payload["workers"] if w["status"] != "error"}
    return devs.pop() if len(devs) == 1 else None


_MEMOS: list = []


def _memo(f):
    """Per-name keys computed once per listing (``suggest_pairs_counted`` clears them after)."""
    m = lru_cache(maxsize=None)(f)
    _MEMOS.append(m)
    return m


@_memo
def _version_free(name: str) -> str:
    return _VERSION_RE.sub("#", name)


@_memo
def _tokens(label: str) -> tuple[str, ...]:
    return tuple(t for t in _TOKEN_SPLIT_RE.split(label) if t)


def _is_version_token(t: str) -> bool:
    return _VERSION_RE.fullmatch(t) is not None


@_memo
def _added_version_key(label: str) -> str:
    """The name without its whole version-like tokens: ``target_npu`` and ``target_npu_v2`` both
    give ``npu`` (a version added to a name, which ``_version_free`` does not see)."""
    return "_".join(t for t in _tokens(label) if not _is_version_token(t))


@_memo
def _device_keys(label: str) -> tuple[str, str]:
    """The name without device words and version parts, then without device words only: a GPU
    run's likeliest NPU partners are those equal on the first, then nearest on the second
    (``gpu_0007`` with ``npu_0007``; ``baseline_gpu`` with ``target_npu``)."""
    toks = [t for t in _tokens(label.lower()) if t not in _DEVICE_WORDS]
    return "_".join(t for t in toks if not _is_version_token(t)), "_".join(toks)


@_memo
def version_order(label: str) -> tuple:
    """Sort key putting the earlier version first: numbers compared as numbers (v9 < v10), the
    words for "before" ahead of the words for "after" (old < new, before < after), and a name
    without a version part ahead of the same name with one (target_npu < target_npu_v2)."""
    s = _LATE_RE.sub("\x02", _EARLY_RE.sub("\x01", label.lower()))
    parts = _DIGITS_RE.split(s)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), label


def _levels(a: str, b: str) -> tuple[str, str] | None:
    """(level of a, level of b) when two folder names differ only by a profiler level
    (``..._level0`` / ``..._level1``), else None."""
    la, lb = _LEVEL_RE.findall(a), _LEVEL_RE.findall(b)
    if not la or la == lb or _LEVEL_RE.sub("#", a).lower() != _LEVEL_RE.sub("#", b).lower():
        return None
    return ",".join(f"level{x}" for x in la), ",".join(f"level{x}" for x in lb)


def _two_ranks(a: str, b: str) -> bool:
    return bool(_RANK_FOLDER_RE.fullmatch(a) and _RANK_FOLDER_RE.fullmatch(b))


def _why_apart(a: str, b: str, what: str) -> str | None:
    """Why two names make a pair: a profiler level (said as such) or a version-like part
    (replaced, ``v1``/``v2``, or added, ``x``/``x_v2``); None when neither. Two ranks of one job
    (``rank0``/``rank1``) are not versions. ``a`` and ``b`` are single path parts."""
    if a == b or _two_ranks(a, b):
        return None
    lv = _levels(a, b)
    if lv:
        return f"{what} differ only by the profiler level ({lv[0]} and {lv[1]})"
    if _version_free(a) == _version_free(b):
        return f"{what} differ only by a version-like part"
    if _added_version_key(a) == _added_version_key(b) and _tokens(a) != _tokens(b):
        return f"{what} differ only by a version-like part"
    return None


def _readable(run: dict) -> list[dict]:
    return [w for w in run["workers"] if w["status"] != "error"] or run["workers"]


def _worker_pair(a: dict, b: dict) -> tuple[str | None, str | None]:
    """The workers a suggestion opens: the lowest rank both runs have (rank to matching rank),
    else each run's first readable worker."""
    wa, wb = _readable(a), _readable(b)
    ranks_b = {w["rank"]: w for w in wb if w.get("rank") is not None}
    for w in sorted((w for w in wa if w.get("rank") is not None), key=lambda w: w["rank"]):
        if w["rank"] in ranks_b:
            return w["id"], ranks_b[w["rank"]]["id"]
    return (wa[0]["id"] if wa else None), (wb[0]["id"] if wb else None)


# -- candidates within one group of side-by-side runs ------------------------------------------
# A group is a list of (label, run): the runs of one folder labelled by their own names, or the
# runs at one path under sibling folders labelled by the folder that differs.

def _device_candidates(group: list[tuple[str, dict]]):
    """(gpu, npu) entries: each GPU run with the PARTNERS NPU runs whose names, without device
    words, are nearest its own (``_device_keys``)."""
    gpus = [e for e in group if run_device(e[1]) == "GPU"]
    if not gpus:
        return
    npus = sorted((e for e in group if run_device(e[1]) == "NPU"), key=lambda e: (_device_keys(e[0]), version_order(e[0])))
    if not npus:
        return
    keys = [_device_keys(e[0]) for e in npus]
    for g in gpus:
        k = _device_keys(g[0])
        p = bisect_left(keys, k)
        window = range(max(0, p - PARTNERS), min(len(npus), p + PARTNERS))
        # equal without versions first, then equal, then the nearest in sort order (p-1 and p)
        near = sorted(window, key=lambda j: (keys[j][0] != k[0], keys[j] != k, abs(j - p + 0.5), j))
        for j in near[:PARTNERS]:
            yield g, npus[j]


def _version_candidates(group: list[tuple[str, dict]], what: str):
    """(earlier, later, reason) entries: in each bucket of names equal but for their version
    parts (replaced: ``_version_free``; added: ``_added_version_key``), each run with the next
    PARTNERS versions; the nearest versions first, then in the group's order."""
    chains = []
    for keyf in (_version_free, _added_version_key):
        buckets: dict[str, list] = {}
        for i, e in enumerate(group):
            buckets.setdefault(keyf(e[0]), []).append((i, e))
        chains += [sorted(m, key=lambda x: version_order(x[1][0])) for m in buckets.values() if len(m) >= 2]
    done = set()
    for d in range(1, PARTNERS + 1):
        step = sorted((c[k][0], k, ci) for ci, c in enumerate(chains) for k in range(len(c) - d))
        for _, k, ci in step:
            a, b = chains[ci][k][1], chains[ci][k + d][1]
            if (a[0], b[0]) in done:
                continue
            done.add((a[0], b[0]))
            why = _why_apart(a[0], b[0], what)
            if why:
                yield a, b, why


def _one_folder_apart(runs: list[dict]) -> dict[tuple, list]:
    """Groups of runs whose paths differ in exactly the folder at depth i (not the last part:
    those share a parent), keyed (i, parts before, parts after), each run labelled by its part i."""
    groups: dict[tuple, list] = {}
    for r in runs:
        parts = r["name"].split("/")
        for i in range(len(parts) - 1):
            groups.setdefault((i, tuple(parts[:i]), tuple(parts[i + 1:])), []).append((parts[i], r))
    return {k: v for k, v in groups.items() if len(v) >= 2}


def _candidates(runs: list[dict]):
    """(baseline, target, reason) in rank order: per folder its GPU/NPU pairs then its version
    pairs; then the same across sibling trees."""
    by_parent: dict[str, list] = {}
    for r in runs:
        by_parent.setdefault(os.path.dirname(r["name"]), []).append((os.path.basename(r["name"]), r))
    for sibs in by_parent.values():
        if len(sibs) < 2:
            continue
        for g, n in _device_candidates(sibs):
            yield g[1], n[1], "GPU and NPU runs in the same folder"
        for a, b, why in _version_candidates(sibs, "run names"):
            yield a[1], b[1], why
    for group in _one_folder_apart(runs).values():
        for g, n in _device_candidates(group):
            yield g[1], n[1], f"GPU and NPU runs at the same path under {g[0]}/ and {n[0]}/"
        for a, b, why in _version_candidates(group, "which"):
            if {run_device(a[1]), run_device(b[1])} != {"GPU", "NPU"}:      # those: said as one above
                yield a[1], b[1], f"runs at the same path under {a[0]}/ and {b[0]}/, {why}"


_last: tuple = (None, [], 0)     # (inputs, pairs, left_off) of the last listing


def _inputs(runs: list[dict]) -> tuple:
    """All the suggestions depend on: names, and per worker its id, rank, device and whether it
    is unreadable (a listing polled while workers parse asks again with the same inputs)."""
    return tuple((r["name"], tuple((w["id"], w.get("rank"), w.get("device"), w["status"] == "error")
                                   for w in r["workers"])) for r in runs)


def suggest_pairs_counted(runs: list[dict]) -> tuple[list[dict], int]:
    """The suggestions (at most MAX_PAIRS, each run in at most MAX_PER_RUN, likeliest first) and
    how many further candidates these bounds left off. The last answer is kept for the same
    inputs."""
    global _last
    key = _inputs(runs)
    last = _last
    if last[0] == key:
        return [dict(p) for p in last[1]], last[2]
    try:
        pairs, left_off = _bounded(runs)
    finally:
        for m in _MEMOS:
            m.cache_clear()
    _last = (key, pairs, left_off)
    return [dict(p) for p in pairs], left_off


def _bounded(runs: list[dict]) -> tuple[list[dict], int]:
    pairs: list[dict] = []
    seen: set = set()
    uses: dict[str, int] = {}
    left_off = 0
    for a, b, why in _candidates(runs):
        na, nb = a["name"], b["name"]
        key = (na, nb) if na < nb else (nb, na)
        if na == nb or key in seen:
            continue
        seen.add(key)
        if len(pairs) >= MAX_PAIRS or uses.get(na, 0) >= MAX_PER_RUN or uses.get(nb, 0) >= MAX_PER_RUN:
            left_off += 1
            continue
        uses[na] = uses.get(na, 0) + 1
        uses[nb] = uses.get(nb, 0) + 1
        bw, tw = _worker_pair(a, b)
        pairs.append({"baseline": na, "target": nb, "baseline_worker": bw, "target_worker": tw, "reason": why})
    return pairs, left_off


def suggest_pairs(runs: list[dict]) -> list[dict]:
    """Baseline -> target suggestions, the likeliest first (the tab opens the first): a GPU run
    and an NPU run under the same parent folder (GPU is the baseline), or sibling runs whose
    names differ only by a version-like part (the earlier version is the baseline); then the
    same across sibling trees. Each suggestion opens workers of matching rank."""
    return suggest_pairs_counted(runs)[0]
