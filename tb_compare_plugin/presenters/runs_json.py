"""The `runs` listing: discovered runs and workers with their load status, plus
suggested baseline -> target pairs for the UI to offer first (ranked and bounded in
:mod:`run_pairs`)."""
from __future__ import annotations

from .run_pairs import run_device, suggest_pairs, suggest_pairs_counted  # noqa: F401 - re-exported


def worker_payload(spec, store) -> dict:
    from ..engines.module import has_modules        # engines import pandas: only once a worker is listed
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
        out["has"] = dict(prof.has(), modules=has_modules(prof))   # nn.Module events, or a scope tree
        if prof.meta.rank is not None:
            out["rank"] = prof.meta.rank
        if prof.meta.warnings:
            out["warnings"] = list(prof.meta.warnings)
    return out


def runs_payload(snapshot, store) -> dict:
    runs = []
    for r in snapshot.runs:
        # cluster: two or more workers, the runs the Cluster view (route `cluster`) analyses
        runs.append({"name": r.name, "workers": [worker_payload(w, store) for w in r.workers],
                     "cluster": len(r.workers) >= 2})
    pairs, left_off = suggest_pairs_counted(runs)
    return {
        "runs": runs,
        "pairs": pairs,
        "pairs_left_off": left_off,
        "scanned_at": snapshot.scanned_at,
        "error": snapshot.error,
    }
