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

Every entry is checked when it is opened, so the cache can change the speed, never a result.
A profile entry's ``meta.json`` is a header line (the sha256 and length of the rest) and a body
naming the key the entry was stored under, its source (the fingerprint: format, root and every
file's path, size and mtime) and the size and checksum (:func:`checksum_bytes`, a
position-weighted 64-bit sum numpy computes at memory speed) of every column file and of
``symbols.json``.  An entry whose key or source is not the one asked for (entry folders swapped
or copied), or whose bytes do not match (a flipped byte in a column), is dropped with one
warning naming the entry and its source, and the caller parses the profile again.  What the
check costs on the cached reopen of the 1 GB pair is in docs/performance.md
(``bench/cache_verify.py``).  Small JSON results
(``get_json``) and checked records (``get_record`` / ``put_record``: one rank's cluster summary,
kind "summary"; a run's cluster JSON, kind "cluster") carry a header line with their key (and,
for records, their source fingerprint), the code hash of their kind and a checksum; opening one
checks them all.

Total size (profile entries and JSON results together) is bounded; least recently used entries
are evicted, and so are temporary folders and files a killed writer left (after an hour).  An
entry in use is never evicted: while a process reads or parses a profile it holds a *pin*
(``pins/<key>.<pid>.<n>`` beside ``v<N>/``, a file it keeps ``flock``-ed; a pin whose holder
died is unlocked, and removed by the next eviction), and a writer never evicts the entry it has
just stored.  So a
bound smaller than one profile makes every run parse again (slower), never fail.  A cache folder
that cannot be written is reported once per process (``warn_unwritable``); profiles are then
parsed without it.

