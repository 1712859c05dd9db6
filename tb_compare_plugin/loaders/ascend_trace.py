"""Streaming decoder of an Ascend ``trace_view.json`` (a top-level JSON array of trace events).

Owns the event Structs, the chunked decode (chunks cut at event boundaries by
:mod:`.jsonstream`, ~1 MB each), the conversion of each chunk into compact columns while its
decoded objects are dropped, and :class:`Trace`: the columns grouped by role that
:mod:`.ascend_text` builds tables from.  Memory is bounded by those columns, not by the JSON.

Each raw JSON field is kept in a :class:`_Field`: per chunk, all-int values become an int64
piece, all-string values int32 codes into a per-field vocabulary, anything else (mixed or odd
types) stays as Python objects.  Conversions that depend on a whole column (``ascend_csv.ints``'s
ids for odd strings, interning order) are applied once at the end over exactly the rows of each
table, so the result equals decoding the whole file at once.  Counter events (``ph: "C"``, about
half of a trace) decode to empty structs.  Process roles (spec a.5) need the ``process_name``
metadata, which may come after the events it describes; X events are therefore split by
category at decode time (host ops / python functions keep their args, everything else the device
args) and, should a host-category event turn out to sit on a device process, the file is decoded
again keeping every args field of every event.
"""
from __future__ import annotations

import gc
import re
from itertools import compress
from operator import attrgetter
from typing import Any, Union

import msgspec
import numpy as np
import pandas as pd

from ..model import timeconv
from . import jsonstream
from .ascend_csv import ints as _ints
from .errors import LoadError

TRACE = "trace_view.json"
CHUNK_BYTES = 1 << 20


class _Args(msgspec.Struct, gc=False):
    """The ``args`` keys the loader reads from X events (everything else is skipped by the decoder)."""
    task_type: Any = msgspec.field(default=None, name="Task Type")
    task_id: Any = msgspec.field(default=None, name="Task Id")
    stream_id: Any = msgspec.field(default=None, name="Stream Id")
    phys_stream_id: Any = msgspec.field(default=None, name="Physic Stream Id")
    connection_id: Any = None
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    input_type: Any = msgspec.field(default=None, name="Input type")
    call_stack: Any = msgspec.field(default=None, name="Call stack")
    seq: Any = msgspec.field(default=None, name="Sequence number")
    py_id: Any = msgspec.field(default=None, name="Python id")
    py_parent: Any = msgspec.field(default=None, name="Python parent id")
    correlation_id: Any = None
    hccl_task_type: Any = msgspec.field(default=None, name="task type")
    transport: Any = msgspec.field(default=None, name="transport type")
    size: Any = msgspec.field(default=None, name="size(Byte)")
    src_rank: Any = msgspec.field(default=None, name="src rank")
    dst_rank: Any = msgspec.field(default=None, name="dst rank")


class _MetaArgs(msgspec.Struct, gc=False):
    name: Any = None
    sort_index: Any = None


# Events are a union tagged by "ph": only X, M and flow s/f events carry decoded fields; every other
# phase decodes to an empty struct, its values skipped unread.  ``_k`` tells the phases apart.
class _Event(msgspec.Struct, gc=False, tag_field="ph"):
    _k = 0


class _X(_Event, tag="X"):
    _k = 1
    name: Any = None
    cat: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: _Args | None = None


class _M(_Event, tag="M"):
    _k = 2
    name: Any = None
    pid: Any = None
    tid: Any = None
    args: _MetaArgs | None = None


class _S(_Event, tag="s"):
    _k = 3
    cat: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    id: Any = None


class _F(_S, tag="f"):
    _k = 4


_OTHER_PHASES = [type(f"_Ph{ord(p)}", (_Event,), {}, tag=p)
                 for p in "ABCDEFGHIJKLNOPQRTUVWYZabcdeghijklmnopqrtuvwxyz"]
_DECODER = msgspec.json.Decoder(list[Union[tuple([_X, _M, _S, _F] + _OTHER_PHASES)]])  # type: ignore[misc]
_NOARGS = _Args()
_KIND = attrgetter("_k")
_X_FIELDS = attrgetter("pid", "tid", "ts", "dur", "name", "cat", "args")
_FLOW_FIELDS = attrgetter("pid", "tid", "ts", "id", "cat")

