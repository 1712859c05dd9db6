"""PyTorch Profiler (Kineto) trace loader: ``*.pt.trace.json[.gz]`` -> :class:`Profile`.

Owns the event schema (typed msgspec Structs holding only the fields we use), the per-chunk
conversion of decoded events into column arrays, and the vectorised post-processing (nesting,
op->kernel links, steps, NCCL collectives, memory pairing).  The file is read chunk by chunk by
:mod:`.jsonstream`, so memory stays bounded by the tables, not by the JSON.

Conventions specific to this format:

* ``ts``/``dur`` are µs (int, fractional or string); they become exact int64 ns.  A float µs value
  identifies its ns only below 2^43 µs (~100 days); from the first chunk holding a larger float
  (e.g. fractional epoch µs) on, chunks are decoded with ``ts`` kept as text (``_EvExact``).
* ``pid``/``tid`` may be strings: digit strings and "stream 7"-style strings become their number,
  other strings ("Spans", "PyTorch Profiler") a stable negative id < -1; -1 is missing.
* ``ops.input_shapes`` is canonicalised from ``Input Dims`` (list of lists) as the dims of each
  input joined by "," and the inputs joined by ";", e.g. ``[[8, 3], [], [3]]`` -> ``"8,3;;3"``
  (the reference's key joins inputs with ";\\r\\n"; ";" is the same up to that separator and is what
  the Ascend exports use).  ``ops.input_types`` is ``Input type`` joined by ";".
* op -> kernel: by correlation id (runtime op ``args.correlation`` == kernel's), else by the flow
  (``ac2g``/``async_cpu_to_gpu``/``async_gpu``/``async``) whose ``f`` end sits on the kernel
  (pid, tid, ts) and whose ``s`` end on the launching op (pid, tid, ts).
"""
from __future__ import annotations

import gc
import json
import re
from typing import Any, Optional

import msgspec
import numpy as np
import pandas as pd

from ..model.intervals import nest
from ..model.profile import (KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET, Profile, ProfileMeta,
                             make_table)
from ..model.symbols import SymbolTable
from ..model.timeconv import us_str_to_ns, us_to_ns
from . import jsonstream
from .errors import LoadError

Num = int | float | str | None
_RAW0 = msgspec.Raw(b"")


class _Args(msgspec.Struct, gc=False, frozen=True):
    ext: Num = msgspec.field(default=-1, name="External id")
    ext2: Num = msgspec.field(default=-1, name="external id")
    corr: Num = msgspec.field(default=-1, name="correlation")
    stream: Num = -1
    device: Num = -1
    nbytes: Num = msgspec.field(default=-1, name="bytes")
    dims: msgspec.Raw = msgspec.field(default=_RAW0, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=_RAW0, name="Input type")
    stack: Optional[str] = msgspec.field(default=None, name="Call stack")
    seq: Num = msgspec.field(default=-1, name="Sequence number")
    py_id: Num = msgspec.field(default=-1, name="Python id")
    py_parent: Num = msgspec.field(default=-1, name="Python parent id")
    dev_id: Num = msgspec.field(default=-1, name="Device Id")
    mbytes: Num = msgspec.field(default=0, name="Bytes")
    addr: Num = msgspec.field(default=-1, name="Addr")
    total_alloc: Num = msgspec.field(default=float("nan"), name="Total Allocated")
    total_res: Num = msgspec.field(default=float("nan"), name="Total Reserved")
    pg: Optional[str] = msgspec.field(default=None, name="Process Group Name")
    pg_ranks: Optional[str] = msgspec.field(default=None, name="Process Group Ranks")
    nelems: Num = msgspec.field(default=-1, name="In msg nelems")
    dtype: Optional[str] = None
    coll: Optional[str] = msgspec.field(default=None, name="Collective name")


_ARGS0 = _Args()


class _Ev(msgspec.Struct, gc=False):
    ph: Optional[str] = None
    cat: Optional[str] = None
    name: Optional[str] = None
    pid: Num = None
    tid: Num = None
    ts: Num = None
    dur: Num = 0
    id: Num = None
    args: _Args = _ARGS0


class _EvExact(_Ev, gc=False):
    """Same event, ``ts`` left untyped so the float hook hands us its exact text."""
    ts: Any = None


_DEC = msgspec.json.Decoder(list[_Ev])
_DEC_EXACT = msgspec.json.Decoder(list[_EvExact], float_hook=str)
_DEC_RAWS = msgspec.json.Decoder(list[msgspec.Raw])

# event classes
(C_OTHER, C_KERNEL, C_MEMCPY, C_MEMSET, C_OP, C_RUNTIME, C_PYF, C_FLOW, C_FWDBWD, C_MEM) = range(10)
_CAT_CLASS = {"kernel": C_KERNEL, "gpu_memcpy": C_MEMCPY, "memcpy": C_MEMCPY, "gpu_memset": C_MEMSET,
              "memset": C_MEMSET, "cpu_op": C_OP, "user_annotation": C_OP, "operator": C_OP,
              "cuda_runtime": C_RUNTIME, "runtime": C_RUNTIME, "cuda_driver": C_RUNTIME,
              "python_function": C_PYF, "ac2g": C_FLOW, "async_cpu_to_gpu": C_FLOW, "async_gpu": C_FLOW,
              "async": C_FLOW, "fwdbwd": C_FWDBWD}
