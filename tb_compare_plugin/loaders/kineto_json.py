"""PyTorch Profiler (Kineto) trace loader: ``*.pt.trace.json[.gz]`` -> :class:`Profile`.

Owns the per-chunk conversion of decoded events into column arrays, ``load`` and the cheap
``peek`` used by discovery.  The event schema and value conversions live in
:mod:`.kineto_values`, the vectorised post-processing (nesting, op->kernel links, steps, NCCL
collectives, memory pairing) in :mod:`.kineto_build`.  The file is read chunk by chunk by
:mod:`.jsonstream`, so memory stays bounded by the tables, not by the JSON.

Conventions specific to this format:

* ``ts``/``dur`` are µs (int, fractional or string); they become exact int64 ns.  A float µs value
  identifies its ns only below 2^43 µs (~100 days); from the first chunk holding a larger float
  (e.g. fractional epoch µs) on, chunks are decoded with ``ts`` kept as text (``EvExact``).
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

import json
import logging
import os
import re
from operator import itemgetter

import msgspec
import numpy as np

from ..model.profile import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET, Profile, ProfileMeta
from ..model.symbols import SymbolTable
from ..gcpause import gc_paused
from . import jsonstream, kineto_plan, kineto_scan
from .errors import LoadError
from .kineto_build import build_profile, fill_meta
from ..timing import mark
from .kineto_values import (C_FLOW, C_FWDBWD, C_KERNEL, C_MEM, C_MEMCPY, C_MEMSET, C_OP, C_OTHER, C_PYF,
                            C_RUNTIME, CAT_CLASS, DEC, DEC_EXACT, DEC_RAWS, DTYPE_SIZE, Ev, EvExact, canon_dims,
                            canon_types, collective_type, floats, id_norm, IdTally, ints, one_float, times_ns)

__all__ = ["load", "peek", "collective_type"]
log = logging.getLogger(__name__)


class _Memo(dict):
    """dict that computes and stores missing values: ``map(memo.__getitem__, xs)`` runs in C."""
    __slots__ = ("make",)

    def __init__(self, make) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key):
        v = self[key] = self.make(key)
        return v


_CLASS_LABEL = {C_KERNEL: "GPU kernel/memcpy/memset", C_OP: "CPU op/runtime", C_PYF: "python_function"}
_DIMS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
FLOW_END = _Memo(lambda ph: 0)          # ph -> 1 for a flow start ("s"), 2 for its end ("f"), else 0
FLOW_END.update(s=1, f=2)


class _Rows:
    """Per-chunk columns of the kept events (class, ts, cat symbol, dur, pid, tid)."""
    __slots__ = ("cls", "ts", "cat", "dur", "pid", "tid")

    def __init__(self, cls, ts, cat) -> None:
        self.cls, self.ts, self.cat = cls, ts, cat


class _Collector:
    """Turns decoded chunks into column pieces; keeps the memos that make that cheap."""

    def __init__(self, path: str, fast: bool | None = None, born=None) -> None:
        self.path = path
        self.born = born                          # a borncols.BornColumns: the model's columns go to files
        self.growing: dict = {}                   # (table, column) -> its borncols.Growing file
        # the byte scanner (kineto_plan / kineto_fast) when asked for and numba is there; the general decoder for the
        # chunks it refuses
        if fast is None:
            try:
                fast = kineto_scan.wanted(os.path.getsize(path), path)
            except OSError:                       # the read below names the problem
                fast = False
        want = fast
        self.fast = want and kineto_scan.available()
        self.fast_missing = kineto_scan.unavailable_reason() if want and not self.fast else None
        self.n_fast = 0
        self.bytes_seen = 0                       # of the events array, in the chunks met so far
        try:                                      # ... and of the whole file (None: not known, gzip)
            self.bytes_total = None if path.endswith(".gz") else os.path.getsize(path)
        except OSError:
            self.bytes_total = None
        self.fast_state = None                    # kineto_plan's value table (the whole load's texts)
        self.fallbacks: dict[str, int] = {}       # reason -> chunks the general decoder parsed
        self.fallback_bytes = 0                   # ... and their bytes
        self.sym = SymbolTable()
        self.cat_memo: dict = {}          # raw cat -> index into cat_cls / cat_sym
        self.cat_cls: list[int] = []
        self.cat_sym: list[int] = []
        strings: dict = {}
        self.id_memo = _Memo(lambda v: id_norm(v, strings))
        self.str_memo = _Memo(lambda v: self.sym.intern(v if isinstance(v, str) else
                                                        ("" if v is None else str(v))))
        self.dims_memo = _Memo(lambda b: self.sym.intern(canon_dims(b)))
        self.types_memo = _Memo(lambda b: self.sym.intern(canon_types(b)))
        self.nccl_ids: set[int] = set()
        self.checked_syms = 1
        self.parts: dict[str, dict[str, np.ndarray]] = {}   # table -> column -> buffer (rows[table] used)
        self.rows: dict[str, int] = {}
        self.n_events = 0
        self.n_bad_ts = 0
        self.n_skipped = 0
        self.n_fixed = 0
        self.n_exact_chunks = 0
        self.ids = IdTally()
        self.bad_dur: dict[str, int] = {}       # event class label -> events whose dur became 0
        self.n_no_stream = 0                    # kernels whose stream / device came from tid / pid
        self.n_no_device = 0
        self.n_device_seen = 0                  # device events (kernel/memcpy/memset) in the file
        self.bad_args: dict[str, int] = {}      # kernel arg name -> values that are not numbers
        self.neg_args: dict[str, int] = {}      # kernel arg name -> negative values (read as unknown)
        self.dims_memo2 = _Memo(None)            # (grid text, block text) -> code, in first-seen order
        self.dims_memo2.make = lambda key, memo=self.dims_memo2: len(memo)
        self.dims_table = np.zeros((0, 6), np.int64)  # per code: grid x, y, z, block x, y, z
        self.dims_bad: dict[int, tuple] = {}     # code -> the labels ("grid", "block") that are unreadable

    def close(self) -> None:
        """Drop the memos (their lambdas refer back to self) and any unused pieces."""
        self.id_memo = self.str_memo = self.dims_memo = self.types_memo = self.dims_memo2 = None
        self.fast_state = None
        self.parts = {}
        for g in self.growing.values():
            g.close()
        self.growing = {}

    # -- decoding -------------------------------------------------------------------------
    def __call__(self, view: memoryview) -> None:
        self.bytes_seen += len(view)
        why = None
        if self.fast:
            why = kineto_plan.take_chunk(self, view)
            if why is None:
                self.n_fast += 1
                return
        inexact = True
        if not self.n_exact_chunks:               # once a chunk needed it, stay on the exact path
            evs = self._decode(view, DEC)
            ts, inexact = times_ns([e.ts for e in evs])
        if inexact:
            self.n_exact_chunks += 1
            evs = self._decode(view, DEC_EXACT)
            ts, _ = times_ns([e.ts for e in evs], exact=True)
        self._extract(evs, ts)
        if why is not None:                       # counted once the chunk is known to be a good one
            self.fallbacks[why] = self.fallbacks.get(why, 0) + 1
            self.fallback_bytes += len(view)

    def _decode(self, view, dec) -> list:
        try:
            return dec.decode(view)
        except msgspec.ValidationError:
            pass
        # slow path: event by event, repairing or skipping the ones that do not fit the schema
        out = []
        exact = dec is DEC_EXACT
        one = msgspec.json.Decoder(EvExact if exact else Ev, float_hook=str if exact else None)
        for raw in DEC_RAWS.decode(view):
            text = bytes(raw)
            try:
                out.append(one.decode(text))
                continue
            except msgspec.ValidationError as e:
                err = str(e)                      # keep no traceback: gc is off, cycles would pin the buffer
            ev = self._repair(text, one, err)
            if ev is None:
                self.n_skipped += 1
                if _DEVICE_CAT.search(text):
                    self.n_device_seen += 1
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
        """Copy a piece of each column (``n`` rows) to the end of the table's column buffers;
        returns the first global row of this piece.  The buffers are made with room for the
        whole file (:meth:`_room`), so the pieces are copied once and never concatenated, and a
        piece may be a view of a scratch buffer its maker reuses.  A piece of a wider dtype than
        its column so far widens the column (as ``np.concatenate`` of the pieces would).  With
        ``born``, a model column is written to its file instead (:mod:`..borncols`), until a
        wider piece sends it back to a buffer."""
        first = self.rows.get(table, 0)
        end = self.rows[table] = first + n
        part = self.parts.setdefault(table, {})
        cap = None
        for k, v in cols.items():
            buf = part.get(k)
            if buf is None and self.born is not None:
                if self._grown(table, k, v, first):
                    continue
                buf = part.get(k)
            dt = v.dtype if buf is None or v.dtype == buf.dtype else np.result_type(buf.dtype, v.dtype)
            if buf is None or end > len(buf) or dt != buf.dtype:
                if cap is None:
                    cap = self._room(end)
                new = np.empty(cap if buf is None else max(cap, len(buf)), dt)
                if first:
                    new[:first] = buf[:first]
                buf = part[k] = new
            buf[first:end] = v
        return first

    def _grown(self, table: str, k: str, v: np.ndarray, first: int) -> bool:
        """Whether the piece went to its column's file (``born``).  A wider piece sends that
        column back to a buffer, a file that cannot be written (the folder full) every column,
        for the rest of the load; the caller then fills the buffer."""
        key = (table, k)
        g = self.growing.get(key)
        try:
            if g is None:
                if first or not self.born.wants(table, k, v.dtype):
                    return False
                g = self.growing[key] = self.born.grow(table, k, v.dtype)
            dt = np.result_type(g.dtype, v.dtype)
            if dt == g.dtype:
                g.add(first, v)
                return True
            self._to_memory([key], dt)
        except OSError:
            self._to_memory(list(self.growing))
            self.born = None
        return False

    def _to_memory(self, keys: list, dtype=None) -> None:
        """The born columns ``keys`` back in buffers (of ``dtype``, else their own), rows so far."""
        for key in keys:
            g = self.growing.pop(key)
            self.parts.setdefault(key[0], {})[key[1]] = g.to_memory(self._room(self.rows.get(key[0], 0)),
                                                                    dtype or g.dtype)

    def _room(self, end: int) -> int:
        """Rows to make room for in a table that needs ``end``: its rows so far scaled to the
        whole file, with a tenth more (the unused end of a buffer is never touched, and is cut
        off by :meth:`columns`); twice as many when the file's size is not known."""
        if self.bytes_total and self.bytes_seen:
            est = int(end * (self.bytes_total / self.bytes_seen) * 1.1) + 1024
        else:
            est = 2 * end + 1024
        return max(est, end + end // 2)

    def _ids(self, raw: list) -> np.ndarray:
        try:
            return np.fromiter(raw, np.int64, len(raw))       # ints and digit strings
        except (TypeError, ValueError, OverflowError):
            self.ids.wide += sum(1 for v in raw if type(v) is int and not -2 ** 63 <= v < 2 ** 64)
            return np.fromiter(map(self.id_memo.__getitem__, raw), np.int64, len(raw))

    def _ints(self, vals: list) -> np.ndarray:
        return ints(vals, self.ids)

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
            self.cat_cls.append(CAT_CLASS.get(c.lower(), C_OTHER) if isinstance(c, str) else C_OTHER)
            self.cat_sym.append(self.sym.intern(c) if isinstance(c, str) else 0)
        code = np.fromiter(map(memo.__getitem__, cats), np.int32, n)
        cls = np.array(self.cat_cls, np.int8)[code]
        other = np.flatnonzero(cls == C_OTHER)
        if len(other):
            is_mem = np.fromiter((evs[i].name == "[memory]" for i in other.tolist()), bool, len(other))
            cls[other[is_mem]] = C_MEM
        self.n_device_seen += int(((cls == C_KERNEL) | (cls == C_MEMCPY) | (cls == C_MEMSET)).sum())
        bad = (ts == -1) & (cls != C_OTHER)
        if bad.any():
            self.n_bad_ts += int(bad.sum())
            cls[bad] = C_OTHER
        if not (cls != C_OTHER).any():
            return
        catsym = np.array(self.cat_sym, np.int32)[code]

        def pick(*codes, dur=True):
            """(their events, their columns) for the event classes ``codes`` (None: no such event)."""
            idx = np.flatnonzero(np.isin(cls, codes))
            if not len(idx):
                return [], None
            sub = [evs[i] for i in idx.tolist()]
            r = _Rows(cls[idx], ts[idx], catsym[idx])
            if dur:
                r.dur, _ = times_ns([e.dur for e in sub])
                neg = r.dur < 0
                if neg.any():
                    r.dur[neg] = 0
                    # an instant event ("ph": "i") has no dur by nature; any other one should
                    n = sum(1 for i in np.flatnonzero(neg).tolist() if sub[i].dur is not None or sub[i].ph == "X")
                    if n:
                        label = _CLASS_LABEL[int(codes[0])]
                        self.bad_dur[label] = self.bad_dur.get(label, 0) + n
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
                      py_id=self._ints([a.py_id for a in args]), py_parent=self._ints([a.py_parent for a in args]))
        for c, table in ((C_FLOW, "_flows"), (C_FWDBWD, "_fwdbwd")):
            evf, r = pick(c, dur=False)
            if r is not None:
                ph = np.fromiter(map(FLOW_END.__getitem__, [e.ph for e in evf]), np.int8, len(evf))
                is_s = ph == 1
                sel = np.flatnonzero(ph > 0)
                ids = self._ints([e.id for e in evf])
                self._put(table, len(sel), is_s=is_s[sel].astype(bool), id=ids[sel],
                          ts=r.ts[sel], pid=r.pid[sel], tid=r.tid[sel])
        evm, r = pick(C_MEM, dur=False)
        if r is not None:
            args = [e.args for e in evm]
            self._put("_mem", len(evm), ts=r.ts, pid=r.pid, tid=r.tid,
                      dev=self._ints([a.dev_id for a in args]), nbytes=self._ints([a.mbytes for a in args]),
                      addr=self._ints([a.addr for a in args]), alloc=floats([a.total_alloc for a in args], self.ids),
                      res=floats([a.total_res for a in args], self.ids))

    def _kernels(self, evk, k) -> None:
        args = [e.args for e in evk]
        names = self._intern([e.name for e in evk])
        self._update_nccl()
        c = k.cls
        kind = np.where(c == C_KERNEL, KIND_COMPUTE, np.where(c == C_MEMCPY, KIND_MEMCPY, KIND_MEMSET))
        kind = kind.astype(np.int8)
        stream = self._ints([a.stream for a in args])
        self.n_no_stream += int((stream < 0).sum())
        stream = np.where(stream >= 0, stream, k.tid)
        device = self._ints([a.device for a in args])
        self.n_no_device += int((device < 0).sum())
        device = np.where(device >= 0, device, k.pid)
        rows = None
        if self.nccl_ids:               # (kind is final before _put copies it)
            rows = np.flatnonzero(np.isin(names, np.fromiter(self.nccl_ids, np.int32)) & (kind == KIND_COMPUTE))
            kind[rows] = KIND_COMM
        first = self._put("kernels", len(evk), name=names, task_type=k.cat,
                          kind=kind, stream=stream, device=device, start_ns=k.ts, dur_ns=k.dur,
                          corr=self._ints([a.corr for a in args]), bytes=self._ints([a.nbytes for a in args]),
                          _pid=k.pid, _tid=k.tid, **self._geometry(args, c == C_KERNEL))
        if rows is not None:
            if len(rows):
                a = [args[i] for i in rows.tolist()]
                pg = [x.pg if x.pg is not None else x.pg_ranks for x in a]
                nel = self._ints([x.nelems for x in a])
                size = np.array([DTYPE_SIZE.get((x.dtype or "").lower(), -1) for x in a], np.int64)
                nbytes = np.where((nel >= 0) & (size > 0), nel * size, -1)
                op_type = [collective_type(self.sym.string(nm), x.coll) for nm, x in zip(names[rows], a)]
                self._put("comm_ops", len(rows), kernel=rows + first, group=self._intern(pg),
                          op_type=self._intern(op_type), bytes=nbytes)

    def _geometry(self, args: list, is_kernel: np.ndarray) -> dict:
        """Launch geometry and CUPTI's estimates of the kernel events (-1 / NaN elsewhere and
        where absent).  Grid and block stay JSON text until here and are read once per distinct
        (grid, block) pair (a few hundred per trace, ``_dims_rows``); the four numbers go
        through ``np.fromiter``, value by value only when one is not a plain number."""
        n = len(args)
        rows = np.flatnonzero(is_kernel)
        out = {c: np.full(n, -1, np.int64) for c in _DIMS + ("registers", "shared_mem")}
        out["blocks_per_sm"] = np.full(n, np.nan)
        out["occupancy_pct"] = np.full(n, np.nan)
        m = len(rows)
        if not m:
            return out
        sub = args if m == n else (itemgetter(*rows.tolist())(args) if m > 1 else [args[int(rows[0])]])
        codes = np.fromiter(map(self.dims_memo2.__getitem__, zip(map(bytes, [a.grid for a in sub]),
                                                                map(bytes, [a.block for a in sub]))), np.int64, m)
        self.fill_geometry(out, rows, codes, [a.regs for a in sub], [a.shmem for a in sub],
                           [a.bps for a in sub], [a.occ for a in sub])
        return out

    def fill_geometry(self, out: dict, rows: np.ndarray, codes: np.ndarray, regs, shmem, bps, occ) -> None:
        """Fill ``out``'s geometry columns at ``rows``: grid/block from the distinct (grid, block)
        codes of ``dims_memo2`` (counting the unreadable ones in ``bad_args``), the four numbers
        from their values.  Shared by this decoder and the fast path (``kineto_fast``)."""
        if len(self.dims_table) < len(self.dims_memo2):
            self._dims_rows(self.dims_memo2)
        dims = self.dims_table[codes]
        if self.dims_bad:
            bad = np.fromiter(self.dims_bad, np.int64, len(self.dims_bad))
            hit = np.isin(codes, bad)
            if hit.any():
                for code, cnt in zip(*np.unique(codes[hit], return_counts=True)):
                    for label in self.dims_bad[int(code)]:
                        self.bad_args[label] = self.bad_args.get(label, 0) + int(cnt)
        for c, name in enumerate(_DIMS):
            out[name][rows] = dims[:, c]
        out["registers"][rows] = self._arg_num(regs, np.int64, "registers per thread")
        out["shared_mem"][rows] = self._arg_num(shmem, np.int64, "shared memory")
        out["blocks_per_sm"][rows] = self._arg_num(bps, np.float64, "blocks per SM")
        out["occupancy_pct"][rows] = self._arg_num(occ, np.float64, "est. achieved occupancy %")

    def _dims_rows(self, memo: dict) -> None:
        """Read the (grid, block) texts not read yet: each must be three non-negative integers,
        else it is unknown, counted once per kernel event carrying it (``dims_bad``)."""
        done = len(self.dims_table)
        keys = list(memo)[done:]
        table = np.full((len(keys), 6), -1, np.int64)
        for r, (grid, block) in enumerate(keys):
            for off, text, label in ((0, grid, "grid"), (3, block, "block")):
                if not text:
                    continue
                try:
                    v = json.loads(text)
                except ValueError:
                    v = None
                if isinstance(v, list) and len(v) == 3 and all(type(d) is int and 0 <= d < 2 ** 63 for d in v):
                    table[r, off:off + 3] = v
                elif v is not None:
                    self.dims_bad[done + r] = self.dims_bad.get(done + r, ()) + (label,)
        self.dims_table = np.concatenate([self.dims_table, table])

    def _arg_num(self, vals: list, dtype, label: str) -> np.ndarray:
        """A numeric kernel arg; values that are not numbers, and negative ones, become missing
        (-1 / NaN) and are counted for the profile's warnings."""
        try:
            a = vals.astype(dtype) if isinstance(vals, np.ndarray) else np.fromiter(vals, dtype, len(vals))
        except (TypeError, ValueError, OverflowError):
            f = np.fromiter(map(one_float, vals), np.float64, len(vals))
            given = np.fromiter((v is not None and v == v for v in vals), bool, len(vals))   # not NaN
            self.bad_args[label] = self.bad_args.get(label, 0) + int((given & ~np.isfinite(f)).sum())
            if dtype is np.int64:
                ok = np.isfinite(f) & (np.abs(f) < 2.0 ** 63)
                a = np.where(ok, f, -1).astype(np.int64)
            else:
                a = f
        neg = (a < -1) if dtype is np.int64 else (a < 0)
        if neg.any():
            a[neg] = -1 if dtype is np.int64 else np.nan
            self.neg_args[label] = self.neg_args.get(label, 0) + int(neg.sum())
        return a

    def _update_nccl(self) -> None:
        strings = self.sym._strings
        for i in range(self.checked_syms, len(strings)):
            if strings[i][:4].lower() == "nccl":
                self.nccl_ids.add(i)
        self.checked_syms = len(strings)

    def _ops(self, evo, k) -> None:
        args = [e.args for e in evo]
        ext = self._ints([a.ext for a in args])
        miss = np.flatnonzero(ext == -1)                  # 2021 traces spell it "external id"
        if len(miss):
            ext[miss] = self._ints([args[i].ext2 for i in miss.tolist()])
        rt = np.flatnonzero(k.cls == C_RUNTIME)
        rtcorr = np.full(len(evo), -1, np.int64)
        if len(rt):
            rtcorr[rt] = self._ints([args[i].corr for i in rt.tolist()])
        self._put("ops", len(evo), name=self._intern([e.name for e in evo]), cat=k.cat,
                  start_ns=k.ts, dur_ns=k.dur, pid=k.pid, tid=k.tid, corr=ext,
                  seq=self._ints([a.seq for a in args]),
                  input_shapes=self._interned_raw([a.dims for a in args], self.dims_memo),
                  input_types=self._interned_raw([a.types for a in args], self.types_memo),
                  call_stack=self._intern([a.stack for a in args]), _rtcorr=rtcorr)

    def columns(self, table: str) -> dict[str, np.ndarray]:
        """The table's concatenated columns (its pieces are dropped)."""
        part = self.parts.pop(table, {})
        n = self.rows.get(table, 0)
        for buf in part.values():
            if len(buf) != n:
                buf.resize(n, refcheck=False)       # in place (realloc): the unused room back
        for key in [key for key in self.growing if key[0] == table]:
            part[key[1]] = self.born.finish(self.growing.pop(key), n)     # its file, mapped read-only
        return part


