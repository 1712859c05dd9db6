"""Persistent on-disk cache of parsed profiles (and small JSON results), outside the logdir.

Layout: ``<cache dir>/v<N>/<key>/`` holds one ``.npy`` file per table column, ``symbols.json``
(the symbol table), and ``meta.json`` (ProfileMeta + table columns).  Entries are written into a
temporary folder and renamed into place, so a reader never sees half an entry and two
TensorBoard processes sharing the cache at most compute the same entry twice.  Columns are
loaded with ``mmap_mode="r"``: reopening a 1 GB trace's profile takes well under a second.

The key of a profile is a hash of the worker's format, root and every file's (path, size,
mtime), plus :func:`code_hash` ``("profile")``: a hash of the source of everything that shapes a
Profile (``loaders/``, ``model/``, ``formats/``, this module), so a changed file or changed loader
code never serves a stale entry, whatever the version number says.  Small JSON results (a
finished overview) are keyed by :func:`code_hash` ``("results")`` as well: the profile code plus
``engines/``, ``analyses/``, ``presenters/``, ``comparison.py`` and ``service/``.  Each hash is
computed once per process from the installed package's ``.py`` files (a few ms).

Checked records (``get_record`` / ``put_record``: one rank's cluster summary, kind "summary"; a
run's cluster JSON, kind "cluster") are JSON results that also carry their source fingerprint,
the code hash of their kind and a checksum in a header line; opening one checks all three.

Total size (profile entries and JSON results together) is bounded; least recently used entries
are evicted, and so are temporary folders and files a killed writer left (after an hour).

Location: ``$TB_COMPARE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tb-compare``, else
``~/.cache/tb-compare``.  ``TB_COMPARE_CACHE=0`` disables it; ``TB_COMPARE_CACHE_MAX_MB`` sets the
bound (default 8192 MB).
"""
from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import fields

import numpy as np
import pandas as pd

from . import __version__
from .model import Profile, ProfileMeta, SymbolTable

log = logging.getLogger(__name__)
FORMAT_VERSION = 1


def default_dir() -> str:
    env = os.environ.get("TB_COMPARE_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tb-compare")


def enabled() -> bool:
    return os.environ.get("TB_COMPARE_CACHE", "1").lower() not in ("0", "false", "no", "off")


PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# what shapes a Profile, and what (on top of that) shapes a result: folders and modules of the package
CODE = {"profile": ("loaders", "model", "formats", "cache.py"),
        "results": ("loaders", "model", "formats", "cache.py", "engines", "analyses", "presenters",
                    "comparison.py", "service"),
        # one rank's RankSummary (analyses/run/summarise*.py and what they read with)
        "summary": ("loaders", "model", "formats", "cache.py", "analyses/run"),
        # a whole run's cluster JSON: which workers discovery finds, their summaries, the analysis
        "cluster": ("loaders", "model", "formats", "discovery", "cache.py", "analyses", "service")}
STALE_TEMP_SECONDS = 3600       # a temporary entry this old belongs to a writer that was killed


def hash_sources(base: str, parts) -> str:
    """A hash of every ``.py`` file under ``base``'s ``parts`` (folders or files): relative
    path and content, in a fixed order.  Other files (data, ``__pycache__``) do not count."""
    files = []
    for part in parts:
        p = os.path.join(base, part)
        if os.path.isfile(p):
            files.append(p)
            continue
        for dirpath, dirs, names in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files.extend(os.path.join(dirpath, n) for n in names if n.endswith(".py"))
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(os.path.relpath(f, base).replace(os.sep, "/").encode("utf-8") + b"\0")
        try:
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
        except OSError:
            h.update(b"?")
    return h.hexdigest()[:16]


_CODE_HASHES: dict = {}


def code_hash(kind: str = "profile") -> str:
    """The hash of the code that makes a ``kind`` entry ("profile" or "results"), once per process;
    without any source file (a package shipped without ``.py`` files), the package version."""
    got = _CODE_HASHES.get(kind)
    if got is None:
        got = hash_sources(PACKAGE_DIR, CODE[kind]) if any(
            os.path.exists(os.path.join(PACKAGE_DIR, p)) for p in CODE[kind]) else __version__
        _CODE_HASHES[kind] = got
    return got


