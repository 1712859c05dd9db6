"""JSON answers of the smaller comparison routes (memory curves, communication) and the
``analyses`` listing; the overview is :mod:`.overall_json`, table pages :mod:`.views`."""
from __future__ import annotations


def memory_curve_payload(cmp) -> dict:
    body = dict(cmp.memory_curves())
    body["attribution"] = cmp.memory_peak().head(50).to_dict(orient="records")
    body["notes"] = memory_notes(body)
    return body


def memory_notes(curves: dict) -> list[str]:
    """Why this view's peak and the overview's Peak reserved memory differ, per side where they
    are of different components (Ascend: the view shows PTA, Mem Usage is APP's)."""
    out = []
    for who in ("baseline", "target"):
        c = curves.get(who) or {}
        top, shown = c.get("peak_reserved_component"), c.get("component")
        if top and c.get("source") == "records" and shown and top != shown:
            from ..engines.memory_curve import component_label
            out.append(f"{who}: the overview's Peak reserved memory ({c.get('peak_reserved_gb'):,.3f} GB) is the "
                       f"max over all components, reached by {component_label(top)}; this view shows "
                       f"{c.get('component_label')}, whose reserved memory is lower.")
    return out


def communication_payload(cmp) -> dict:
    res = cmp.communication()
    rows = res.to_list()
    return {"rows": rows, "notes": list(getattr(res, "notes", [])) + wait_notes(rows)}


def wait_notes(rows: list) -> list[str]:
    """Why the Notify_Wait task totals here dwarf the overview's Wait, when a side has them."""
    totals = {}
    for r in rows:
        for t in r.get("tasks") or []:
            if t.get("name") == "Notify_Wait":
                for who in ("baseline", "target"):
                    totals[who] = totals.get(who, 0.0) + float((t.get(who) or {}).get("total_ms") or 0.0)
    shown = {w: v for w, v in totals.items() if v > 0}
    if not shown:
        return []
    figures = ", ".join(f"{w} {v:,.3f} ms" for w, v in shown.items())
    return [f"Notify_Wait here ({figures}) is the sum of every Notify_Wait task on every plane of each group, "
            "including waits hidden behind computation and RDMA waits that are transfer time. The overview's "
            "Wait is much narrower: per group, only the counted Notify_Wait of the plane with the least of it "
            "(RDMA transfer waits excluded) that overlaps uncovered communication (Communication(Not Overlapped)), "
            "so it can be far smaller, even 0."]


def analyses_payload(items, base=None, target=None) -> dict:
    """Every analysis with its columns and needs; with a pair (profiles or discovered
    workers), whether it applies and what is missing."""
    from ..analyses.registry import capabilities
    held = None
    if base is not None and target is not None:
        held = capabilities(base) | capabilities(target)
    out = []
    for a in items:
        d = a.describe()
        if held is not None:
            d["missing"] = sorted(a.needs - held)
            d["available"] = not d["missing"]
        out.append(d)
    return {"analyses": out}


def analyses_json(cmp) -> dict:
    """The registered analyses shown in the JSON answers (``outputs`` holds "json"), by name:
    ``{"label", "columns", "rows"}``, or ``{"label", "unavailable": why}``."""
    from ..analyses import Unavailable, analyses, missing_inputs
    out = {}
    for a in analyses("json"):
        missing = missing_inputs(a, cmp.base, cmp.target)
        if missing:
            out[a.name] = {"label": a.label, "unavailable": f"neither profile holds {' or '.join(missing)}"}
            continue
        try:
            df = cmp.analysis(a.name)
        except Unavailable as e:
            out[a.name] = {"label": a.label, "unavailable": str(e)}
            continue
        keys = [c.key for c in a.columns if c.key in df.columns]
        out[a.name] = {"label": a.label, "columns": [c.key for c in a.columns],
                       "rows": df[keys].to_dict(orient="records")}
    return out
