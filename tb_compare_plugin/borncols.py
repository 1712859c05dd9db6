"""Columns born in the hand-off folder: a parser process writes the model's columns straight from
the parse's pieces into ``.npy`` files where the hand-off will hold them, maps them read-only for
the rest of the parse, and the hand-off's ``put`` moves each file into its entry unchanged.

Without this a Kineto parser process copied each piece into a column buffer in fresh memory
(``kineto_json._Collector._put``: ~220 MB on a 1 GB trace) and then wrote the built tables to the
hand-off (``ProfileCache.put``: ~170 MB of them): two passes over fresh pages (on this VM ~1 ms
of CPU a MB each), where one ``pwrite`` per piece into the file is enough for the ~140 MB of
columns that reach the model unchanged (``ops``, ``kernels``, ``pyfuncs``, ``comm_ops`` columns of
the schema's dtype).

A column whose rows so far all hold one value (bit for bit) is not written while that lasts:
when it ends that way (and is 1 MB or more, as for ``put``) (``ops.pid``, ``ops.call_stack``, ``kernels.device`` of a 1 GB trace) it
becomes a :func:`.constcols.constant_column` and the hand-off records its value, as ``put`` does
for any constant column.  A piece of a wider dtype than its column (the general decoder meeting a
float where integers were) sends the column back to memory: the caller goes on with a buffer.
The model's columns the parse does not give (the NPU-only kernel columns of a GPU trace: ~25 MB
of NaN and 0 a 1 GB trace) are made constant columns too (:meth:`BornColumns.filled`), never
written.

Only for the hand-off (``service.parsepool``): the cache's entries and in-process loads keep
their buffers.  The folder is ``.<entry key>.born…`` in the hand-off's root, so whatever a parser
process killed mid-parse leaves there is removed with its half-written entry.
"""
from __future__ import annotations

import io
import mmap
import os
import shutil

import numpy as np

from . import constcols

_BLOCK = 1 << 20                    # bytes of a constant written at a time when it stops being one


def npy_header(dtype: np.dtype, n: int) -> bytes:
    """The header ``np.save`` writes for a 1-D array of ``n`` rows of ``dtype`` (format 1.0; its
    length does not depend on ``n``: numpy pads the shape for growth)."""
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                             "fortran_order": False, "shape": (int(n),)})
    return f.getvalue()


