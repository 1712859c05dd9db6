"""Fast path of the Ascend ``trace_view.json`` decoder: a numba byte scanner per chunk, no Python
object per event.

:class:`Scanner` is what :class:`ascend_trace._Collector` asks first for each chunk: it scans the
chunk (:mod:`._ascend_scan_jit`), checks that every value it has to read is one the typed msgspec
schema (:mod:`.ascend_events`) would take as it is (integer pid/tid and numeric args, ``ts`` text
with 3 decimals, text names, an ``args`` object, ``dur`` a number it reads exactly, ...) and then
appends the same :class:`ascend_columns.Field` pieces the general decoder appends for that chunk,
so the tables are identical.  Anything else (another value type, a number it cannot read exactly,
an escape it leaves to msgspec, a JSON error, a bad cut) and nothing is appended: it returns the
reason and the collector decodes the chunk with the general decoder.  Text values are decoded once
per distinct raw text over the whole file (the scanner's cross-chunk table).

Used for traces of :data:`FAST_MIN_BYTES` or more (``TB_COMPARE_FAST_ASCEND``: 0 never, 1 always);
numba is an install requirement; when it cannot run here the general decoder is used and the
profile's warnings say so, as they do when >= 4 MB of a trace fell back.  The JIT cache is the
Kineto scanner's per-user folder (:func:`kineto_scan.jit_cache_dir`); the compiled scanner is read
from its bundle there when it has one, without importing numba (:mod:`..model.jit_bundle`).
"""
from __future__ import annotations

import os

import msgspec
import numpy as np

from .ascend_events import GROUP_FIELDS, HCCL, HW, M, OPS, PY, TEXT
from .jit_warm import FAST_MIN_BYTES
from .kineto_scan import jit_cache_dir
from ..model import jit_bundle
from ..model.jit import writable_view

# FAST_MIN_BYTES: smaller traces use the general decoder unless asked: a process's first scan costs
# ~0.5-1 s of CPU (importing numba, loading the compiled scanner).
FAST_CHUNK = 4 << 20
"""Chunk size with the scanner (the general decoder's is 1 MB): fewer per-chunk numpy calls."""
FALLBACK_NOTE_BYTES = 4 << 20
ARG_FIELDS = HW + HCCL + OPS + PY                       # = GROUP_FIELDS[G_ALL], the args columns' order

_jit = None
_import_error = None


def wanted(size: int | None) -> bool:
    """Whether a trace of ``size`` bytes is scanned: ``TB_COMPARE_FAST_ASCEND`` 0 / false / no / off
    never, 1 / true / yes / on always, else (auto) from :data:`FAST_MIN_BYTES` on."""
    v = os.environ.get("TB_COMPARE_FAST_ASCEND", "auto").strip().lower()
    if v in ("0", "false", "no", "off"):
        return False
    if v in ("1", "true", "yes", "on") or size is None:
        return True
    return size >= FAST_MIN_BYTES


def _compile():
    global _jit, _import_error
    if _jit is not None or _import_error is not None:
        return _jit
    try:
        _jit = jit_bundle.provide(__package__ + "._ascend_scan_jit", _self_test, jit_cache_dir())
    except Exception as e:              # numba missing or unusable on this platform
        _jit = None
        _import_error = f"numba unavailable ({type(e).__name__}: {e})"
    return _jit


