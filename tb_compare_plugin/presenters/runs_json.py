"""The `runs` listing: discovered runs and workers with their load status, plus
suggested baseline -> target pairs for the UI to offer first."""
from __future__ import annotations

import os
import re

_VERSION_RE = re.compile(r"(v?\d+(?:[._]\d+)*|new|old|baseline|base|target|before|after|control|test)",
                         re.I)


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


def suggest_pairs(runs: list[dict]) -> list[dict]:
    """Baseline -> target suggestions: a GPU run and an NPU run under the same parent folder
    (GPU is the baseline), or sibling runs whose names differ only by a version-like part
    (the lexically smaller is the baseline)."""
    pairs, seen = [], set()

    def add(a, b, why):
        key = (a["name"], b["name"])
        if key in seen or a["name"] == b["name"]:
            return
        seen.add(key)
        pairs.append({"baseline": a["name"], "target": b["name"],
                      "baseline_worker": a["workers"][0]["id"] if a["workers"] else None,
                      "target_worker": b["workers"][0]["id"] if b["workers"] else None,
                      "reason": why})

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
                if _version_free(a["name"]) == _version_free(b["name"]):
                    lo, hi = sorted((a, b), key=lambda r: r["name"])
                    add(lo, hi, "run names differ only by a version-like part")
    return pairs


def runs_payload(snapshot, store) -> dict:
    runs = []
    for r in snapshot.runs:
        runs.append({"name": r.name, "workers": [worker_payload(w, store) for w in r.workers]})
    return {
        "runs": runs,
        "pairs": suggest_pairs(runs),
        "scanned_at": snapshot.scanned_at,
        "error": snapshot.error,
    }
