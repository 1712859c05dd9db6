"""Streaming decoder of an Ascend ``trace_view.json`` (a top-level JSON array of trace events).

Owns the chunked decode (~1 MB chunks cut at event boundaries by :mod:`.jsonstream`; the event
schemas are :mod:`.ascend_events`), turning each chunk into :class:`ascend_columns.Field` pieces
with one pass per field over its decoded events (which are then dropped), and :class:`Trace`: the
columns by role that :mod:`.ascend_text` builds tables from.  Memory is bounded by those columns,
not by the JSON; the tables equal those of a whole-file decode.  Counter events (``ph: "C"``, ~half
of a trace) decode to empty structs.

Which ``args`` an X event needs depends on its process's role (spec a.5), known only from
``process_name`` metadata, which may come anywhere (the profiler writes it mid-file, the bench
generator at the end).  Roles are guessed up front from the metadata in the first and last MBs,
then updated as metadata arrives; each chunk keeps the args of each event's guessed role (host ops
and python functions by category; unknown processes every device field).  If the final roles
need a field that was not kept, the file is decoded again keeping every field of every event.

Big files (:func:`ascend_fast.wanted`) offer each chunk to :mod:`.ascend_fast`'s byte scanner first
(4 MB chunks); it appends the same column pieces without a Python object per event, and the chunks
it refuses are decoded here (the warnings say so from 4 MB of them on).
"""
from __future__ import annotations

import os
import re
from itertools import compress
from operator import attrgetter

import msgspec
import numpy as np
import pandas as pd

from ..gcpause import gc_paused
from . import ascend_fast, jsonstream
from .ascend_columns import Field, ints as _ints, objects, plain_text, ts_ns
from .ascend_events import (DECODER as _DECODER, G_ALL, G_DEV, G_HCCL, G_HW, G_OPS, G_PY, G_SKIP, GROUP_FIELDS,
                            HCCL as _HCCL, HW as _HW, NO_ARGS, OPS as _OPS, PY as _PY, TEXT as _TEXT,
                            TYPED_DECODER as _TYPED_DECODER, MetaArgs as _MetaArgs)
from .errors import LoadError
from .regular import open_regular

TRACE = "trace_view.json"
CHUNK_BYTES = 1 << 20

_KIND_FIELDS = {"hw": (_HW, (G_HW, G_DEV, G_ALL)), "hccl": (_HCCL, (G_HCCL, G_DEV, G_ALL)),
                "ops": (_OPS, (G_OPS, G_ALL)), "py": (_PY, (G_PY, G_ALL)), "ovl": ((), ())}
_CAT_CLASS = {"cpu_op": 1, "enqueue": 1, "dequeue": 1, "python_function": 2}   # else 0
_FLOW_CLASS = {"async_npu": 1, "fwdbwd": 2}
_ROLES = {"Ascend Hardware": "hw", "HCCL": "hccl", "Communication": "hccl", "Overlap Analysis": "ovl"}
_ROLE_CODE = {"hw": 1, "hccl": 2, "ovl": 3}                                       # host 0
_NONE_T = type(None)
_KIND = attrgetter("_k")
_GROUP_OF = np.array([[G_SKIP, G_OPS, G_PY]] * 2 + [[G_HW] * 3, [G_HCCL] * 3, [G_SKIP] * 3],
                     dtype=np.int8).reshape(-1)
"""Storage group of an X event by (role code + 1) * 3 + class (role -1: no process_name seen yet,
0 host, 1 hw, 2 hccl, 3 ovl; class 0 other, 1 op, 2 python function)."""


def _role_code(process_name) -> int:
    return _ROLE_CODE.get(_ROLES.get(process_name), 0) if isinstance(process_name, str) else 0


def _one(v) -> int:
    """A metadata pid/tid keyed like the columns (``ints`` of that one value)."""
    if type(v) is int and -(1 << 63) <= v < (1 << 63):
        return v
    try:
        return int(_ints([v])[0])
    except (TypeError, ValueError, OverflowError):
        return -1


# --------------------------------------------------------------------------------------------- decoding

