"""Kineto trace event schema and value conversions (shared by the Kineto loader's parts).

The msgspec Structs name only the fields the loader uses; the helpers turn decoded values
(µs as int/float/text, ids as int/str, ``Input Dims`` as raw JSON) into int64 ns, int64 ids and
canonical strings, vectorised where the values allow it.
"""
from __future__ import annotations

import json
import re
from typing import Any, Optional

import msgspec
import numpy as np

from ..model.timeconv import us_str_to_ns, us_to_ns

Num = int | float | str | None
RAW0 = msgspec.Raw(b"")


class Args(msgspec.Struct, gc=False, frozen=True):
    ext: Num = msgspec.field(default=-1, name="External id")
    ext2: Num = msgspec.field(default=-1, name="external id")
    corr: Num = msgspec.field(default=-1, name="correlation")
    stream: Num = -1
    device: Num = -1
    nbytes: Num = msgspec.field(default=-1, name="bytes")
    dims: msgspec.Raw = msgspec.field(default=RAW0, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=RAW0, name="Input type")
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
    # kernel launch geometry (kept as JSON text, read once per distinct (grid, block) pair in
    # kineto_json) and CUPTI's estimates: the PyTorch Profiler plugin's GPU metrics
    grid: msgspec.Raw = RAW0
    block: msgspec.Raw = RAW0
    regs: Num = msgspec.field(default=-1, name="registers per thread")
    shmem: Num = msgspec.field(default=-1, name="shared memory")
    bps: Num = msgspec.field(default=float("nan"), name="blocks per SM")
    occ: Num = msgspec.field(default=float("nan"), name="est. achieved occupancy %")


ARGS0 = Args()


class Ev(msgspec.Struct, gc=False):
    ph: Optional[str] = None
    cat: Optional[str] = None
    name: Optional[str] = None
    pid: Num = None
    tid: Num = None
    ts: Num = None
    dur: Num = None
    id: Num = None
    args: Args = ARGS0


class EvExact(Ev, gc=False):
    """Same event, ``ts`` left untyped so the float hook hands us its exact text."""
    ts: Any = None


DEC = msgspec.json.Decoder(list[Ev])
DEC_EXACT = msgspec.json.Decoder(list[EvExact], float_hook=str)
DEC_RAWS = msgspec.json.Decoder(list[msgspec.Raw])

# event classes
(C_OTHER, C_KERNEL, C_MEMCPY, C_MEMSET, C_OP, C_RUNTIME, C_PYF, C_FLOW, C_FWDBWD, C_MEM) = range(10)
CAT_CLASS = {"kernel": C_KERNEL, "gpu_memcpy": C_MEMCPY, "memcpy": C_MEMCPY, "gpu_memset": C_MEMSET,
              "memset": C_MEMSET, "cpu_op": C_OP, "user_annotation": C_OP, "operator": C_OP,
              "cuda_runtime": C_RUNTIME, "runtime": C_RUNTIME, "cuda_driver": C_RUNTIME,
              "python_function": C_PYF, "ac2g": C_FLOW, "async_cpu_to_gpu": C_FLOW, "async_gpu": C_FLOW,
              "async": C_FLOW, "fwdbwd": C_FWDBWD}
EXACT_LIMIT = float(2 ** 43)       # µs; below it a float µs value identifies its ns exactly
POW10 = 10 ** np.arange(19, dtype=np.int64)
STEP_RE = re.compile(r"ProfilerStep#(\d+)$")
DTYPE_SIZE = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
               "bfloat16": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2,
               "char": 1, "byte": 1, "int8": 1, "uint8": 1, "bool": 1, "complexfloat": 8,
               "complexdouble": 16, "float8_e4m3fn": 1, "float8_e5m2": 1}
COLLECTIVES = ("reducescatter", "allreduce", "allgather", "alltoall", "broadcast", "sendrecv",
                "reduce", "send", "recv", "gather", "scatter")


# ----------------------------------------------------------------------------- numbers