def key_of(fingerprint, kind: str = "profile") -> str:
    raw = json.dumps([FORMAT_VERSION, code_hash(kind), fingerprint], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


_NPY_HEADER_LOCK = threading.Lock()


def _load_npy(path: str) -> np.ndarray:
    """Map one cached column.  One thread at a time: ``np.load`` reads the .npy header with
    ``ast.literal_eval``, and CPython 3.11.7's AST constructor is not safe to run from two threads
    at once ("AST constructor recursion depth mismatch"): two sides read back together (the CLI, the
    plugin's two parses) would otherwise drop a good entry now and then.  Mapping is cheap; the
    lock costs nothing measurable."""
    with _NPY_HEADER_LOCK:
        return np.load(path, mmap_mode="r", allow_pickle=False)


class ProfileCache:
    def __init__(self, root: str | None = None, max_bytes: int | None = None, logdir: str | None = None):
        root = root or default_dir()
        if logdir:
            ld = os.path.realpath(logdir).rstrip(os.sep) + os.sep
            if (os.path.realpath(root) + os.sep).startswith(ld):
                raise ValueError(f"the cache folder {root} is inside the logdir {logdir}; "
                                 "the plugin never writes there")
        self.root = os.path.join(root, f"v{FORMAT_VERSION}")
        mb = os.environ.get("TB_COMPARE_CACHE_MAX_MB")
        self.max_bytes = max_bytes if max_bytes is not None else int(float(mb) * 2 ** 20) if mb else 8 << 30

    # -- profiles ------------------------------------------------------------------------------
    def _entry(self, key: str) -> str:
        return os.path.join(self.root, key)

    def entry_path(self, fingerprint) -> str:
        return self._entry(key_of(fingerprint))

    def discard(self, fingerprint, partial_only: bool = False) -> None:
        """Delete ``fingerprint``'s entry (unless ``partial_only``), and any half-written one
        (a writer killed mid-``put``)."""
        path = self.entry_path(fingerprint)
        folder, key = os.path.split(path)
        for p in ([] if partial_only else [path]) + glob.glob(os.path.join(folder, f".{key}.*")):
            shutil.rmtree(p, ignore_errors=True)

    def has(self, fingerprint) -> bool:
        return os.path.exists(os.path.join(self._entry(key_of(fingerprint)), "meta.json"))

    def get(self, fingerprint) -> Profile | None:
        """The cached profile for ``fingerprint``, or None (also on any corrupt entry)."""
        path = self._entry(key_of(fingerprint))
        meta_path = os.path.join(path, "meta.json")
        if not os.path.exists(meta_path):
            return None
        try:
            with open(meta_path, "r", encoding="utf-8") as f:
                meta = json.load(f)
            with open(os.path.join(path, "symbols.json"), "rb") as f:
                import msgspec
                strings = msgspec.json.decode(f.read())
            tables = {}
            for tname, cols in meta["tables"].items():
                data = {c: _load_npy(os.path.join(path, f"{tname}.{c}.npy")) for c in cols}
                tables[tname] = pd.DataFrame(data, copy=False)
            known = {f.name for f in fields(ProfileMeta)}
            pm = ProfileMeta(**{k: v for k, v in meta["meta"].items() if k in known})
            self._touch(path)
            return Profile(SymbolTable.from_list(strings), pm, tables)
        except Exception as e:  # noqa: BLE001 - a bad entry is a miss, and is removed
            log.warning("profile_compare: dropping unreadable cache entry %s: %s", path, e)
            shutil.rmtree(path, ignore_errors=True)
            return None

    def put(self, fingerprint, profile: Profile) -> str | None:
        """Store ``profile``; returns the entry path (None when the cache cannot be written)."""
        import msgspec
        key = key_of(fingerprint)
        final = self._entry(key)
        if os.path.exists(os.path.join(final, "meta.json")):
            return final
        try:
            os.makedirs(self.root, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=f".{key}.", dir=self.root)
        except OSError as e:
            log.warning("profile_compare: cache folder %s not writable: %s", self.root, e)
            return None
        try:
            cols = {}
            for tname, df in profile.tables.items():
                cols[tname] = list(df.columns)
                for c in df.columns:
                    arr = np.ascontiguousarray(df[c].to_numpy())
                    if arr.dtype == object:
                        raise TypeError(f"{tname}.{c} is not a typed column")
                    np.save(os.path.join(tmp, f"{tname}.{c}.npy"), arr, allow_pickle=False)
            with open(os.path.join(tmp, "symbols.json"), "wb") as f:
                f.write(msgspec.json.encode(profile.symbols.to_list()))
            with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as f:
                json.dump({"tables": cols, "meta": profile.meta.to_dict(), "created": time.time(),
                           "code": code_hash("profile")}, f, default=str)
            try:
                os.rename(tmp, final)
            except OSError:  # another process won the race: keep theirs
                shutil.rmtree(tmp, ignore_errors=True)
            self.evict()
            return final
        except Exception as e:  # noqa: BLE001 - caching is best effort
            log.warning("profile_compare: could not cache a profile: %s", e)
            shutil.rmtree(tmp, ignore_errors=True)
            return None

    # -- small JSON results (e.g. a finished overview) -------------------------------------------
    def get_json(self, key_parts, kind: str = "results"):
        path = os.path.join(self.root, "json", key_of(key_parts, kind) + ".json")
        try:
            with open(path, "r", encoding="utf-8") as f:
                out = json.load(f)
            self._touch(path)
            return out
        except (OSError, ValueError):
            return None

    def put_json(self, key_parts, obj, kind: str = "results") -> None:
        folder = os.path.join(self.root, "json")
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(obj, f)
            os.replace(tmp, os.path.join(folder, key_of(key_parts, kind) + ".json"))
        except (OSError, TypeError, ValueError) as e:
            log.warning("profile_compare: could not cache a result: %s", e)
            return
        self.evict()

    # -- checked records (a rank's summary, a run's cluster JSON) -------------------------------
    # One file in json/: a header line {"source", "code", "sha256", "bytes"} and the payload's JSON
    # text.  Opening one checks all four against what the caller expects; any mismatch or damage
    # is a miss (and the file is removed), so a record can change the speed, never the result.
    def _record_path(self, key_parts, kind: str) -> str:
        return os.path.join(self.root, "json", key_of(key_parts, kind) + ".rec.json")

    def get_record(self, key_parts, kind: str, source):
        """The payload stored for ``key_parts`` if its header names ``source`` and this code, and
        its checksum holds; else None."""
        path = self._record_path(key_parts, kind)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError:
            return None
        try:
            head, _, body = raw.partition(b"\n")
            meta = json.loads(head)
            want = json.loads(json.dumps(source, default=str))
            if (meta.get("source") != want or meta.get("code") != code_hash(kind)
                    or meta.get("bytes") != len(body) or meta.get("sha256") != hashlib.sha256(body).hexdigest()):
                raise ValueError("source, code or checksum does not match")
            out = json.loads(body)
        except (ValueError, AttributeError) as e:
            log.warning("profile_compare: dropping cache record %s: %s", path, e)
            try:
                os.unlink(path)
            except OSError:
                pass
            return None
        self._touch(path)
        return out

    def put_record(self, key_parts, kind: str, source, payload, evict: bool = True) -> bool:
        """Store ``payload`` (JSON-able) for ``key_parts``; written to a temporary file and renamed,
        so a killed writer leaves no half record (only a temporary file, swept after an hour).
        ``evict=False`` for a batch of puts (call :meth:`evict` once after)."""
        folder = os.path.join(self.root, "json")
        tmp = None
        try:
            body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
            head = json.dumps({"source": source, "code": code_hash(kind), "bytes": len(body),
                               "sha256": hashlib.sha256(body).hexdigest()}, default=str).encode("utf-8")
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=folder)
            with os.fdopen(fd, "wb") as f:
                f.write(head + b"\n" + body)
            os.replace(tmp, self._record_path(key_parts, kind))
        except (OSError, TypeError, ValueError) as e:
            log.warning("profile_compare: could not cache a %s record: %s", kind, e)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return False
        if evict:
            self.evict()
        return True

    # -- bound ---------------------------------------------------------------------------------
    @staticmethod
    def _touch(path: str) -> None:
        try:
            os.utime(path, None)
        except OSError:
            pass

    def entries(self) -> list[tuple[float, int, str]]:
        """(last use, bytes, path) of every complete entry."""
        out = []
        try:
            names = os.listdir(self.root)
        except OSError:
            return out
        for n in names:
            p = os.path.join(self.root, n)
            if n.startswith(".") or n == "json" or not os.path.isdir(p):
                continue
            try:
                size = sum(e.stat().st_size for e in os.scandir(p))
                out.append((os.stat(p).st_mtime, size, p))
            except OSError:
                continue
        return out

    def json_entries(self) -> list[tuple[float, int, str]]:
        """(last use, bytes, path) of every stored JSON result."""
        out = []
        try:
            scan = list(os.scandir(os.path.join(self.root, "json")))
        except OSError:
            return out
        for e in scan:
            if e.name.endswith(".json") and not e.name.startswith("."):
                try:
                    st = e.stat()
                    out.append((st.st_mtime, st.st_size, e.path))
                except OSError:
                    continue
        return out

    def _drop_stale_temps(self) -> None:
        """Temporary folders / files of writers killed mid-write (older than an hour)."""
        old = time.time() - STALE_TEMP_SECONDS
        for folder in (self.root, os.path.join(self.root, "json")):
            try:
                scan = list(os.scandir(folder))
            except OSError:
                continue
            for e in scan:
                try:
                    if e.name.startswith(".") and e.stat(follow_symlinks=False).st_mtime < old:
                        if e.is_dir(follow_symlinks=False):
                            shutil.rmtree(e.path, ignore_errors=True)
                        else:
                            os.unlink(e.path)
                except OSError:
                    continue

    def evict(self) -> None:
        """Keep profile entries and JSON results together under ``max_bytes``, least recently
        used first out."""
        self._drop_stale_temps()
        ents = sorted(self.entries() + self.json_entries())
        total = sum(e[1] for e in ents)
        for _, size, path in ents:
            if total <= self.max_bytes:
                break
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            total -= size
