"""String interning: one SymbolTable per profile maps every name to a small int id.

Tables store int32 ids instead of Python strings, so a million kernels cost four
bytes of name each and grouping by name is an integer group-by.  Id 0 is always
the empty string, which also stands for "missing".
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd


class SymbolTable:
    """Append-only bidirectional map str <-> int32 id."""

    __slots__ = ("_ids", "_strings")

    def __init__(self) -> None:
        self._ids: dict[str, int] = {"": 0}
        self._strings: list[str] = [""]

    def __len__(self) -> int:
        return len(self._strings)

    def intern(self, s: str | None) -> int:
        """Id of ``s`` (None and "" map to 0)."""
        if not s:
            return 0
        i = self._ids.get(s)
        if i is None:
            i = len(self._strings)
            self._ids[s] = i
            self._strings.append(s)
        return i

    def intern_many(self, values: Sequence[str | None] | np.ndarray | pd.Series) -> np.ndarray:
        """Vectorised intern: factorize first so each distinct string is hashed once in Python."""
        n = len(values)
        if n == 0:
            return np.zeros(0, dtype=np.int32)
        codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
        lut = np.fromiter((self.intern(u if isinstance(u, str) else str(u)) for u in uniques),
                          dtype=np.int32, count=len(uniques))
        out = np.zeros(n, dtype=np.int32)
        valid = codes >= 0
        out[valid] = lut[codes[valid]]
        return out

    def lookup(self, s: str) -> int:
        """Id of ``s`` or -1 when it was never interned (does not add it)."""
        return self._ids.get(s, -1) if s else 0

    def string(self, i: int) -> str:
        return self._strings[int(i)]

    def strings(self, ids: Iterable[int] | np.ndarray) -> list[str]:
        """Decode many ids at once."""
        s = self._strings
        return [s[int(i)] for i in ids]

    def as_array(self) -> np.ndarray:
        """All strings as an object array indexed by id (for vectorised decoding: arr[ids])."""
        return np.array(self._strings, dtype=object)

    def ids_matching(self, predicate) -> np.ndarray:
        """Ids whose string satisfies ``predicate`` (cheap: runs once per distinct string)."""
        return np.array([i for i, s in enumerate(self._strings) if predicate(s)], dtype=np.int32)

    def to_list(self) -> list[str]:
        return list(self._strings)

    @classmethod
    def from_list(cls, strings: list[str]) -> "SymbolTable":
        t = cls()
        if not strings or strings[0] != "":
            raise ValueError("symbol list must start with the empty string")
        t._strings = list(strings)
        t._ids = {s: i for i, s in enumerate(t._strings)}
        return t