class _Redo(Exception):
    """A process role changed after its events were stored without the args they need."""


class _Collector:
    """The ``decode`` callback of :func:`jsonstream.iter_event_chunks`: one chunk -> column pieces."""

    def __init__(self, path: str, full: bool, hints: dict) -> None:
        self.path = path
        self.fast = None                  # the byte scanner (ascend_fast), see use_scanner
        self.fast_missing = None
        self.n_fast = 0
        self.fallbacks: dict[str, int] = {}       # reason -> chunks the general decoder parsed
        self.fallback_bytes = 0                   # ... and their bytes
        self.full = full                  # keep every args field of every X event
        self.n_events = 0
        self.meta: list = []              # (name, pid, tid, args) of M events, file order
        self.hinted = set(hints)
        self.known: dict = dict(hints)    # pid -> role code: hints, then process_name events seen so far
        self._known_sorted = None         # (pids, role codes) of ``known``, sorted by pid (see _groups)
        self.x = {k: Field() for k in ("pid", "tid", "name", "cat", "dur")}
        self.x_ts: list = []
        self.x_cls: list = []
        self.x_group: list = []
        self.cat_class: list = []         # class of each "cat" vocabulary entry (X events)
        self.fl_class: list = []          # the same for flow events
        self.args = {f: Field() for f in GROUP_FIELDS[G_ALL]}
        self.fl = {k: Field() for k in ("pid", "tid", "cat", "id")}
        self.fl_ts: list = []
        self.fl_f: list = []
        self.fl_cls: list = []

    def use_scanner(self) -> None:
        """Offer each chunk to the byte scanner first (when numba runs here; else say why not)."""
        if ascend_fast.available():
            self.fast = ascend_fast.Scanner()
        else:
            self.fast_missing = ascend_fast.unavailable_reason()

    def x_classes(self) -> np.ndarray:
        """Class of each X event of the chunk just added (from its "cat")."""
        return _classes(self.x["cat"], self.cat_class, _CAT_CLASS)

    def flow_classes(self) -> np.ndarray:
        return _classes(self.fl["cat"], self.fl_class, _FLOW_CLASS)

    def __call__(self, view) -> None:
        why = None
        if self.fast is not None:
            why = self.fast.take(self, view)
            if why is None:
                self.n_fast += 1
                return
        self._general(view)
        if why is not None:                           # counted once the chunk is known to be a good one
            self.fallbacks[why] = self.fallbacks.get(why, 0) + 1
            self.fallback_bytes += len(view)

    def _general(self, view) -> None:
        typed = True                                  # (see ascend_events: the same values either way)
        try:
            evs = _TYPED_DECODER.decode(view)
        except msgspec.ValidationError:               # a value of another type somewhere: take any
            typed = False
            try:
                evs = _DECODER.decode(view)
            except msgspec.ValidationError as exc:
                self._layout_error(view, str(exc))
        n = len(evs)
        self.n_events += n
        if not n:
            return
        kind = np.frombuffer(bytes(map(_KIND, evs)), np.int8)       # 0 other, 1 X, 2 M, 3 s, 4 f
        if (kind == 2).any():
            for e in compress(evs, (kind == 2).tolist()):
                self._meta(e)
        xs = list(compress(evs, (kind == 1).tolist()))
        flows = list(compress(evs, (kind >= 3).tolist()))
        fkind = kind[kind >= 3]
        del evs
        if xs:
            self._add_x(xs, typed)
        if flows:
            self._add_flows(flows, fkind, typed)

    def _meta(self, e) -> None:
        self.meta.append((e.name, e.pid, e.tid, e.args))
        if e.name == "process_name" and _one(e.pid) not in self.hinted:
            self.known[_one(e.pid)] = _role_code(e.args.name if e.args is not None else None)
            self._known_sorted = None

    def _add_x(self, xs: list, typed: bool) -> None:
        x = self.x
        x["pid"].add([e.pid for e in xs], "I" if typed else "i")
        x["tid"].add([e.tid for e in xs], "I" if typed else "i")
        x["name"].add([e.name for e in xs], "s")
        x["dur"].add([e.dur for e in xs], "F" if typed else "f")
        x["cat"].add([e.cat for e in xs], "s")
        self.x_ts.append(ts_ns([e.ts for e in xs]))
        cls = self.x_classes()
        self.x_cls.append(cls)
        group = self._groups(x["pid"].pieces[-1], cls)
        self.x_group.append(group)
        args = [e.args for e in xs]
        groups = [int(group[0])] if (group == group[0]).all() else np.unique(group).tolist()
        for g in groups:
            fields = GROUP_FIELDS.get(g)
            if not fields:
                continue
            sub = args if len(groups) == 1 else list(compress(args, (group == g).tolist()))
            if not typed and _NONE_T in set(map(type, sub)):          # "args": null
                sub = [NO_ARGS if a is None else a for a in sub]
            for f, vals in zip(fields, zip(*map(attrgetter(*fields), sub))):
                self.args[f].add(vals, "s" if f in _TEXT else "I" if typed else "i")

    def _add_flows(self, flows: list, fkind: np.ndarray, typed: bool) -> None:
        fl = self.fl
        fl["pid"].add([e.pid for e in flows], "I" if typed else "i")
        fl["tid"].add([e.tid for e in flows], "I" if typed else "i")
        fl["cat"].add([e.cat for e in flows], "s")
        fcls = self.flow_classes()
        if fcls.any():                            # ids only of the flows the tables pair up
            fl["id"].add([e.id for e in (flows if fcls.all() else compress(flows, fcls.tolist()))], "i")
        self.fl_ts.append(ts_ns([e.ts for e in flows]))
        self.fl_f.append(fkind == 4)
        self.fl_cls.append(fcls)

    def _groups(self, pid_piece, cls: np.ndarray) -> np.ndarray:
        """Storage group of each X event of the chunk from its provisional role and category."""
        n = len(cls)
        if self.full:
            return np.full(n, G_ALL, dtype=np.int8)
        role = np.full(n, -1, dtype=np.int8)                # -1: no process_name seen yet
        if pid_piece[0] == "i" and self.known:        # each pid's known role, by one sorted search
            if self._known_sorted is None:
                keys = np.fromiter(self.known, np.int64, len(self.known))
                order = np.argsort(keys)
                self._known_sorted = (keys[order], np.fromiter(self.known.values(), np.int8, len(self.known))[order])
            keys, codes = self._known_sorted
            pid = pid_piece[1]
            pos = np.minimum(np.searchsorted(keys, pid), len(keys) - 1)
            hit = keys[pos] == pid
            role[hit] = codes[pos[hit]]
        # (role, class) -> group: hardware and HCCL processes by role; host and unknown processes
        # by class (ops, python functions); the rest skipped
        k = role * 3                                  # (int8: at most 14)
        k += 3
        k += cls
        group = np.take(_GROUP_OF, k)
        unknown_dev = (role == -1) & (cls == 0)
        if unknown_dev.any():
            group[unknown_dev | (group == G_HW) | (group == G_HCCL)] = G_DEV
        return group

    def _layout_error(self, view, msg: str):
        """A schema error: a bad cut (let jsonstream extend the chunk) or a real layout error."""
        msgspec.json.decode(view)          # raises DecodeError("truncated") when the cut was bad
        m = re.search(r"`\$\[(\d+)\]", msg)
        if m:
            msg = msg.replace(m.group(0), f"`$[{int(m.group(1)) + self.n_events}]")
        raise LoadError(self.path, f"a trace event has an unexpected layout ({msg})")