class Growing:
    """One column being written: room for its header, then its rows piece by piece (``pwrite``
    at the row's place); while every row so far holds one value, only that value."""
    __slots__ = ("path", "fd", "dtype", "head", "rows", "value", "written")

    def __init__(self, path: str, dtype) -> None:
        self.path, self.dtype = path, np.dtype(dtype)
        self.head = len(npy_header(self.dtype, 0))
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        self.rows = 0               # rows so far (the end of the last piece)
        self.value = None           # the one value (its bytes) of every row so far, while none is written
        self.written = False

    def add(self, first: int, v: np.ndarray) -> None:
        """Rows ``first`` .. ``first + len(v)`` are ``v`` (cast to the column's dtype, which the
        caller made sure holds it)."""
        v = np.ascontiguousarray(v, self.dtype)
        n = len(v)
        if not self.written and first == self.rows:
            if not n:
                return
            bits = constcols.bits_of(v)
            one = v[:1].tobytes()
            if bits is not None and (self.value == one or (self.value is None and not self.rows)) \
                    and not (bits != bits[0]).any():
                self.value, self.rows = one, first + n
                return
        self._write_constant()
        if n:
            _pwrite_all(self.fd, memoryview(v).cast("B"), self.head + first * self.dtype.itemsize)
        self.rows = max(self.rows, first + n)

    def _write_constant(self) -> None:
        """The rows held as one value, written out (the column is no constant after all)."""
        if self.written:
            return
        if self.value is not None and self.rows:
            per = max(1, _BLOCK // self.dtype.itemsize)
            block = np.frombuffer(self.value * min(per, self.rows), self.dtype)
            for at in range(0, self.rows, per):
                part = block[:min(per, self.rows - at)]
                _pwrite_all(self.fd, memoryview(part).cast("B"), self.head + at * self.dtype.itemsize)
        self.written, self.value = True, None

    def finish(self, n: int) -> tuple[np.ndarray, bytes | None]:
        """(the column of ``n`` rows, the value of every row when it is one): the file mapped
        read-only, its header written; or a constant column, the file gone; or, when the file
        cannot be finished, the rows in memory (no file)."""
        if not self.written and self.value is not None and self.rows == n \
                and n * self.dtype.itemsize >= constcols._MIN_BYTES:
            self.close()
            _unlink(self.path)
            return constcols.constant_column(self.value, self.dtype, n), self.value
        try:
            self._write_constant()
            header = npy_header(self.dtype, n)
            size = self.head + n * self.dtype.itemsize
            if len(header) != self.head:            # (not with numpy's format 1.0 of a 1-D array)
                raise OSError("the .npy header does not fit the room left for it")
            os.pwrite(self.fd, header, 0)
            os.ftruncate(self.fd, size)             # rows never written (none, in practice) read 0
            mm = mmap.mmap(self.fd, size, access=mmap.ACCESS_READ) if n else None
        except OSError:
            return self.to_memory(n, self.dtype)[:n], None
        self.close()
        if mm is None:
            out = np.zeros(0, self.dtype)
            out.flags.writeable = False
            return out, None
        return np.frombuffer(mm, self.dtype, count=n, offset=self.head), None

    def to_memory(self, cap: int, dtype) -> np.ndarray:
        """The rows so far in a new buffer of ``cap`` rows of ``dtype`` (wider); the file goes."""
        buf = np.empty(max(cap, self.rows), dtype)
        try:
            if self.written:
                size = self.rows * self.dtype.itemsize
                raw = bytearray(size)
                got = os.preadv(self.fd, [raw], self.head) if size else 0
                if got != size:
                    raise OSError("short read of a column file")
                buf[:self.rows] = np.frombuffer(raw, self.dtype)
            elif self.rows:
                buf[:self.rows] = np.frombuffer(self.value, self.dtype)[0]
        finally:
            self.close()
            _unlink(self.path)
        return buf

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _pwrite_all(fd: int, data: memoryview, at: int) -> None:
    while len(data):
        done = os.pwrite(fd, data, at)
        if done <= 0:
            raise OSError("pwrite wrote nothing")
        data, at = data[done:], at + done


class BornColumns:
    """The folder the columns are born in, and which arrays came from which file (or are one
    value), for the hand-off's ``put``.  Holds the arrays it made until :meth:`close`."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._made: dict[int, tuple] = {}       # id(array) -> (array, file path or None, value or None)

    def wants(self, table: str, column: str, dtype) -> bool:
        """Whether ``table.column`` goes to a file: a model column of the schema's dtype."""
        from .model.profile import SCHEMAS
        want = SCHEMAS.get(table, {}).get(column)
        return want is not None and np.dtype(want) == np.dtype(dtype)

    def grow(self, table: str, column: str, dtype) -> Growing:
        return Growing(os.path.join(self.folder, f"{table}.{column}.npy"), dtype)

    def finish(self, g: Growing, n: int) -> np.ndarray:
        """Growing ``g``'s column of ``n`` rows (:meth:`Growing.finish`), remembered for ``put``."""
        path = g.path
        arr, value = g.finish(n)
        self._made[id(arr)] = (arr, path if value is None and os.path.exists(path) else None, value)
        return arr

    def filled(self, value, dtype, n: int) -> np.ndarray:
        """A model column the parse does not give (``make_table``'s ``fill``): ``n`` rows of
        ``value``, a :func:`.constcols.constant_column` remembered as one (1 MB or more), else
        ``np.full``."""
        dtype = np.dtype(dtype)
        if n * dtype.itemsize < constcols._MIN_BYTES:
            return np.full(n, value, dtype)
        one = np.full(1, value, dtype).tobytes()
        arr = constcols.constant_column(one, dtype, n)
        self._made[id(arr)] = (arr, None, one)
        return arr

    def _find(self, arr: np.ndarray):
        a = arr
        while isinstance(a, np.ndarray):
            got = self._made.get(id(a))
            if got is not None and got[0] is a:
                whole = a.__array_interface__["data"][0] == arr.__array_interface__["data"][0] \
                    and a.shape == arr.shape and a.dtype == arr.dtype and arr.flags.c_contiguous
                return got if whole else None
            a = a.base
        return None

    def file_of(self, arr: np.ndarray) -> str | None:
        """The file ``arr`` is mapped from, as born here (None: not one of these)."""
        got = self._find(arr)
        return got[1] if got is not None and got[1] is not None and os.path.exists(got[1]) else None

    def constant_of(self, arr: np.ndarray) -> bytes | None:
        """The one value of every row of ``arr`` when it was born as a constant, else None."""
        got = self._find(arr)
        return got[2] if got is not None else None

    def close(self) -> None:
        """Forget the arrays and remove the folder (the files moved into the entry stay; a mapping
        keeps its file's data)."""
        self._made.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
