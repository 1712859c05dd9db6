"""The overall comparison as JSON: the object both the `compare/overall` route and
`tb-compare --json` emit (schema in docs/api.md), with the registered analyses whose
outputs hold "json" under ``"analyses"``.  Its ``notes`` end with each side's load
warnings (what its loader dropped, defaulted or guessed), as ``"<side> <file>: <warning>"``."""
from __future__ import annotations

import os

from ..engines.memory_curve import peak_allocated_gb


def load_warnings(cmp) -> list[tuple[str, str, str]]:
    """(side, profile path, warning) for every load warning of both sides, baseline first."""
    out = []
    for who, prof in (("baseline", cmp.base), ("target", cmp.target)):
        if who == "target" and prof is cmp.base:
            break                           # the same profile on both sides: say it once
        out += [(who, prof.meta.path, w) for w in prof.meta.warnings]
    return out


def side_block(side, profile, step) -> dict:
    return {"run": side.run, "worker": side.worker, "device": profile.meta.device,
            "format": profile.meta.format, "step": step, "rank": profile.meta.rank}


def overall_payload(cmp) -> dict:
    res = cmp.overall().to_dict()
    out = {
        "baseline": side_block(cmp.base_side, cmp.base, cmp.options.base_step),
        "target": side_block(cmp.target_side, cmp.target, cmp.options.target_step),
        # which figures these are: ours (False) or msprof-analyze compare's (True, docs/deviations.md)
        "reference_compat": bool(cmp.options.reference_compat),
    }
    for k, v in res.items():
        if k in ("baseline", "target") and isinstance(v, dict):
            out[k].update({kk: vv for kk, vv in v.items() if kk not in out[k] or out[k][kk] is None})
        else:
            out[k] = v
    # the per-step choice every table follows (the same rule as the overview's figures)
    out["figures"] = cmp.step_scale().to_dict()
    # peak allocated memory: the Memory view's figure (the same memoised curves), per side
    curves = cmp.memory_curves()
    mem = out.setdefault("memory", {})
    for side in ("baseline", "target"):
        mem.setdefault(side, {})["peak_allocated_gb"] = peak_allocated_gb(curves[side])
    # graph-mode host overhead: its block, its row group at the end of the overview's rows, its hint
    from .host_overhead_json import host_overhead_block, host_overhead_notes, host_overhead_rows
    out["host_overhead"] = host_overhead_block(cmp)
    out["overall_metrics"] = list(out.get("overall_metrics") or []) + host_overhead_rows(cmp)
    comm = cmp.communication()
    out["communication"] = comm.to_list()
    notes, seen = [], set()
    for n in list(out.get("notes") or []) + list(getattr(comm, "notes", [])):
        core = n.split(": ", 1)[1] if n.startswith(("Overview: ", "Communication: ")) else n
        if core not in seen:
            seen.add(core)
            notes.append(core)
    notes += [n for n in host_overhead_notes(cmp) if n not in seen]
    for who, path, w in load_warnings(cmp):
        notes.append(f"{who} {os.path.basename(os.path.normpath(path)) if path else ''}: {w}")
    out["notes"] = notes
    from .answers_json import analyses_json
    extra = analyses_json(cmp)
    if extra:                       # registered analyses shown in JSON (none built in)
        out["analyses"] = extra
    return out