# X events by category: 1 host op (cpu_op/enqueue/dequeue), 2 python function, 0 anything else.
# Each category keeps the args its tables read (0: the device ones, for hw/HCCL processes).
_CAT_CLASS = {"cpu_op": 1, "enqueue": 1, "dequeue": 1, "python_function": 2}
_GROUP_ARGS = {0: ("task_type", "task_id", "stream_id", "phys_stream_id", "connection_id",
                   "hccl_task_type", "transport", "size", "src_rank", "dst_rank"),
               1: ("input_dims", "input_type", "call_stack", "seq", "correlation_id"),
               2: ("py_id", "py_parent")}
_STR_ARGS = frozenset({"task_type", "hccl_task_type", "transport", "input_dims", "input_type", "call_stack"})
_KIND_ARGS = {"hw": ("task_type", "task_id", "stream_id", "phys_stream_id", "connection_id"),
              "hccl": ("hccl_task_type", "transport", "size", "src_rank", "dst_rank"),
              "ops": _GROUP_ARGS[1], "py": _GROUP_ARGS[2], "ovl": ()}
_ROLES = {"Ascend Hardware": "hw", "HCCL": "hccl", "Communication": "hccl", "Overlap Analysis": "ovl"}
_ROLE_CODE = {"hw": 1, "hccl": 2, "ovl": 3}
_KIND_GROUP = {"hw": 0, "hccl": 0, "ops": 1, "py": 2}
_NONE_T = type(None)
_STRS, _INTS, _NUMS = frozenset({str, _NONE_T}), frozenset({int, _NONE_T}), frozenset({int, float, _NONE_T})


# --------------------------------------------------------------------------------------------- values

def floats(values) -> np.ndarray:
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(np.float64)


def dur_ns(d_us: np.ndarray) -> np.ndarray:
    d = d_us * 1000.0
    return np.where(np.isfinite(d), np.rint(d), 0).astype(np.int64)


def ts_ns(values) -> np.ndarray:
    """µs values -> exact int64 ns (-1 when unreadable), value by value.

    Fast path for strings with exactly 3 decimals ("1736408883688177.930"): values of equal
    width are joined into one byte matrix and converted by digit arithmetic.  Anything else
    (numbers, other decimals, junk) goes through timeconv's exact per-value rules.
    """
    n = len(values)
    out = np.full(n, -1, dtype=np.int64)
    if not all(type(v) is str for v in values):
        return np.array(_slow_ns(values), dtype=np.int64)
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    slow = np.zeros(n, dtype=bool)
    widths = np.unique(lens).tolist()
    for width in widths:
        idx = np.arange(n) if len(widths) == 1 else np.flatnonzero(lens == width)
        if not 5 <= width <= 20:
            slow[idx] = True
            continue
        sub = values if len(idx) == n else [values[i] for i in idx.tolist()]
        try:
            buf = ("\n".join(sub) + "\n").encode("ascii")
        except UnicodeEncodeError:
            slow[idx] = True
            continue
        m = np.frombuffer(buf, dtype=np.uint8).reshape(len(idx), width + 1)
        dot = width - 4
        bad = (m[:, dot] != 46) | (m[:, width] != 10)
        if width == 20:                            # 19 digits: stay below the int64 limit
            bad |= m[:, 0] > 56
        acc = np.zeros(len(idx), dtype=np.int64)
        for c in range(width):
            if c != dot:
                col = m[:, c] - np.uint8(48)       # non-digits wrap around to > 9
                bad |= col > 9
                acc *= 10
                acc += col
        out[idx[~bad]] = acc[~bad]
        slow[idx[bad]] = True
    if slow.any():
        rows = np.flatnonzero(slow)
        out[rows] = _slow_ns([values[i] for i in rows.tolist()])
    return out


def _slow_ns(values) -> list[int]:
    out = []
    for v in values:
        try:
            ns = timeconv.us_to_ns(v)
        except (ValueError, TypeError, OverflowError):
            ns = -1
        out.append(ns if -(1 << 63) < ns < (1 << 63) else -1)
    return out


def objects(values) -> np.ndarray:
    """1-d object array without numpy probing each element for nested sequences."""
    return np.fromiter(values, dtype=object, count=len(values))


class _Vocab(dict):
    """Distinct strings -> codes 0, 1, ... in order of first appearance; None -> -1."""

    def __init__(self) -> None:
        super().__init__({None: -1})
        self.values: list = []

    def __missing__(self, key):
        code = self[key] = len(self.values)
        self.values.append(key)
        return code