def _classes(field: Field, lut: list, classes: dict) -> np.ndarray:
    """Class (``classes``, else 0) of each value of the field's last piece; ``lut`` caches the
    class of each vocabulary entry."""
    kind, piece = field.pieces[-1][:2]
    if kind == "s":
        for v in field.vocab.values[len(lut):]:
            lut.append(classes.get(v, 0))
        return np.array(lut + [0], dtype=np.int8)[piece]
    return np.array([classes.get(v, 0) if type(v) is str else 0 for v in piece], dtype=np.int8)


def _in_groups(groups) -> np.ndarray:
    """Storage group code -> whether it is one of ``groups`` (a lookup table over the 7 codes)."""
    t = np.zeros(G_ALL + 1, dtype=bool)
    t[list(groups)] = True
    return t


def _cat(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


class Trace:
    """Columns decoded from trace_view.json, grouped by role into ``self.b[role]`` column dicts:
    hw / hccl / ovl (by process_name), ops (cpu_op, enqueue, dequeue), py (python_function),
    npu_flow (async_npu s/f), fwdbwd.  pid/tid/ts/dur are int64; names and text args
    :class:`Texts` (object arrays if some value is not text); numeric args see
    :meth:`Field.column`.  Flows carry ``is_f`` and ``key`` (equal ids, equal key; -1 for a
    missing id)."""

    def __init__(self, col: _Collector) -> None:
        self.proc, self.thread_name, self.thread_sort = {}, {}, {}
        self.warnings: list[str] = []
        odd_meta = 0
        for name, pid, tid, a in col.meta:
            a = a or _MetaArgs()
            try:
                if name == "process_name":
                    self.proc[pid] = a.name
                    odd_meta += not isinstance(a.name, str) or _one(pid) < 0
                elif name == "thread_name":
                    self.thread_name[(pid, tid)] = a.name
                elif name == "thread_sort_index":
                    self.thread_sort[(pid, tid)] = a.sort_index
                else:
                    odd_meta += not isinstance(name, str)
            except TypeError:                 # unhashable pid/tid: not a usable metadata event
                odd_meta += 1
        self.roles = {_one(p): _ROLES[n] for p, n in self.proc.items() if isinstance(n, str) and n in _ROLES}
        self.thread_name = {(_one(p), _one(t)): v for (p, t), v in self.thread_name.items()}
        self.thread_sort = {(_one(p), _one(t)): v for (p, t), v in self.thread_sort.items()}
        x = col.x
        pid, tid = x["pid"].ints(), x["tid"].ints()
        ts, cls, group = _cat(col.x_ts, np.int64), _cat(col.x_cls, np.int8), _cat(col.x_group, np.int8)
        role = np.zeros(len(pid), dtype=np.int8)
        if self.roles:                                # each pid's role, by one sorted search
            keys = np.array(sorted(self.roles), np.int64)
            codes = np.array([_ROLE_CODE[self.roles[k]] for k in keys.tolist()], np.int8)
            pos = np.minimum(np.searchsorted(keys, pid), len(keys) - 1)
            hit = keys[pos] == pid
            role[hit] = codes[pos[hit]]
        ok = ts >= 0
        host = role == 0
        self._warn(int((~ok).sum()) + int((_cat(col.fl_ts, np.int64) < 0).sum()),
                   "event(s) with an unreadable 'ts' were skipped")
        self._warn(int(((pid < 0) | (tid < 0)).sum()), "event(s) with a missing or unreadable 'pid'/'tid' "
                                                       "belong to no known process")
        self._warn(x["cat"].count_odd() + col.fl["cat"].count_odd(),
                   "event(s) with a 'cat' that is not text were not classified")
        self._warn(odd_meta, "metadata event(s) with a name or pid that is not usable were ignored")
        if col.fast_missing:
            self.warnings.append(f"{TRACE}: parsed with the general decoder, not the fast scanner "
                                 f"({col.fast_missing}): the same tables, slower")
        if col.fallbacks and col.fallback_bytes >= ascend_fast.FALLBACK_NOTE_BYTES:
            k = sum(col.fallbacks.values())
            why = "; ".join(f"{reason} ({c:,})" for reason, c in col.fallbacks.items())
            self.warnings.append(f"{TRACE}: {k:,} of {k + col.n_fast:,} chunks ({col.fallback_bytes / 1e6:,.0f} MB) "
                                 f"parsed with the general decoder, not the fast scanner ({why}): the same "
                                 "tables, slower")
        masks = {"hw": role == 1, "hccl": role == 2, "ovl": role == 3, "ops": host & (cls == 1),
                 "py": host & (cls == 2)}
        idxs = {kind: np.flatnonzero(m & ok) for kind, m in masks.items()}
        kept = {kind: _in_groups(gs) for kind, (fs, gs) in _KIND_FIELDS.items() if fs}
        for kind, idx in idxs.items():                 # were their args kept?
            if kind in kept and not kept[kind][group[idx]].all():
                raise _Redo()
        raw_dur = x["dur"].floats()                   # µs; -> ns per kind, for the rows it keeps
        self.n_events = col.n_events          # every event of the file (metadata and flows included)
        self.n_device = int((role == 1).sum())    # "Ascend Hardware" events, readable or not
        self.b: dict = {}
        names = x["name"].texts(slice(None))           # (Texts or objects: both index by rows)
        in_group = np.bincount(group, minlength=G_ALL + 1)
        bad_durs = 0
        for kind, idx in idxs.items():
            dur, bad = _dur_ns(raw_dur[idx])
            bad_durs += bad
            c = {"n": len(idx), "pid": pid[idx], "tid": tid[idx], "ts": ts[idx], "dur": dur,
                 "name": names[idx]}
            if kind == "ops":
                c["cat"] = x["cat"].texts(idx)
            fields = _KIND_FIELDS[kind][0]
            if fields:
                # each event's row among the events its args were stored for (idx is a sorted
                # subset of them, checked above): all of them, in order, when there are as many
                # (the usual case: the roles guessed per chunk were right), else found by a search
                if len(idx) == int(in_group[kept[kind]].sum()):
                    rows = slice(None)
                else:
                    rows = np.searchsorted(np.flatnonzero(kept[kind][group]), idx)
                for f in fields:
                    c[f] = col.args[f].column(rows, f in _TEXT)
            self.b[kind] = c
        self._warn(bad_durs, "event(s) with a missing, negative or non-numeric 'dur' were given duration 0")
        fl = col.fl
        fts, is_f, fcls = _cat(col.fl_ts, np.int64), _cat(col.fl_f, bool), _cat(col.fl_cls, np.int8)
        fpid, ftid = fl["pid"].ints(), fl["tid"].ints()
        id_row = np.cumsum(fcls > 0) - 1
        for kind, code in (("npu_flow", 1), ("fwdbwd", 2)):
            idx = np.flatnonzero((fcls == code) & (fts >= 0))
            self.b[kind] = {"n": len(idx), "pid": fpid[idx], "tid": ftid[idx], "ts": fts[idx],
                            "is_f": is_f[idx], "key": _keys(fl["id"], id_row[idx])}

    def _warn(self, n: int, what: str) -> None:
        if n:
            self.warnings.append(f"{TRACE}: {n} {what}")


def _dur_ns(us: np.ndarray) -> tuple[np.ndarray, int]:
    """µs durations (a copy: changed in place) -> (int64 ns, rounded to even; 0 where missing,
    negative or not finite), and how many were such."""
    us *= 1000.0
    if not len(us) or (us.min() >= 0 and us.max() < np.inf):      # (a NaN fails both): all good
        np.rint(us, out=us)
        return us.astype(np.int64), 0
    good = np.isfinite(us)
    good &= us >= 0
    bad = len(us) - int(np.count_nonzero(good))
    np.rint(us, out=us)
    us[~good] = 0
    return us.astype(np.int64), bad


def _keys(ids: Field, rows: np.ndarray) -> np.ndarray:
    """Flow ids of ``rows`` -> keys: equal as text, equal key (5 and "5" pair up); None -> -1."""
    if not len(rows):
        return np.zeros(0, np.int64)
    if ids.all_ints():                   # ints: equal as numbers <=> equal as text
        return pd.factorize(ids.ints(rows))[0]
    text = objects([plain_text(v) for v in ids.objects(rows)])
    return pd.factorize(text)[0]


def _check_head(path: str) -> None:
    """LoadError unless the file starts (after whitespace) with the '[' of a JSON array."""
    try:
        with open_regular(path, "rb") as fh:
            while True:                       # the first block holding a non-blank byte
                head = fh.read(1 << 16)
                first = head.lstrip()[:1]
                if first or len(head) < 1 << 16:
                    break
            size = fh.seek(0, 2)
    except FileNotFoundError:
        raise LoadError(path, f"no {TRACE} here: the folder is not an Ascend text export "
                              "(or the profile was not parsed/exported)") from None
    except OSError as exc:
        raise LoadError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if not first:
        raise LoadError(path, "the file is empty" if size else "the file is empty (0 bytes)")
    not_array = "the top level is not a JSON array of trace events"
    if first == b"{":
        raise LoadError(path, f"{not_array} (Expected `array`, got `object`)")
    if first != b"[":
        try:
            msgspec.json.decode(head)
        except msgspec.DecodeError as exc:
            if "truncated" not in str(exc):
                raise LoadError(path, f"not valid JSON ({exc})") from None
        raise LoadError(path, not_array)


def _reword(exc: LoadError) -> LoadError:
    """jsonstream speaks of a "traceEvents array"; here the whole file is the event array."""
    if exc.problem.startswith("a trace event"):
        return exc
    problem = exc.problem.replace("the traceEvents array", "the event array").replace("traceEvents", "event")
    return LoadError(exc.path, f"not valid JSON ({problem})" if problem.startswith("malformed JSON") else problem)


_EVENT_TEXT = re.compile(rb'\{[^{}]*\{[^{}]*\}[^{}]*\}|\{[^{}]*\}')


def _role_hints(path: str, head: int = 1 << 20, tail: int = 4 << 20) -> dict:
    """pid -> role code from the ``process_name`` events in the first and last few MB of the file.

    Only a hint for what each chunk keeps (exporters write the metadata near the start or at the
    end); a wrong or missing hint costs time, never correctness (see the module doc)."""
    found: dict = {}
    try:
        with open_regular(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(0)
            texts = [fh.read(head)]
            if size > head:
                fh.seek(max(head, size - tail))
                texts.append(fh.read(tail))
    except OSError:
        return found
    for text in texts:
        i = text.find(b'"process_name"')
        while i >= 0:
            m = _EVENT_TEXT.match(text, max(text.rfind(b"{", 0, i), 0))
            try:
                e = msgspec.json.decode(m.group()) if m else None
            except (msgspec.DecodeError, UnicodeDecodeError):
                e = None
            if isinstance(e, dict) and e.get("name") == "process_name" and e.get("ph") == "M":
                a = e.get("args")
                found[_one(e.get("pid"))] = _role_code(a.get("name") if isinstance(a, dict) else None)
            i = text.find(b'"process_name"', i + 1)
    return found


def parse_trace(path: str, chunk_bytes: int | None = None, progress=None) -> Trace:
    """Decode ``path`` chunk by chunk into a :class:`Trace` (LoadError on unreadable input);
    ``progress(fraction of the file read)`` is called as the chunks go by.  ``chunk_bytes``
    defaults to :data:`CHUNK_BYTES` (read at call time, so tests can shrink it)."""
    _check_head(path)
    hints = _role_hints(path)
    try:
        with gc_paused():               # many short-lived objects, no cycles
            return _decode(path, hints, chunk_bytes, progress)
    except MemoryError:
        raise LoadError(path, "not enough memory to load this trace") from None


def _decode(path: str, hints, chunk_bytes, progress) -> Trace:
    """The chunked decode: first keeping only the fields the trace seems to need, then, if a later
    event turns out to need more (``_Redo``), once more keeping every field."""
    try:
        fast = ascend_fast.wanted(os.path.getsize(path))
    except OSError:
        fast = False
    for full in (False, True):
        col = _Collector(path, full, hints)
        if fast:
            col.use_scanner()
        size = chunk_bytes or (ascend_fast.FAST_CHUNK if col.fast is not None else CHUNK_BYTES)
        try:
            for _ in jsonstream.iter_event_chunks(path, col, chunk_bytes=size,
                                                  progress=None if full else progress):
                pass
        except LoadError as exc:
            raise _reword(exc) from None
        try:
            return Trace(col)
        except _Redo:
            continue
    raise AssertionError("unreachable: the full decode keeps every field")
