"""The workers of one run, by rank, sharing one name lookup: the input of analyses over N ranks.

Each :class:`Profile` is loaded on its own (in its own process) with its own
:class:`SymbolTable`; a :class:`ProfileSet` interns every rank's names once more into one shared
table and keeps, per rank, the int32 map from the rank's ids to the shared ids.  Name columns of
every rank can then be compared, grouped and joined as integers across ranks (HTA keeps one
symbol table for all ranks of a trace for the same reason).  The profiles themselves are not
changed.
"""
from __future__ import annotations

import threading
from typing import Iterable

import numpy as np
import pandas as pd

from .profile import I32, SCHEMAS, Profile
from .symbols import SymbolTable

# every int32 column of the schemas holds symbol ids (profile.py's conventions)
NAME_COLUMNS = {t: tuple(c for c, d in cols.items() if d == I32) for t, cols in SCHEMAS.items()}


class ProfileSet:
    """Profiles by rank with one shared symbol table.  Immutable once built; thread-safe."""

    def __init__(self, profiles: Iterable[Profile], ranks: Iterable[int] | None = None,
                 run: str = "") -> None:
        profiles = list(profiles)
        if ranks is None:
            ranks = [p.meta.rank for p in profiles]
            missing = [p.meta.path for p, r in zip(profiles, ranks) if r is None]
            if missing:
                raise ValueError(f"{missing[0]}: the profile has no rank (give ranks explicitly)")
        ranks = [int(r) for r in ranks]
        if len(ranks) != len(profiles):
            raise ValueError(f"{len(profiles)} profiles but {len(ranks)} ranks")
        dup = sorted({r for r in ranks if ranks.count(r) > 1})
        if dup:
            paths = [p.meta.path for p, r in zip(profiles, ranks) if r == dup[0]]
            raise ValueError(f"rank {dup[0]} appears more than once: {', '.join(paths)}")
        order = sorted(range(len(ranks)), key=ranks.__getitem__)
        self.run = run
        self.ranks: tuple[int, ...] = tuple(ranks[i] for i in order)
        self._profiles: dict[int, Profile] = {ranks[i]: profiles[i] for i in order}
        self.symbols = SymbolTable()
        self._to_shared: dict[int, np.ndarray] = {}
        for r in self.ranks:
            local = self._profiles[r].symbols.to_list()
            lut = self.symbols.intern_many(local)      # id 0 ("") stays 0
            self._to_shared[r] = lut.astype(np.int32, copy=False)
        self._lock = threading.Lock()
        self._frames: dict = {}

    @classmethod
    def from_profiles(cls, profiles: Iterable[Profile], run: str = "") -> "ProfileSet":
        return cls(profiles, run=run)

    # -- by rank ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ranks)

    def __iter__(self):
        return iter(self._profiles[r] for r in self.ranks)

    def __getitem__(self, rank: int) -> Profile:
        return self._profiles[rank]

    def items(self):
        return [(r, self._profiles[r]) for r in self.ranks]

    # -- one name lookup ----------------------------------------------------------------
    def shared_ids(self, rank: int, ids) -> np.ndarray:
        """Rank ``rank``'s symbol ids as ids of the shared table."""
        return self._to_shared[rank][np.asarray(ids, dtype=np.int64)]

    def id_of(self, name: str) -> int:
        """Shared id of ``name`` (-1 when no rank has it)."""
        return self.symbols.lookup(name)

    def table(self, name: str) -> pd.DataFrame:
        """Table ``name`` of every rank, stacked in rank order, with a ``rank`` column first and
        every name column in shared ids (built once per set)."""
        with self._lock:
            got = self._frames.get(name)
            if got is None:
                parts = []
                for r in self.ranks:
                    df = self._profiles[r].tables[name]
                    cols = {"rank": np.full(len(df), r, dtype=np.int64)}
                    for c in df.columns:
                        a = df[c].to_numpy()
                        cols[c] = self._to_shared[r][a] if c in NAME_COLUMNS[name] else a
                    parts.append(pd.DataFrame(cols, copy=False))
                got = self._frames[name] = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
            return got

    # -- what the set can hold -------------------------------------------------------------
    def capabilities(self) -> set:
        """What every rank's format can hold (the intersection)."""
        caps = [set(p.meta.capabilities) for p in self]
        return set.intersection(*caps) if caps else set()

    def has(self) -> dict:
        """Per kind of data: does every rank hold some (``Profile.has`` of each, and-ed)."""
        out: dict = {}
        for p in self:
            for k, v in p.has().items():
                out[k] = out.get(k, True) and bool(v)
        return out
