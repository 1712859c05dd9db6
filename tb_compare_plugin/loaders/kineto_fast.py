"""Fast Kineto chunk -> column pieces, from :mod:`.kineto_scan`'s field columns (no object per event).

:func:`careful` mirrors ``_Collector._extract`` of :mod:`.kineto_json` step by step: the same
event classes, the same column pieces, the same counters, and the same order of first sight when
it interns strings (each distinct string of a field is decoded once, in the order the general path
would meet it), so the profile is identical to the general decoder's.

It accepts a chunk only when every value the loader reads is of the kind it handles here (ints,
floats whose exact ns / double it could derive, strings, absent values); otherwise it changes
nothing and returns the reason, and the caller decodes the chunk with the general decoder.  All
decisions are taken before anything is interned or stored.

Most chunks do not get that far: :func:`.kineto_plan.take_chunk` first offers each one to the quick plan
(:mod:`.kineto_plan`: one numba pass, one value table for the whole load), which gives the same
pieces; whatever it meets that needs judging (a value not read plainly, a string that does not
decode, a hash collision) it leaves to ``_plan`` / ``_commit`` here (the careful path), which take
the chunk or name the reason it is refused.
"""
from __future__ import annotations

import re

import msgspec
import numpy as np

from ..model.profile import KIND_COMM, KIND_COMPUTE, KIND_MEMCPY, KIND_MEMSET
from . import kineto_scan as ks
from .kineto_scan import K_ABSENT, K_FLOAT, K_INT, K_NULL, K_STR, NO_NS, NUM, SPAN
from .kineto_values import (C_FLOW, C_FWDBWD, C_KERNEL, C_MEM, C_MEMCPY, C_MEMSET, C_OP, C_OTHER, C_PYF,
                            C_RUNTIME, CAT_CLASS, DTYPE_SIZE, collective_type)

_TRAILING_DIGITS = re.compile(r"(\d+)$")         # as kineto_values.id_norm reads a text id
_NAMED_NUMBER = re.compile(r"[A-Za-z ]*\d+")
_DIMS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
_CLASS_LABEL = {C_KERNEL: "GPU kernel/memcpy/memset", C_OP: "CPU op/runtime", C_PYF: "python_function"}


class Refuse(Exception):
    """This chunk holds something the fast path does not handle (the message says what)."""


