"""The timeline's service: both sides' lanes (built once per profile, on the service's pool), the
alignment origin of each side, the window a request asks for, and the item / range answers the
routes ``compare/timeline``, ``compare/timeline/item`` and ``compare/timeline/range`` give.

Parameters are checked here against what the parsed sides hold (a bad step / align / id is
:class:`~.errors.BadParameter`, the routes' 400 naming it); the plugin only parses their types.
Functions taking profiles (``*_answer``) are what the bench and the CLI-free tests call; the
``CompareService`` methods wrap them with parsing, caching and the pools.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import BadParameter
from .params import bad_parameter

SIDES = ("baseline", "target")
DEFAULT_PX = 1000
MAX_PX = 20000


@dataclass
class Query:
    """What a timeline request asks for (types already checked by the route)."""
    step: int | None = None
    start_ms: float | None = None
    end_ms: float | None = None
    px: int = DEFAULT_PX
    align: str | None = None            # "<side>:<id>", e.g. "target:k12"


# ------------------------------------------------------------------------------------ parameters

def parse_id(value: str, parameter: str = "id") -> tuple[str, int]:
    """``k12`` -> ("k", 12): an item id of the timeline (k kernels, o ops, c collectives, t tasks)."""
    v = (value or "").strip()
    if len(v) < 2 or v[0] not in "kotc" or not v[1:].isdigit():
        raise BadParameter(parameter, f"parameter {parameter!r}: {value[:40]!r} is not a timeline item id "
                           "(k<row> a kernel, o<row> a host op, c<row> a collective, t<row> a communication task)")
    return v[0], int(v[1:])


def parse_align(value: str) -> tuple[str, str]:
    side, sep, ident = (value or "").partition(":")
    if not sep or side not in SIDES:
        raise BadParameter("align", f"parameter 'align' must be baseline:<id> or target:<id>, got {value[:60]!r}",
                           list(SIDES))
    parse_id(ident, "align")
    return side, ident


def common_steps(base, target) -> list[int]:
    return sorted(set(base.step_ids()) & set(target.step_ids()))


def chosen_step(base, target, step: int | None) -> int | None:
    """``step`` when both sides hold it (400 otherwise); by default the first common step, or
    None (the whole capture) when the sides share none."""
    common = common_steps(base, target)
    if step is None:
        return common[0] if common else None
    if step not in common:
        raise bad_parameter("step", f"step {step} is not in both sides", common, "steps both sides hold")
    return step


# ------------------------------------------------------------------------------------ origins

def side_extent(profile, lanes, step: int | None) -> tuple[int, int]:
    """[first, last) ns the side shows by default: the step's device window, or the capture."""
    from ..engines.timeline_range import step_window
    if step is not None:
        return step_window(profile, step)
    if lanes.span is not None:
        return lanes.span
    span = profile.time_span_ns()
    return span if span is not None else (0, 1)


def item_row(profile, ident: str, parameter: str = "id") -> dict:
    """The engine's row of ``ident``; a 400 naming ``parameter`` when it names no row."""
    from ..engines.timeline_item import UnknownItem, item_row as row_of
    try:
        return row_of(profile, ident)
    except UnknownItem as e:
        raise BadParameter(parameter, f"parameter {parameter!r}: {e}")


def counterpart(cmp, side: str, ident: str):
    from ..engines.timeline_item import counterpart as cp_of
    return cp_of(cmp.matched(), side, ident, cmp.base, cmp.target)


def origins(cmp, lanes_b, lanes_t, step, align) -> tuple[int, int, dict]:
    """(baseline origin, target origin, {side: extent}) in ns."""
    ext = {"baseline": side_extent(cmp.base, lanes_b, step), "target": side_extent(cmp.target, lanes_t, step)}
    if align is None:
        return ext["baseline"][0], ext["target"][0], ext
    side, ident = parse_align(align)
    prof = cmp.base if side == "baseline" else cmp.target
    start = item_row(prof, ident, "align")["start_ns"]
    cp = counterpart(cmp, side, ident)
    if cp is None:
        raise BadParameter("align", f"parameter 'align': {ident} on the {side} has no matched counterpart "
                           "on the other side, so the two sides cannot be aligned on it")
    other = cmp.target if side == "baseline" else cmp.base
    ostart = item_row(other, cp["id"], "align")["start_ns"]
    return (start, ostart, ext) if side == "baseline" else (ostart, start, ext)


# ------------------------------------------------------------------------------------ answers

def both_lanes(cmp):
    """Both sides' lanes; built at once on two threads when neither is built yet (most of the work
    is numpy sorting and gathering, which lets go of the GIL)."""
    from ..engines.timeline_lanes import side_lanes
    from ..model.derived import DERIVED
    if DERIVED.peek(cmp.base, "timeline_lanes") is None and DERIVED.peek(cmp.target, "timeline_lanes") is None:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(1, thread_name_prefix="tbc-lanes") as ex:
            fb = ex.submit(side_lanes, cmp.base, cmp.options)
            lt = side_lanes(cmp.target, cmp.options)
            return fb.result(), lt
    return side_lanes(cmp.base, cmp.options), side_lanes(cmp.target, cmp.options)


