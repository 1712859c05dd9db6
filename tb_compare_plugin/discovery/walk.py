"""Walk a logdir and group what :mod:`classify` recognises (through the format registry) into runs.

The walk is bounded, whatever the logdir holds:

* each folder is reached once per walk (by device and inode, so link loops end), never a folder
  that holds the logdir (a link to ``/``, to the logdir's parent...) and never the pseudo
  filesystems ``/proc``, ``/sys``, ``/dev`` behind a link; folders linked in from elsewhere (runs
  users link into their logdir) are walked as any other;
* at most ``MAX_DEPTH`` folders deep and ``MAX_ENTRIES`` folder entries per walk;
* what was left out is said in :attr:`Walker.notes` (the scanner logs each note once).

A :class:`Walker` walks one logdir again and again (the scanner's rescans) and re-reads only what
changed: it keeps each folder's listing under the folder's mtime and lists again only folders
whose mtime moved (or that changed within ``TRUST_S`` seconds of being listed: mtimes have a
coarse tick); in a folder unchanged for ``SETTLE_S`` seconds, files that no format
recognised are not asked again (a new or renamed file changes the folder's mtime).  Recognised
entries and folders are asked every time: their recognisers are memoised by the stat of the
files they read (``probe.memo``), so an unchanged worker costs a few stats.

The walk itself never opens a file and never raises for unreadable folders.
"""
from __future__ import annotations

import logging
import os
import time

from .classify import classify_entry
from .spec import RunInfo

log = logging.getLogger(__name__)

MAX_DEPTH = 12
MAX_ENTRIES = 200_000
SETTLE_S = 120.0
TRUST_S = 2.0
_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".ipynb_checkpoints"}
_PSEUDO = ("/proc", "/sys", "/dev")


def _run_name(logdir: str, folder: str) -> str:
    if folder == logdir:
        return "."
    if folder.startswith(logdir.rstrip(os.sep) + os.sep):   # the walk's own paths: no relpath
        rel = folder[len(logdir.rstrip(os.sep)) + 1:]
    else:
        rel = os.path.relpath(folder, logdir)
    return "." if rel == "." else rel.replace(os.sep, "/")


class _Listing:
    """One folder's entries as of its mtime: (name, path, kind, is_link) with kind 'dir',
    'file' (regular) or 'other' (FIFO, socket, device, dangling link); and the names of files
    no format recognised once the folder had settled."""

    __slots__ = ("key", "entries", "unrecognised", "trusted")

    def __init__(self, key, entries, trusted: bool) -> None:
        self.key, self.entries, self.unrecognised = key, entries, set()
        self.trusted = trusted      # listed well after the folder's mtime: a later change moves it


def _list(folder: str):
    try:
        with os.scandir(folder) as it:
            raw = sorted(it, key=lambda e: e.name)
    except OSError:
        return None
    out = []
    for e in raw:
        try:
            kind = "dir" if e.is_dir() else "file" if e.is_file() else "other"   # follow links
        except OSError:
            kind = "other"
        try:
            link = e.is_symlink()
        except OSError:
            link = False
        out.append((e.name, e.path, kind, link))
    return out


class Walker:
    """Walks ``logdir`` (:meth:`runs`) and remembers folder listings between walks."""

    def __init__(self, logdir: str) -> None:
        self.logdir = os.path.abspath(logdir)
        self.notes: list[str] = []
        self._listings: dict = {}

    def _holders(self) -> set:
        """(dev, inode) of every folder above the logdir, up to ``/``."""
        out = set()
        p = os.path.realpath(self.logdir)
        while True:
            parent = os.path.dirname(p)
            try:
                st = os.stat(parent)
                out.add((st.st_dev, st.st_ino))
            except OSError:
                pass
            if parent == p:
                return out
            p = parent

    def runs(self) -> list[RunInfo]:
        """Every run under the logdir with its workers, sorted by run name."""
        logdir = self.logdir
        runs: dict[str, RunInfo] = {}
        notes: list[str] = []
        seen: set = set()
        holders = self._holders()
        listings: dict = {}
        budget = [MAX_ENTRIES]
        now_ns = time.time_ns()

        def note(text: str) -> None:
            if text not in notes:
                notes.append(text)

        def add(folder: str, run: str, spec):
            runs.setdefault(run, RunInfo(run, folder)).workers.append(spec)

        def visit(folder: str, depth: int):
            try:
                st = os.stat(folder)
            except OSError:
                return
            ident = (st.st_dev, st.st_ino)
            if ident in seen:
                return
            if ident in holders:
                note(f"{folder}: not walked (it leads to {os.path.realpath(folder)}, "
                     "a folder that holds the logdir)")
                return
            if depth > MAX_DEPTH:
                note(f"{folder}: not walked (more than {MAX_DEPTH} folders below the logdir)")
                return
            seen.add(ident)
            key = (ident, st.st_mtime_ns, st.st_ctime_ns)
            cached = self._listings.get(folder)
            if cached is None or cached.key != key or not cached.trusted:
                entries = _list(folder)
                if entries is None:
                    return
                # a change within the same mtime tick as the listing would go unseen: a listing
                # taken less than TRUST_S after the folder changed is taken again next time
                cached = _Listing(key, entries, time.time_ns() - st.st_mtime_ns > TRUST_S * 1e9)
            listings[folder] = cached
            settled = now_ns - st.st_mtime_ns > SETTLE_S * 1e9
            run = _run_name(logdir, folder)
            subdirs = []
            for name, path, kind, link in cached.entries:
                budget[0] -= 1
                if budget[0] < 0:
                    note(f"{logdir}: the walk stopped after {MAX_ENTRIES:,} entries; folders beyond "
                         "were not looked at (is a large folder linked into the logdir?)")
                    break
                if kind == "dir" and (name in _SKIP_DIRS or name.startswith(".")):
                    continue
                if kind != "dir" and settled and name in cached.unrecognised:
                    continue
                spec = classify_entry(path, run)
                if spec is not None:
                    add(folder, run, spec)
                elif kind == "dir":
                    subdirs.append((path, link))
                elif settled:
                    cached.unrecognised.add(name)
            for path, link in subdirs:
                if budget[0] < 0:
                    break
                if link:
                    real = os.path.realpath(path)
                    if any(real == p or real.startswith(p + "/") for p in _PSEUDO):
                        note(f"{path}: not walked (a link to {real}, a system folder)")
                        continue
                visit(path, depth + 1)

        if os.path.isdir(logdir):
            spec = classify_entry(logdir, ".")         # the logdir is itself one worker's folder
            if spec is not None:
                runs["."] = RunInfo(".", os.path.dirname(logdir), [spec])
            else:
                visit(logdir, 0)
        self._listings = listings                      # folders no longer reached are forgotten
        self.notes = notes
        for r in runs.values():
            _dedupe_names(r)
        return [runs[k] for k in sorted(runs)]


def find_runs(logdir: str) -> list[RunInfo]:
    """Every run under ``logdir`` with its workers, sorted by run name (one walk)."""
    w = Walker(logdir)
    out = w.runs()
    for n in w.notes:
        log.warning("tb-compare: %s", n)
    return out


def _dedupe_names(run: RunInfo) -> None:
    """Worker names must be unique in a run (e.g. a.pt.trace.json and a.pt.trace.json.gz)."""
    from dataclasses import replace
    seen: dict[str, int] = {}
    out = []
    for w in run.workers:
        n = w.name
        if n in seen:
            seen[n] += 1
            w = replace(w, name=f"{n}~{seen[n]}")
        else:
            seen[n] = 0
        out.append(w)
    run.workers = out
