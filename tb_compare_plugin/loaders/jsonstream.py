"""Chunked reading of a trace JSON's ``traceEvents`` array, plain or gzip, in bounded memory.

:func:`iter_event_chunks` streams a file (gzip detected by its magic bytes, stream-decompressed),
finds the ``traceEvents`` array of the top-level object (or takes a top-level array), and hands the
array to a caller-supplied ``decode(view)`` piece by piece: each ``view`` is a zero-copy
``memoryview`` that is itself a valid JSON array (``[ev, ev, ...]``) of whole events, roughly
``chunk_bytes`` long (1 MB by default).  Everything outside the array (``deviceProperties``,
``distributedInfo``, trailing keys ...) is decoded once and returned as the ``outside`` dict.

How cuts are found: near each chunk target the reader takes the next ``}``-``,``-``{`` separator
(with any whitespace).  Such a cut can sit inside a string (minified files) or inside a nested
object; both make ``[`` + chunk + ``]`` fail to decode with "truncated", in which case the chunk is
extended to a later candidate.  A decode error other than truncation is a real JSON error and is
reported with its absolute byte offset.  The views point into a reusable bytearray, or into the
file mapped copy-on-write when it is big and plain (:mod:`.bytesource`): ``decode`` must not keep
references into them (msgspec ``Raw`` values must be converted before it returns).

:func:`read_head` is the cheap variant for discovery: it looks at most ``limit`` decompressed bytes.

Long runs of whitespace (legal anywhere between tokens) cost what events cost: they are skipped
with :func:`skip_ws` (numpy, ~1 ns a byte) or inside regular expressions, never byte by byte in
Python; a run right after a cut (e.g. a ``traceEvents`` array holding nothing but whitespace) is
dropped from the buffer instead of held, and the head is rescanned only when its buffer doubled.
"""
from __future__ import annotations

import gc
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import msgspec
import numpy as np

from .bytesource import ByteSource, drop_behind, fmt as _fmt
from .errors import LoadError

# Small chunks keep each chunk's decoded events cache-resident while they are turned into
# columns: 1 MB chunks measured ~30% faster than 48 MB ones, and use less memory.
DEFAULT_CHUNK = 1 << 20
HEAD_LIMIT = 256 << 20          # the traceEvents key must appear within this many bytes

_CUT = re.compile(rb"\}\s*,\s*\{")
_ARRAY_END = re.compile(rb"\}\s*\]")
# a whitespace run is one match (skipped in C), not one failed attempt per byte
_TOKEN = re.compile(rb'[ \t\r\n]+|"(?:[^"\\]|\\.)*"[ \t\r\n]*:?|[{}\[\]]')
_WS_SHORT = re.compile(rb"[ \t\r\n]*")
WS_BLOCK = 1 << 20              # skip_ws looks at most this many bytes per numpy pass
SQUEEZE_MIN = 64 << 10          # whitespace runs at least this long after a cut are dropped


def skip_ws(buf, i: int, n: int) -> int:
    """The first index in [i, n) of ``buf`` that is not JSON whitespace (``n`` if none)."""
    short = min(n, i + 256)
    j = _WS_SHORT.match(buf, i, short).end()
    if j < short or j >= n:
        return j
    a = np.frombuffer(buf, np.uint8)
    x = None
    try:
        while j < n:
            e = min(n, j + WS_BLOCK)
            x = a[j:e]
            other = (x != 0x20) & (x != 0x0A) & (x != 0x0D) & (x != 0x09)
            k = int(other.argmax())
            if other[k]:
                return j + k
            j = e
        return n
    finally:
        del a, x                 # no export may outlive the call: the bytearray must stay resizable


def last_non_ws(buf, lo: int, n: int) -> int:
    """The last index in [lo, n) of ``buf`` that is not JSON whitespace (``lo - 1`` if none)."""
    if n <= lo:
        return lo - 1
    if buf[n - 1] not in b" \t\r\n":
        return n - 1
    a = np.frombuffer(buf, np.uint8)
    x = None
    try:
        j, step = n, 4096
        while j > lo:
            s = max(lo, j - step)
            x = a[s:j]
            other = (x != 0x20) & (x != 0x0A) & (x != 0x0D) & (x != 0x09)
            if other.any():
                return j - 1 - int(other[::-1].argmax())
            j, step = s, WS_BLOCK
        return lo - 1
    finally:
        del a, x