def lanes_ready(cmp) -> bool:
    """Whether both sides' full lanes are built (every window is then read from them)."""
    from ..model.derived import DERIVED
    return all(DERIVED.peek(p, "timeline_lanes") is not None for p in (cmp.base, cmp.target))


def _spans(cmp):
    """Lanes objects holding only each side's device span (what the origins need of the lanes)."""
    from ..engines.timeline_lanes import Lanes, side_span
    return tuple(Lanes([], p.symbols, side_span(p)) for p in (cmp.base, cmp.target))


def _cut_lanes(cmp, windows: dict) -> dict:
    """Each side's lanes cut to its window (``window_lanes``; the full ones where it cannot cut),
    the two sides on two threads (most of the work is numpy, which lets go of the GIL)."""
    from concurrent.futures import ThreadPoolExecutor
    from ..engines.timeline_lanes import side_lanes, window_lanes

    def cut(who):
        prof = cmp.base if who == "baseline" else cmp.target
        return window_lanes(prof, *windows[who]) or side_lanes(prof)
    with ThreadPoolExecutor(1, thread_name_prefix="tbc-lanes") as ex:
        fb = ex.submit(cut, "baseline")
        lt = cut("target")
        return {"baseline": fb.result(), "target": lt}


def timeline_answer(cmp, q: Query) -> dict:
    """The ``compare/timeline`` answer for the Comparison ``cmp``.  Until both sides' full lanes
    are built (:func:`both_lanes`, the first request's caller starts that), the window is read from
    lanes cut to it (:func:`~..engines.timeline_lanes.window_lanes`): the same items, without
    sorting every host op first."""
    from ..engines.timeline_lod import window_items
    from ..presenters.timeline_json import timeline_payload
    first = not lanes_ready(cmp)
    lb, lt = _spans(cmp) if first else both_lanes(cmp)
    step = chosen_step(cmp.base, cmp.target, q.step)
    ob, ot, ext = origins(cmp, lb, lt, step, q.align)
    rel = {"baseline": (ext["baseline"][0] - ob, ext["baseline"][1] - ob),
           "target": (ext["target"][0] - ot, ext["target"][1] - ot)}
    lo = min(rel["baseline"][0], rel["target"][0])
    hi = max(rel["baseline"][1], rel["target"][1])
    w0 = int(round(q.start_ms * 1e6)) if q.start_ms is not None else lo
    w1 = int(round(q.end_ms * 1e6)) if q.end_ms is not None else hi
    if w1 <= w0:
        raise BadParameter("end_ms", f"parameter 'end_ms' ({w1 / 1e6:g}) must be after start_ms ({w0 / 1e6:g})")
    px = q.px
    sides = {}
    if first:
        lb, lt = _cut_lanes(cmp, {"baseline": (ob + w0, ob + w1), "target": (ot + w0, ot + w1)}).values()
    for who, lanes, origin in (("baseline", lb, ob), ("target", lt, ot)):
        a, b = origin + w0, origin + w1
        sides[who] = {"lanes": window_items(lanes, origin, a, b, px),
                      "origin_ns": int(origin), "extent": rel[who], "warnings": list(lanes.warnings)}
    return timeline_payload(sides, step, (w0, w1), (lo, hi), px)


def range_answer(cmp, q: Query) -> dict:
    """The ``compare/timeline/range`` answer: per side its totals of the window (each side's own
    step window when ``start_ms`` / ``end_ms`` are not given)."""
    from ..engines.timeline_range import range_totals
    lb, lt = both_lanes(cmp)
    step = chosen_step(cmp.base, cmp.target, q.step)
    ob, ot, ext = origins(cmp, lb, lt, step, q.align)
    out = {"step": step}
    for who, prof, lanes, origin in (("baseline", cmp.base, lb, ob), ("target", cmp.target, lt, ot)):
        a = origin + int(round(q.start_ms * 1e6)) if q.start_ms is not None else ext[who][0]
        b = origin + int(round(q.end_ms * 1e6)) if q.end_ms is not None else ext[who][1]
        if b <= a:
            raise BadParameter("end_ms", "parameter 'end_ms' must be after start_ms")
        tot = range_totals(prof, lanes, a, b)
        out[who] = {k: round(v, 6) for k, v in tot.items()}
        out.setdefault("window", {})[who] = {"start_ms": round((a - origin) / 1e6, 6),
                                            "end_ms": round((b - origin) / 1e6, 6)}
    return out