def _self_test(jit) -> None:
    """Scan a test chunk and read its columns with ``jit``'s kernels (loads them all); raises when
    an answer is wrong."""
    global _jit
    _jit = jit
    s = Scanner()
    got = s._scan(np.frombuffer(bytearray(b'[{"ph": "X", "ts": "1.000", "args": {"Task Id": 1, "x": [{}]}}]'), np.uint8))
    if got[0] != jit.OK:
        raise RuntimeError(f"the scanner refused its own test chunk (status {got[0]})")
    rows = np.zeros(1, np.int64)                # (loads the column kernels too)
    if (s._ints(jit.F_A0 + ARG_FIELDS.index("task_id"), rows)[1].tolist() != [1]
            or s._texts(_Probe(), jit.F_NAME, rows)[1].tolist() != [-1]):
        raise RuntimeError("the column kernels gave wrong values on the test chunk")
    # the CSV helpers (csv_simple), with the argument types it gives them
    b = np.frombuffer(bytearray(b"a,b\r\n1.5,N/A\r\n" + bytes(64)), np.uint8)
    seps, words, vals = np.empty((2, 2), np.int64), np.empty((2, 1), np.uint64), np.empty(2, np.float64)
    lo, hi = np.array([5, 9], np.int64), np.array([8, 12], np.int64)
    if (jit.csv_seps(b, 5, 14, 13, True, seps) != 1 or seps[0].tolist() != [8, 12]
            or jit.cell_words(b, lo, hi, words) != 1 or words[:, 0].tolist() != [0x352E31, 0x412F4E]
            or jit.cell_floats(b, lo, hi, vals) != -1 or vals[0] != 1.5 or vals[1] == vals[1]):
        raise RuntimeError("the CSV kernels gave wrong values on their test rows")
    # ... and csv_quoted's: one row, one quoted text cell and one number cell
    b = np.frombuffer(bytearray(b'x,y\r\n"a""b",2.5\r\n' + bytes(64)), np.uint8)
    nums, spans, hashes = np.empty((1, 1), np.float64), np.empty((2, 1, 1), np.int64), np.empty((2, 1, 1), np.uint64)
    if (jit.csv_read(b, 5, 17, 13, True, np.array([1, 2], np.int8), np.array([0, 0], np.int64), nums, spans[0],
                     spans[1], hashes[0], hashes[1]) != 1 or nums[0, 0] != 2.5 or spans[:, 0, 0].tolist() != [6, 10]):
        raise RuntimeError("the quoted-CSV kernels gave wrong values on their test row")


class _Probe:
    """A stand-in Field for the self-test (no text is looked up in its vocabulary)."""
    vocab: dict = {}


def available() -> bool:
    return _compile() is not None


def loaded():
    """The compiled kernels when this process has them loaded already (never loads them), else None."""
    return _jit


def unavailable_reason() -> str | None:
    _compile()
    return _import_error


