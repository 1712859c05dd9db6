"""Chunked reading of a trace JSON's ``traceEvents`` array, plain or gzip, in bounded memory.

:func:`iter_event_chunks` streams a file (gzip detected by its magic bytes, stream-decompressed),
finds the ``traceEvents`` array of the top-level object (or takes a top-level array), and hands the
array to a caller-supplied ``decode(view)`` piece by piece: each ``view`` is a zero-copy
``memoryview`` that is itself a valid JSON array (``[ev, ev, ...]``) of whole events, roughly
``chunk_bytes`` long.  Everything outside the array (``deviceProperties``, ``distributedInfo``,
trailing keys ...) is decoded once at the end and returned as the ``outside`` dict.

How cuts are found: near each chunk target the reader takes the next ``}``-``,``-``{`` separator
(with any whitespace).  Such a cut can sit inside a string (minified files) or inside a nested
object; both make ``[`` + chunk + ``]`` fail to decode with "truncated", in which case the chunk is
extended to a later candidate.  A decode error other than truncation is a real JSON error and is
reported with its absolute byte offset.  The views point into a reusable bytearray: ``decode`` must
not keep references into them (msgspec ``Raw`` values must be converted before it returns).

:func:`read_head` is the cheap variant for discovery: it looks at most ``limit`` decompressed bytes.
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import msgspec

from .errors import LoadError

GZIP_MAGIC = b"\x1f\x8b"
READ_BLOCK = 4 << 20            # compressed / plain bytes read per call
INFLATE_BLOCK = 16 << 20        # most decompressed bytes produced per inflate call
DEFAULT_CHUNK = 48 << 20
HEAD_LIMIT = 256 << 20          # the traceEvents key must appear within this many bytes

_CUT = re.compile(rb"\}\s*,\s*\{")
_ARRAY_END = re.compile(rb"\}\s*\]")
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[{}\[\]]')
_WS = b" \t\r\n"


def _fmt(n: int) -> str:
    return f"{n:,}"


class ByteSource:
    """Yields the decompressed bytes of a file in blocks; counts raw bytes read for progress."""

    def __init__(self, path: str, limit: Optional[int] = None) -> None:
        self.path = path
        self.limit = limit            # stop after this many output bytes (peek)
        try:
            self._f = open(path, "rb")
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
        self._z = zlib.decompressobj(wbits=31) if self.gzip else None
        self._pending = b""          # compressed input not yet consumed by inflate

    def close(self) -> None:
        self._f.close()

    def _inflate_error(self, what: str) -> LoadError:
        return LoadError(self.path, f"the gzip data is {what} (after {_fmt(self.raw_read)} compressed bytes, "
                                    f"{_fmt(self.out)} bytes decompressed)")

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
            if z.unconsumed_tail:
                src = z.unconsumed_tail
            elif self._pending:
                src, self._pending = self._pending, b""
            else:
                src = self._f.read(READ_BLOCK)
                self.raw_read += len(src)
                if not src:
                    if not z.eof:
                        raise self._inflate_error("truncated")
                    self.eof = True
                    return b""
            if z.eof:                   # a further gzip member (concatenated .gz)
                if not src.strip(b"\x00"):
                    continue
                self._z = z = zlib.decompressobj(wbits=31)
            try:
                out = z.decompress(src, INFLATE_BLOCK)
            except zlib.error:
                raise self._inflate_error("corrupt") from None
            if z.eof and z.unused_data:
                self._pending = z.unused_data
            if out:
                self.out += len(out)
                return out

    def fraction(self) -> float:
        return min(1.0, self.raw_read / self.size) if self.size else 1.0


def _find_events_start(buf: bytes | bytearray, path: str, complete: bool) -> tuple[str, int, int]:
    """Locate the events array.  Returns (mode, key_start, bracket_index).

    mode "object": ``"traceEvents": [`` at depth 1 (key_start = offset of the key's quote);
    mode "array": the document is a top-level array (bracket at its first byte);
    mode "more": not found yet, read more.  Raises LoadError when it cannot be a trace.
    """
    i = 0
    n = len(buf)
    while i < n and buf[i] in _WS:
        i += 1
    if i == n:
        if complete:
            raise LoadError(path, "the file is empty" if n == 0 else "the file holds only whitespace")
        return "more", 0, 0
    first = buf[i]
    if first == 0x5B:           # '['
        return "array", i, i
    if first != 0x7B:           # '{'
        raise LoadError(path, f"not a JSON trace: the file starts with {bytes(buf[i:i + 16])!r} "
                              "instead of '{' or '['")
    depth = 0
    for m in _TOKEN.finditer(buf, i):
        tok = m.group()
        c = tok[0]
        if c == 0x22:           # '"'
            if depth == 1 and tok.endswith(b":") and tok.startswith(b'"traceEvents"'):
                j = m.end()
                while j < n and buf[j] in _WS:
                    j += 1
                if j == n:
                    return ("more", 0, 0) if not complete else _raise_trunc(path, n)
                if buf[j] != 0x5B:
                    raise LoadError(path, "not a trace: \"traceEvents\" is not a JSON array")
                return "object", m.start(), j
        elif c in (0x7B, 0x5B):
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                if complete:
                    raise LoadError(path, "not a trace: the JSON object has no \"traceEvents\" array")
                return "more", 0, 0
    if complete:
        _raise_trunc(path, n, where="before the traceEvents array")
    if n > HEAD_LIMIT:
        raise LoadError(path, f"not a trace: no \"traceEvents\" array in the first {_fmt(HEAD_LIMIT)} bytes")
    return "more", 0, 0


def _raise_trunc(path: str, n: int, where: str = "inside the traceEvents array"):
    raise LoadError(path, f"truncated JSON: the file ends {where} (after {_fmt(n)} bytes)")


def _decode_object_part(text: bytes, path: str, what: str) -> dict:
    try:
        obj = msgspec.json.decode(text)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise LoadError(path, f"malformed JSON {what}: {e}") from None
    return obj if isinstance(obj, dict) else {}


def _head_dict(head: bytes, path: str) -> dict:
    """The top-level object's keys before "traceEvents" (``{ ... ,`` -> dict)."""
    h = head.rstrip()
    if h.endswith(b","):
        h = h[:-1]
    return _decode_object_part(h + b"}", path, "before the traceEvents array")


def _tail_dict(tail: bytes, path: str) -> Optional[dict]:
    """Keys after the events array; None when ``tail`` cannot be the rest of the object."""
    t = tail.strip()
    if t == b"}":
        return {}
    if not t.startswith(b",") or not t.endswith(b"}"):
        return None
    try:
        obj = msgspec.json.decode(b"{" + t[1:])
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


@dataclass
class StreamResult:
    outside: dict = field(default_factory=dict)   # top-level keys other than traceEvents
    mode: str = "object"                          # "object" | "array"
    total_bytes: int = 0                          # decompressed size
    chunks: int = 0


def _error_offset(msg: str) -> Optional[int]:
    m = re.search(r"\(byte (\d+)\)", msg)
    return int(m.group(1)) if m else None


def iter_event_chunks(path: str, decode: Callable[[memoryview], Any], chunk_bytes: int = DEFAULT_CHUNK,
                      progress: Optional[Callable[[float], None]] = None,
                      result: Optional[StreamResult] = None) -> Iterator[Any]:
    """Yield ``decode(view)`` for consecutive chunks of the events array (see module doc).

    ``decode`` may raise ``msgspec.DecodeError``; a truncation error means a bad cut (the chunk is
    extended), any other is reported as malformed JSON at its absolute offset.  ``result`` (if given)
    receives the outside keys once the generator is exhausted.
    """
    res = result if result is not None else StreamResult()
    src = ByteSource(path)
    try:
        buf = bytearray()
        base = 0                      # absolute offset of buf[0]
        # 1. the head: find the array
        while True:
            data = src.read()
            if data:
                buf += data
            mode, key_at, lb = _find_events_start(buf, path, complete=src.eof)
            if mode != "more":
                break
        res.mode = mode
        head_outside = _head_dict(bytes(buf[:key_at]), path) if mode == "object" else {}
        cstart = lb                   # buf[cstart] may be overwritten with '['
        target = chunk_bytes

        def run(end_exclusive: int) -> tuple[bool, Any]:
            """Decode buf[cstart:end_exclusive] (buf[end-1] already ']').  (ok, value)."""
            buf[cstart] = 0x5B
            view = memoryview(buf)[cstart:end_exclusive]
            try:
                return True, decode(view)
            except msgspec.DecodeError as e:
                msg = str(e)
                if "truncated" in msg:
                    return False, None
                off = _error_offset(msg)
                where = f" at byte {_fmt(base + cstart + off)}" if off is not None else \
                    f" in bytes {_fmt(base + cstart)}..{_fmt(base + end_exclusive)}"
                raise LoadError(path, f"malformed JSON{where}: {msg.split(' (byte')[0]}") from None
            except UnicodeDecodeError:
                raise LoadError(path, f"the file is not valid UTF-8 text (somewhere in bytes "
                                      f"{_fmt(base + cstart)}..{_fmt(base + end_exclusive)})") from None
            finally:
                view.release()

        # 2. the body
        search_from = cstart + target
        while True:
            if not src.eof and len(buf) - cstart < target + (1 << 20):
                data = src.read()
                if data:
                    buf += data
                continue
            m = _CUT.search(buf, max(search_from, cstart + 1)) if not src.eof or True else None
            if m is not None and (not src.eof or m.start() < len(buf)):
                comma = buf.index(b",", m.start())
                buf[comma] = 0x5D                       # ']'
                ok, value = run(comma + 1)
                if ok:
                    res.chunks += 1
                    yield value
                    buf[comma] = 0x2C
                    # drop consumed bytes; keep the ',' as the next chunk's '[' slot
                    del buf[:comma]
                    base += comma
                    cstart = 0
                    search_from = target
                    if progress is not None:
                        progress(src.fraction())
                    continue
                buf[comma] = 0x2C
                # bad cut (inside a string / nested object): grow the span and try later
                span = m.end() - cstart
                search_from = cstart + max(span + 1, 2 * span if span > target else span + 1)
                if len(buf) < search_from and not src.eof:
                    data = src.read()
                    if data:
                        buf += data
                continue
            if not src.eof:
                data = src.read()
                if data:
                    buf += data
                continue
            # 3. end of input: the rest holds the last events, ']' and the object's tail
            tail_outside = _finish(buf, cstart, res, path, base, run, mode)
            if tail_outside is _NO_EVENTS_LEFT:
                tail_outside = {}
            else:
                ok_value, tail_outside = tail_outside
                res.chunks += 1
                yield ok_value
            res.outside = {**head_outside, **tail_outside}
            res.total_bytes = base + len(buf)
            if progress is not None:
                progress(1.0)
            return
    finally:
        src.close()


_NO_EVENTS_LEFT = object()


def _finish(buf: bytearray, cstart: int, res: StreamResult, path: str, base: int, run, mode: str):
    """Find the array's closing bracket in the final buffer and decode the last chunk."""
    # empty remainder: '[' (or ',') followed by whitespace and ']'
    j = cstart + 1
    n = len(buf)
    while j < n and buf[j] in _WS:
        j += 1
    if j < n and buf[j] == 0x5D:
        tail = _check_tail(bytes(buf[j + 1:]), mode, path)
        if tail is not None:
            if buf[cstart] == 0x2C:
                raise LoadError(path, f"malformed JSON at byte {_fmt(base + cstart)}: a ',' before ']'")
            return _NO_EVENTS_LEFT
    cands = [m.end() - 1 for m in _ARRAY_END.finditer(buf, cstart)]
    last_err = None
    for p in reversed(cands):
        tail = _check_tail(bytes(buf[p + 1:]), mode, path)
        if tail is None:
            continue
        try:
            ok, value = run(p + 1)
        except LoadError as e:
            last_err = e
            continue
        if ok:
            return value, tail
    if last_err is not None:
        raise last_err
    _raise_trunc(path, base + n)


def _check_tail(tail: bytes, mode: str, path: str) -> Optional[dict]:
    if mode == "array":
        return {} if not tail.strip() else None
    return _tail_dict(tail, path)


def read_head(path: str, limit: int = 256 << 10) -> tuple[str, dict, bytes]:
    """Cheap look at a trace: (mode, outside keys seen before the array, first bytes of the array).

    mode is "object"/"array", or "unknown" when no events array was found within ``limit`` bytes.
    Raises LoadError for files that cannot be traces (empty, not JSON, object without traceEvents).
    """
    src = ByteSource(path, limit=limit)
    try:
        buf = bytearray()
        while True:
            data = src.read()
            if not data:
                break
            buf += data
        complete = src.eof and src.out < limit
        mode, key_at, lb = _find_events_start(buf, path, complete=complete)
        if mode == "more":
            return "unknown", {}, b""
        head = _head_dict(bytes(buf[:key_at]), path) if mode == "object" else {}
        return mode, head, bytes(buf[lb:])
    finally:
        src.close()