def item_answer(cmp, side: str, ident: str, step: int | None = None, align: str | None = None) -> dict:
    """The ``compare/timeline/item`` answer: the item's details, its matched counterpart on the
    other side (start in ms from that side's origin) and where its table row is."""
    from ..engines.timeline_item import item_details
    if side not in SIDES:
        raise BadParameter("side", f"parameter 'side' must be baseline or target, got {str(side)[:40]!r}",
                           list(SIDES))
    parse_id(ident)
    prof = cmp.base if side == "baseline" else cmp.target
    other = cmp.target if side == "baseline" else cmp.base
    lb, lt = both_lanes(cmp)
    lanes = lb if side == "baseline" else lt
    item_row(prof, ident)
    body = item_details(prof, lanes, ident)
    st = chosen_step(cmp.base, cmp.target, step)
    ob, ot, _ = origins(cmp, lb, lt, st, align)
    origin, oorigin = (ob, ot) if side == "baseline" else (ot, ob)
    body["start_ms"] = round((body.pop("start_ns") - origin) / 1e6, 6)
    from ..engines.timeline_item import operator_link
    op_row = operator_link(cmp.matched(), side, ident, cmp.base, cmp.target)   # the Operator view's row
    if body.get("kind") == "op":
        body["links"] = op_row
    elif body.get("kind") == "kernel":
        body["op_link"] = op_row
    cp = counterpart(cmp, side, ident)
    if cp is not None:
        row = item_row(other, cp["id"])
        cp["start_ms"] = round((row["start_ns"] - oorigin) / 1e6, 6)
        cp["dur_ms"] = round(row["dur_ns"] / 1e6, 6)
        cp["name"] = row["name"]
    body["counterpart"] = cp
    body["side"] = side
    body["id"] = ident
    return body


def find_answer(cmp, side: str, kind: str, name: str, step: int | None = None, nth: int = 0,
                shapes: str | None = None) -> dict:
    """The ``compare/timeline/find`` answer: the item a table row opens the timeline at (the
    ``nth`` ``kind`` named ``name`` as the row names it, of the row's ``shapes`` when given, in the
    step, else the first anywhere), with its counterpart, as ``item_answer`` gives them;
    ``{"id": null}`` when the side has no such item."""
    from ..engines.timeline_item import find_item
    if side not in SIDES:
        raise BadParameter("side", f"parameter 'side' must be baseline or target, got {str(side)[:40]!r}",
                           list(SIDES))
    if kind not in ("kernel", "op"):
        raise BadParameter("kind", f"parameter 'kind' must be kernel or op, got {str(kind)[:40]!r}",
                           ["kernel", "op"])
    prof = cmp.base if side == "baseline" else cmp.target
    lb, lt = both_lanes(cmp)
    st = chosen_step(cmp.base, cmp.target, step)
    lo, hi = side_extent(prof, lb if side == "baseline" else lt, st)
    ident = find_item(prof, kind, name, lo, hi, nth, shapes)
    if ident is None:
        return {"id": None, "side": side, "name": name, "step": st}
    out = item_answer(cmp, side, ident, st)
    out["step_of_window"] = st
    return out


# ------------------------------------------------------------------------------------ on the service

def _prepared(service, base, target, options, may_parse: bool, matched: bool = False):
    """The Comparison with both sides' lanes built (and its operator matching when ``matched``),
    the heavy parts run on the service's pool (Pending while they run)."""
    cmp = service.comparison(base, target, options, may_parse)
    service.derived(base, target, options, ("timeline_lanes",), lambda c: (both_lanes(c), None)[1], may_parse)
    if matched:
        service.derived(base, target, options, ("timeline_matched",), lambda c: (c.matched(), None)[1], may_parse)
    return cmp


def _lanes_in_background(service, base, target, options, cmp) -> None:
    """Start building both sides' full lanes on the service's pool (the job ``_prepared`` waits for)."""
    from .compare import pair_key
    service.answers.submit((("timeline_lanes",), pair_key(base, target, options)),
                           lambda progress: (both_lanes(cmp), None)[1])


def timeline(service, base, target, options, q: Query, may_parse: bool = False) -> dict:
    """A window; until the full lanes are built (started here, on the pool, after the first answer)
    it is read from lanes cut to it, so a first paint does not wait for every host op's sort."""
    cmp = service.comparison(base, target, options, may_parse)
    if q.align is not None:
        service.derived(base, target, options, ("timeline_matched",), lambda c: (c.matched(), None)[1], may_parse)
    if lanes_ready(cmp):
        return timeline_answer(cmp, q)
    body = timeline_answer(cmp, q)
    _lanes_in_background(service, base, target, options, cmp)
    return body


def timeline_range(service, base, target, options, q: Query, may_parse: bool = False) -> dict:
    cmp = _prepared(service, base, target, options, may_parse, matched=q.align is not None)
    return range_answer(cmp, q)


def timeline_item(service, base, target, options, side: str, ident: str, step: int | None = None,
                  align: str | None = None, may_parse: bool = False) -> dict:
    cmp = _prepared(service, base, target, options, may_parse, matched=True)
    return item_answer(cmp, side, ident, step, align)


def timeline_find(service, base, target, options, side: str, kind: str, name: str, step: int | None = None,
                  nth: int = 0, may_parse: bool = False, shapes: str | None = None) -> dict:
    cmp = _prepared(service, base, target, options, may_parse, matched=True)
    return find_answer(cmp, side, kind, name, step, nth, shapes)