TOO_DEEP = "arrays/objects inside each other about 1,000 levels deep; no profiler writes that"


def _find_events_start(buf, path: str, complete: bool, end: Optional[int] = None) -> tuple[str, int, int]:
    """Locate the events array.  Returns (mode, key_start, bracket_index).

    mode "object": ``"traceEvents": [`` at depth 1 (key_start = offset of the key's quote);
    mode "array": the document is a top-level array (bracket at its first byte);
    mode "more": not found yet, read more.  Raises LoadError when it cannot be a trace, or when
    the array has not started within ``HEAD_LIMIT`` bytes.
    """
    found = _scan_head(buf, path, complete, end)
    seen = len(buf) if end is None else min(len(buf), end)
    if found[0] == "more" and seen >= HEAD_LIMIT:
        raise LoadError(path, f"not a trace: no \"traceEvents\" array in the first {_fmt(HEAD_LIMIT)} bytes")
    return found


def _scan_head(buf, path: str, complete: bool, end: Optional[int]) -> tuple[str, int, int]:
    i = 3 if buf[:3] == b"\xef\xbb\xbf" else 0      # UTF-8 byte order mark
    n = len(buf) if end is None else min(len(buf), end)
    i = skip_ws(buf, i, n)
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
    for m in _TOKEN.finditer(buf, i, n):
        tok = m.group()
        c = tok[0]
        if c == 0x22:           # '"'
            if depth == 1 and tok.endswith(b":") and tok.startswith(b'"traceEvents"'):
                j = skip_ws(buf, m.end(), n)
                if j == n:
                    return ("more", 0, 0) if not complete else _raise_trunc(path, n)
                if buf[j] != 0x5B:
                    raise LoadError(path, "not a trace: \"traceEvents\" is not a JSON array")
                return "object", m.start(), j
        elif c in (0x7B, 0x5B):
            depth += 1
        elif c in (0x7D, 0x5D):
            depth -= 1
            if depth == 0:
                if complete:
                    raise LoadError(path, "not a trace: the JSON object has no \"traceEvents\" array")
                return "more", 0, 0
    if complete:
        _raise_trunc(path, n, where="before the traceEvents array")
    return "more", 0, 0


def _raise_trunc(path: str, n: int, where: str = "inside the traceEvents array"):
    raise LoadError(path, f"truncated JSON: the file ends {where} (after {_fmt(n)} bytes)")


def _decode_object_part(text: bytes, path: str, what: str) -> dict:
    try:
        obj = msgspec.json.decode(text)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise LoadError(path, f"malformed JSON {what}: {e}") from None
    except RecursionError:
        raise LoadError(path, f"JSON nested too deeply {what} ({TOO_DEEP})") from None
    return obj if isinstance(obj, dict) else {}


def _head_dict(head: bytes, path: str) -> dict:
    """The top-level object's keys before "traceEvents" (``{ ... ,`` -> dict)."""
    h = head.rstrip()
    if h.startswith(b"\xef\xbb\xbf"):
        h = h[3:]
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
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


@dataclass
class StreamResult:
    outside: dict = field(default_factory=dict)   # top-level keys other than traceEvents
    mode: str = "object"                          # "object" | "array"
    total_bytes: int = 0                          # decompressed size
    chunks: int = 0


def _reason(msg: str) -> str:
    """msgspec's 'JSON is malformed: invalid character (byte 12)' -> 'invalid character'."""
    return msg.split(" (byte")[0].replace("JSON is malformed: ", "")


def _error_offset(msg: str) -> Optional[int]:
    m = re.search(r"\(byte (\d+)\)", msg)
    return int(m.group(1)) if m else None


