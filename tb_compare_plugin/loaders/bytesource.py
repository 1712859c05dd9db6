"""The bytes of a trace file, plain or gzip: streamed in blocks, or mapped whole.

:class:`ByteSource` yields the decompressed bytes of a file block by block (gzip detected by its
magic bytes, stream-decompressed; concatenated members, as ``cat a.gz b.gz`` or parallel
compressors write them, read as one stream, like ``gzip -dc``) and counts the raw bytes read for
progress.  For a large plain file, :meth:`ByteSource.map` instead maps it copy-on-write: the JSON
reader then decodes chunks in place, with no read or buffer copies, and drops the pages it has
finished with (:func:`drop_behind`) so its resident memory stays bounded.

Hostile sizes are bounded: a whole read (not a peek) stops with a :class:`LoadError` once the
output passes :func:`max_expanded_bytes` (``$TB_COMPARE_MAX_EXPANDED_MB``, default 8 GiB, set by
the CLI's ``--max-expanded-mb`` and the plugin's ``--profile_compare_max_expanded_mb``): a few MB
of gzip can expand to GBs of whitespace.  A plain file past the limit is refused at once.
"""
from __future__ import annotations

import mmap
import os
import zlib
from typing import Optional

from .errors import LoadError
from .regular import open_regular

GZIP_MAGIC = b"\x1f\x8b"
READ_BLOCK = 1 << 20            # compressed / plain bytes read per call
INFLATE_BLOCK = 4 << 20         # most decompressed bytes produced per inflate call
FEED_BLOCK = 64 << 10           # most compressed bytes given to one inflate call
MAP_MIN = 8 << 20               # plain files at least this big are mapped instead of read
DROP_EVERY = 16 << 20           # give finished pages back to the system this often (one scanner chunk)
MAX_EXPANDED_ENV = "TB_COMPARE_MAX_EXPANDED_MB"
DEFAULT_MAX_EXPANDED_MB = 8192  # 8 GiB: 8x the largest bench trace


def fmt(n: int) -> str:
    return f"{n:,}"


