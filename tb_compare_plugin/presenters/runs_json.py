"""The `runs` listing: discovered runs and workers with their load status, plus
suggested baseline -> target pairs for the UI to offer first."""
from __future__ import annotations

import os
import re

_VERSION_RE = re.compile(r"(v?\d+(?:[._]\d+)*|new|old|baseline|base|target|before|after|control|test)",
                         re.I)
_RANK_FOLDER_RE = re.compile(r"rank[_-]?\d+", re.I)
# a profiler level (Ascend's profiler_level Level0/1/2: "level1", "lvl_2"): a setting, not a version
_LEVEL_RE = re.compile(r"(?<![a-z])(?:level|lvl)[_-]?(\d)(?!\d)", re.I)


def worker_payload(spec, store) -> dict:
    st = store.status(spec)
    prof = store.loaded(spec)
    status, error = st["status"], st["error"]
    if spec.error:
        status, error = "error", spec.error
    out = {
        "id": spec.id,
        "name": spec.name,
        "device": spec.device,
        "framework": spec.framework,
        "format": spec.format,
        "rank": spec.rank,
        "steps": list(spec.steps),
        "has": spec.has_dict(),
        "size_bytes": spec.size_bytes,
        "status": status,
        "error": error,
        "progress": st["progress"],
    }
    if prof is not None:
        out["device"] = prof.meta.device
        out["steps"] = prof.step_ids()
        out["has"] = prof.has()
        if prof.meta.rank is not None:
            out["rank"] = prof.meta.rank
        if prof.meta.warnings:
            out["warnings"] = list(prof.meta.warnings)
    return out


def run_device(run_payload: dict) -> str | None:
    devs = {w["device"] for w in run_payload["workers"] if w["status"] != "error"}
    return devs.pop() if len(devs) == 1 else None


def _version_free(name: str) -> str:
    return _VERSION_RE.sub("#", os.path.basename(name))


def _levels(a: str, b: str) -> tuple[str, str] | None:
    """(level of a, level of b) when two folder names differ only by a profiler level
    (``..._level0`` / ``..._level1``), else None."""
    a, b = os.path.basename(a), os.path.basename(b)
    la, lb = _LEVEL_RE.findall(a), _LEVEL_RE.findall(b)
    if not la or la == lb or _LEVEL_RE.sub("#", a).lower() != _LEVEL_RE.sub("#", b).lower():
        return None
    return ",".join(f"level{x}" for x in la), ",".join(f"level{x}" for x in lb)


def _why_apart(a: str, b: str, what: str) -> str | None:
    """Why two names that differ in one part make a pair: a profiler level (said as such) or a
    version-like part; None when neither."""
    lv = _levels(a, b)
    if lv:
        return f"{what} differ only by the profiler level ({lv[0]} and {lv[1]})"
    if _versions(a, b):
        return f"{what} differ only by a version-like part"
    return None


def _versions(a: str, b: str) -> bool:
    """Whether two folder names differ only by a version-like part (``v1``/``v2``,
    ``base``/``new``); two ranks of one job (``rank0``/``rank1``) are not versions."""
    a, b = os.path.basename(a), os.path.basename(b)
    return _version_free(a) == _version_free(b) and not (_RANK_FOLDER_RE.fullmatch(a) and _RANK_FOLDER_RE.fullmatch(b))


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


def _one_folder_apart(runs: list[dict]):
    """(a, b, i) for runs whose paths differ in exactly the folder at depth i (not the
    last part: those share a parent), e.g. ``logs/gpu/resnet`` and ``logs/npu/resnet``."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        parts = r["name"].split("/")
        for i in range(len(parts) - 1):
            groups.setdefault((i, tuple(parts[:i]), tuple(parts[i + 1:])), []).append(r)
    for (i, _, _), rs in groups.items():
        for j, a in enumerate(rs):
            for b in rs[j + 1:]:
                yield a, b, i


def suggest_pairs(runs: list[dict]) -> list[dict]:
    """Baseline -> target suggestions, the likeliest first (the tab opens the first):
    a GPU run and an NPU run under the same parent folder (GPU is the baseline), or sibling
    runs whose names differ only by a version-like part (the lexically smaller is the
    baseline); then the same across sibling trees: runs at the same path under two folders
    that differ, such as ``gpu/resnet`` and ``npu/resnet``. Each suggestion opens workers of
    matching rank."""
    pairs, seen = [], set()

    def add(a, b, why):
        key = (a["name"], b["name"])
        if key in seen or a["name"] == b["name"]:
            return
        seen.add(key)
        bw, tw = _worker_pair(a, b)
        pairs.append({"baseline": a["name"], "target": b["name"],
                      "baseline_worker": bw, "target_worker": tw, "reason": why})

    by_parent: dict[str, list] = {}
    for r in runs:
        by_parent.setdefault(os.path.dirname(r["name"]), []).append(r)
    for sibs in by_parent.values():
        gpus = [r for r in sibs if run_device(r) == "GPU"]
        npus = [r for r in sibs if run_device(r) == "NPU"]
        for g in gpus:
            for n in npus:
                add(g, n, "GPU and NPU runs in the same folder")
        for i, a in enumerate(sibs):
            for b in sibs[i + 1:]:
                why = _why_apart(a["name"], b["name"], "run names")
                if why:
                    lo, hi = sorted((a, b), key=lambda r: r["name"])
                    add(lo, hi, why)
    for a, b, i in _one_folder_apart(runs):
        da, db = run_device(a), run_device(b)
        fa, fb = a["name"].split("/")[i], b["name"].split("/")[i]
        if {da, db} == {"GPU", "NPU"}:
            g, n = (a, b) if da == "GPU" else (b, a)
            fg, fn = (fa, fb) if da == "GPU" else (fb, fa)
            add(g, n, f"GPU and NPU runs at the same path under {fg}/ and {fn}/")
        elif _why_apart(fa, fb, "which"):
            (lo, flo), (hi, fhi) = sorted(((a, fa), (b, fb)), key=lambda x: x[0]["name"])
            add(lo, hi, f"runs at the same path under {flo}/ and {fhi}/, " + _why_apart(flo, fhi, "which"))
    return pairs


def runs_payload(snapshot, store) -> dict:
    runs = []
    for r in snapshot.runs:
        # cluster: two or more workers, the runs the Cluster view (route `cluster`) analyses
        runs.append({"name": r.name, "workers": [worker_payload(w, store) for w in r.workers],
                     "cluster": len(r.workers) >= 2})
    return {
        "runs": runs,
        "pairs": suggest_pairs(runs),
        "scanned_at": snapshot.scanned_at,
        "error": snapshot.error,
    }
