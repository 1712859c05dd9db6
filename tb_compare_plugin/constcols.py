"""Columns that hold one value in every row, or zero in nearly every row: found cheaply
(:func:`constant_of`, :func:`sparse_of`) and made back as read-only arrays that cost memory only
where read or not zero (:func:`constant_column`, :func:`sparse_column`).

A parser process hands its columns to the CLI through files in memory (``service.parsepool``'s
hand-off, in the cache's layout), and writing a file there costs ~0.7–1 ms of CPU a MB; on a
1 GB GPU trace ~60 of the ~220 MB are such columns (``ops.pid``, ``ops.call_stack``, the
NPU-only kernel columns, all NaN or 0).  The hand-off records their value instead, and the
reader makes the column here: zeros on fresh anonymous pages (the kernel's zero page until written), any
other value as a small in-memory file of the value repeated, mapped again and again over one
address range (Linux; elsewhere, or if that fails, ``np.full``).  Either way the array's pages
cost RSS only where they are read, as the mapped file did."""
from __future__ import annotations

import ctypes
import mmap
import os
import threading

import numpy as np

_MIN_BYTES = 1 << 20            # smaller columns are written as they are: nothing to gain
_PERIOD = 1 << 18               # the repeated file's size (a multiple of every page size Linux uses)
_SAMPLE = 4093                  # stride of the first, cheap test (a prime: no alignment with patterns)
_CHUNK = 1 << 16                # rows compared at a time in the full test (no n-sized temporary)


def bits_of(arr: np.ndarray) -> np.ndarray | None:
    """``arr`` viewed as unsigned integers of its item size (NaN payloads and -0.0 compared as
    the bytes they are), or None for an item size without such a type."""
    kind = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(arr.dtype.itemsize)
    if kind is None or arr.ndim != 1 or not arr.flags.c_contiguous or arr.dtype.kind not in "iufb":
        return None
    return arr.view(kind)


def constant_of(arr: np.ndarray) -> bytes | None:
    """The one value (its bytes) every row of ``arr`` holds, bit for bit; None when the rows
    differ, the column is small (under 1 MB) or not a plain 1-D number column."""
    if arr.nbytes < _MIN_BYTES or not len(arr):
        return None
    bits = bits_of(arr)
    if bits is None:
        return None
    first = bits[0]
    if (bits[::_SAMPLE] != first).any() or bits[-1] != first:
        return None
    for i in range(0, len(bits), _CHUNK):
        if (bits[i:i + _CHUNK] != first).any():
            return None
    return arr[:1].tobytes()


class _Repeated:
    """Owns one address range where a file of the value repeated is mapped again and again;
    unmapped when the last array on it is gone.  Exposes the range to numpy
    (``__array_interface__``), read-only."""

    def __init__(self, addr: int, size: int, dtype: np.dtype, n: int) -> None:
        self._addr, self._size = addr, size
        self.__array_interface__ = {"data": (addr, True), "shape": (n,), "typestr": dtype.str, "version": 3}

    def __del__(self) -> None:
        if self._addr:
            _libc().munmap(ctypes.c_void_p(self._addr), ctypes.c_size_t(self._size))
            self._addr = 0


_LIBC: list = []
_LIBC_LOCK = threading.Lock()


def _libc():
    with _LIBC_LOCK:
        if not _LIBC:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]
            libc.munmap.restype = ctypes.c_int
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            _LIBC.append(libc)
        return _LIBC[0]


_FAILED = ctypes.c_void_p(-1).value
_PROT_NONE, _MAP_FIXED = 0, 0x10        # Linux's values (Python's mmap module names neither before 3.13)


_PATTERNS: dict = {}                # value's bytes -> an in-memory file of it repeated (kept open)
_MAX_PATTERNS = 32