def iter_event_chunks(path: str, decode: Callable[[memoryview], Any], chunk_bytes: int = DEFAULT_CHUNK,
                      progress: Optional[Callable[[float], None]] = None,
                      result: Optional[StreamResult] = None) -> Iterator[Any]:
    """Yield ``decode(view)`` for consecutive chunks of the events array (see module doc).

    ``decode`` may raise ``msgspec.DecodeError``: truncation means a bad cut (the chunk is
    extended), "trailing characters" means the array ended inside the span, anything else is
    reported as malformed JSON at its absolute offset.  ``result`` (if given) receives the keys
    outside the array once the generator is exhausted.
    """
    res = result if result is not None else StreamResult()
    src = ByteSource(path)
    mapped = src.map()                                # big plain file: decoded in place
    st = None
    try:
        buf = mapped if mapped is not None else bytearray()
        scanned = 0
        while True:                                   # 1. the head: find the array
            data = src.read()
            if data:
                buf += data
            if mapped is None:
                if not src.eof and len(buf) < min(max(2 * scanned, 64 << 10), HEAD_LIMIT):
                    continue                          # rescan only a buffer that doubled
                scanned = len(buf)
                mode, key_at, lb = _find_events_start(buf, path, complete=src.eof)
            else:
                mode, key_at, lb = _find_events_start(buf, path, len(buf) <= HEAD_LIMIT, HEAD_LIMIT)
                if mode == "more":
                    raise LoadError(path, f"not a trace: no \"traceEvents\" array in the first "
                                          f"{_fmt(HEAD_LIMIT)} bytes")
            if mode != "more":
                break
        res.mode = mode
        head_outside = _head_dict(bytes(buf[:key_at]), path) if mode == "object" else {}
        st = _State(buf, lb, path, decode, mapped=mapped is not None)

        search_from = st.cstart + chunk_bytes          # 2. the body, cut by cut
        fails = 0
        while True:
            buf = st.buf
            if len(buf) < search_from and not src.eof:
                st.feed(src.read())
                continue
            m = _CUT.search(buf, min(search_from, len(buf)))
            if m is None:
                q = st.trailing_cut() if not src.eof else None
                if q is not None:                     # events, ',', then a long run of whitespace
                    status, value = st.run(q, speculative=True)
                    if status == "ok":
                        res.chunks += 1
                        yield value
                        st.consume(q)
                        st.squeeze()
                        search_from = st.cstart + chunk_bytes
                        fails = 0
                        continue
                if not src.eof:
                    search_from -= st.squeeze()
                    buf = st.buf
                    search_from = max(search_from, len(buf) - 4096, 0)
                    st.feed(st.next_block(src))
                    continue
                break
            comma = buf.find(b",", m.start())
            status, value = st.run(comma)
            if status == "ok":
                res.chunks += 1
                yield value
                st.consume(comma)
                search_from = st.cstart + chunk_bytes
                fails = 0
                if progress is not None:
                    progress(st.done_fraction(src))
                continue
            if status == "trailing":                  # the array ended before this cut
                break
            fails += 1                                # bad cut: inside a string or nested object
            span = m.end() - st.cstart
            search_from = m.end() if fails == 1 else st.cstart + 2 * span
        while not src.eof:                            # 3. the rest: last events, ']', tail
            st.feed(src.read())
        last = _finish(st, mode, path)
        if last is not None:
            value, tail_outside = last
            res.chunks += 1
            yield value
        else:
            tail_outside = st.tail_outside
        res.outside = {**head_outside, **tail_outside}
        res.total_bytes = st.base + len(st.buf)
        if progress is not None:
            progress(1.0)
    finally:
        if st is not None:
            st.buf = None
        buf = None
        if mapped is not None:
            try:
                mapped.close()
            except BufferError:          # a decode kept a view: the mapping goes with it
                pass
        src.close()