class _Field:
    """One raw field of many events, accumulated chunk by chunk (see the module doc)."""
    __slots__ = ("pieces", "vocab")

    def __init__(self) -> None:
        self.pieces: list = []        # ("i", int64, None-mask | None) / ("s", codes) / ("f", float64) / ("o", objs)
        self.vocab = _Vocab()

    def add(self, vals, numeric: bool = False) -> None:
        n = len(vals)
        types = set(map(type, vals))
        if numeric and types <= _NUMS:
            try:
                self.pieces.append(("f", np.array(vals, dtype=np.float64)))
                return
            except OverflowError:
                pass
        elif types <= _STRS:
            self.pieces.append(("s", np.fromiter(map(self.vocab.__getitem__, vals), np.int32, n)))
            return
        elif types <= _INTS:
            try:
                if _NONE_T not in types:
                    self.pieces.append(("i", np.fromiter(vals, np.int64, n), None))
                    return
                f = np.array(vals, dtype=np.float64)
                none = np.isnan(f)
                if not (np.abs(f[~none]) >= 2.0 ** 53).any():
                    self.pieces.append(("i", np.where(none, -1.0, f).astype(np.int64), none))
                    return
            except OverflowError:
                pass
        self.pieces.append(("o", objects(vals)))

    def _kinds(self) -> set:
        return {p[0] for p in self.pieces}

    def _piece_objects(self, p) -> np.ndarray:
        if p[0] == "s":
            return np.array(self.vocab.values + [None], dtype=object)[p[1]]   # code -1 -> None
        if p[0] == "i":
            o = p[1].astype(object)
            if p[2] is not None:
                o[p[2]] = None
            return o
        return p[1].astype(object) if p[0] == "f" else p[1]

    def objects(self, rows=None) -> np.ndarray:
        """The raw values (as decoded) of ``rows`` (all when None) as an object array."""
        if self._kinds() <= {"s"}:
            codes = np.concatenate([p[1] for p in self.pieces]) if self.pieces else np.zeros(0, np.int32)
            return self._piece_objects(("s", codes if rows is None else codes[rows]))
        parts = [self._piece_objects(p) for p in self.pieces]
        o = np.concatenate(parts) if parts else np.zeros(0, dtype=object)
        return o if rows is None else o[rows]

    def ints(self, rows=None) -> np.ndarray:
        """``ascend_csv.ints`` of the values of ``rows``: computed on int pieces when it can."""
        if self._kinds() <= {"i"}:
            a = np.concatenate([p[1] for p in self.pieces]) if self.pieces else np.zeros(0, np.int64)
            return a if rows is None else a[rows]
        return _ints(self.objects(rows).tolist())

    def column(self, rows, text: bool):
        """What the tables read: strings as an object array; numbers as int64 when every value
        is an int or None (their ``ints`` is then known), else the raw values as a list, for
        the table code to apply ``ascend_csv.ints`` to exactly the rows it keeps."""
        if text:
            return self.objects(rows)
        return self.ints(rows) if self._kinds() <= {"i"} else self.objects(rows).tolist()

    def floats(self) -> np.ndarray:
        if self._kinds() <= {"f"}:
            return np.concatenate([p[1] for p in self.pieces]) if self.pieces else np.zeros(0)
        return floats(self.objects().tolist())


# --------------------------------------------------------------------------------------------- decoding

class _Redo(Exception):
    """A host-category event sits on a device process: decode again keeping every args field."""