def max_expanded_bytes(path: str = "") -> int:
    """The most bytes one trace may expand to (``$TB_COMPARE_MAX_EXPANDED_MB``, in MB)."""
    raw = os.environ.get(MAX_EXPANDED_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_EXPANDED_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        mb = float("nan")
    if not mb > 0 or mb == float("inf"):
        raise LoadError(path, f"{MAX_EXPANDED_ENV}={raw!r} is not a positive number of MB")
    return max(1, int(mb * (1 << 20)))


def _limit_text(n: int) -> str:
    mb = n / (1 << 20)
    return f"{mb:,.0f} MB" if mb >= 10 else f"{mb:,.3g} MB"


class ByteSource:
    """Yields the decompressed bytes of a file in blocks; counts raw bytes read for progress."""

    def __init__(self, path: str, limit: Optional[int] = None) -> None:
        self.path = path
        self.limit = limit            # stop after this many output bytes (peek)
        self.max_out = max_expanded_bytes(path) if limit is None else None   # past it: LoadError
        try:
            self._f = open_regular(path, "rb")
        except OSError as e:
            raise LoadError(path, f"cannot open the file ({e.strerror or e})") from None
        self._f.seek(0, 2)
        self.size = self._f.tell()
        self._f.seek(0)
        self.raw_read = 0
        self.out = 0
        self.eof = False
        magic = self._f.read(2)
        self._f.seek(0)
        self.gzip = magic == GZIP_MAGIC
        if self.max_out is not None and not self.gzip and self.size > self.max_out:
            self._f.close()
            raise self._too_big(f"the file is {fmt(self.size)} bytes, more than")
        self._z = zlib.decompressobj(wbits=31) if self.gzip else None
        self._carry = b""            # compressed input after a finished member (the next one's start)
        self._raw = b""              # the compressed block last read, fed to inflate from _raw_at on
        self._raw_at = 0

    def close(self) -> None:
        self._f.close()

    def _inflate_error(self, what: str) -> LoadError:
        return LoadError(self.path, f"the gzip data is {what} (after {fmt(self.raw_read)} compressed bytes, "
                                    f"{fmt(self.out)} bytes decompressed)")

    def _too_big(self, what: str) -> LoadError:
        return LoadError(self.path, f"{what} the limit of {_limit_text(self.max_out)} for one trace "
                                    f"(raise it with {MAX_EXPANDED_ENV}, the CLI's --max-expanded-mb or "
                                    "TensorBoard's --profile_compare_max_expanded_mb)")

    def read(self) -> bytes:
        """Next block of output bytes, b"" at the end."""
        if self.eof:
            return b""
        if self.limit is not None and self.out >= self.limit:
            self.eof = True
            return b""
        if not self.gzip:
            n = READ_BLOCK if self.limit is None else min(READ_BLOCK, self.limit - self.out)
            data = self._f.read(n)
            self.raw_read += len(data)
            self.out += len(data)
            if not data:
                self.eof = True
            return data
        while True:
            z = self._z
            if z.eof:                   # a member ended: what follows it starts the next one
                src, self._carry = self._carry, b""
                if not src:
                    src = self._read_raw()
                    if not src:
                        self.eof = True
                        return b""
                if not bytes(src).strip(b"\x00"):     # zero padding after the last member
                    continue
                self._z = z = zlib.decompressobj(wbits=31)
            elif z.unconsumed_tail:     # input left over when the output cap was reached
                src = z.unconsumed_tail
            else:
                src = self._read_raw()
                if not src:
                    raise self._inflate_error("truncated")
            cap = INFLATE_BLOCK if self.limit is None else max(1, min(INFLATE_BLOCK, self.limit - self.out))
            try:
                out = z.decompress(src, cap)
            except zlib.error:
                raise self._inflate_error("corrupt") from None
            if z.eof:
                # Input after the member's end is in unused_data only.  (Some Pythons also leave
                # it in unconsumed_tail, which is why a finished member's tail is never read.)
                self._carry = z.unused_data
            if out:
                self.out += len(out)
                if self.max_out is not None and self.out > self.max_out:
                    raise self._too_big("the gzip data expands to more than")
                return out

    def _read_raw(self):
        """The next at most ``FEED_BLOCK`` compressed bytes (a view of the block last read).
        Small pieces keep each member's end cheap: zlib copies the input left after a member
        into ``unused_data``, so a file of many tiny members costs at most a piece per member."""
        if self._raw_at >= len(self._raw):
            self._raw = self._f.read(READ_BLOCK if self.limit is None else 64 << 10)
            self._raw_at = 0
            self.raw_read += len(self._raw)
            if not self._raw:
                return b""
        piece = memoryview(self._raw)[self._raw_at:self._raw_at + FEED_BLOCK]
        self._raw_at += len(piece)
        return piece

    def fraction(self) -> float:
        return min(1.0, self.raw_read / self.size) if self.size else 1.0

    def map(self) -> Optional[mmap.mmap]:
        """The whole plain file mapped copy-on-write (writable, never written back), or None
        (gzip, small, or the system refuses).  The source then counts as read to its end."""
        if self.gzip or self.limit is not None or self.size < MAP_MIN:
            return None
        try:
            m = mmap.mmap(self._f.fileno(), 0, access=mmap.ACCESS_COPY)
        except (OSError, ValueError, OverflowError):
            return None
        if hasattr(m, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
            m.madvise(mmap.MADV_SEQUENTIAL)
        self.out = self.size
        self.eof = True
        return m


def drop_behind(m: mmap.mmap, done: int, upto: int) -> int:
    """Give the mapped pages of bytes [done, upto) back to the system (they were decoded);
    returns the new ``done``.  Pages stay in the page cache; only this process lets them go."""
    end = upto - upto % mmap.PAGESIZE
    if end - done < DROP_EVERY or not hasattr(mmap, "MADV_DONTNEED"):
        return done
    try:
        m.madvise(mmap.MADV_DONTNEED, done, end - done)
    except (OSError, ValueError):
        return upto
    return end