def _pattern(value: bytes) -> tuple[int, bool]:
    """(descriptor, whether the caller closes it) of a :data:`_PERIOD`-byte in-memory file of
    ``value`` repeated: one per distinct value this process met (a 1 GB GPU trace's hand-off has
    5: NaN, 0, -1, the pid, the device), kept for the next column or profile; beyond 32 values,
    a new one each time, for the caller to close once mapped."""
    with _LIBC_LOCK:
        fd = _PATTERNS.get(value)
        if fd is not None:
            return fd, False
        fd = os.memfd_create("tbc-constant", os.MFD_CLOEXEC)
        try:
            os.write(fd, value * (_PERIOD // len(value)))
        except OSError:
            os.close(fd)
            raise
        if len(_PATTERNS) < _MAX_PATTERNS:
            _PATTERNS[value] = fd
            return fd, False
        return fd, True


def _repeated(value: bytes, dtype: np.dtype, n: int) -> np.ndarray:
    """``n`` rows of ``value`` on a repeatedly mapped in-memory file (raises OSError when the
    system cannot do it)."""
    if not hasattr(os, "memfd_create") or not hasattr(mmap, "MAP_ANONYMOUS") \
            or _PERIOD % mmap.PAGESIZE or _PERIOD % dtype.itemsize:
        raise OSError("no memfd_create")
    libc = _libc()
    size = -(-n * dtype.itemsize // _PERIOD) * _PERIOD
    fd, close = _pattern(value)
    try:
        base = libc.mmap(None, size, _PROT_NONE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if base in (None, _FAILED):
            raise OSError(ctypes.get_errno(), "mmap")
        owner = _Repeated(base, size, dtype, n)     # unmaps the whole range if a step below fails
        for off in range(0, size, _PERIOD):
            got = libc.mmap(base + off, _PERIOD, mmap.PROT_READ, mmap.MAP_SHARED | _MAP_FIXED, fd, 0)
            if got != base + off:
                raise OSError(ctypes.get_errno(), "mmap")
    finally:
        if close:
            os.close(fd)            # the mappings keep the file
    out = np.asarray(owner)
    out.flags.writeable = False
    return out


def constant_column(value: bytes, dtype, n: int) -> np.ndarray:
    """``n`` rows of ``value`` (one item's bytes) as a read-only ``dtype`` array whose pages
    cost memory only once read."""
    dtype = np.dtype(dtype)
    if len(value) != dtype.itemsize:
        raise ValueError(f"a constant of {len(value)} bytes for {dtype}")
    if n and not any(value):        # fresh anonymous pages: zeros, and no memory until written
        out = np.frombuffer(mmap.mmap(-1, n * dtype.itemsize), dtype, count=n)
    elif n:
        try:
            return _repeated(value, dtype, n)
        except (OSError, AttributeError, ValueError):
            out = np.full(n, np.frombuffer(value, dtype)[0], dtype)
    else:
        out = np.zeros(0, dtype)
    out.flags.writeable = False
    return out


_SPARSE_SHARE = 16              # at most one row in 16 not zero


def sparse_of(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, values) of the rows of ``arr`` that are not zero (bit for bit: -0.0 is not zero),
    when they are at most one in 16 of a column of 1 MB or more; else None.  (The op tree's
    ``comm_ns``: 0.5 % of a 1 GB trace's 1.9 M nodes are under a collective.)"""
    if arr.nbytes < _MIN_BYTES or not len(arr):
        return None
    bits = bits_of(arr)
    if bits is None or np.count_nonzero(bits[::_SAMPLE]) * _SPARSE_SHARE > len(bits[::_SAMPLE]):
        return None
    rows = np.flatnonzero(bits)
    if len(rows) * _SPARSE_SHARE > len(arr):
        return None
    return rows, arr[rows]


def sparse_column(rows: np.ndarray, values: np.ndarray, dtype, n: int) -> np.ndarray:
    """``n`` rows of zeros but ``values`` at ``rows``, read-only, on fresh anonymous pages: only
    the pages holding a value cost memory (the rest read as the kernel's zero page)."""
    dtype = np.dtype(dtype)
    out = np.frombuffer(mmap.mmap(-1, n * dtype.itemsize), dtype, count=n) if n else np.zeros(0, dtype)
    out[rows] = values
    out.flags.writeable = False
    return out