class _Collector:
    """The ``decode`` callback of :func:`jsonstream.iter_event_chunks`: one chunk -> column pieces."""

    def __init__(self, path: str, full: bool) -> None:
        self.path = path
        self.full = full                  # keep every args field of every X event
        self.n_events = 0
        self.meta: list = []              # (name, pid, tid, args) of M events, file order
        self.x = {k: _Field() for k in ("pid", "tid", "name", "cat", "dur")}
        self.x_ts: list = []
        self.x_cls: list = []
        self.cat_class: list = []         # class of each "cat" vocabulary entry
        self.args = {f: _Field() for g in _GROUP_ARGS.values() for f in g}
        self.fl = {k: _Field() for k in ("pid", "tid", "cat", "id")}
        self.fl_ts: list = []
        self.fl_f: list = []

    def __call__(self, view) -> None:
        try:
            evs = _DECODER.decode(view)
        except msgspec.ValidationError as exc:
            self._layout_error(view, str(exc))
        self.n_events += len(evs)
        if not evs:
            return
        kind = np.fromiter(map(_KIND, evs), np.int8, len(evs))
        if (kind == 2).any():
            for e in compress(evs, (kind == 2).tolist()):
                self.meta.append((e.name, e.pid, e.tid, e.args))
        xs = list(compress(evs, (kind == 1).tolist()))
        flows = list(compress(evs, (kind >= 3).tolist()))
        fkind = kind[kind >= 3]
        del evs
        if xs:
            self._add_x(xs)
        if flows:
            pid, tid, ts, ids, cat = zip(*map(_FLOW_FIELDS, flows))
            self.fl["pid"].add(pid)
            self.fl["tid"].add(tid)
            self.fl["cat"].add(cat)
            self.fl["id"].add([v if v is None or type(v) is str else str(v) for v in ids])
            self.fl_ts.append(ts_ns(ts))
            self.fl_f.append(fkind == 4)

    def _add_x(self, xs: list) -> None:
        pid, tid, ts, dur, name, cat, args = zip(*map(_X_FIELDS, xs))
        x = self.x
        x["pid"].add(pid)
        x["tid"].add(tid)
        x["name"].add(name)
        x["dur"].add(dur, numeric=True)
        x["cat"].add(cat)
        self.x_ts.append(ts_ns(ts))
        cls = self._classes(x["cat"].pieces[-1])
        self.x_cls.append(cls)
        if None in args:
            args = [a or _NOARGS for a in args]
        for g, fields in _GROUP_ARGS.items():
            sub = args if self.full else list(compress(args, (cls == g).tolist()))
            if not sub:
                continue
            cols = zip(*map(attrgetter(*fields), sub)) if len(fields) > 1 else [tuple(map(attrgetter(fields[0]), sub))]
            for f, vals in zip(fields, cols):
                self.args[f].add(vals)

    def _classes(self, piece) -> np.ndarray:
        """Category class (see _CAT_CLASS) of each X event of the chunk, from its "cat" piece."""
        if piece[0] == "s":
            voc = self.x["cat"].vocab.values
            for v in voc[len(self.cat_class):]:
                self.cat_class.append(_CAT_CLASS.get(v, 0))
            lut = np.array(self.cat_class + [0], dtype=np.int8)
            return lut[piece[1]]
        return np.array([_CAT_CLASS.get(v, 0) if type(v) is str else 0 for v in piece[1]], dtype=np.int8)

    def _layout_error(self, view, msg: str):
        """A schema error: a bad cut (let jsonstream extend the chunk) or a real layout error."""
        msgspec.json.decode(view)          # raises DecodeError("truncated") when the cut was bad
        m = re.search(r"`\$\[(\d+)\]", msg)
        if m:
            msg = msg.replace(m.group(0), f"`$[{int(m.group(1)) + self.n_events}]")
        raise LoadError(self.path, f"a trace event has an unexpected layout ({msg})")