# ----------------------------------------------------------------------------- whole profile


FAST_CHUNK = 16 << 20       # the scanner's chunks: its per-chunk numpy work is amortised over ~50k events


def load(path: str, progress=None, chunk_bytes: int | None = None, fast: bool | None = None,
         born=None) -> Profile:
    """Parse a Kineto trace (plain or gzip JSON) into a Profile.  Raises LoadError on bad input.

    ``fast``: use the byte scanner (:mod:`.kineto_fast`) for the chunks it accepts (default: yes
    unless ``TB_COMPARE_FAST_KINETO=0``; it needs numba); False parses every chunk with the general
    decoder.  The chunks the scanner refuses are parsed by the general decoder, and so is every chunk
    when numba cannot run; the profile's warnings then say so (the tables are the same).
    ``chunk_bytes``: the size of the pieces the events array is parsed in (default 16 MB with the
    scanner, 1 MB without).  ``born``: a :class:`..borncols.BornColumns` (the parser process's
    hand-off) the model's columns are written into as they are parsed, not copied to buffers."""
    path = str(path)
    col = _Collector(path, fast, born)
    if chunk_bytes is None:
        chunk_bytes = FAST_CHUNK if col.fast else jsonstream.DEFAULT_CHUNK
    res = jsonstream.StreamResult()
    last = [-1.0]

    def prog(f: float) -> None:                 # reading is 90% of the work; at most ~100 calls
        if progress is not None and (f - last[0] >= 0.01 or f >= 1.0):
            last[0] = f
            progress(0.9 * f)

    try:
        with gc_paused():                       # millions of short-lived objects, no cycles
            for _ in jsonstream.iter_event_chunks(path, col, chunk_bytes=chunk_bytes, progress=prog,
                                                  result=res):
                pass
            mark("kineto: events read")
            kineto_scan.release()               # the scanner's reused tables (~50 MB) before the build
            col.fast_state = None               # ... and the quick plan's value table and output (~100 MB)
            if "traceEvents" in res.outside:    # a later duplicate key: which array is the trace?
                raise LoadError(path, 'the JSON object holds two "traceEvents" arrays; cannot tell which '
                                      "one is the trace")
            prof = build_profile(col, res.outside, path)
            mark("kineto: profile built")
    except MemoryError:
        raise LoadError(path, "not enough memory to load this trace") from None
    finally:
        col.close()
        kineto_scan.release()
    if col.n_events == 0:
        raise LoadError(path, "the trace has no events (its traceEvents array is empty)")
    if col.n_device_seen and not col.rows.get("kernels"):
        why = "; ".join(prof.meta.warnings) or "none could be read"
        raise LoadError(path, f"the trace holds {col.n_device_seen:,} device events (kernel, memcpy, memset) "
                              f"but none could be loaded ({why})")
    if progress is not None:
        progress(1.0)
    return prof


_DEVICE_CAT = re.compile(rb'"cat"\s*:\s*"(?:[Kk]ernel|gpu_memcpy|gpu_memset|[Mm]emcpy|[Mm]emset)"')
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
    fill_meta(meta, head)
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