def dec_text_ns(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    val = ((c - 48) * POW10[np.clip(w, 0, 18)] * use).sum(1)
    r = dot[:, 0] + 4                                                     # first sub-ns digit
    has_r = r < width
    rd = np.where(has_r, c[np.arange(n), np.minimum(r, width - 1)], 0)
    val += (has_r & (rd >= 53) & (rd <= 57)).astype(np.int64)
    return np.where(neg, -val, val), ok


def times_ns(vals: list, exact: bool = False) -> tuple[np.ndarray, bool]:
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
            big = np.abs(a) >= EXACT_LIMIT
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
        ns, ok = dec_text_ns(np.array(vals, dtype=str))
        for i in np.flatnonzero(~ok).tolist():
            ns[i] = one_ns(vals[i])
        return ns, False
    inexact = not exact and any(type(v) is float and v == v and abs(v) >= EXACT_LIMIT for v in vals)
    return np.fromiter(map(one_ns, vals), np.int64, n), inexact


def one_ns(v) -> int:
    try:
        r = us_str_to_ns(v) if isinstance(v, str) else us_to_ns(v)
    except (ValueError, TypeError, OverflowError):
        return -1
    return r if -2 ** 63 <= r < 2 ** 63 else -1


def one_int(v) -> int:
    if type(v) is int:
        return v if -2 ** 63 <= v < 2 ** 63 else (v & (2 ** 64 - 1)) - (2 ** 64 if v & 2 ** 63 else 0)
    if isinstance(v, float):
        return int(v) if v == v and abs(v) < 2 ** 63 and v == int(v) else -1
    if isinstance(v, str):
        s = v.strip()
        try:
            return one_int(int(s, 16) if s[:2].lower() == "0x" else int(s))
        except ValueError:
            return -1
    return -1


class IdTally:
    """Counts of integer fields a load could not keep as written (for the profile's warnings)."""
    __slots__ = ("wide", "unreadable")

    def __init__(self) -> None:
        self.wide = 0               # beyond 64 bits: only the low 64 bits kept (distinct ids may merge)
        self.unreadable = 0         # not an integer (text, fraction, NaN, ...): read as missing

    def count(self, vals) -> None:
        for v in vals:
            t = type(v)
            if t is int:
                if not -2 ** 63 <= v < 2 ** 64:
                    self.wide += 1
            elif v is not None and one_int(v) == -1 and not (t is str and v.strip() == "-1"):
                self.unreadable += 1
            elif t is str:
                s = v.strip()
                try:
                    w = int(s, 16) if s[:2].lower() == "0x" else int(s)
                except ValueError:
                    continue
                if not -2 ** 63 <= w < 2 ** 64:
                    self.wide += 1

    def warnings(self) -> list[str]:
        out = []
        if self.wide:
            out.append(f"{self.wide:,} id values (correlation, External id, flow id, pid/tid, ...) do not fit "
                       "in 64 bits: only their low 64 bits are kept, so different ids may be taken as one")
        if self.unreadable:
            out.append(f"{self.unreadable:,} id, count or size values are not numbers of the expected kind "
                       "(text, fraction, NaN ...): read as missing")
        return out


def ints(vals: list, tally: Optional[IdTally] = None) -> np.ndarray:
    """Integers (maybe str/float/None/huge) -> int64, -1 where missing/bad; ids >= 2^63 wrap.
    ``tally`` counts the values that were not plain 64-bit integers (only on the slow path,
    which any such value forces)."""
    try:
        return np.fromiter(vals, np.int64, len(vals))      # note: truncates floats (ids never are)
    except (TypeError, ValueError, OverflowError):
        if tally is not None:
            tally.count(vals)
        return np.fromiter(map(one_int, vals), np.int64, len(vals))


def floats(vals: list, tally: Optional[IdTally] = None) -> np.ndarray:
    try:
        return np.fromiter(vals, np.float64, len(vals))
    except (TypeError, ValueError):
        if tally is not None:
            tally.unreadable += sum(1 for v in vals if v is not None and not isinstance(v, (int, float)))
        return np.array([float(v) if isinstance(v, (int, float)) else np.nan for v in vals], np.float64)


def one_float(v) -> float:
    """A number (int, float or numeric text) -> float; anything else -> NaN."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            return float(v)
        except OverflowError:
            return float("nan")
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return float("nan")
    return float("nan")


def id_norm(v, strings: dict) -> int:
    if type(v) is int:
        return one_int(v)
    if v is None:
        return -1
    if isinstance(v, float):
        return one_int(v)
    s = str(v).strip()
    m = re.search(r"(\d+)$", s)
    if m and (s.isdigit() or re.fullmatch(r"[A-Za-z ]*\d+", s)):
        return int(m.group(1))
    return -2 - strings.setdefault(s, len(strings))


def canon_dims(raw: bytes) -> str:
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


def canon_types(raw: bytes) -> str:
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
    for c in COLLECTIVES:
        if first == c:
            return c
    for c in COLLECTIVES:
        if body.startswith(c):
            return c
    if hint:
        return hint.lower().replace("_", "")
    return first or "nccl"


# ----------------------------------------------------------------------------- per chunk