def _key_table(keys):
    raw = [k.encode() for k in keys]
    off = np.zeros(len(raw) + 1, np.int64)
    off[1:] = np.cumsum([len(r) for r in raw])
    lut = np.full(4096, -1, np.int64)
    for i, r in enumerate(raw):
        code = (((len(r) & 31) << 7) ^ r[0] ^ (r[-1] << 4) ^ (r[len(r) // 2] << 2)) & 4095
        assert lut[code] == -1, f"two keys share a lookup code: {r!r}"
        lut[code] = i
    # (8 zero bytes after the last key: the scanner compares keys a word at a time)
    return np.frombuffer(b"".join(raw) + bytes(8), np.uint8).copy(), off, lut


# Keys Ascend exports write that the loader does not read (mode 0: skipped, as an unknown key is).
# Listed, they take part in the scanner's next-key prediction: the key after one of them is checked
# in place instead of being read and looked up (~2.9 M of the ~16.5 M keys of a 387 MB trace_view).
SKIP_TOP_KEYS = ("bp",)
SKIP_ARG_KEYS = ("value", "acc_id", "Fwd thread id", "Thread Id", "Mode", "level", "id", "item_id", "Model Id",
                 "Batch Id", "Subtask Id", "model id", "notify_id", "duration estimated(us)", "stream id",
                 "task id", "context id")


def _tables(jit):
    from .ascend_events import Args
    names = {f.name: f.encode_name for f in msgspec.structs.fields(Args)}
    top = _key_table(jit.TOP_KEYS + SKIP_TOP_KEYS)
    tmode = np.array(jit.TOP_MODE + (0,) * len(SKIP_TOP_KEYS), np.int64)
    args = _key_table([names[f] for f in ARG_FIELDS] + list(SKIP_ARG_KEYS))
    amode = np.array([4 if f in TEXT else 1 for f in ARG_FIELDS] + [0] * len(SKIP_ARG_KEYS), np.int64)
    return (*top, tmode, *args, amode)


_M_DECODER = msgspec.json.Decoder(M)
_PH_KIND = np.zeros(256, np.int8)                       # 0 other, 1 X, 2 M, 3 s, 4 f (as ascend_trace)
_PH_KIND[[ord("X"), ord("M"), ord("s"), ord("f")]] = [1, 2, 3, 4]


class Scanner:
    """Per-file state of the fast path: the scanner's row tables and distinct-text table, the
    decoded texts, and per column the text id -> vocabulary code maps."""

    def __init__(self) -> None:
        jit = _jit
        self.j = jit
        self.keys = _tables(jit)
        self.nf = jit.F_A0 + len(ARG_FIELDS)
        self.rows = 0
        self._rows(1 << 14)
        self.new_cap = 0
        self._new(1 << 14)
        self.state = np.zeros(3, np.int64)
        self._table(1 << 17)
        self.texts: list = []             # text id -> decoded str (None: not decodable here)
        self.bad = False                  # some text id could not be decoded
        self.luts: dict = {}              # id(field) -> (field, int32 text id -> vocab code, -2 unknown)
        A = jit.F_A0
        kinds = range(8)

        def allow(*ks):
            return np.array([k in ks for k in kinds], bool)
        ok_int = allow(jit.K_ABSENT, jit.K_NULL, jit.K_INT)
        ok_txt = allow(jit.K_ABSENT, jit.K_NULL, jit.K_STR)
        x_ok = np.ones((self.nf, 8), bool)
        x_ok[jit.F_PID] = x_ok[jit.F_TID] = ok_int
        x_ok[jit.F_TS] = allow(jit.K_STR)
        x_ok[jit.F_NAME] = x_ok[jit.F_CAT] = ok_txt
        x_ok[jit.F_ARGS] = allow(jit.K_ABSENT, jit.K_OBJ)
        x_ok[jit.F_DUR] = allow(jit.K_ABSENT, jit.K_NULL, jit.K_INT, jit.K_FLOAT, jit.K_HARD)
        for i, f in enumerate(ARG_FIELDS):
            x_ok[A + i] = ok_txt if f in TEXT else ok_int
        f_ok = np.ones((self.nf, 8), bool)
        f_ok[jit.F_PID] = f_ok[jit.F_TID] = ok_int
        f_ok[jit.F_TS] = allow(jit.K_STR)
        f_ok[jit.F_CAT] = ok_txt
        f_ok[jit.F_ID] = allow(jit.K_ABSENT, jit.K_NULL, jit.K_INT, jit.K_STR)
        self.xok = x_ok.astype(np.uint8)
        self.fok = f_ok.astype(np.uint8)
        # storage groups holding each args field (ascend_events.GROUP_FIELDS)
        self.field_groups = {f: np.array([g for g, fs in GROUP_FIELDS.items() if f in fs], np.int8)
                             for f in ARG_FIELDS}
        self.field_in = {f: np.isin(np.arange(8), g) for f, g in self.field_groups.items()}  # group code -> kept?
        patterns: dict = {}               # the fields kept for the same groups: (group code -> kept?, fields)
        for i, f in enumerate(ARG_FIELDS):
            keep = self.field_in[f]
            patterns.setdefault(keep.tobytes(), (keep, []))[1].append((A + i, f, f in TEXT))
        self.patterns = list(patterns.values())
        self.txt_cols = tuple(A + i for i, f in enumerate(ARG_FIELDS) if f in TEXT)

    # -- scanner buffers ---------------------------------------------------------------------
    def _rows(self, cap: int) -> None:
        if cap > self.rows:
            cap += cap // 8                 # (the chunks differ by a few bytes: not a new table each)
            self.rows = cap
            self.K = np.zeros((cap, self.nf), np.uint8)
            self.Vc = np.zeros((self.nf, cap), np.int64)    # column-major for the scanner
            self.V = self.Vc.T
            self.DV = np.zeros(cap, np.float64)

    def _new(self, cap: int) -> None:
        if cap > self.new_cap:
            cap += cap // 8
            self.new_cap = cap
            self.new_s = np.zeros(cap, np.int64)
            self.new_e = np.zeros(cap, np.int64)

    def _table(self, size: int) -> None:
        """A new empty distinct-text table (ids go on from where they were)."""
        self.tt = np.zeros(4 * size, np.uint64)   # per slot: 2 hashes, length, id + 1 (0: free)
        self.state[2] = 0

    def _scan(self, buf: np.ndarray):
        """(status, events) of one chunk; decodes the texts first seen in it, whatever the status."""
        j = self.j
        self._rows(len(buf) // 96 + 16)
        self._new(len(buf) // 64 + 16)
        tries = 0
        wbuf = writable_view(buf)           # one compiled form of the scanner (model.jit.writable_view)
        while True:
            tries += 1
            status, n = j.scan(wbuf, self.K, self.Vc, self.DV, self.xok, self.fok, self.tt, self.state,
                               self.new_s, self.new_e, *self.keys)
            self._decode_new(buf, int(self.state[1]))
            if tries > 8:
                return status, n
            if status == j.FULL:
                if 2 * (int(self.state[2]) + 1) > len(self.tt) // 4:
                    self._table(len(self.tt))       # 4x the slots
                else:
                    self._new(2 * self.new_cap)
                continue
            if status == j.TOO_MANY:
                self._rows(2 * self.rows)
                continue
            return status, n

    def _decode_new(self, buf: np.ndarray, k: int) -> None:
        """Decode the texts first seen in this chunk (all in one msgspec call when it can)."""
        if not k:
            return
        mv = memoryview(buf)
        try:
            parts = [mv[s:e] for s, e in zip(self.new_s[:k].tolist(), self.new_e[:k].tolist())]
            try:
                texts = msgspec.json.decode(b'["' + b'","'.join(parts) + b'"]')
                if len(texts) != k:
                    raise ValueError("a text held a quote")
            except (msgspec.DecodeError, ValueError):
                texts = []
                for raw in parts:
                    try:
                        texts.append(msgspec.json.decode(b'"' + raw + b'"'))
                    except msgspec.DecodeError:
                        texts.append(None)
                        self.bad = True
            self.texts.extend(texts)
        finally:
            parts = None
            mv.release()

    # -- one chunk ---------------------------------------------------------------------------
    def take(self, col, view) -> str | None:
        """Append the chunk's pieces to ``col`` (None) or, appending nothing, say why not."""
        buf = np.frombuffer(view, np.uint8)
        try:
            status, n = self._scan(buf)
            metas = None
            j = self.j
            if status != j.OK:
                return _STATUS.get(status, "scanner refused the chunk")
            K, V = self.K[:n], self.V[:n]
            kind = _PH_KIND[V[:, j.F_PH]]                # (the scanner checked the phases and value kinds)
            xi = np.flatnonzero(kind == 1)
            fi = np.flatnonzero(kind >= 3)
            if self.bad:
                rows = np.concatenate([xi, fi])
                used = np.zeros(len(self.texts), bool)
                for c in (j.F_NAME, j.F_CAT, j.F_ID, *self.txt_cols):
                    k = K[rows, c]
                    used[V[rows, c][k == j.K_STR]] = True
                if any(self.texts[t] is None for t in np.flatnonzero(used).tolist()):
                    return "a text msgspec reads differently"
            hard = xi[K[xi, j.F_DUR] == j.K_HARD]
            if len(hard):                               # durs read here as msgspec reads them
                spans = self.V[hard, j.F_DUR]
                starts, lens = spans >> 32, (spans & 0xffffffff) - (spans >> 32)
                # the spans' bytes as NUL-padded fixed-width byte strings, read by numpy's cast
                # (correctly rounded, as Python's float() and msgspec read them)
                w = int(lens.max())
                cols = np.arange(w)
                inside = cols < lens[:, None]
                text = np.zeros((len(lens), w), np.uint8)
                text[inside] = buf[(starts[:, None] + cols)[inside]]
                with np.errstate(all="ignore"):         # (1e999: inf, refused below)
                    vals = text.view(f"S{w}").reshape(-1).astype(np.float64)
                if not np.isfinite(vals).all():
                    return "a dur out of the double range"
                self.DV[hard] = vals
            mi = np.flatnonzero(kind == 2)
            if len(mi):
                metas = []
                for s, e in zip(V[mi, j.F_START].tolist(), V[mi, j.F_END].tolist()):
                    try:
                        metas.append(_M_DECODER.decode(buf[s:e].tobytes()))
                    except (msgspec.ValidationError, msgspec.DecodeError):
                        return "a metadata event of another layout"
        finally:
            del buf
        # -- commit: nothing below can refuse the chunk
        col.n_events += n
        if not n:
            return None
        for e in metas or ():
            col._meta(e)
        if len(xi):
            self._add_x(col, xi)
        if len(fi):
            self._add_flows(col, fi, kind[fi])
        return None

    def _ints(self, c: int, rows: np.ndarray):
        """The Field piece ``Field.add(values, "I")`` makes of integer/None values."""
        out, miss = np.empty(len(rows), np.int64), np.empty(len(rows), bool)
        n_int = self.j.take_ints(self.K, self.Vc, rows, c, out, miss)
        if n_int == len(rows):
            return ("i", out, None)
        if not n_int:
            return ("n", len(rows))
        return ("i", out, miss)

    def _texts(self, field, c: int, rows: np.ndarray):
        """The Field piece ``Field.add(values, "s")`` makes of text/None values."""
        got = self.luts.get(id(field))
        if got is None or got[0] is not field:
            got = self.luts[id(field)] = (field, np.full(max(len(self.texts), 16), -2, np.int32))
        lut = got[1]
        if len(lut) < len(self.texts):
            lut = np.concatenate([lut, np.full(max(len(self.texts), 2 * len(lut)) - len(lut), -2, np.int32)])
            self.luts[id(field)] = (field, lut)
        codes = np.empty(len(rows), np.int32)
        if self.j.take_texts(self.K, self.Vc, rows, c, lut, codes):
            miss = np.flatnonzero(codes == -2)         # texts not looked up yet: only those rows again
            ids = self.V[rows[miss], c]
            voc, texts = field.vocab, self.texts
            for t in np.unique(ids).tolist():
                lut[t] = voc[texts[t]]
            codes[miss] = lut[ids]
        return ("s", codes)

    def _add_x(self, col, xi: np.ndarray) -> None:
        j, x = self.j, col.x
        x["pid"].pieces.append(self._ints(j.F_PID, xi))
        x["tid"].pieces.append(self._ints(j.F_TID, xi))
        x["name"].pieces.append(self._texts(x["name"], j.F_NAME, xi))
        x["dur"].pieces.append(("f", self.DV[xi]))
        x["cat"].pieces.append(self._texts(x["cat"], j.F_CAT, xi))
        col.x_ts.append(self.V[xi, j.F_TS])
        cls = col.x_classes()
        col.x_cls.append(cls)
        group = col._groups(x["pid"].pieces[-1], cls)
        col.x_group.append(group)
        present = np.zeros(8, bool)
        present[group] = True
        for keep, fields in self.patterns:             # fields of the same storage groups: the same rows
            if not (present & keep).any():
                continue
            rows = xi[keep[group]]
            for c, f, text in fields:
                field = col.args[f]
                field.pieces.append(self._texts(field, c, rows) if text else self._ints(c, rows))

    def _add_flows(self, col, fi: np.ndarray, fkind: np.ndarray) -> None:
        j, fl = self.j, col.fl
        fl["pid"].pieces.append(self._ints(j.F_PID, fi))
        fl["tid"].pieces.append(self._ints(j.F_TID, fi))
        fl["cat"].pieces.append(self._texts(fl["cat"], j.F_CAT, fi))
        fcls = col.flow_classes()
        if fcls.any():
            rows = fi[fcls > 0]
            k, v = self.K[rows, j.F_ID], self.V[rows, j.F_ID]
            m = k == j.K_INT
            if m.all():                           # all ints: the piece ``Field.add`` makes of them
                fl["id"].pieces.append(("i", v, None))
            else:
                ids = np.full(len(rows), None, dtype=object)
                if m.any():
                    ids[m] = v[m].tolist()
                m = k == j.K_STR
                if m.any():
                    texts = self.texts
                    ids[m] = [texts[t] for t in v[m].tolist()]
                fl["id"].add(ids.tolist(), "i")
        col.fl_ts.append(self.V[fi, j.F_TS])
        col.fl_f.append(fkind == 4)
        col.fl_cls.append(fcls)


_STATUS = {1: "not JSON the scanner reads (or a cut inside an event)", 2: "a layout the scanner leaves to msgspec",
           3: "the text table is full", 4: "more events than rows", 5: "an X event value of another type",
           6: "a flow event value of another type"}
