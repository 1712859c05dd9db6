"""The timeline answers as JSON: ``compare/timeline`` (both sides' lanes of one window, times in ms
from each side's origin).  Schema in docs/api.md; what lanes and classes mean in docs/timeline.md."""
from __future__ import annotations

from ..engines.timeline_lanes import CLASSES


def _ms(ns: int) -> float:
    return round(ns / 1e6, 6)


def timeline_payload(sides: dict, step, window_ns: tuple, extent_ns: tuple, px: int) -> dict:
    """``sides``: {side: {"lanes", "origin_ns", "extent" (ns from the origin), "warnings"}}."""
    out = {}
    for who, s in sides.items():
        out[who] = {"lanes": s["lanes"], "origin_ns": int(s["origin_ns"]), "step": step,
                    "extent": {"start_ms": _ms(s["extent"][0]), "end_ms": _ms(s["extent"][1])},
                    "items": sum(len(ln["items"]) for ln in s["lanes"]),
                    "warnings": s.get("warnings", [])}
    out["window"] = {"start_ms": _ms(window_ns[0]), "end_ms": _ms(window_ns[1])}
    out["extent"] = {"start_ms": _ms(extent_ns[0]), "end_ms": _ms(extent_ns[1])}
    out["classes"] = list(CLASSES)
    out["px"] = px
    out["step"] = step
    return out
