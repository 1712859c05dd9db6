"""Slot templates: a text split into fixed literals and numeric slots, re-rendered per copy.

The generator turns one real trace into a long one by writing the same events many
times with shifted timestamps and fresh ids.  Rather than re-serialising every event
(which would lose the profiler's exact layout), the event text is cut once into
literal pieces and *slots* (timestamps, ids, step numbers); rendering copy ``c``
only adds ``c`` times a per-kind offset to the slot values and joins the pieces.

Slot kinds and what copy ``c`` adds:

* ``K_TS_US``  integer microseconds (Kineto ``"ts": 123``, or the integer part of a
  fractional one; Ascend's rare integer-string ts)  + c * shift_ns / 1000;
* ``K_TS_NS3`` microseconds with exactly three decimals, held as integer ns and
  rendered ``"W.FFF"`` (Ascend string ts)  + c * shift_ns — exact integer arithmetic;
* ``K_ID``     a small id (correlation, External id, Python id, ...)  + c * id_stride,
  negative values (``-1`` = none) left alone;
* ``K_NSID``   an id derived from a ns timestamp (Ascend ``async_npu`` flows)  + c * shift_ns;
* ``K_STEP``   a step number (``ProfilerStep#N``, CSV ``Step Id``)  + c * step_stride;
* ``K_BIGID``  an id too large for int64 (Ascend ``HostToDevice`` string ids), kept as a
  Python int  + c * id_stride.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import numpy as np

K_TS_US, K_TS_NS3, K_ID, K_NSID, K_STEP, K_BIGID = range(6)
N_KINDS = 6


@dataclass(frozen=True)
class Shifts:
    """Per-copy offsets: copy ``c`` adds ``c`` times each of these to its kind's slots."""
    shift_ns: int        # multiple of 1000, so whole-µs slots shift exactly too
    id_stride: int
    step_stride: int

    def adders(self, copy: int) -> np.ndarray:
        add = np.zeros(N_KINDS, dtype=np.int64)
        add[K_TS_US] = copy * (self.shift_ns // 1000)
        add[K_TS_NS3] = copy * self.shift_ns
        add[K_ID] = copy * self.id_stride
        add[K_NSID] = copy * self.shift_ns
        add[K_STEP] = copy * self.step_stride
        return add


# classify(match) -> (kind, value) or None (None keeps the matched text as a literal)
Classifier = Callable[["object"], Optional[tuple]]


class Template:
    """Literal pieces interleaved with numeric slots; ``render(copy, shifts)`` gives the text."""

    def __init__(self, literals: list, kinds: list, values: list) -> None:
        assert len(literals) == len(kinds) + 1
        self.literals = literals
        n = len(kinds)
        self.kinds = np.asarray(kinds, dtype=np.int8).reshape(n)
        self.big = {i: v for i, (k, v) in enumerate(zip(kinds, values)) if k == K_BIGID}
        self.values = np.array([0 if k == K_BIGID else v for k, v in zip(kinds, values)],
                               dtype=np.int64).reshape(n)
        self._keep = (self.kinds == K_ID) & (self.values < 0)
        self._ns3 = np.flatnonzero(self.kinds == K_TS_NS3).tolist()
        self._pieces: list = [None] * (2 * n + 1)
        self._pieces[0::2] = literals

    @classmethod
    def build(cls, text: str, pattern, classify: Classifier) -> "Template":
        """Cut ``text`` at every match of ``pattern`` that ``classify`` turns into a slot."""
        literals, kinds, values = [], [], []
        pos = 0
        for m in pattern.finditer(text):
            got = classify(m)
            if got is None:
                continue
            kind, value = got
            literals.append(text[pos:m.start()])
            kinds.append(kind)
            values.append(int(value))
            pos = m.end()
        literals.append(text[pos:])
        return cls(literals, kinds, values)

    def __len__(self) -> int:
        return len(self.kinds)

    def slot_values(self, kind: int) -> np.ndarray:
        return self.values[self.kinds == kind]

    def render(self, copy: int, shifts: Shifts) -> str:
        if not len(self.kinds):
            return self.literals[0]
        vals = self.values + shifts.adders(copy)[self.kinds]
        vals[self._keep] = self.values[self._keep]
        as_list = vals.tolist()
        strs = list(map(str, as_list))
        for i in self._ns3:
            whole, frac = divmod(as_list[i], 1000)
            strs[i] = f"{whole}.{frac:03d}"
        for i, v in self.big.items():
            strs[i] = str(v + copy * shifts.id_stride)
        self._pieces[1::2] = strs
        return "".join(self._pieces)


def ceil_us_ns(ns: int) -> int:
    """Round a ns amount up to a whole microsecond (so µs-integer slots shift exactly)."""
    return -(-int(ns) // 1000) * 1000


def us_str_slot(s: str) -> tuple:
    """An Ascend µs string timestamp -> (kind, value): 'W.FFF' exact ns, 'W' whole µs."""
    whole, dot, frac = s.strip().partition(".")
    if not whole.isdigit() or (dot and not frac.isdigit()):
        raise ValueError(f"not a µs timestamp: {s!r}")
    if not dot:
        return K_TS_US, int(whole)
    frac3 = (frac + "000")[:3]
    ns = int(whole) * 1000 + int(frac3)
    if len(frac) > 3 and frac[3] >= "5":   # sub-ns digits: round half up, rendered with 3 decimals
        ns += 1
    return K_TS_NS3, ns


def max_or(values: Iterable[int], default: int) -> int:
    vals = list(values)
    return max(vals) if vals else default