class _State:
    """The buffer, the absolute offset of its first byte and the start of the next chunk."""

    def __init__(self, buf, cstart: int, path: str, decode, mapped: bool = False) -> None:
        self.buf = buf                # a bytearray, or the whole file mapped (then base stays 0)
        self.base = 0
        self.cstart = cstart          # buf[cstart] is '[' or the ',' before the next event
        self.path = path
        self.decode = decode
        self.tail_outside: dict = {}
        self.mapped = mapped
        self.dropped = 0              # mapped: pages before this offset were given back
        self.sep_at = None            # squeezed: where the separator at cstart really is
        self.ws_checked = 0           # trailing_cut: bytes before this absolute offset were looked at
        self.ws_from: Optional[int] = None   # ... and the whitespace run at the end starts here
        self.tried = -1               # ... the ',' last tried as a cut

    def feed(self, data: bytes) -> None:
        if data:
            self.buf += data

    def squeeze(self) -> int:
        """Drop a long whitespace run right after the cut at ``cstart`` (not mapped): the
        separator moves to the run's last byte, so later offsets stay exact.  Returns the
        number of bytes removed from the front of the buffer."""
        if self.mapped:
            return 0
        buf = self.buf
        j = skip_ws(buf, self.cstart + 1, len(buf))
        if j - self.cstart - 1 < SQUEEZE_MIN:
            return 0
        if self.sep_at is None:
            self.sep_at = self.base + self.cstart
        buf[j - 1] = buf[self.cstart]
        del buf[:j - 1]
        self.base += j - 1
        self.cstart = 0
        return j - 1

    def trailing_cut(self) -> Optional[int]:
        """A cut worth trying when the buffer ends with a long whitespace run (not mapped):
        the ',' right before the run, if a '}' comes before it, tried once.  Only the bytes fed
        since the last call are scanned, so a long run costs its length once."""
        if self.mapped:
            return None
        buf = self.buf
        n = len(buf)
        first = self.base + self.cstart + 1           # absolute offset of the chunk's first byte
        lo = max(self.ws_checked, first) - self.base
        if lo < n:
            k = last_non_ws(buf, lo, n)
            if k >= lo:
                self.ws_from = self.base + k + 1
            elif self.ws_from is None or self.ws_from < first:
                self.ws_from = first
        self.ws_checked = self.base + n
        if self.ws_from is None or self.base + n - self.ws_from < SQUEEZE_MIN:
            return None
        q = self.ws_from - 1 - self.base
        if q <= self.cstart or buf[q] != 0x2C or self.base + q == self.tried:
            return None
        p = last_non_ws(buf, self.cstart + 1, q)
        if p <= self.cstart or buf[p] != 0x7D:
            return None
        self.tried = self.base + q
        return q

    def next_block(self, src: ByteSource) -> bytes:
        """The next block to feed; while nothing but the separator is pending (not mapped),
        blocks of nothing but whitespace are counted and skipped instead of buffered."""
        data = src.read()
        if self.mapped or len(self.buf) != self.cstart + 1:
            return data
        while data and skip_ws(data, 0, len(data)) == len(data):
            if self.sep_at is None:
                self.sep_at = self.base + self.cstart
            self.base += len(data)
            data = src.read()
        return data

    def sep_offset(self) -> int:
        """Absolute offset of the separator at ``cstart`` (where it was before a squeeze)."""
        return self.sep_at if self.sep_at is not None else self.base + self.cstart

    def consume(self, comma: int) -> None:
        """Drop the bytes of a decoded chunk; the ',' at ``comma`` becomes the next '[' slot."""
        self.sep_at = None
        if self.mapped:
            self.cstart = comma
            self.dropped = drop_behind(self.buf, self.dropped, comma)
            return
        del self.buf[:comma]
        self.base += comma
        self.cstart = 0

    def done_fraction(self, src: ByteSource) -> float:
        if self.mapped:
            return min(1.0, self.cstart / src.size) if src.size else 1.0
        return src.fraction()

    def run(self, close: int, speculative: bool = False) -> tuple[str, Any]:
        """Decode buf[cstart:close+1] with '[' and ']' written over its first and last byte.
        ``speculative``: any decode error means "not a cut" (status "bad"), never a LoadError;
        the same bytes are decoded again later, and a real error is reported then."""
        buf = self.buf
        saved_open, saved_close = buf[self.cstart], buf[close]
        buf[self.cstart] = 0x5B
        buf[close] = 0x5D
        view = memoryview(buf)[self.cstart:close + 1]
        try:
            return "ok", self.decode(view)
        except msgspec.DecodeError as e:
            if speculative:
                return "bad", None
            msg = str(e)
            if "truncated" in msg:
                return "truncated", None
            if "trailing characters" in msg:
                return "trailing", None
            off = _error_offset(msg)
            where = (f" at byte {_fmt(self.base + self.cstart + off)}" if off is not None else
                     f" in bytes {_fmt(self.base + self.cstart)}..{_fmt(self.base + close)}")
            raise LoadError(self.path, f"malformed JSON{where}: {_reason(msg)}") from None
        except UnicodeDecodeError:
            if speculative:
                return "bad", None
            span = f"{_fmt(self.base + self.cstart)}..{_fmt(self.base + close)}"
            raise LoadError(self.path, f"the file is not valid UTF-8 text (in bytes {span})") from None
        except RecursionError:
            if speculative:
                return "bad", None
            span = f"{_fmt(self.base + self.cstart)}..{_fmt(self.base + close)}"
            raise LoadError(self.path, f"JSON nested too deeply in bytes {span} ({TOO_DEEP})") from None
        finally:
            buf[close] = saved_close
            buf[self.cstart] = saved_open
            self._release(view)

    def _release(self, view: memoryview) -> None:
        """Release the chunk view; if ``decode`` leaked a reference into it, continue on a copy."""
        try:
            view.release()
        except BufferError:
            gc.collect()
            try:
                view.release()
            except BufferError:
                self.buf = bytearray(self.buf)       # (mapped: the file's bytes, copied once)
                self.mapped = False


