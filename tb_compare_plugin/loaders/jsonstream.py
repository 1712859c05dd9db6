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

Memory stays bounded whatever the expanded size (a few MB of gzip can expand to GBs of whitespace):
a streamed buffer never holds a long run of whitespace outside a string.  Each block is looked at
on a sparse grid as it arrives (:meth:`_State.feed`); a run of at least ``COLLAPSE_MIN`` bytes that
is not inside a string is cut to its first byte as it streams, and the bytes dropped are recorded
(``_State.gaps``) so every offset reported stays the file's own.  What cannot be dropped (text
inside a string, one event) is bounded instead: more than ``MAX_SPAN`` bytes without an event
boundary is a :class:`LoadError` naming the file.  A big plain file is mapped and decoded in place
(its pages are the page cache's, given back as the decode passes them).
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
COLLAPSE_MIN = 4096             # whitespace runs at least this long (outside strings) are cut to one byte
_GRID = COLLAPSE_MIN // 4       # ... found by looking at every _GRID-th byte of a block
MAX_SPAN = 256 << 20            # more than this without an event boundary: an error, not a buffer
_WS = frozenset(b" \t\r\n")
_WS_MARK = bytes(c in _WS for c in range(256))     # translate table: whitespace -> 1, else 0
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def skip_ws(buf, i: int, n: int) -> int:
    """The first index in [i, n) of ``buf`` that is not JSON whitespace (``n`` if none)."""
    short = min(n, i + 256)
    j = _WS_SHORT.match(buf, i, short).end()
    if j < short or j >= n:
        return j
    a = np.frombuffer(buf, np.uint8)
    x = None
    step = 4096                  # windows grow: a run of a few KB costs a few KB, not a block
    try:
        while j < n:
            e = min(n, j + step)
            x = a[j:e]
            other = (x != 0x20) & (x != 0x0A) & (x != 0x0D) & (x != 0x09)
            k = int(other.argmax())
            if other[k]:
                return j + k
            j = e
            step = min(2 * step, WS_BLOCK)
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
            j, step = s, min(2 * step, WS_BLOCK)
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
    st = _State(mapped if mapped is not None else bytearray(), 0, path, decode, mapped=mapped is not None)
    try:
        scanned = 0
        while True:                                   # 1. the head: find the array
            if mapped is None:
                st.feed(src.read())
                buf = st.buf
                if not src.eof and len(buf) < min(max(2 * scanned, 64 << 10), HEAD_LIMIT):
                    continue                          # rescan only a buffer that doubled
                scanned = len(buf)
                mode, key_at, lb = _find_events_start(buf, path, complete=src.eof)
            else:
                buf = st.buf
                mode, key_at, lb = _find_events_start(buf, path, len(buf) <= HEAD_LIMIT, HEAD_LIMIT)
                if mode == "more":
                    raise LoadError(path, f"not a trace: no \"traceEvents\" array in the first "
                                          f"{_fmt(HEAD_LIMIT)} bytes")
            if mode != "more":
                break
        res.mode = mode
        head_outside = _head_dict(bytes(buf[:key_at]), path) if mode == "object" else {}
        st.cstart = lb

        search_from = st.cstart + chunk_bytes          # 2. the body, cut by cut
        fails = 0
        while True:
            buf = st.buf
            if len(buf) < search_from and not src.eof:
                st.feed(src.read())
                st.check_span()
                continue
            m = _CUT.search(buf, min(search_from, len(buf)))
            if m is None:
                if not src.eof:
                    search_from = max(search_from, len(buf) - 3 * COLLAPSE_MIN, 0)
                    st.feed(src.read())
                    st.check_span()
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
            st.check_span()
        last = _finish(st, mode, path)
        if last is not None:
            value, tail_outside = last
            res.chunks += 1
            yield value
        else:
            tail_outside = st.tail_outside
        res.outside = {**head_outside, **tail_outside}
        res.total_bytes = st.abs_at(len(st.buf))
        if progress is not None:
            progress(1.0)
    finally:
        st.buf = None
        buf = None
        if mapped is not None:
            try:
                mapped.close()
            except BufferError:          # a decode kept a view: the mapping goes with it
                pass
        src.close()


class _State:
    """The buffer, the absolute offset of its first byte and the start of the next chunk.

    Streamed (not mapped), the buffer is the file with long whitespace runs outside strings cut
    short (:meth:`feed`).  Offsets: ``base`` counts the bytes kept before ``buf[0]``, ``hidden``
    the bytes dropped before it, and ``gaps`` holds ``[kept offset, dropped]`` for the runs cut
    inside the buffer, so :meth:`abs_at` gives any byte's offset in the file."""

    def __init__(self, buf, cstart: int, path: str, decode, mapped: bool = False) -> None:
        self.buf = buf                # a bytearray, or the whole file mapped (then base stays 0)
        self.base = 0
        self.hidden = 0
        self.gaps: list = []          # [base + index of the byte after the cut, bytes dropped]
        self.cstart = cstart          # buf[cstart] is '[' or the ',' before the next event
        self.path = path
        self.decode = decode
        self.tail_outside: dict = {}
        self.mapped = mapped
        self.dropped = 0              # mapped: pages before this offset were given back
        self.outside_at = 0           # a kept offset known to lie outside any string
        self.ws_in_string = -1        # the kept offset where a whitespace run inside a string ends

    def abs_at(self, i: int) -> int:
        """The offset in the file of ``buf[i]`` (``i == len(buf)``: the end of what was read)."""
        at = self.base + i
        return at + self.hidden + sum(d for k, d in self.gaps if k <= at)

    def feed(self, data: bytes) -> None:
        if not data:
            return
        buf = self.buf
        start = len(buf)
        buf += data
        if not self.mapped:
            self._collapse(start)

    def _collapse(self, start: int) -> None:
        """Cut the whitespace runs of at least ``COLLAPSE_MIN`` bytes outside strings in
        ``buf[start:]`` (just fed) to their first byte, recording what was dropped.  Runs are
        found on a grid: one that long holds three grid bytes in a row, so normal text costs a
        look at one byte in ``_GRID``; a run going on from the bytes before ``start`` is checked
        at ``start``.  Bytes before ``start`` are never moved (callers hold offsets into them)."""
        buf = self.buf
        n = len(buf)
        base = self.base
        known = self.outside_at - base                # an index known to be outside any string
        if not self.cstart <= known <= start:
            known = self.cstart
        drops = []                                    # (from, to): buf[from:to] goes
        gone = 0                                      # bytes in drops so far
        known_kept = None                             # kept offset of the last run found outside
        in_string_to_end = False

        def outside(rs: int) -> bool:
            nonlocal known, known_kept
            if not self._outside(known, rs):
                return False
            known, known_kept = rs, base + rs - gone
            return True

        def drop(a: int, b: int) -> None:
            nonlocal gone
            drops.append((a, b))
            self.gaps.append([base + a - gone, b - a])
            gone += b - a

        pos = start
        if start > 0 and buf[start - 1] in _WS and buf[start] in _WS:
            j = skip_ws(buf, start, n)
            if self.ws_in_string == base + start:     # a run inside a string, going on
                in_string_to_end = j == n
            else:
                rs = last_non_ws(buf, max(self.cstart + 1, start - COLLAPSE_MIN), start) + 1
                if j - rs >= COLLAPSE_MIN:
                    if outside(rs):
                        drop(start, j)                # the run's first bytes are kept already
                    else:
                        in_string_to_end = j == n
            pos = j
        if n - pos >= 3 * _GRID:
            marks = buf[pos:n:_GRID].translate(_WS_MARK)      # 1 where a grid byte is whitespace
            k = marks.find(b"\x01\x01\x01")
            while k >= 0:
                p = pos + k * _GRID                   # the run's first grid byte
                j = skip_ws(buf, p, n)
                if j - p < COLLAPSE_MIN - _GRID:      # too short to be a long run (p - start < _GRID)
                    k += 1
                else:
                    rs = last_non_ws(buf, max(pos, p - _GRID), p) + 1
                    if j - rs >= COLLAPSE_MIN:
                        if outside(rs):
                            drop(rs + 1, j)
                        else:
                            in_string_to_end = j == n
                    k = (j - pos) // _GRID + 1
                k = marks.find(b"\x01\x01\x01", k)
        if known_kept is not None:
            self.outside_at = known_kept
        if drops:
            kept, at = [], start
            for a, b in drops:
                kept.append(buf[at:a])
                at = b
            kept.append(buf[at:n])
            buf[start:] = b"".join(kept)
        self.ws_in_string = self.base + len(buf) if in_string_to_end else -1

    def _outside(self, p: int, rs: int) -> bool:
        """Is ``buf[rs]`` outside any string, given that ``buf[p]`` (``p <= rs``) is?"""
        buf = self.buf
        while True:
            q = buf.find(b'"', p, rs)
            if q < 0:
                return True
            m = _STRING.match(buf, q, rs)
            if m is None:
                return False                          # a string open at rs (or broken JSON)
            p = m.end()

    def check_span(self) -> None:
        """More than ``MAX_SPAN`` bytes held without an event boundary: no profile is like that."""
        if not self.mapped and len(self.buf) - self.cstart > MAX_SPAN:
            raise LoadError(self.path, f"more than {MAX_SPAN >> 20} MB without a boundary between events "
                                       f"from byte {_fmt(self.abs_at(self.cstart))} on (one event or string "
                                       "that long is not a profile's)")

    def sep_offset(self) -> int:
        """Absolute offset of the separator at ``cstart``."""
        return self.abs_at(self.cstart)

    def consume(self, comma: int) -> None:
        """Drop the bytes of a decoded chunk; the ',' at ``comma`` becomes the next '[' slot."""
        if self.mapped:
            self.cstart = comma
            self.dropped = drop_behind(self.buf, self.dropped, comma)
            return
        del self.buf[:comma]
        self.base += comma
        self.cstart = 0
        gaps = self.gaps
        while gaps and gaps[0][0] <= self.base:
            self.hidden += gaps.pop(0)[1]

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
            where = (f" at byte {_fmt(self.abs_at(self.cstart + off))}" if off is not None else
                     f" in bytes {self._span(close)}")
            raise LoadError(self.path, f"malformed JSON{where}: {_reason(msg)}") from None
        except UnicodeDecodeError:
            if speculative:
                return "bad", None
            raise LoadError(self.path, f"the file is not valid UTF-8 text (in bytes {self._span(close)})") from None
        except RecursionError:
            if speculative:
                return "bad", None
            raise LoadError(self.path, f"JSON nested too deeply in bytes {self._span(close)} ({TOO_DEEP})") from None
        finally:
            buf[close] = saved_close
            buf[self.cstart] = saved_open
            self._release(view)

    def _span(self, close: int) -> str:
        return f"{_fmt(self.abs_at(self.cstart))}..{_fmt(self.abs_at(close))}"

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
    at = lambda i: st.abs_at(st.cstart + i)      # rest[i] is buf[cstart + i]
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
            _raise_trunc(path, st.abs_at(len(buf)))
        if "trailing comma" in msg:                   # said where the ',' is, not the ']'
            comma = last_non_ws(rest, 0, off)
            if comma >= 0 and rest[comma] == 0x2C:
                raise LoadError(path, f"malformed JSON at byte {_fmt(at(comma))}: ',' before ']'")
        if "trailing characters" in msg:
            try:
                items = msgspec.json.decode(rest[:off])
            except (msgspec.DecodeError, RecursionError):
                items = []
            if all(isinstance(x, dict) for x in items):
                raise LoadError(path, "malformed JSON after the traceEvents array "
                                      f"(byte {_fmt(at(off))})") from None
        else:
            raise LoadError(path, f"malformed JSON at byte {_fmt(at(off))}: {_reason(msg)}") from None
    if mode == "object" and all(isinstance(x, dict) for x in items):
        _raise_trunc(path, st.abs_at(len(buf)), where="after the traceEvents array, before the closing '}'")
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