class Trace:
    """Columns decoded from trace_view.json, grouped by role into ``self.b[role]`` column dicts:
    hw / hccl / ovl (by process_name), ops (cpu_op, enqueue, dequeue), py (python_function),
    npu_flow (async_npu s/f), fwdbwd.  pid/tid/ts/dur are int64; names and string args object
    arrays; numeric args see :meth:`_Field.column`.  Flows carry ``is_f`` and ``key`` (equal
    ids, equal key; -1 for a missing id)."""

    def __init__(self, col: _Collector) -> None:
        self.proc: dict = {}
        self.thread_name: dict = {}
        self.thread_sort: dict = {}
        for name, pid, tid, a in col.meta:
            a = a or _MetaArgs()
            if name == "process_name":
                self.proc[pid] = a.name
            elif name == "thread_name":
                self.thread_name[(pid, tid)] = a.name
            elif name == "thread_sort_index":
                self.thread_sort[(pid, tid)] = a.sort_index
        one = lambda v: int(_ints([v])[0])  # noqa: E731  (metadata keyed like the columns)
        self.roles = {one(p): _ROLES[n] for p, n in self.proc.items() if isinstance(n, str) and n in _ROLES}
        self.thread_name = {(one(p), one(t)): v for (p, t), v in self.thread_name.items()}
        self.thread_sort = {(one(p), one(t)): v for (p, t), v in self.thread_sort.items()}
        x = col.x
        pid, tid = x["pid"].ints(), x["tid"].ints()
        ts = np.concatenate(col.x_ts) if col.x_ts else np.zeros(0, np.int64)
        cls = np.concatenate(col.x_cls) if col.x_cls else np.zeros(0, np.int8)
        role = np.zeros(len(pid), dtype=np.int8)
        for p, r in self.roles.items():
            role[pid == p] = _ROLE_CODE[r]
        if not col.full and ((role == 1) | (role == 2))[cls != 0].any():
            raise _Redo()
        dur = dur_ns(x["dur"].floats())
        ok = ts >= 0
        self.bad_ts = int((~ok).sum())
        host = role == 0
        masks = {"hw": role == 1, "hccl": role == 2, "ovl": role == 3, "ops": host & (cls == 1), "py": host & (cls == 2)}
        self.b: dict = {}
        for kind, m in masks.items():
            idx = np.flatnonzero(m & ok)
            c = {"n": len(idx), "pid": pid[idx], "tid": tid[idx], "ts": ts[idx], "dur": dur[idx],
                 "name": x["name"].objects(idx)}
            if kind == "ops":
                c["cat"] = x["cat"].objects(idx)
            if _KIND_ARGS[kind]:
                g = _KIND_GROUP[kind]
                rows = idx if col.full else np.searchsorted(np.flatnonzero(cls == g), idx)
                for f in _KIND_ARGS[kind]:
                    c[f] = col.args[f].column(rows, f in _STR_ARGS)
            self.b[kind] = c
        fl = col.fl
        fts = np.concatenate(col.fl_ts) if col.fl_ts else np.zeros(0, np.int64)
        is_f = np.concatenate(col.fl_f) if col.fl_f else np.zeros(0, bool)
        fpid, ftid, fcat = fl["pid"].ints(), fl["tid"].ints(), fl["cat"].objects()
        self.bad_ts += int((fts < 0).sum())
        for kind, c_name in (("npu_flow", "async_npu"), ("fwdbwd", "fwdbwd")):
            idx = np.flatnonzero((fcat == c_name) & (fts >= 0))
            self.b[kind] = {"n": len(idx), "pid": fpid[idx], "tid": ftid[idx], "ts": fts[idx],
                            "is_f": is_f[idx], "key": pd.factorize(fl["id"].objects(idx))[0]}


def _check_head(path: str) -> None:
    """LoadError unless the file starts (after whitespace) with the '[' of a JSON array."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
            first = head.lstrip()[:1]
            while not first and len(head) == 1 << 16:
                head = fh.read(1 << 16)
                first = head.lstrip()[:1]
            size = fh.seek(0, 2)
    except FileNotFoundError:
        raise LoadError(path, f"no {TRACE} here: the folder is not an Ascend text export "
                              "(or the profile was not parsed/exported)") from None
    except OSError as exc:
        raise LoadError(path, f"cannot read the file ({exc.strerror or exc})") from None
    if not first:
        raise LoadError(path, "the file is empty" if size else "the file is empty (0 bytes)")
    if first == b"[":
        return
    if first == b"{":
        raise LoadError(path, "the top level is not a JSON array of trace events (Expected `array`, got `object`)")
    try:
        msgspec.json.decode(head)
    except msgspec.DecodeError as exc:
        if "truncated" not in str(exc):
            raise LoadError(path, f"not valid JSON ({exc})") from None
    raise LoadError(path, "the top level is not a JSON array of trace events")


def _reword(exc: LoadError) -> LoadError:
    """jsonstream speaks of a "traceEvents array"; here the whole file is the event array."""
    problem = exc.problem.replace("the traceEvents array", "the event array").replace("traceEvents", "event")
    if problem.startswith("malformed JSON"):
        problem = "not valid JSON (" + problem + ")"
    return LoadError(exc.path, problem)


def parse_trace(path: str, chunk_bytes: int = CHUNK_BYTES) -> Trace:
    """Decode ``path`` chunk by chunk into a :class:`Trace` (LoadError on unreadable input)."""
    _check_head(path)
    was = gc.isenabled()
    gc.disable()                    # many short-lived objects, no cycles
    try:
        for full in (False, True):
            col = _Collector(path, full)
            try:
                for _ in jsonstream.iter_event_chunks(path, col, chunk_bytes=chunk_bytes):
                    pass
            except LoadError as exc:
                raise (exc if exc.problem.startswith("a trace event") else _reword(exc)) from None
            try:
                return Trace(col)
            except _Redo:
                continue
        raise AssertionError("unreachable")
    except MemoryError:
        raise LoadError(path, "not enough memory to load this trace") from None
    finally:
        if was:
            gc.enable()