def _finish(st: _State, mode: str, path: str):
    """Find the array's closing bracket in the final buffer; decode the last events.

    Returns (value, tail dict), or None when no event is left (tail in ``st.tail_outside``).
    """
    buf = st.buf
    n = len(buf)
    j = skip_ws(buf, st.cstart + 1, n)
    if j < n and buf[j] == 0x5D:                      # nothing but ']' left
        tail = _check_tail(bytes(buf[j + 1:]), mode, path)
        if tail is not None:
            if buf[st.cstart] == 0x2C:
                raise LoadError(path, f"malformed JSON at byte {_fmt(st.sep_offset())}: ',' before ']'")
            st.tail_outside = tail
            return None
    for m in reversed(list(_ARRAY_END.finditer(buf, st.cstart))):
        p = m.end() - 1
        tail = _check_tail(bytes(buf[p + 1:]), mode, path)
        if tail is None:
            continue
        status, value = st.run(p)
        if status == "ok":
            return value, tail
    _explain_unclosed(st, mode, path)


def _explain_unclosed(st: _State, mode: str, path: str):
    """The remainder cannot be closed as the events array + the object's tail: say why."""
    buf = st.buf
    rest = b"[" + bytes(buf[st.cstart + 1:])
    where = st.base + st.cstart           # rest[i] is at absolute offset where + i
    try:
        items = msgspec.json.decode(rest)
    except UnicodeDecodeError:
        raise LoadError(path, "the file is not valid UTF-8 text (near its end)") from None
    except RecursionError:
        raise LoadError(path, f"JSON nested too deeply near the end of the file ({TOO_DEEP})") from None
    except msgspec.DecodeError as e:
        msg = str(e)
        off = _error_offset(msg)
        if "truncated" in msg or off is None:
            _raise_trunc(path, st.base + len(buf))
        if "trailing characters" in msg:
            try:
                items = msgspec.json.decode(rest[:off])
            except (msgspec.DecodeError, RecursionError):
                items = []
            if all(isinstance(x, dict) for x in items):
                raise LoadError(path, "malformed JSON after the traceEvents array "
                                      f"(byte {_fmt(where + off)})") from None
        else:
            raise LoadError(path, f"malformed JSON at byte {_fmt(where + off)}: {_reason(msg)}") from None
    if mode == "object" and all(isinstance(x, dict) for x in items):
        _raise_trunc(path, st.base + len(buf), where="after the traceEvents array, before the closing '}'")
    raise LoadError(path, "not a trace: the traceEvents array does not hold event objects")


def _check_tail(tail: bytes, mode: str, path: str) -> Optional[dict]:
    if mode == "array":
        return {} if not tail.strip() else None
    return _tail_dict(tail, path)


def read_head(path: str, limit: int = 256 << 10, tail: int = 64 << 10) -> tuple[str, dict, bytes, bytes]:
    """Cheap look at a trace: (mode, keys before the array, window bytes, tail bytes).

    Reads at most ``limit`` decompressed bytes from the start; for a plain (not gzip) file longer
    than that, also its last ``tail`` bytes (keys written after the array live there).  mode is
    "object"/"array", or "unknown" when no events array starts within the window.  Raises
    LoadError for files that cannot be traces (empty, not JSON, an object without traceEvents).
    """
    src = ByteSource(path, limit=limit)
    try:
        buf = bytearray()
        while True:
            data = src.read()
            if not data:
                break
            buf += data
        complete = src.out < limit or (not src.gzip and src.size <= limit)
        end = b""
        if not src.gzip and src.size > limit:
            src._f.seek(max(limit, src.size - tail))
            end = src._f.read(tail)
        mode, key_at, lb = _find_events_start(buf, path, complete=complete)
        if mode == "more":
            return "unknown", {}, bytes(buf), end
        head = _head_dict(bytes(buf[:key_at]), path) if mode == "object" else {}
        return mode, head, bytes(buf[lb:]), end
    finally:
        src.close()
