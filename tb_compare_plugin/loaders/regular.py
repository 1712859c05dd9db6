"""Opening a profile file for a loader: regular files only.

Discovery lists a worker's files once; by the time a loader opens one it may have been replaced by
a FIFO (whose ``open`` blocks until a writer appears, so a parse would hang forever), a socket or a
device.  :func:`open_regular` is the one way loaders open a file: it refuses anything but a regular
file with a :class:`LoadError` naming it, checked on the path and again on the open descriptor
(opened non-blocking, so even a FIFO swapped in between the two checks cannot block).  A missing or
unreadable file still raises the ``OSError`` it did, so each caller keeps its own wording for those.
"""
from __future__ import annotations

import os
import stat

from .errors import LoadError

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def not_regular(path, mode: int) -> LoadError:
    return LoadError(str(path), f"not a regular file ({_kind(mode)}); tb-compare reads only regular "
                                "files (was it replaced after the profile was listed?)")


def check_regular(path) -> os.stat_result:
    """``os.stat(path)`` when it is a regular file; :class:`LoadError` when it is something else
    (``OSError`` when it is missing or cannot be stat'ed)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(path, st.st_mode)
    return st


def open_regular(path, mode: str = "rb", **text):
    """``open(path, mode, **text)`` for reading, for a regular file only (see the module doc).
    ``mode`` is ``"rb"`` or a text mode (``"r"``); ``text`` are ``open``'s encoding, errors and
    newline arguments."""
    if "w" in mode or "a" in mode or "+" in mode or "x" in mode:
        raise ValueError(f"open_regular reads only, not mode {mode!r}")
    check_regular(path)
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, mode, **text)
    except BaseException:
        os.close(fd)
        raise


def read_text_regular(path, encoding: str = "utf-8", errors: str = "strict") -> str:
    """The whole text of regular file ``path`` (``Path.read_text`` for loaders)."""
    with open_regular(path, "r", encoding=encoding, errors=errors) as f:
        return f.read()