_EXACT_LIMIT = float(2 ** 43)       # µs; below it a float µs value identifies its ns exactly
_POW10 = 10 ** np.arange(19, dtype=np.int64)
_STEP_RE = re.compile(r"ProfilerStep#(\d+)$")
_DTYPE_SIZE = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
               "bfloat16": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2,
               "char": 1, "byte": 1, "int8": 1, "uint8": 1, "bool": 1, "complexfloat": 8,
               "complexdouble": 16, "float8_e4m3fn": 1, "float8_e5m2": 1}
_COLLECTIVES = ("reducescatter", "allreduce", "allgather", "alltoall", "broadcast", "sendrecv",
                "reduce", "send", "recv", "gather", "scatter")


# ----------------------------------------------------------------------------- numbers

def _dec_text_ns(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unicode array of decimal µs texts -> (int64 ns, ok mask), vectorised digit arithmetic."""
    n = len(a)
    width = a.dtype.itemsize // 4
    c = a.view(np.uint32).reshape(n, width).astype(np.int64)
    isdig = (c >= 48) & (c <= 57)
    isdot = c == 46
    nul = c == 0
    neg = c[:, 0] == 45
    allowed = isdig | isdot | nul
    allowed[:, 0] |= neg
    length = width - nul.sum(1)
    ok = allowed.all(1) & (isdot.sum(1) <= 1) & (isdig.sum(1) > 0) & (length > 0)
    dot = np.where(isdot.any(1), isdot.argmax(1), length)[:, None]
    pos = np.arange(width)[None, :]
    w = np.where(pos < dot, dot - 1 - pos + 3, 2 - (pos - dot - 1))     # power of ten in ns
    ok &= ~(isdig & (w > 18)).any(1)
    use = isdig & (w >= 0) & (w <= 18)
    val = ((c - 48) * _POW10[np.clip(w, 0, 18)] * use).sum(1)
    r = dot[:, 0] + 4                                                     # first sub-ns digit
    has_r = r < width
    rd = np.where(has_r, c[np.arange(n), np.minimum(r, width - 1)], 0)
    val += (has_r & (rd >= 53) & (rd <= 57)).astype(np.int64)
    return np.where(neg, -val, val), ok


def _times_ns(vals: list, exact: bool = False) -> tuple[np.ndarray, bool]:
    """µs values (int/float/str/None) -> (int64 ns with -1 where missing/bad, needs_exact flag).

    ints are exact; a float is exact below 2^43 µs (its nearest double is within 0.5 ns of the
    text).  needs_exact is set when a float is larger than that: the caller then decodes the chunk
    again with floats kept as text (``exact``), which is parsed digit by digit.
    """
    n = len(vals)
    if not n:
        return np.zeros(0, np.int64), False
    types = set(map(type, vals))
    if types == {int}:
        try:
            a = np.fromiter(vals, np.int64, n)
            if not (np.abs(a) >= 9_000_000_000_000_000).any():
                return a * 1000, False
        except OverflowError:
            pass
    elif types <= {int, float}:
        a = np.fromiter(vals, np.float64, n)
        if float in types:
            big = np.abs(a) >= _EXACT_LIMIT
            if big.any() and any(type(v) is float for v, b in zip(vals, big.tolist()) if b):
                return np.zeros(n, np.int64), True
        if not (np.abs(a) >= 2.0 ** 53).any():
            fin = np.isfinite(a)
            if not fin.all():
                a = np.where(fin, a, 0.0)
            whole = np.floor(a)
            ns = whole.astype(np.int64) * 1000 + np.rint((a - whole) * 1000.0).astype(np.int64)
            if not fin.all():
                ns[~fin] = -1
            return ns, False
    elif types <= {int, str} and exact:
        ns, ok = _dec_text_ns(np.array(vals, dtype=str))
        for i in np.flatnonzero(~ok).tolist():
            ns[i] = _one_ns(vals[i])
        return ns, False
    inexact = not exact and any(type(v) is float and v == v and abs(v) >= _EXACT_LIMIT for v in vals)
    return np.fromiter(map(_one_ns, vals), np.int64, n), inexact


def _one_ns(v) -> int:
    try:
        r = us_str_to_ns(v) if isinstance(v, str) else us_to_ns(v)
    except (ValueError, TypeError, OverflowError):
        return -1
    return r if -2 ** 63 <= r < 2 ** 63 else -1


def _one_int(v) -> int:
    if type(v) is int:
        return v if -2 ** 63 <= v < 2 ** 63 else (v & (2 ** 64 - 1)) - (2 ** 64 if v & 2 ** 63 else 0)
    if isinstance(v, float):
        return int(v) if v == v and abs(v) < 2 ** 63 and v == int(v) else -1
    if isinstance(v, str):
        s = v.strip()
        try:
            return _one_int(int(s, 16) if s[:2].lower() == "0x" else int(s))
        except ValueError:
            return -1
    return -1


def _ints(vals: list) -> np.ndarray:
    """Integers (maybe str/float/None/huge) -> int64, -1 where missing/bad; ids >= 2^63 wrap."""
    try:
        return np.fromiter(vals, np.int64, len(vals))      # note: truncates floats (ids never are)
    except (TypeError, ValueError, OverflowError):
        return np.fromiter(map(_one_int, vals), np.int64, len(vals))


def _floats(vals: list) -> np.ndarray:
    try:
        return np.fromiter(vals, np.float64, len(vals))
    except (TypeError, ValueError):
        return np.array([float(v) if isinstance(v, (int, float)) else np.nan for v in vals], np.float64)


def _id_norm(v, strings: dict) -> int:
    if type(v) is int:
        return _one_int(v)
    if v is None:
        return -1
    if isinstance(v, float):
        return _one_int(v)
    s = str(v).strip()
    m = re.search(r"(\d+)$", s)
    if m and (s.isdigit() or re.fullmatch(r"[A-Za-z ]*\d+", s)):
        return int(m.group(1))
    return -2 - strings.setdefault(s, len(strings))


def _canon_dims(raw: bytes) -> str:
    try:
        v = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
    if not isinstance(v, list):
        return str(v)

    def one(x):
        if isinstance(x, list):
            return ",".join(str(d) if not isinstance(d, list) else json.dumps(d, separators=(",", ":"))
                            for d in x)
        return "" if x is None else str(x)
    return ";".join(one(x) for x in v)


def _canon_types(raw: bytes) -> str:
    try:
        v = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
    if isinstance(v, list):
        return ";".join("" if x is None else str(x) for x in v)
    return str(v)


def collective_type(name: str, hint: Optional[str] = None) -> str:
    """'ncclDevKernel_AllReduce_Sum_f32_RING_LL' -> 'allreduce'; 'ncclKernel_SendRecv' -> 'sendrecv'."""
    low = name.lower()
    body = re.sub(r"^nccl(dev)?(kernel)?_?", "", low)
    first = re.split(r"[_(<\s]", body, 1)[0]
    for c in _COLLECTIVES:
        if first == c:
            return c
    for c in _COLLECTIVES:
        if body.startswith(c):
            return c
    if hint:
        return hint.lower().replace("_", "")
    return first or "nccl"


# ----------------------------------------------------------------------------- per chunk

class _Memo(dict):
    """dict that computes and stores missing values: ``map(memo.__getitem__, xs)`` runs in C."""
    __slots__ = ("make",)

    def __init__(self, make) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key):
        v = self[key] = self.make(key)
        return v


class _Rows:
    """Per-chunk columns of the kept events (class, ts, cat symbol, dur, pid, tid)."""
    __slots__ = ("cls", "ts", "cat", "dur", "pid", "tid")

    def __init__(self, cls, ts, cat) -> None:
        self.cls, self.ts, self.cat = cls, ts, cat


class _Collector:
    """Turns decoded chunks into column pieces; keeps the memos that make that cheap."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sym = SymbolTable()
        self.cat_memo: dict = {}          # raw cat -> index into cat_cls / cat_sym
        self.cat_cls: list[int] = []
        self.cat_sym: list[int] = []
        strings: dict = {}
        self.id_memo = _Memo(lambda v: _id_norm(v, strings))
        self.str_memo = _Memo(lambda v: self.sym.intern(v if isinstance(v, str) else
                                                        ("" if v is None else str(v))))
        self.dims_memo = _Memo(lambda b: self.sym.intern(_canon_dims(b)))
        self.types_memo = _Memo(lambda b: self.sym.intern(_canon_types(b)))
        self.nccl_ids: set[int] = set()
        self.checked_syms = 1
        self.parts: dict[str, dict[str, list]] = {}
        self.rows: dict[str, int] = {}
        self.n_events = 0
        self.n_bad_ts = 0
        self.n_skipped = 0
        self.n_fixed = 0
        self.n_exact_chunks = 0

    def close(self) -> None:
        """Drop the memos (their lambdas refer back to self) and any unused pieces."""
        self.id_memo = self.str_memo = self.dims_memo = self.types_memo = None
        self.parts = {}

    # -- decoding -------------------------------------------------------------------------
    def __call__(self, view: memoryview) -> None:
        inexact = True
        if not self.n_exact_chunks:               # once a chunk needed it, stay on the exact path
            evs = self._decode(view, _DEC)
            ts, inexact = _times_ns([e.ts for e in evs])
        if inexact:
            self.n_exact_chunks += 1
            evs = self._decode(view, _DEC_EXACT)
            ts, _ = _times_ns([e.ts for e in evs], exact=True)
        self._extract(evs, ts)

    def _decode(self, view, dec) -> list:
        try:
            return dec.decode(view)
        except msgspec.ValidationError:
            pass
        # slow path: event by event, repairing or skipping the ones that do not fit the schema
        out = []
        exact = dec is _DEC_EXACT
        one = msgspec.json.Decoder(_EvExact if exact else _Ev, float_hook=str if exact else None)
        for raw in _DEC_RAWS.decode(view):
            text = bytes(raw)
            try:
                out.append(one.decode(text))
                continue
            except msgspec.ValidationError as e:
                err = str(e)                      # keep no traceback: gc is off, cycles would pin the buffer
            ev = self._repair(text, one, err)
            if ev is None:
                self.n_skipped += 1
            else:
                self.n_fixed += 1
                out.append(ev)
        return out

    @staticmethod
    def _repair(raw: bytes, one, err: str):
        """Drop the fields that do not fit the schema (as many as it takes, up to 16)."""
        obj = msgspec.json.decode(raw)
        if not isinstance(obj, dict):
            return None
        for _ in range(16):
            m = re.search(r"- at `\$\.?(.*)`$", err)
            if not m or not m.group(1):
                return None
            keys = m.group(1).split(".", 1)
            if len(keys) == 2 and isinstance(obj.get(keys[0]), dict):
                obj[keys[0]].pop(keys[1], None)
            else:
                obj.pop(keys[0], None)
            try:
                return one.decode(msgspec.json.encode(obj))
            except msgspec.ValidationError as e:
                err = str(e)
        return None

    # -- columns --------------------------------------------------------------------------
    def _put(self, table: str, n: int, **cols) -> int:
        """Append column pieces; returns the first global row of this piece."""
        first = self.rows.get(table, 0)
        self.rows[table] = first + n
        part = self.parts.setdefault(table, {})
        for k, v in cols.items():
            part.setdefault(k, []).append(v)
        return first

    def _ids(self, raw: list) -> np.ndarray:
        try:
            return np.fromiter(raw, np.int64, len(raw))       # ints and digit strings
        except (TypeError, ValueError, OverflowError):
            return np.fromiter(map(self.id_memo.__getitem__, raw), np.int64, len(raw))

    def _intern(self, strs: list) -> np.ndarray:
        return np.fromiter(map(self.str_memo.__getitem__, strs), np.int32, len(strs))

    def _interned_raw(self, raws: list, memo: dict) -> np.ndarray:
        return np.fromiter(map(memo.__getitem__, map(bytes, raws)), np.int32, len(raws))

    def _extract(self, evs: list, ts: np.ndarray) -> None:
        n = len(evs)
        self.n_events += n
        if not n:
            return
        cats = [e.cat for e in evs]
        memo = self.cat_memo
        for c in sorted(set(cats).difference(memo), key=cats.index):    # first-seen order: stable ids
            memo[c] = len(self.cat_cls)
            self.cat_cls.append(_CAT_CLASS.get(c.lower(), C_OTHER) if isinstance(c, str) else C_OTHER)
            self.cat_sym.append(self.sym.intern(c) if isinstance(c, str) else 0)
        code = np.fromiter(map(memo.__getitem__, cats), np.int32, n)
        cls = np.array(self.cat_cls, np.int8)[code]
        other = np.flatnonzero(cls == C_OTHER)
        if len(other):
            is_mem = np.fromiter((evs[i].name == "[memory]" for i in other.tolist()), bool, len(other))
            cls[other[is_mem]] = C_MEM
        bad = (ts == -1) & (cls != C_OTHER)
        if bad.any():
            self.n_bad_ts += int(bad.sum())
            cls[bad] = C_OTHER
        if not (cls != C_OTHER).any():
            return
        catsym = np.array(self.cat_sym, np.int32)[code]

        def pick(*codes):
            """(rows of this chunk, their events, their columns) for the event classes ``codes``."""
            m = np.isin(cls, codes) if len(codes) > 1 else (cls == codes[0])
            idx = np.flatnonzero(m)
            sub = [evs[i] for i in idx.tolist()]
            if not len(idx):
                return sub, None
            r = _Rows(cls[idx], ts[idx], catsym[idx])
            r.dur, _ = _times_ns([e.dur for e in sub])
            r.dur[r.dur < 0] = 0
            r.pid = self._ids([e.pid for e in sub])
            r.tid = self._ids([e.tid for e in sub])
            return sub, r

        evk, r = pick(C_KERNEL, C_MEMCPY, C_MEMSET)
        if r is not None:
            self._kernels(evk, r)
        evo, r = pick(C_OP, C_RUNTIME)
        if r is not None:
            self._ops(evo, r)
        evp, r = pick(C_PYF)
        if r is not None:
            args = [e.args for e in evp]
            self._put("pyfuncs", len(evp), name=self._intern([e.name for e in evp]),
                      start_ns=r.ts, dur_ns=r.dur, pid=r.pid, tid=r.tid,
                      py_id=_ints([a.py_id for a in args]), py_parent=_ints([a.py_parent for a in args]))
        for c, table in ((C_FLOW, "_flows"), (C_FWDBWD, "_fwdbwd")):
            evf, r = pick(c)
            if r is not None:
                ph = np.array([e.ph for e in evf], dtype=object)
                is_s = ph == "s"
                sel = np.flatnonzero(is_s | (ph == "f"))
                ids = _ints([e.id for e in evf])
                self._put(table, len(sel), is_s=is_s[sel].astype(bool), id=ids[sel],
                          ts=r.ts[sel], pid=r.pid[sel], tid=r.tid[sel])
        evm, r = pick(C_MEM)
        if r is not None:
            args = [e.args for e in evm]
            self._put("_mem", len(evm), ts=r.ts, pid=r.pid, tid=r.tid,
                      dev=_ints([a.dev_id for a in args]), nbytes=_ints([a.mbytes for a in args]),
                      addr=_ints([a.addr for a in args]), alloc=_floats([a.total_alloc for a in args]),
                      res=_floats([a.total_res for a in args]))

    def _kernels(self, evk, k) -> None:
        args = [e.args for e in evk]
        names = self._intern([e.name for e in evk])
        self._update_nccl()
        c = k.cls
        kind = np.where(c == C_KERNEL, KIND_COMPUTE, np.where(c == C_MEMCPY, KIND_MEMCPY, KIND_MEMSET))
        kind = kind.astype(np.int8)
        stream = _ints([a.stream for a in args])
        stream = np.where(stream >= 0, stream, k.tid)
        device = _ints([a.device for a in args])
        device = np.where(device >= 0, device, k.pid)
        first = self._put("kernels", len(evk), name=names, task_type=k.cat,
                          kind=kind, stream=stream, device=device, start_ns=k.ts, dur_ns=k.dur,
                          corr=_ints([a.corr for a in args]), bytes=_ints([a.nbytes for a in args]),
                          _pid=k.pid, _tid=k.tid)
        if self.nccl_ids:
            is_nccl = np.isin(names, np.fromiter(self.nccl_ids, np.int32)) & (kind == KIND_COMPUTE)
            rows = np.flatnonzero(is_nccl)
            if len(rows):
                kind[rows] = KIND_COMM
                a = [args[i] for i in rows.tolist()]
                pg = [x.pg if x.pg is not None else x.pg_ranks for x in a]
                nel = _ints([x.nelems for x in a])
                size = np.array([_DTYPE_SIZE.get((x.dtype or "").lower(), -1) for x in a], np.int64)
                nbytes = np.where((nel >= 0) & (size > 0), nel * size, -1)
                op_type = [collective_type(self.sym.string(nm), x.coll) for nm, x in zip(names[rows], a)]
                self._put("comm_ops", len(rows), kernel=rows + first, group=self._intern(pg),
                          op_type=self._intern(op_type), bytes=nbytes)

    def _update_nccl(self) -> None:
        strings = self.sym._strings
        for i in range(self.checked_syms, len(strings)):
            if strings[i][:4].lower() == "nccl":
                self.nccl_ids.add(i)
        self.checked_syms = len(strings)

    def _ops(self, evo, k) -> None:
        args = [e.args for e in evo]
        ext = _ints([a.ext for a in args])
        miss = np.flatnonzero(ext == -1)                  # 2021 traces spell it "external id"
        if len(miss):
            ext[miss] = _ints([args[i].ext2 for i in miss.tolist()])
        rt = np.flatnonzero(k.cls == C_RUNTIME)
        rtcorr = np.full(len(evo), -1, np.int64)
        if len(rt):
            rtcorr[rt] = _ints([args[i].corr for i in rt.tolist()])
        self._put("ops", len(evo), name=self._intern([e.name for e in evo]), cat=k.cat,
                  start_ns=k.ts, dur_ns=k.dur, pid=k.pid, tid=k.tid, corr=ext,
                  seq=_ints([a.seq for a in args]),
                  input_shapes=self._interned_raw([a.dims for a in args], self.dims_memo),
                  input_types=self._interned_raw([a.types for a in args], self.types_memo),
                  call_stack=self._intern([a.stack for a in args]), _rtcorr=rtcorr)

    def columns(self, table: str) -> dict[str, np.ndarray]:
        """The table's concatenated columns (its pieces are dropped)."""
        part = self.parts.pop(table, {})
        return {k: (np.concatenate(v) if len(v) > 1 else v[0]) for k, v in part.items()}


# ----------------------------------------------------------------------------- whole profile

def _group_ids(*keys: np.ndarray) -> np.ndarray:
    """Dense ids of equal key tuples (e.g. (pid, tid))."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort(keys[::-1])
    new = np.zeros(n, bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    g = np.empty(n, np.int64)
    g[order] = np.cumsum(new) - 1
    return g


def _innermost(op_g, op_start, op_end, op_parent, g, t) -> np.ndarray:
    """Row of the innermost op of group ``g`` (a thread) containing time ``t``, or -1."""
    cand = np.full(len(t), -1, np.int64)
    if not len(op_g) or not len(t):
        return cand
    order = np.lexsort((op_start, op_g))
    sg, ss = op_g[order], op_start[order]
    for grp in np.unique(g).tolist():                 # one searchsorted per thread
        q = np.flatnonzero(g == grp)
        lo, hi = np.searchsorted(sg, grp, "left"), np.searchsorted(sg, grp, "right")
        if lo == hi:
            continue
        pos = np.searchsorted(ss[lo:hi], t[q], "right") - 1
        ok = pos >= 0
        cand[q[ok]] = order[lo + pos[ok]]
    for _ in range(1024):                             # climb while the candidate ended before t
        miss = (cand >= 0) & (op_end[np.maximum(cand, 0)] < t)
        if not miss.any():
            break
        cand[miss] = op_parent[cand[miss]]
    return cand


def _build(col: _Collector, outside: dict, path: str) -> Profile:
    sym = col.sym
    meta = ProfileMeta(format="trace-json", framework="PyTorch", path=path, files=[path])
    tables = {}

    # ops: nesting per (pid, tid), steps, backward thread
    o = col.columns("ops")
    n_ops = col.rows.get("ops", 0)
    rtcorr = o.pop("_rtcorr", np.zeros(0, np.int64))
    o_end = o["start_ns"] + o["dur_ns"] if n_ops else np.zeros(0, np.int64)
    parent, depth = (nest(o["start_ns"], o_end, _group_ids(o["pid"], o["tid"])) if n_ops
                     else (np.zeros(0, np.int64), np.zeros(0, np.int16)))

    fb = col.columns("_fwdbwd")
    bwd_tid = None
    if len(fb.get("ts", ())):
        f_rows = np.flatnonzero(~fb["is_s"])
        if len(f_rows):
            bwd_tid = int(fb["tid"][f_rows[0]])
    meta.bwd_tid = bwd_tid
    if n_ops:
        tables["ops"] = make_table("ops", **o, parent=parent, depth=depth,
                                   is_backward=(o["tid"] == bwd_tid) if bwd_tid is not None else None)

    rt_cats = sym.ids_matching(lambda s: _CAT_CLASS.get(s.lower()) == C_RUNTIME)
    is_runtime = np.isin(o["cat"], rt_cats) if n_ops else np.zeros(0, bool)
    step_ids = sym.ids_matching(lambda s: s.startswith("ProfilerStep#") and _STEP_RE.search(s) is not None)
    st_rows = np.flatnonzero(np.isin(o["name"], step_ids) & ~is_runtime) if n_ops and len(step_ids) else []
    if len(st_rows):
        step_no = np.array([int(_STEP_RE.search(sym.string(i)).group(1)) for i in o["name"][st_rows]])
        tables["steps"] = make_table("steps", step=step_no, start_ns=o["start_ns"][st_rows],
                                     end_ns=o_end[st_rows])

    # kernels: links to launching ops, steps, kind
    k = col.columns("kernels")
    n_k = col.rows.get("kernels", 0)
    kpid, ktid = k.pop("_pid", None), k.pop("_tid", None)
    if n_k:
        launch = np.full(n_k, -1, np.int64)
        rt = np.flatnonzero(rtcorr >= 0)
        if len(rt):
            u, first = np.unique(rtcorr[rt], return_index=True)
            pos = np.clip(np.searchsorted(u, k["corr"]), 0, len(u) - 1)
            hit = (k["corr"] >= 0) & (u[pos] == k["corr"])
            launch[hit] = rt[first[pos[hit]]]
        if n_ops and (launch < 0).any() and col.rows.get("_flows"):
            _link_by_flows(col.columns("_flows"), launch, k["start_ns"], kpid, ktid, o, depth,
                           is_runtime, meta)
        linked = launch >= 0
        flow_start = np.where(linked, o["start_ns"][np.maximum(launch, 0)] if n_ops else -1, -1)
        kstep = np.full(n_k, -1, np.int64)
        if "steps" in tables and linked.any():
            stp = tables["steps"]
            ss, se, sn = (stp[c].to_numpy() for c in ("start_ns", "end_ns", "step"))
            so = np.argsort(ss, kind="stable")
            i = np.searchsorted(ss[so], flow_start[linked], "right") - 1
            ok = (i >= 0) & (flow_start[linked] <= se[so][np.maximum(i, 0)])
            kstep[np.flatnonzero(linked)[ok]] = sn[so][i[ok]]
        tables["kernels"] = make_table("kernels", **k, launch_op=launch, flow_start_ns=flow_start,
                                       step=kstep)
        comp = k["kind"] == KIND_COMPUTE
        if comp.any():
            vals, cnt = np.unique(k["stream"][comp], return_counts=True)
            meta.compute_stream = int(vals[np.argmax(cnt)])
        c = col.columns("comm_ops")
        if col.rows.get("comm_ops"):
            kr = c.pop("kernel")
            tables["comm_ops"] = make_table("comm_ops", **c, kernel=kr, name=k["name"][kr],
                                            start_ns=k["start_ns"][kr], dur_ns=k["dur_ns"][kr],
                                            launch_op=launch[kr])
    meta.device = "GPU" if n_k else "CPU"

    # python functions
    p = col.columns("pyfuncs")
    if col.rows.get("pyfuncs"):
        pend = p["start_ns"] + p["dur_ns"]
        pp, pd_ = nest(p["start_ns"], pend, _group_ids(p["pid"], p["tid"]))
        mod_ids = sym.ids_matching(lambda s: s.startswith("nn.Module:"))
        tables["pyfuncs"] = make_table("pyfuncs", **p, parent=pp, depth=pd_,
                                       is_module=np.isin(p["name"], mod_ids))

    # fwd -> bwd flow pairs
    if col.rows.get("_fwdbwd"):
        tables["fwdbwd"] = _pair_fwdbwd(fb)

    # memory
    if col.rows.get("_mem"):
        _memory(col.columns("_mem"), tables, o, o_end, parent)

    _fill_meta(meta, outside, col)
    return Profile(symbols=sym, meta=meta, tables=tables)


def _pair_fwdbwd(fb: dict) -> pd.DataFrame:
    df = pd.DataFrame({"id": fb["id"], "s": fb["is_s"], "ts": fb["ts"], "pid": fb["pid"],
                       "tid": fb["tid"]})
    df["row"] = np.arange(len(df))
    s = df[df["s"] & (df["id"] != -1)].drop_duplicates("id")
    f = df[~df["s"] & (df["id"] != -1)].drop_duplicates("id")
    m = s.merge(f, on="id", suffixes=("_s", "_f")).sort_values("row_s")
    return make_table("fwdbwd", start_ns=m["ts_s"].to_numpy(), start_pid=m["pid_s"].to_numpy(),
                      start_tid=m["tid_s"].to_numpy(), end_ns=m["ts_f"].to_numpy(),
                      end_pid=m["pid_f"].to_numpy(), end_tid=m["tid_f"].to_numpy())


def _link_by_flows(fl, launch, k_start, kpid, ktid, o, depth, is_runtime, meta) -> None:
    """Fallback link for kernels without a correlation match: s end on the op, f end on the kernel."""
    df = pd.DataFrame({"id": fl["id"], "s": fl["is_s"], "ts": fl["ts"], "pid": fl["pid"], "tid": fl["tid"]})
    df = df[df["id"] != -1]
    s = df[df["s"]].drop_duplicates("id")
    f = df[~df["s"]]
    pairs = s.merge(f, on="id", suffixes=("_s", "_f"))
    todo = np.flatnonzero(launch < 0)
    kd = pd.DataFrame({"krow": todo, "pid_f": kpid[todo], "tid_f": ktid[todo], "ts_f": k_start[todo]})
    kd = kd.merge(pairs, on=["pid_f", "tid_f", "ts_f"]).drop_duplicates("krow")
    if not len(kd) or not len(o.get("start_ns", ())):
        return
    # several ops can start at the flow's ts: prefer the outermost runtime call, else the deepest op
    rank = np.where(is_runtime, depth.astype(np.int64), (1 << 20) - depth.astype(np.int64))
    od = pd.DataFrame({"orow": np.arange(len(o["start_ns"])), "pid_s": o["pid"], "tid_s": o["tid"],
                       "ts_s": o["start_ns"], "rank": rank})
    od = od.sort_values(["rank", "orow"]).drop_duplicates(["pid_s", "tid_s", "ts_s"])
    kd = kd.merge(od, on=["pid_s", "tid_s", "ts_s"])
    launch[kd["krow"].to_numpy()] = kd["orow"].to_numpy()
    if len(kd):
        meta.warnings.append(f"{len(kd):,} kernels had no correlation id match and were linked to their "
                             "launching op through flow events")


def _memory(m, tables, o, o_end, parent) -> None:
    """[memory] events (Device Id >= 0): one mem_records row each; alloc/free pairs per address."""
    keep = np.flatnonzero(m["dev"] >= 0)
    ts, dev, nb, addr = m["ts"][keep], m["dev"][keep], m["nbytes"][keep], m["addr"][keep]
    tables["mem_records"] = make_table("mem_records", ts_ns=ts, device=dev, allocated_bytes=m["alloc"][keep],
                                       reserved_bytes=m["res"][keep])
    ev = np.flatnonzero(nb != 0)
    if not len(ev):
        return
    order = ev[np.lexsort((ev, ts[ev], addr[ev], dev[ev]))]
    nxt = np.full(len(order), -1, np.int64)
    same = (dev[order][1:] == dev[order][:-1]) & (addr[order][1:] == addr[order][:-1])
    nxt[:-1] = np.where(same, order[1:], -1)
    is_alloc = nb[order] > 0
    a_rows, a_next = order[is_alloc], nxt[is_alloc]
    has_next = a_next >= 0
    nxt_b = np.where(has_next, nb[np.maximum(a_next, 0)], 0)
    freed = has_next & (nxt_b < 0) & (-nxt_b == nb[a_rows])
    dropped = has_next & (nxt_b < 0) & ~freed
    a_rows, a_next, freed = a_rows[~dropped], a_next[~dropped], freed[~dropped]
    srt = np.argsort(a_rows, kind="stable")
    a_rows, a_next, freed = a_rows[srt], a_next[srt], freed[srt]
    release = np.where(freed, ts[np.maximum(a_next, 0)], -1)
    op = np.full(len(a_rows), -1, np.int64)
    n_ops = len(o.get("start_ns", ()))
    if n_ops and len(a_rows):
        # map the memory events' (pid, tid) into the ops' group ids
        g_all = _group_ids(np.concatenate([o["pid"], m["pid"][keep][a_rows]]),
                           np.concatenate([o["tid"], m["tid"][keep][a_rows]]))
        op = _innermost(g_all[:n_ops], o["start_ns"], o_end, parent, g_all[n_ops:], ts[a_rows])
    name = np.where(op >= 0, o["name"][np.maximum(op, 0)] if n_ops else 0, 0)
    tables["mem_allocs"] = make_table("mem_allocs", name=name, bytes=nb[a_rows], alloc_ns=ts[a_rows],
                                      release_ns=release, op=op, device=dev[a_rows])


def _fill_meta(meta: ProfileMeta, outside: dict, col: Optional[_Collector] = None) -> None:
    di = outside.get("distributedInfo")
    if isinstance(di, dict):
        r = di.get("rank")
        if isinstance(r, int) or (isinstance(r, str) and r.isdigit()):
            meta.rank = int(r)
        for pg in di.get("pg_config") or []:
            if isinstance(pg, dict) and "pg_name" in pg:
                meta.pg_names[str(pg["pg_name"])] = str(pg.get("pg_desc", pg["pg_name"]))
    dp = outside.get("deviceProperties")
    if isinstance(dp, list) and dp and isinstance(dp[0], dict) and dp[0].get("name"):
        meta.device_name = str(dp[0]["name"])
    if col is None:
        return
    w = meta.warnings
    if col.n_bad_ts:
        w.append(f"{col.n_bad_ts:,} events skipped: missing or unreadable ts")
    if col.n_skipped:
        w.append(f"{col.n_skipped:,} events skipped: not a JSON object or fields of the wrong type")
    if col.n_fixed:
        w.append(f"{col.n_fixed:,} events had fields of an unexpected type; those fields were ignored")


# ----------------------------------------------------------------------------- API

def load(path: str, progress=None, chunk_bytes: int = jsonstream.DEFAULT_CHUNK) -> Profile:
    """Parse a Kineto trace (plain or gzip JSON) into a Profile.  Raises LoadError on bad input."""
    path = str(path)
    col = _Collector(path)
    res = jsonstream.StreamResult()
    last = [-1.0]

    def prog(f: float) -> None:                 # reading is 90% of the work; at most ~100 calls
        if progress is not None and (f - last[0] >= 0.01 or f >= 1.0):
            last[0] = f
            progress(0.9 * f)

    was_enabled = gc.isenabled()
    gc.disable()                                # millions of short-lived objects, no cycles
    try:
        for _ in jsonstream.iter_event_chunks(path, col, chunk_bytes=chunk_bytes, progress=prog, result=res):
            pass
        if "traceEvents" in res.outside:        # a later duplicate key: which array is the trace?
            raise LoadError(path, 'the JSON object holds two "traceEvents" arrays; cannot tell which one is '
                                  "the trace")
        prof = _build(col, res.outside, path)
    except MemoryError:
        raise LoadError(path, "not enough memory to load this trace") from None
    finally:
        col.close()
        if was_enabled:
            gc.enable()
    if col.n_events == 0:
        prof.meta.warnings.append("the trace has no events")
    if progress is not None:
        progress(1.0)
    return prof


_KERNEL_HINT = re.compile(rb'"cat"\s*:\s*"(?:kernel|Kernel|gpu_memcpy|gpu_memset|Memcpy|Memset|'
                          rb'cuda_runtime|Runtime|ac2g)"')
_RANK_HINT = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+)')
_DEVNAME_HINT = re.compile(rb'"deviceProperties"\s*:\s*\[\s*\{[^{}]*?"name"\s*:\s*"((?:[^"\\]|\\.)*)"')


def peek(path: str) -> dict:
    """Cheap classification for discovery: reads at most ~256 KB (decompressed) of the file.

    Returns ``{"is_trace", "rank", "device_hint", "device_name", "error"}``.  ``device_hint`` is
    "GPU" when device activity or GPU properties are seen, "CPU" when ``deviceProperties`` is an
    empty list and no device activity is seen, else None; only :func:`load` knows for sure.
    """
    out = {"is_trace": False, "rank": None, "device_hint": None, "device_name": None, "error": None}
    try:
        mode, head, body, tail = jsonstream.read_head(str(path))
    except LoadError as e:
        out["error"] = e.problem
        return out
    if mode == "unknown":
        out["error"] = "no traceEvents array within the first 256 KB"
        return out
    out["is_trace"] = True
    meta = ProfileMeta()
    _fill_meta(meta, head)
    out["rank"], out["device_name"] = meta.rank, meta.device_name
    for text in (body, tail):
        if out["rank"] is None and (m := _RANK_HINT.search(text)):
            out["rank"] = int(m.group(1))
        if out["device_name"] is None and (m := _DEVNAME_HINT.search(text)):
            out["device_name"] = json.loads(b'"' + m.group(1) + b'"')
    dp = head.get("deviceProperties")
    if _KERNEL_HINT.search(body) or (isinstance(dp, list) and dp) or out["device_name"]:
        out["device_hint"] = "GPU"
    elif isinstance(dp, list):
        out["device_hint"] = "CPU"
    return out