class _Chunk:
    def __init__(self, buf, n, kn, iv, fv, kS, ss, se, sh, sg) -> None:
        self.buf, self.n = buf, n
        self.kn, self.iv, self.fv = kn[:n].T, iv[:n].T, fv[:n].T
        self.kS, self.ss, self.se, self.sh, self.sg = kS[:n].T, ss[:n].T, se[:n].T, sh[:n].T, sg[:n].T

    # -- numbers ---------------------------------------------------------------------------
    def ints(self, key: str, rows: np.ndarray, default: int) -> np.ndarray:
        """Integers (``default`` where absent, -1 where null, as the general decoder reads them);
        pid / tid may also be text ("stream 7"), read as ``kineto_values.id_norm`` does."""
        f = NUM[key]
        k = self.kn[f, rows]
        v = np.where(k == K_INT, self.iv[f, rows], default)
        bad = (k != K_INT) & (k != K_ABSENT)
        if bad.any():
            v[k == K_NULL] = -1
            bad &= k != K_NULL
            if bad.any():
                text = k == K_STR
                if key not in ("pid", "tid") or (bad & ~text).any():
                    raise Refuse(f"{key!r} values that are not plain integers")
                v[text] = self._text_ids(key, self.iv[f, rows[text]])
        return v

    def _text_ids(self, key: str, spans: np.ndarray) -> np.ndarray:
        return text_ids(self.buf, key, spans)

    def floats(self, key: str, rows: np.ndarray) -> np.ndarray:
        f = NUM[key]
        k = self.kn[f, rows]
        if ((k != K_INT) & (k != K_FLOAT) & (k != K_ABSENT) & (k != K_NULL)).any():
            raise Refuse(f"{key!r} values that are not numbers")
        v = np.where((k == K_INT) | (k == K_FLOAT), self.fv[f, rows], np.nan)
        if np.isnan(v[k == K_FLOAT]).any():
            raise Refuse(f"{key!r} values with more digits than the fast path reads exactly")
        return v

    def ns(self, key: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(int64 ns, -1 where absent/null; given mask)."""
        f = NUM[key]
        k = self.kn[f, rows]
        v = self.iv[f, rows]
        num = (k == K_INT) | (k == K_FLOAT)
        if ((~num & (k != K_ABSENT) & (k != K_NULL)).any()) or (v[num] == NO_NS).any():
            raise Refuse(f"{key!r} values that are not numbers of at most 3 decimals")
        return np.where(num, v, -1), num

    # -- text ------------------------------------------------------------------------------
    def uniq(self, keys: tuple, rows: np.ndarray):
        """Distinct values of the text/raw field(s) over ``rows`` in first-seen order:
        (their row numbers, code of each row)."""
        h = None
        for key in keys:
            f = SPAN[key]
            k = self.kS[f, rows]
            hk = np.where(k == K_STR, self.sh[f, rows], k.astype(np.uint64))
            h = hk if h is None else h * np.uint64(0x9E3779B97F4A7C15) + hk
        if not len(rows):
            return rows, np.zeros(0, np.int64)
        codes, first = ks.first_seen(h)            # codes in order of first sight
        reps = rows[first]
        if len(first) < len(rows):
            # rows of equal hash must have equal second hashes (an independent 64-bit hash of the
            # same bytes): 128 bits in all, so a collision between different strings is never met
            for key in keys:
                f = SPAN[key]
                g = self.sg[f, rows]
                if ((g != g[first][codes]) & (self.kS[f, rows] == K_STR)).any():
                    raise Refuse("a hash collision between two different strings")
        return reps, codes

    def text(self, key: str, row: int):
        """The decoded string at ``row`` (None when absent or null)."""
        f = SPAN[key]
        if self.kS[f, row] != K_STR:
            return None
        raw = self.buf[self.ss[f, row]:self.se[f, row]].tobytes()
        try:
            if b"\\" in raw:
                return msgspec.json.decode(b'"' + raw + b'"')
            return raw.decode("utf-8")
        except (UnicodeDecodeError, msgspec.DecodeError):
            raise Refuse(f"a {key!r} string that is not valid UTF-8 / JSON") from None

    def raw(self, key: str, row: int) -> bytes:
        f = SPAN[key]
        if self.kS[f, row] != K_STR:
            return b""
        return self.buf[self.ss[f, row]:self.se[f, row]].tobytes()

    def texts(self, key: str, rows: np.ndarray):
        reps, codes = self.uniq((key,), rows)
        return [self.text(key, r) for r in reps.tolist()], codes


def text_ids(buf: np.ndarray, key: str, spans: np.ndarray) -> np.ndarray:
    """pid / tid text values (their spans packed as start << 32 | end) -> ids.  The general
    decoder reads a group's ids with ``np.fromiter`` when every value takes it, else each with
    ``id_norm``; text ``id_norm`` would number by first sight ("Spans") is refused here."""
    start, end = spans >> 32, spans & 0xFFFFFFFF
    size = end - start
    width = max(1, int(size.max()))
    if width > 64:
        raise Refuse(f"{key!r} text values longer than 64 bytes")
    mat = buf[np.minimum(start[:, None] + np.arange(width), len(buf) - 1)]
    mat[np.arange(width) >= size[:, None]] = 0
    if (mat == 0x5C).any():
        raise Refuse(f"escaped {key!r} text values")
    u, inv = np.unique(np.ascontiguousarray(mat).view(f"S{width}").ravel(), return_inverse=True)
    try:
        texts = [t.decode("utf-8") for t in u.tolist()]
    except UnicodeDecodeError:
        raise Refuse(f"{key!r} text values that are not valid UTF-8") from None
    try:
        ids = np.fromiter(texts, np.int64, len(texts))
    except (ValueError, OverflowError):
        ids = np.array([_text_id(key, t) for t in texts], np.int64)
    return ids[inv.reshape(-1)]


def _text_id(key: str, text: str) -> int:
    """``id_norm`` of a text id that names a number ("stream 7" -> 7); Refuse for the others."""
    s = text.strip()
    m = _TRAILING_DIGITS.search(s)
    if m and (s.isdigit() or _NAMED_NUMBER.fullmatch(s)) and int(m.group(1)) < 2 ** 63:
        return int(m.group(1))
    raise Refuse(f"{key!r} text values that are not numbers")


def _interned(intern, values: list, codes: np.ndarray) -> np.ndarray:
    ids = np.fromiter(map(intern, values), np.int32, len(values))
    return ids[codes] if len(codes) else np.zeros(0, np.int32)


def careful(col, buf: np.ndarray, n: int, cols) -> str | None:
    """The careful path for a chunk the quick plan (:mod:`.kineto_plan`) handed back: put its
    columns into ``col`` (None), or change nothing and say why it was not taken."""
    ch = _Chunk(buf, n, *cols)
    try:
        plan = _plan(col, ch)
    except Refuse as e:
        return str(e)
    _commit(col, ch, plan)
    return None


def _plan(col, ch: _Chunk) -> dict:
    """Everything the chunk contributes, computed without touching ``col`` (may raise Refuse)."""
    n = ch.n
    allr = np.arange(n)
    p = {"n": n}
    if not n:
        return p
    cat_vals, cat_codes = ch.texts("cat", allr)
    cat_cls = np.array([CAT_CLASS.get(c.lower(), C_OTHER) if isinstance(c, str) else C_OTHER
                        for c in cat_vals], np.int8)
    cls = cat_cls[cat_codes]
    other = np.flatnonzero(cls == C_OTHER)
    if len(other):
        names, codes = ch.texts("name", other)
        is_mem = np.array([v == "[memory]" for v in names], bool)[codes]
        cls[other[is_mem]] = C_MEM
    p["cats"], p["cat_codes"] = cat_vals, cat_codes
    p["n_device"] = int(((cls == C_KERNEL) | (cls == C_MEMCPY) | (cls == C_MEMSET)).sum())
    kept = np.flatnonzero(cls != C_OTHER)
    ts = np.full(n, -1, np.int64)
    ts[kept] = ch.ns("ts", kept)[0]
    bad = (ts == -1) & (cls != C_OTHER)
    p["n_bad_ts"] = int(bad.sum())
    cls[bad] = C_OTHER
    p["cls"], p["ts"] = cls, ts
    if not (cls != C_OTHER).any():
        return p
    ph_vals, ph_codes = ch.texts("ph", np.flatnonzero(cls != C_OTHER))
    ph = np.zeros(n, np.int8)                 # 1 "s", 2 "f", 3 "X"
    ph[cls != C_OTHER] = np.array([{"s": 1, "f": 2, "X": 3}.get(v, 0) for v in ph_vals], np.int8)[ph_codes] \
        if len(ph_vals) else 0

    def pick(*codes, dur=True):
        idx = np.flatnonzero(np.isin(cls, codes))
        if not len(idx):
            return None
        g = {"idx": idx, "cls": cls[idx], "ts": ts[idx]}
        if dur:
            d, given = ch.ns("dur", idx)
            neg = d < 0
            g["n_bad_dur"] = 0
            if neg.any():
                d[neg] = 0
                g["n_bad_dur"] = int((neg & (given | (ph[idx] == 3))).sum())
            g["dur"] = d
        g["pid"] = ch.ints("pid", idx, -1)
        g["tid"] = ch.ints("tid", idx, -1)
        return g

    k = p["kernels"] = pick(C_KERNEL, C_MEMCPY, C_MEMSET)
    if k is not None:
        idx = k["idx"]
        k["names"] = ch.texts("name", idx)
        for key in ("stream", "device", "correlation", "bytes"):
            k[key] = ch.ints(key, idx, -1)
        kr = np.flatnonzero(k["cls"] == C_KERNEL)
        k["krows"] = kr
        if len(kr):
            rows = idx[kr]
            reps, codes = ch.uniq(("grid", "block"), rows)
            k["dims"] = [(ch.raw("grid", r), ch.raw("block", r)) for r in reps.tolist()], codes
            k["regs"] = ch.ints("registers per thread", rows, -1)
            k["shmem"] = ch.ints("shared memory", rows, -1)
            k["bps"] = ch.floats("blocks per SM", rows)
            k["occ"] = ch.floats("est. achieved occupancy %", rows)
        k["ch"] = ch                           # NCCL fields are read at commit (they need the symbols)
        if col.nccl_ids or any(isinstance(v, str) and v[:4].lower() == "nccl" for v in k["names"][0]):
            ch.ints("In msg nelems", idx, -1)  # read at commit: refuse now if they are not plain
            for key in ("Process Group Name", "Process Group Ranks", "dtype", "Collective name"):
                ch.texts(key, idx)
    o = p["ops"] = pick(C_OP, C_RUNTIME)
    if o is not None:
        idx = o["idx"]
        ext = ch.ints("External id", idx, -1)
        miss = np.flatnonzero(ext == -1)
        if len(miss):
            ext[miss] = ch.ints("external id", idx[miss], -1)
        o["ext"] = ext
        rt = np.flatnonzero(o["cls"] == C_RUNTIME)
        rtcorr = np.full(len(idx), -1, np.int64)
        if len(rt):
            rtcorr[rt] = ch.ints("correlation", idx[rt], -1)
        o["rtcorr"] = rtcorr
        o["names"] = ch.texts("name", idx)
        o["seq"] = ch.ints("Sequence number", idx, -1)
        for key in ("Input Dims", "Input type"):
            reps, codes = ch.uniq((key,), idx)
            o[key] = [ch.raw(key, r) for r in reps.tolist()], codes
        o["stack"] = ch.texts("Call stack", idx)
    y = p["pyfuncs"] = pick(C_PYF)
    if y is not None:
        y["names"] = ch.texts("name", y["idx"])
        y["py_id"] = ch.ints("Python id", y["idx"], -1)
        y["py_parent"] = ch.ints("Python parent id", y["idx"], -1)
    for c, table in ((C_FLOW, "_flows"), (C_FWDBWD, "_fwdbwd")):
        f = p[table] = pick(c, dur=False)
        if f is not None:
            f["ph"] = ph[f["idx"]]
            f["id"] = ch.ints("id", f["idx"], -1)
    m = p["_mem"] = pick(C_MEM, dur=False)
    if m is not None:
        idx = m["idx"]
        m["dev"] = ch.ints("Device Id", idx, -1)
        m["nbytes"] = ch.ints("Bytes", idx, 0)
        m["addr"] = ch.ints("Addr", idx, -1)
        m["alloc"] = ch.floats("Total Allocated", idx)
        m["res"] = ch.floats("Total Reserved", idx)
    return p


def _commit(col, ch: _Chunk, p: dict) -> None:
    """Store the planned chunk exactly as ``_Collector._extract`` would."""
    n = p["n"]
    col.n_events += n
    if not n:
        return
    memo = col.cat_memo
    for c in p["cats"]:
        if c not in memo:
            memo[c] = len(col.cat_cls)
            col.cat_cls.append(CAT_CLASS.get(c.lower(), C_OTHER) if isinstance(c, str) else C_OTHER)
            col.cat_sym.append(col.sym.intern(c) if isinstance(c, str) else 0)
    code = np.array([memo[c] for c in p["cats"]], np.int32)[p["cat_codes"]]
    col.n_device_seen += p["n_device"]
    col.n_bad_ts += p.get("n_bad_ts", 0)
    cls = p.get("cls")
    if cls is None or not (cls != C_OTHER).any():
        return
    catsym = np.array(col.cat_sym, np.int32)[code]
    intern = col.str_memo.__getitem__

    def bad_dur(g, c) -> None:
        if g.get("n_bad_dur"):
            label = _CLASS_LABEL[c]
            col.bad_dur[label] = col.bad_dur.get(label, 0) + g["n_bad_dur"]

    k = p["kernels"]
    if k is not None:
        bad_dur(k, C_KERNEL)
        _kernels(col, k, catsym[k["idx"]], intern)
    o = p["ops"]
    if o is not None:
        bad_dur(o, C_OP)
        names = _interned(intern, *o["names"])
        col._put("ops", len(o["idx"]), name=names, cat=catsym[o["idx"]],
                 start_ns=o["ts"], dur_ns=o["dur"], pid=o["pid"], tid=o["tid"], corr=o["ext"], seq=o["seq"],
                 input_shapes=_interned(col.dims_memo.__getitem__, *o["Input Dims"]),
                 input_types=_interned(col.types_memo.__getitem__, *o["Input type"]),
                 call_stack=_interned(intern, *o["stack"]), _rtcorr=o["rtcorr"])
    y = p["pyfuncs"]
    if y is not None:
        bad_dur(y, C_PYF)
        col._put("pyfuncs", len(y["idx"]), name=_interned(intern, *y["names"]), start_ns=y["ts"],
                 dur_ns=y["dur"], pid=y["pid"], tid=y["tid"], py_id=y["py_id"], py_parent=y["py_parent"])
    for table in ("_flows", "_fwdbwd"):
        f = p[table]
        if f is not None:
            ph = f["ph"]
            sel = np.flatnonzero((ph == 1) | (ph == 2))
            col._put(table, len(sel), is_s=(ph[sel] == 1), id=f["id"][sel], ts=f["ts"][sel],
                     pid=f["pid"][sel], tid=f["tid"][sel])
    m = p["_mem"]
    if m is not None:
        col._put("_mem", len(m["idx"]), ts=m["ts"], pid=m["pid"], tid=m["tid"], dev=m["dev"],
                 nbytes=m["nbytes"], addr=m["addr"], alloc=m["alloc"], res=m["res"])


def _kernels(col, k: dict, cat: np.ndarray, intern) -> None:
    names = _interned(intern, *k["names"])
    col._update_nccl()
    c = k["cls"]
    kind = np.where(c == C_KERNEL, KIND_COMPUTE, np.where(c == C_MEMCPY, KIND_MEMCPY, KIND_MEMSET)).astype(np.int8)
    stream = k["stream"]
    col.n_no_stream += int((stream < 0).sum())
    stream = np.where(stream >= 0, stream, k["tid"])
    device = k["device"]
    col.n_no_device += int((device < 0).sum())
    device = np.where(device >= 0, device, k["pid"])
    rows = None
    if col.nccl_ids:                    # (kind is final before _put copies it)
        rows = np.flatnonzero(np.isin(names, np.fromiter(col.nccl_ids, np.int32)) & (kind == KIND_COMPUTE))
        kind[rows] = KIND_COMM
    first = col._put("kernels", len(c), name=names, task_type=cat, kind=kind, stream=stream, device=device,
                     start_ns=k["ts"], dur_ns=k["dur"], corr=k["correlation"], bytes=k["bytes"],
                     _pid=k["pid"], _tid=k["tid"], **_geometry(col, k, len(c)))
    if rows is not None:
        if len(rows):
            ch, ev = k["ch"], k["idx"][rows].tolist()
            pg = [ch.text("Process Group Name", e) for e in ev]
            pg = [g if g is not None else ch.text("Process Group Ranks", e) for g, e in zip(pg, ev)]
            nel = ch.ints("In msg nelems", k["idx"][rows], -1)
            size = np.array([DTYPE_SIZE.get((ch.text("dtype", e) or "").lower(), -1) for e in ev], np.int64)
            nbytes = np.where((nel >= 0) & (size > 0), nel * size, -1)
            op_type = [collective_type(col.sym.string(nm), ch.text("Collective name", e))
                       for nm, e in zip(names[rows].tolist(), ev)]
            col._put("comm_ops", len(rows), kernel=rows + first, group=col._intern(pg),
                     op_type=col._intern(op_type), bytes=nbytes)


def _geometry(col, k: dict, n: int) -> dict:
    rows = k["krows"]
    out = {c: np.full(n, -1, np.int64) for c in _DIMS + ("registers", "shared_mem")}
    out["blocks_per_sm"] = np.full(n, np.nan)
    out["occupancy_pct"] = np.full(n, np.nan)
    if not len(rows):
        return out
    keys, ucodes = k["dims"]
    lut = np.fromiter(map(col.dims_memo2.__getitem__, keys), np.int64, len(keys))
    col.fill_geometry(out, rows, lut[ucodes], k["regs"], k["shmem"], k["bps"], k["occ"])
    return out