Location: ``$TB_COMPARE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tb-compare``, else
``~/.cache/tb-compare``.  ``TB_COMPARE_CACHE=0`` disables it; ``TB_COMPARE_CACHE_MAX_MB`` sets the
bound (default 8192 MB).
"""
from __future__ import annotations

import glob
import hashlib
import itertools
import json
import logging
import mmap
import os
import re
import shutil
import tempfile
import threading
import time
import zlib
from contextlib import contextmanager
from dataclasses import fields

try:
    import fcntl
except ImportError:                 # not POSIX: a pin counts as held until it is an hour old
    fcntl = None

import numpy as np
import pandas as pd

from . import __version__
from .constcols import constant_column, constant_of
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


# the header ``np.save`` writes for a 1-D little-endian (or byte) array, format version 1.0
_NPY_PLAIN = re.compile(rb"\{'descr': '([<|][iufb][1248])', 'fortran_order': False, 'shape': \((\d+),\), \} *\n")


def _map_plain_npy(path: str) -> np.ndarray | None:
    """The column at ``path`` mapped read-only without ``np.load``'s header parsing (~0.15 ms a
    file; a 1 GB trace's hand-off has ~120): only for the plain 1-D arrays :meth:`ProfileCache.put`
    writes; None for anything else."""
    with open(path, "rb") as f:
        head = f.read(256)
        if head[:8] != b"\x93NUMPY\x01\x00" or len(head) < 10:
            return None
        end = 10 + int.from_bytes(head[8:10], "little")
        m = _NPY_PLAIN.fullmatch(head[10:end]) if end <= len(head) else None
        if m is None:
            return None
        dtype, n = np.dtype(m[1].decode("ascii")), int(m[2])
        if os.fstat(f.fileno()).st_size != end + n * dtype.itemsize:
            return None
        if n == 0:
            out = np.zeros(0, dtype)
            out.flags.writeable = False
            return out
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mm, dtype, count=n, offset=end)


def _load_npy(path: str) -> np.ndarray:
    """Map one cached column (read-only).  The plain columns the cache writes are mapped
    directly (:func:`_map_plain_npy`); anything else goes through ``np.load``, one thread at a
    time: it reads the .npy header with ``ast.literal_eval``, and CPython 3.11.7's AST constructor
    is not safe to run from two threads at once ("AST constructor recursion depth mismatch"): two
    sides read back together (the CLI, the plugin's two parses) would otherwise drop a good entry
    now and then."""
    got = _map_plain_npy(path)
    if got is not None:
        return got
    with _NPY_HEADER_LOCK:
        return np.load(path, mmap_mode="r", allow_pickle=False)


def _load_column(path: str, name: str, consts: dict) -> np.ndarray:
    """Column ``name`` (``table.column``) of the entry at ``path``: mapped from its file, or
    made from the value ``put`` recorded for it (``compact_constants``)."""
    if name in consts:
        dtype, n, value = consts[name]
        return constant_column(bytes.fromhex(value), np.dtype(dtype), int(n))
    return _load_npy(os.path.join(path, name + ".npy"))


def _move_born(born, arr: np.ndarray, dest: str) -> bool:
    """Whether ``arr``'s file, written as the parse made it (:mod:`.borncols`), is now ``dest``."""
    src = born.file_of(arr) if born is not None else None
    if src is None:
        return False
    try:
        os.rename(src, dest)
    except OSError:
        return False
    return True


class DamagedEntry(ValueError):
    """A cache entry that is not what its key promises (what is wrong, in a few words)."""


def _normal(value):
    """``value`` as JSON gives it back (tuples become lists, other objects their ``str``)."""
    return json.loads(json.dumps(value, default=str))


def source_name(fingerprint) -> str:
    """The source a fingerprint stands for, for a user: a worker's root (its second part), else
    the whole fingerprint."""
    if isinstance(fingerprint, (tuple, list)) and len(fingerprint) >= 2 and isinstance(fingerprint[1], str):
        return fingerprint[1]
    return str(fingerprint)


_CHUNK = 1 << 18                    # words per chunk of the checksum (2 MiB of weights)
_WEIGHTS = None
_MASK = (1 << 64) - 1
CHECKSUM = "wsum64"                 # the name stored with the sums: another one is a mismatch


def _weights() -> np.ndarray:
    global _WEIGHTS
    if _WEIGHTS is None:
        _WEIGHTS = np.arange(1, 2 * _CHUNK, 2, dtype=np.uint64)      # 1, 3, 5, ...
    return _WEIGHTS


def checksum_bytes(data) -> int:
    """A position-weighted 64-bit sum of ``data`` (bytes, or a mapping): the little-endian words
    of each chunk of ``_CHUNK`` words dotted with the odd weights 1, 3, 5, ..., each chunk's sum
    times the odd weight 2c + 1 of its chunk number c, all mod 2**64; the last ``len % 8`` bytes
    through CRC-32.  Any change within one word (every flipped byte or bit) changes it (an odd
    weight is invertible mod 2**64), and so do two words swapped (unless their difference times
    twice their distance is 0 mod 2**64).  numpy does it at memory speed, the GIL released: about
    twice as fast as ``zlib.crc32`` here, four times sha1 (docs/performance.md)."""
    n = len(data) // 8
    total = 0
    if n:
        words = np.frombuffer(data, dtype="<u8", count=n)
        w = _weights()
        try:
            for c, i in enumerate(range(0, n, _CHUNK)):
                part = words[i:i + _CHUNK]
                total = (total + int(np.dot(part, w[:len(part)])) * (2 * c + 1)) & _MASK
                del part
        finally:
            del words                   # no view left on a mapping its caller closes
    tail = zlib.crc32(bytes(memoryview(data)[n * 8:]))
    return (total ^ (tail << 32) ^ len(data)) & _MASK


def checksum_file(path: str) -> tuple[int, int]:
    """(size, :func:`checksum_bytes`) of a file, read through a mapping (no copy)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 1 << 16:
            return size, checksum_bytes(f.read())
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return size, checksum_bytes(m)
        finally:
            m.close()


def checked_bytes(head: dict, body: bytes) -> bytes:
    """A header line (``head`` plus the body's length and sha256) and the body."""
    head = dict(head, bytes=len(body), sha256=hashlib.sha256(body).hexdigest())
    return json.dumps(head, default=str).encode("utf-8") + b"\n" + body


def read_checked(raw: bytes, want: dict):
    """The body of ``checked_bytes`` output, after checking its length, checksum and that its
    header holds ``want``; raises :class:`DamagedEntry` naming what does not match."""
    head, _, body = raw.partition(b"\n")
    try:
        meta = json.loads(head)
    except ValueError:
        raise DamagedEntry("its header is unreadable") from None
    if not isinstance(meta, dict):
        raise DamagedEntry("its header is unreadable")
    if meta.get("bytes") != len(body) or meta.get("sha256") != hashlib.sha256(body).hexdigest():
        raise DamagedEntry("its checksum does not match its data")
    for k, v in want.items():
        if meta.get(k) != _normal(v):
            raise DamagedEntry(f"it was stored for another {k}")
    return body


_WARNED_UNWRITABLE: set = set()
_WARN_LOCK = threading.Lock()


def warn_unwritable(folder: str, err) -> None:
    """One warning per process and folder: the cache folder cannot be written."""
    with _WARN_LOCK:
        if folder in _WARNED_UNWRITABLE:
            return
        _WARNED_UNWRITABLE.add(folder)
    why = getattr(err, "strerror", None) or str(err)
    if getattr(err, "filename", None) and err.filename != folder:
        why = f"{why}: {err.filename}"
    log.warning("profile_compare: the cache folder %s cannot be written (%s); profiles are parsed "
                "without storing them", folder, why)


_PIN_SEQ = itertools.count()
UNBOUNDED = 1 << 60                 # a bound this large never evicts: no pins needed
PINS = "pins"                       # beside v<N>/: no version of the cache takes it for an entry


class _Pin:
    """A pin on one key: a file in ``pins/`` this process keeps ``flock``-ed.  Best effort: in a
    folder that cannot be written there is no pin (and nothing this process writes to evict)."""

    def __init__(self, folder: str, key: str) -> None:
        self.path, self.fd = None, None
        name = f"{key}.{os.getpid()}.{next(_PIN_SEQ)}"
        tmp = os.path.join(folder, "~" + name)
        try:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        except OSError:
            return
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(tmp, os.path.join(folder, name))     # seen under its name only when locked
            self.fd, self.path = fd, os.path.join(folder, name)
        except OSError:
            os.close(fd)
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


def pinned_keys(folder: str) -> set:
    """Keys pinned by a live holder; pins of dead holders (unlocked) are removed."""
    out = set()
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    old = time.time() - STALE_TEMP_SECONDS
    for n in names:
        p = os.path.join(folder, n)
        key = n.lstrip("~").split(".", 1)[0]
        if n.startswith("~") or fcntl is None:   # being made, or no locks: live until an hour old
            try:
                if os.stat(p).st_mtime < old:
                    os.unlink(p)
                    continue
            except OSError:
                continue
            out.add(key)
            continue
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            out.add(key)                          # held: in use
        else:
            try:
                os.unlink(p)                      # its holder is gone
            except OSError:
                pass
        finally:
            os.close(fd)
    return out


class ProfileCache:
    check_columns = True
    """Checksum every column file when an entry is stored and opened (see the module's docstring).
    Off only for the parser processes' private hand-off folder (``service.parsepool``): an entry
    there is read once, moments after its own child wrote it, and checking it cost ~0.1 s of CPU
    per side on each end of the 1 GB pair's hand-over."""
    compact_constants = False
    """Record a column whose rows all hold one value (1 MB or more) by that value, not as a file
    (:mod:`.constcols`).  On only for the hand-off folder, like ``check_columns`` off: a cache
    entry is kept, and its format stays what every version reads."""

    def __init__(self, root: str | None = None, max_bytes: int | None = None, logdir: str | None = None):
        root = root or default_dir()
        if logdir:
            ld = os.path.realpath(logdir).rstrip(os.sep) + os.sep
            if (os.path.realpath(root) + os.sep).startswith(ld):
                raise ValueError(f"the cache folder {root} is inside the logdir {logdir}; "
                                 "the plugin never writes there")
        self.folder = root
        self.root = os.path.join(root, f"v{FORMAT_VERSION}")
        mb = os.environ.get("TB_COMPARE_CACHE_MAX_MB")
        self.max_bytes = max_bytes if max_bytes is not None else int(float(mb) * 2 ** 20) if mb else 8 << 30
        self.pins = os.path.join(root, PINS)
        self.read_only = False          # set when the folder cannot be written (warned once)

    # -- can it be written? ----------------------------------------------------------------------
    def unwritable(self) -> OSError | None:
        """None when an entry can be written here, else the error trying gave."""
        try:
            os.makedirs(self.root, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".probe", dir=self.root)
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            return e
        return None

    def _cannot_write(self, err) -> None:
        warn_unwritable(self.folder, err)

    # -- pins: entries in use are never evicted --------------------------------------------------
    @contextmanager
    def pin(self, fingerprint):
        """Hold ``fingerprint``'s entry (present or still to be written) against eviction, by
        any process sharing the cache, for the ``with`` block.  A cache that never evicts (the
        parser pool's hand-off folder) takes no pins."""
        pin = None if self.read_only or self.max_bytes >= UNBOUNDED else _Pin(
            self.pins, key_of(fingerprint))
        try:
            yield
        finally:
            if pin is not None:
                pin.release()

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

    def _read_meta(self, path: str, key: str, fingerprint) -> dict:
        with open(os.path.join(path, "meta.json"), "rb") as f:
            raw = f.read()
        try:
            body = read_checked(raw, {})
            meta = json.loads(body)
        except ValueError as e:
            raise DamagedEntry(f"meta.json: {e}") from None
        if not isinstance(meta, dict) or not isinstance(meta.get("files"), dict) \
                or meta.get("checksum") != CHECKSUM:
            raise DamagedEntry("meta.json records no checksums")
        if meta.get("key") != key:
            raise DamagedEntry(f"it holds another entry: {str(meta.get('key'))[:32]}, of "
                               f"{source_name(meta.get('source'))}")
        if meta.get("source") != _normal(fingerprint):
            raise DamagedEntry(f"it was stored for another source ({source_name(meta.get('source'))})")
        return meta

    def _file_sum(self, path: str) -> tuple:
        """(size, checksum) of a column file as stored; (size, None) when columns are not checked."""
        return checksum_file(path) if self.check_columns else (os.path.getsize(path), None)

    @staticmethod
    def _check_files(path: str, files: dict) -> None:
        for name, (size, crc) in files.items():
            got = checksum_file(os.path.join(path, name))
            if got != (size, crc):
                raise DamagedEntry(f"{name} does not match its checksum")

    def get(self, fingerprint) -> Profile | None:
        """The cached profile for ``fingerprint``, or None.  A damaged entry (see the module's
        docstring) is removed, with one warning; an entry that vanished (evicted by another
        process) is a plain miss."""
        key = key_of(fingerprint)
        path = self._entry(key)
        meta_path = os.path.join(path, "meta.json")
        if not os.path.exists(meta_path):
            return None
        with self.pin(fingerprint):
            try:
                meta = self._read_meta(path, key, fingerprint)
                if self.check_columns:
                    self._check_files(path, meta["files"])
                with open(os.path.join(path, "symbols.json"), "rb") as f:
                    import msgspec
                    strings = msgspec.json.decode(f.read())
                tables = {}
                consts = meta.get("constants") or {}
                for tname, cols in meta["tables"].items():
                    data = {c: _load_column(path, f"{tname}.{c}", consts) for c in cols}
                    tables[tname] = pd.DataFrame(data, copy=False)
                known = {f.name for f in fields(ProfileMeta)}
                pm = ProfileMeta(**{k: v for k, v in meta["meta"].items() if k in known})
                self._touch(path)
                return Profile(SymbolTable.from_list(strings), pm, tables)
            except Exception as e:  # noqa: BLE001 - a bad entry is a miss, and is removed
                if not os.path.exists(meta_path):
                    log.debug("profile_compare: cache entry %s went away while read", path)
                    return None
                why = str(e) if isinstance(e, DamagedEntry) else f"unreadable: {type(e).__name__}: {e}"
                log.warning("profile_compare: dropping the damaged cache entry %s of %s (%s); "
                            "reading the source again", path, source_name(fingerprint), why)
                shutil.rmtree(path, ignore_errors=True)
                return None

    def put(self, fingerprint, profile: Profile, evict: bool = True, born=None) -> str | None:
        """Store ``profile``; returns the entry path (None when the cache cannot be written).
        The entry just stored is never the one evicted to make room.  ``born``: the
        :class:`.borncols.BornColumns` the profile's parse wrote columns into (same file
        system): those files are moved into the entry as they are, not written again."""
        import msgspec
        if self.read_only:
            return None
        key = key_of(fingerprint)
        final = self._entry(key)
        if os.path.exists(os.path.join(final, "meta.json")):
            return final
        try:
            os.makedirs(self.root, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=f".{key}.", dir=self.root)
        except OSError as e:
            self._cannot_write(e)
            return None
        try:
            cols, files, consts = {}, {}, {}
            for tname, df in profile.tables.items():
                cols[tname] = list(df.columns)
                for c in df.columns:
                    arr = np.ascontiguousarray(df[c].to_numpy())
                    if arr.dtype == object:
                        raise TypeError(f"{tname}.{c} is not a typed column")
                    value = None
                    if self.compact_constants:
                        value = born.constant_of(arr) if born is not None else None
                        if value is None:
                            value = constant_of(arr)
                    if value is not None:       # its value, not its rows (~60 MB of a 1 GB trace's hand-off)
                        consts[f"{tname}.{c}"] = [arr.dtype.str, len(arr), value.hex()]
                        continue
                    name = f"{tname}.{c}.npy"
                    if not _move_born(born, arr, os.path.join(tmp, name)):
                        np.save(os.path.join(tmp, name), arr, allow_pickle=False)
                    files[name] = self._file_sum(os.path.join(tmp, name))
            with open(os.path.join(tmp, "symbols.json"), "wb") as f:
                f.write(msgspec.json.encode(profile.symbols.to_list()))
            files["symbols.json"] = self._file_sum(os.path.join(tmp, "symbols.json"))
            body = json.dumps({"key": key, "source": fingerprint, "tables": cols,
                               "meta": profile.meta.to_dict(), "checksum": CHECKSUM, "files": files,
                               **({"constants": consts} if consts else {}),
                               "created": time.time(),
                               "code": code_hash("profile")}, default=str).encode("utf-8")
            with open(os.path.join(tmp, "meta.json"), "wb") as f:
                f.write(checked_bytes({"kind": "profile"}, body))
            try:
                os.rename(tmp, final)
            except OSError:  # another process won the race: keep theirs
                shutil.rmtree(tmp, ignore_errors=True)
            if evict:
                self.evict(keep=(key,))
            return final
        except Exception as e:  # noqa: BLE001 - caching is best effort
            if isinstance(e, OSError):
                self._cannot_write(e)
            else:
                log.warning("profile_compare: could not cache a profile: %s", e)
            shutil.rmtree(tmp, ignore_errors=True)
            return None

    # -- small JSON results (e.g. a finished overview) -------------------------------------------
    # Checked like records (below): a header line with the key, the code hash and a checksum.
    def _json_path(self, key: str) -> str:
        return os.path.join(self.root, "json", key + ".json")

    def _read_json_file(self, path: str, want: dict, what):
        """The JSON stored at ``path`` if its header holds ``want`` and its checksum holds; a
        damaged or mismatched file is removed with one warning; None when absent or removed."""
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError:
            return None
        try:
            out = json.loads(read_checked(raw, want))
        except ValueError as e:
            log.warning("profile_compare: dropping the cache record %s of %s: %s", path, what, e)
            try:
                os.unlink(path)
            except OSError:
                pass
            return None
        self._touch(path)
        return out

    def _write_json_file(self, path: str, head: dict, payload, what: str) -> bool:
        if self.read_only:
            return False
        folder = os.path.dirname(path)
        tmp = None
        try:
            data = checked_bytes(head, json.dumps(payload, separators=(",", ":")).encode("utf-8"))
        except (TypeError, ValueError) as e:
            log.warning("profile_compare: could not cache a %s: %s", what, e)
            return False
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=folder)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError as e:
            self._cannot_write(e)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return False
        return True

    def get_json(self, key_parts, kind: str = "results"):
        key = key_of(key_parts, kind)
        return self._read_json_file(self._json_path(key), {"key": key, "code": code_hash(kind)},
                                    f"result {key}")

    def put_json(self, key_parts, obj, kind: str = "results") -> None:
        key = key_of(key_parts, kind)
        if self._write_json_file(self._json_path(key), {"key": key, "code": code_hash(kind)}, obj, "result"):
            self.evict()

    # -- checked records (a rank's summary, a run's cluster JSON) -------------------------------
    # One file in json/: a header line {"key", "source", "code", "sha256", "bytes"} and the
    # payload's JSON text.  Opening one checks them all against what the caller expects; any
    # mismatch or damage is a miss (and the file is removed), so a record can change the speed,
    # never the result.
    def _record_path(self, key_parts, kind: str) -> str:
        return os.path.join(self.root, "json", key_of(key_parts, kind) + ".rec.json")

    def get_record(self, key_parts, kind: str, source):
        """The payload stored for ``key_parts`` if its header names this key, ``source`` and this
        code, and its checksum holds; else None."""
        key = key_of(key_parts, kind)
        return self._read_json_file(self._record_path(key_parts, kind),
                                    {"key": key, "source": source, "code": code_hash(kind)},
                                    source_name(source))

    def put_record(self, key_parts, kind: str, source, payload, evict: bool = True) -> bool:
        """Store ``payload`` (JSON-able) for ``key_parts``; written to a temporary file and renamed,
        so a killed writer leaves no half record (only a temporary file, swept after an hour).
        ``evict=False`` for a batch of puts (call :meth:`evict` once after)."""
        head = {"key": key_of(key_parts, kind), "source": source, "code": code_hash(kind)}
        if not self._write_json_file(self._record_path(key_parts, kind), head, payload, f"{kind} record"):
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

    def evict(self, keep=()) -> None:
        """Keep profile entries and JSON results together under ``max_bytes``, least recently
        used first out; never an entry pinned by a live process, nor one of ``keep`` (keys).  What
        is in use may hold the total over the bound until it is no longer in use."""
        self._drop_stale_temps()
        ents = sorted(self.entries() + self.json_entries())
        total = sum(e[1] for e in ents)
        if total <= self.max_bytes:
            return
        spare = set(keep) | pinned_keys(self.pins)
        for _, size, path in ents:
            if total <= self.max_bytes:
                break
            if os.path.isdir(path):
                if os.path.basename(path) in spare:
                    continue
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            total -= size
