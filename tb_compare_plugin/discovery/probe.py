"""Cheap, format-neutral probes the format descriptors use to recognise paths: a stat-keyed
memo (rescans re-read nothing unchanged), a bounded header read that opens regular files only,
the special files (FIFO, socket, device) in a folder, the rank in a file name, and the
(path, size, mtime) of a worker's files.  Knows no format.

Every read failure of one file (missing, no permission, not a regular file, damaged gzip data)
comes out of :func:`read_head` and :func:`open_regular` as :class:`Unreadable`, an ``OSError``
whose text names the file and the problem: the recogniser makes it that worker's error."""
from __future__ import annotations

import gzip
import os
import re
import stat
import zlib

from .spec import file_stat

SNIFF_BYTES = 256 * 1024
_RANK_RE = re.compile(r"rank[_-]?(\d+)", re.I)
_MEMO: dict = {}
_MEMO_MAX = 4096


class Unreadable(OSError):
    """One file could not be read; ``str()`` is ``"<path>: <problem>"``."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(problem)
        self.path, self.problem = path, problem

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def kind_of(mode: int) -> str:
    """What a non-regular file is, for messages ("a FIFO", "a socket", ...)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def not_regular(path: str, mode: int) -> Unreadable:
    return Unreadable(path, f"not a regular file ({kind_of(mode)}); tb-compare reads only regular files")


def problem_of(e: BaseException) -> str:
    """A short text for why reading a file failed (no path)."""
    if isinstance(e, Unreadable):
        return e.problem
    if isinstance(e, FileNotFoundError):
        return "the file vanished or does not exist"
    if isinstance(e, PermissionError):
        return "cannot read it (permission denied)"
    if isinstance(e, gzip.BadGzipFile):
        return f"not gzip data ({e})"
    if isinstance(e, zlib.error):
        return f"the gzip data is damaged ({e})"
    if isinstance(e, EOFError):
        return "the gzip data ends early (the file is truncated)"
    if isinstance(e, UnicodeError):
        return f"cannot decode the text ({e})"
    if isinstance(e, OSError):
        return f"cannot read it ({e.strerror or e})"
    if isinstance(e, RecursionError):
        return "nested too deeply to read"
    return f"{type(e).__name__}: {e}"


def check_regular(path: str) -> os.stat_result:
    """``os.stat(path)`` (following links) when it is a regular file; else raises
    :class:`Unreadable` (missing, no permission, a FIFO, socket, device or folder)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise Unreadable(path, problem_of(e)) from e
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(path, st.st_mode)
    return st


def open_regular(path: str):
    """A binary file object for ``path``, which must be a regular file: never opens a FIFO
    (which would block), a socket or a device.  Checked before opening, and again on the open
    descriptor (the path may have been replaced in between)."""
    st = check_regular(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Unreadable(path, problem_of(e)) from e
    try:
        st2 = os.fstat(fd)
        if not stat.S_ISREG(st2.st_mode):
            raise not_regular(path, st2.st_mode)
        if (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
            raise Unreadable(path, "the file was replaced while being opened")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str, n: int) -> bytes:
    """At most ``n`` bytes from the start of regular file ``path`` (:class:`Unreadable` else)."""
    try:
        with open_regular(path) as f:
            return f.read(n)
    except Unreadable:
        raise
    except Exception as e:  # noqa: BLE001 - any read failure is this file's problem
        raise Unreadable(path, problem_of(e)) from e


def read_head(path: str, n: int = SNIFF_BYTES) -> bytes:
    """At most ``n`` bytes (decompressed for ``.gz``) from the start of ``path``; any failure
    (damaged gzip data included) raises :class:`Unreadable` naming the file."""
    if not path.endswith(".gz"):
        return read_bytes(path, n)
    try:
        with open_regular(path) as raw, gzip.GzipFile(fileobj=raw, mode="rb") as f:
            return f.read(n)
    except Unreadable:
        raise
    except Exception as e:  # noqa: BLE001 - zlib.error, EOFError, BadGzipFile, OSError...
        raise Unreadable(path, problem_of(e)) from e


def special_files(folder: str, match=None) -> list:
    """``(path, kind)`` of each entry of ``folder`` that is neither a regular file nor a folder
    (a FIFO, socket or device, or a link to one), optionally only names for which
    ``match(name)`` is true.  Links that lead nowhere are not counted.  [] when unreadable."""
    out = []
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return out
    for e in entries:
        if match is not None and not match(e.name):
            continue
        try:
            if e.is_dir() or e.is_file():
                continue
            st = e.stat()                   # follows links; a dangling link raises
        except OSError:
            continue
        out.append((e.path, kind_of(st.st_mode)))
    return sorted(out)


def special_error(found: list) -> str | None:
    """The worker error for the special files ``special_files`` found, or None."""
    if not found:
        return None
    path, kind = found[0]
    more = f" (and {len(found) - 1} more such entries)" if len(found) > 1 else ""
    return f"{path}: not a regular file ({kind}); tb-compare reads only regular files{more}"


def memo(key, fn):
    """Cache a classification by the stat of its files: rescans re-read nothing unchanged."""
    hit = _MEMO.get(key)
    if hit is None:
        hit = fn()
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = hit
    return hit


def rank_from_name(name: str):
    m = _RANK_RE.search(name)
    return int(m.group(1)) if m else None


def stats(files) -> list:
    """(path, size, mtime) of each file that can still be stat'ed."""
    out = []
    for p in files:
        try:
            out.append(file_stat(p))
        except OSError:
            pass
    return out
