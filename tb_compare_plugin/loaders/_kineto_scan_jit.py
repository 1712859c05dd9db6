"""The numba-compiled body of :mod:`.kineto_scan` (imported only when numba is present).

Whitespace, string bodies, keys and digits are read 8 bytes at a time (SWAR: one unaligned 64-bit
load, then the classic per-byte bit tricks on it: which bytes are a quote, a backslash or a control
byte; which are digits; the first one with ``trailing_zeros``).  Little-endian only (byte 0 of the
buffer is the word's lowest byte; :func:`.kineto_scan.available` checks it).  Every helper that
reads the buffer falls back to a byte loop within 8 bytes of its end.

The helpers take the buffer as its address (``b.ctypes.data``), not as an array: numba updates an
array's reference count (an atomic increment and decrement) wherever one is passed, even to an
inlined function, and that was ~40% of the scanner's time.

The memory intrinsics (``_ld1``/``_ld8``/``_ldq``/``_ldw``/``_stw``/``_low``) and the key-prediction
helpers are written in each scanner module, not shared: numba's cache checks only the cached
function's own file, so a change in a shared module would leave the cached scanners stale."""
import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from .kineto_scan_codes import (BAD_JSON, ESC_KEY, K_FLOAT, K_HARD, K_INT, K_NULL, K_OTHER, K_STR, MISMATCH, N_DUR,  # noqa: F401
                                N_RAW0, N_TS, NO_NS, OK, PAUSE, TOO_DEEP, TOO_MANY)

_POW10 = np.array([10.0 ** k for k in range(23)])
_IPOW10 = np.array([10 ** k for k in range(19)], np.int64)

jit = nb.njit(cache=True, nogil=True, boundscheck=False)
inline = nb.njit(cache=True, nogil=True, boundscheck=False, inline="always")


@intrinsic
def _ld8(typingctx, addr, idx):
    """The 8 bytes at address ``addr + idx`` as one little-endian uint64 (an unaligned load; the
    caller checks that they are inside the buffer)."""
    sig = types.uint64(addr, idx)

    def codegen(context, builder, signature, args):
        a, i = args
        return builder.load(builder.inttoptr(builder.add(a, i), ir.IntType(64).as_pointer()), align=1)
    return sig, codegen


@intrinsic
def _ld1(typingctx, addr, idx):
    """The byte at address ``addr + idx`` (as int64)."""
    sig = types.int64(addr, idx)

    def codegen(context, builder, signature, args):
        a, i = args
        v = builder.load(builder.inttoptr(builder.add(a, i), ir.IntType(8).as_pointer()))
        return builder.zext(v, ir.IntType(64))
    return sig, codegen


# All word arithmetic is on uint64: numba marks signed integer arithmetic "no signed wrap", so a
# carry into bit 63 of an int64 is undefined and LLVM may assume it never happens.
_U = np.uint64
_L7F = _U(0x7F7F7F7F7F7F7F7F)
_L80 = _U(0x8080808080808080)
_L5F = _U(0x5F5F5F5F5F5F5F5F)                          # + (b & 0x7f): bit 7 set iff b & 0x7f > 0x20
_L60 = _U(0x6060606060606060)                          # ... iff b & 0x7f >= 0x20
_L22 = _U(0x2222222222222222)                          # '"'
_L5C = _U(0x5C5C5C5C5C5C5C5C)                          # '\\'
_L20 = _U(0x2020202020202020)                          # ' '
_L0A = _U(0x0A0A0A0A0A0A0A0A)                          # '\n'
_L30 = _U(0x3030303030303030)                          # '0'
_L76 = _U(0x7676767676767676)                          # + (b - '0'): bit 7 set iff b - '0' > 9
_FF2 = _U(0x000000FF000000FF)
_E1 = _U(100 + (1000000 << 32))
_E2 = _U(1 + (10000 << 32))
_U0, _U1, _U3, _U8, _U10, _U16, _U32 = _U(0), _U(1), _U(3), _U(8), _U(10), _U(16), _U(32)
_U1E8 = _U(100000000)
_LOW3 = _U(0xFFFFFF)
_QCS = _U(0x203A22)                                     # '": ' (little-endian: byte 0 the quote)
_CSQ = _U(0x22202C)                                     # ', "'
_LOW2 = _U(0xFFFF)
_CNL = _U(0x0A2C)                                       # ',\n'
# Kineto's layout around an event's members (the indents of its top-level and args members, its
# end and the next event's start): recognised by whole-word compares, they are skipped by a constant
# (a predicted branch instead of a data-dependent whitespace scan); anything else takes the general path.
_LOW7 = _U(0xFFFFFFFFFFFFFF)
_CNL4Q = _U(0x22202020200A2C)                           # ',\n    "'
_CNL6 = _U(0x2020202020200A2C)                          # ',\n      ' (then '"')
_ENDA0 = _U(0x200A7D202020200A)                         # '\n    }\n '
_ENDA1 = _U(0x7B20200A2C7D20)                           # ' },\n  {'
_END0 = _U(0x20200A2C7D20200A)                          # '\n  },\n  ' (then '{')
_OBQ = _U(0x22202020200A7B)                             # '{\n    "'
_OB6 = _U(0x2020202020200A7B)                           # '{\n      ' (then '"')
_UPOW10 = np.array([10 ** k for k in range(20)], np.uint64)


def _load64(context, builder, signature, args):
    """Code of :func:`_ldq` and :func:`_ldw`: the 8 bytes at ``addr + idx`` (one load; the two
    differ only in the type numba gives the result)."""
    a, i = args
    return builder.load(builder.inttoptr(builder.add(a, i), ir.IntType(64).as_pointer()))


@intrinsic
def _ldq(typingctx, addr, idx):
    """The int64 at address ``addr + idx`` (8-aligned table entries)."""
    return types.int64(addr, idx), _load64


@intrinsic
def _ldw(typingctx, addr, idx):
    """The uint64 at address ``addr + idx`` (8-aligned table entries)."""
    return types.uint64(addr, idx), _load64


@intrinsic
def _stw(typingctx, addr, idx, val):
    """Store the uint64 ``val`` at address ``addr + idx`` (8-aligned table entries)."""
    sig = types.void(addr, idx, val)

    def codegen(context, builder, signature, args):
        a, i, v = args
        builder.store(v, builder.inttoptr(builder.add(a, i), ir.IntType(64).as_pointer()))
        return context.get_dummy_value()
    return sig, codegen


@inline
def _low(k):
    """A mask of the low k bytes (0 <= k <= 7)."""
    return (_U1 << _U(k << 3)) - _U1


@inline
def _first(m):
    """The index of the lowest byte whose bit 7 is set in m (m != 0)."""
    return np.int64(trailing_zeros(m) >> _U3)


@inline
def _special(x):
    """Bit 7 of each byte of ``x`` that is a quote, a backslash or a control byte (< 0x20)."""
    a = x ^ _L22
    c = x ^ _L5C
    return ~((((a & _L7F) + _L7F) | a) & (((c & _L7F) + _L7F) | c) & (((x & _L7F) + _L60) | x)) & _L80


@inline
def _strend(p, j, n):
    """The first quote, backslash or control byte at or after j (n when none)."""
    while j + 8 <= n:
        m = _special(_ld8(p, j))
        if m != _U0:
            return j + _first(m)
        j += 8
    while j < n:
        c = _ld1(p, j)
        if c == 34 or c == 92 or c < 32:
            return j
        j += 1
    return j


@inline
def _ws(p, i, n):
    """The first byte at or after i that is not JSON whitespace (n when none)."""
    if i < n and _ld1(p, i) > 32:
        return i
    if i + 1 < n and _ld1(p, i) == 32 and _ld1(p, i + 1) > 32:
        return i + 1
    while i + 8 <= n:
        x = _ld8(p, i)
        g = (((x & _L7F) + _L5F) | x) & _L80           # bytes > 0x20
        s = x ^ _L20
        t = x ^ _L0A
        ok = ~((((s & _L7F) + _L7F) | s) & (((t & _L7F) + _L7F) | t)) & _L80   # spaces and newlines
        if g != _U0:
            q = _first(g)
            pm = _L80 & _low(q)
            if ok & pm == pm:
                return i + q
            break                                       # a tab, CR or control byte: byte by byte
        if ok != _L80:
            break
        i += 8
    while i < n:
        c = _ld1(p, i)
        if c != 32 and c != 10 and c != 13 and c != 9:
            return i
        i += 1
    return i


@inline
def _eight(t):
    """The number written by the 8 digit values (0..9) in the bytes of t, byte 0 the first."""
    t = t * _U10 + (t >> _U8)
    return ((t & _FF2) * _E1 + ((t >> _U16) & _FF2) * _E2) >> _U32


@inline
def _digits(p, i, n):
    """The run of decimal digits at i: (index after it, its value (exact up to 19 digits, uint64),
    count)."""
    v = _U0
    c = 0
    while i + 8 <= n:
        t = _ld8(p, i) - _L30
        nd = ((t + _L76) | t) & _L80                    # bytes that are not digits
        if nd == _U0:
            v = v * _U1E8 + _eight(t)
            c += 8
            i += 8
            continue
        k = _first(nd)
        if k != 0:
            w = _eight((t & _low(k)) << _U(64 - (k << 3)))
            v = w if c == 0 else v * _UPOW10[k] + w
            c += k
            i += k
        return i, v, c
    while i < n:
        d = _ld1(p, i) - 48
        if d < 0 or d > 9:
            break
        v = v * _U10 + _U(d)
        c += 1
        i += 1
    return i, v, c


@inline
def _number(p, i, n):
    """Validate the JSON number at i: (end (-1 when bad), is float, has exponent, negative, whole
    part, its digit count, fraction digits, their count)."""
    neg = False
    if _ld1(p, i) == 45:
        neg = True
        i += 1
    c = _ld1(p, i) if i < n else 0
    if not (48 <= c <= 57):
        return -1, False, False, neg, _U0, 0, _U0, 0
    i, whole, wd = _digits(p, i, n)
    if c == 48 and wd > 1:
        return -1, False, False, neg, _U0, 0, _U0, 0
    frac = _U0
    fd = 0
    isfloat = False
    has_exp = False
    if i < n:
        c = _ld1(p, i)
        if c == 46:
            isfloat = True
            i, frac, fd = _digits(p, i + 1, n)
            if fd == 0:
                return -1, False, False, neg, _U0, 0, _U0, 0
            c = _ld1(p, i) if i < n else 32
        if c == 101 or c == 69:
            isfloat = True
            has_exp = True
            i += 1
            if i < n and (_ld1(p, i) == 43 or _ld1(p, i) == 45):
                i += 1
            if i >= n or not (48 <= _ld1(p, i) <= 57):
                return -1, False, False, neg, _U0, 0, _U0, 0
            while i < n and 48 <= _ld1(p, i) <= 57:
                i += 1
            c = _ld1(p, i) if i < n else 32
        if not (c == 44 or c == 125 or c == 93 or c == 32 or c == 10 or c == 13 or c == 9):
            return -1, False, False, neg, _U0, 0, _U0, 0
    return i, isfloat, has_exp, neg, whole, wd, frac, fd


@inline
def _num_values(isfloat, has_exp, neg, uwhole, wd, ufrac, fd):
    """A validated number's (kind, int value, ns (ts/dur; NO_NS when not exact), double)."""
    whole = np.int64(uwhole)
    if not isfloat:
        if wd > 18:
            return K_HARD, 0, NO_NS, 0.0
        v = -whole if neg else whole
        ns = np.int64(_U(v) * _U(1000)) if whole < 9_000_000_000_000_000 else NO_NS   # wraps as int64 did
        return K_INT, v, ns, float(v)
    if has_exp or fd > 18 or wd > 18:
        return K_FLOAT, 0, NO_NS, np.nan
    frac = np.int64(ufrac)
    ns = NO_NS
    if fd <= 3 and whole < 9_000_000_000_000_000:
        ns = np.int64(uwhole * _U(1000) + _U(frac * _IPOW10[3 - fd]))
        if neg:
            ns = -ns
    d = np.nan                                        # not exact: the caller falls back
    if wd + fd <= 15:
        d = float(whole * _IPOW10[fd] + frac) / _POW10[fd]
        if neg:
            d = -d
    return K_FLOAT, 0, ns, d


@jit
def _escape(p, j, n):
    """The byte at j is a backslash inside a string: the index after the escape, -1 when it is not valid."""
    if j + 1 >= n:
        return -1
    d = _ld1(p, j + 1)
    if d == 117:                                        # \uXXXX
        if j + 5 >= n:
            return -1
        for q in range(j + 2, j + 6):
            h = _ld1(p, q)
            if not ((48 <= h <= 57) or (65 <= h <= 70) or (97 <= h <= 102)):
                return -1
        return j + 6
    if d == 34 or d == 92 or d == 47 or d == 98 or d == 102 or d == 110 or d == 114 or d == 116:
        return j + 2
    return -1


@inline
def _string(p, j, n):
    """The byte before j opened a string: the index after its closing quote, -1 when it is not valid."""
    while True:
        j = _strend(p, j, n)
        if j >= n:
            return -1
        c = _ld1(p, j)
        if c == 34:
            return j + 1
        if c != 92:
            return -1
        j = _escape(p, j, n)
        if j < 0:
            return -1


@jit
def _literal(p, i, n):
    """true / false / null at i: the index after it, -1 when it is none of them."""
    c = _ld1(p, i)
    if c == 116 and i + 4 <= n and _ld1(p, i + 1) == 114 and _ld1(p, i + 2) == 117 and _ld1(p, i + 3) == 101:
        return i + 4
    if (c == 102 and i + 5 <= n and _ld1(p, i + 1) == 97 and _ld1(p, i + 2) == 108 and _ld1(p, i + 3) == 115
            and _ld1(p, i + 4) == 101):
        return i + 5
    if c == 110 and i + 4 <= n and _ld1(p, i + 1) == 117 and _ld1(p, i + 2) == 108 and _ld1(p, i + 3) == 108:
        return i + 4
    return -1


@jit
def _skip(p, i, n):
    """Validate and skip one JSON value at i: the index after it, -1 when bad, -2 when nested
    deeper than 64 (the open containers are bits of one word: 1 an object, 0 an array)."""
    depth = 0
    objs = _U0
    while True:
        if i >= n:
            return -1
        c = _ld1(p, i)
        if c == 123 or c == 91:                       # { or [
            i = _ws(p, i + 1, n)
            if i >= n:
                return -1
            d = _ld1(p, i)
            if (c == 123 and d == 125) or (c == 91 and d == 93):
                i += 1
            else:
                if depth >= 64:
                    return -2
                if c == 123:
                    objs |= _U1 << _U(depth)
                else:
                    objs &= ~(_U1 << _U(depth))
                depth += 1
                if c == 123:
                    if d != 34:
                        return -1
                    i = _string(p, i + 1, n)
                    if i < 0:
                        return -1
                    i = _ws(p, i, n)
                    if i >= n or _ld1(p, i) != 58:
                        return -1
                    i = _ws(p, i + 1, n)
                continue
        elif c == 34:
            i = _string(p, i + 1, n)
            if i < 0:
                return -1
        elif c == 45 or 48 <= c <= 57:
            i = _number(p, i, n)[0]
            if i < 0:
                return -1
        else:
            i = _literal(p, i, n)
            if i < 0:
                return -1
        while True:                                   # a value ended: close containers or go on
            if depth == 0:
                return i
            i = _ws(p, i, n)
            if i >= n:
                return -1
            c = _ld1(p, i)
            inobj = (objs >> _U(depth - 1)) & _U1 == _U1
            if c == 44:
                i = _ws(p, i + 1, n)
                if inobj:
                    if i >= n or _ld1(p, i) != 34:
                        return -1
                    i = _string(p, i + 1, n)
                    if i < 0:
                        return -1
                    i = _ws(p, i, n)
                    if i >= n or _ld1(p, i) != 58:
                        return -1
                    i = _ws(p, i + 1, n)
                break
            if (c == 125 and inobj) or (c == 93 and not inobj):
                depth -= 1
                i += 1
                continue
            return -1


_H0 = _U(0xcbf29ce484222325)                           # FNV offset basis
_HP = _U(0x100000001b3)
_M1 = _U(0xff51afd7ed558ccd)
_G0 = _U(0x2545F4914F6CDD1D)                           # the second hash: other seed, multiplier, mix
_GP = _U(0x9e3779b97f4a7c15)
_M2 = _U(0xbf58476d1ce4e5b9)


@inline
def _finish(h, g, tail, size):
    """The two hashes' last step: fold the tail word (the < 8 bytes left, little-endian) and the
    length, then mix.  (first hash | 3 (0..2 are left for absent / null), second as int64)"""
    h = ((h ^ tail) * _HP) ^ _U(size)
    g = ((g ^ tail) * _GP) ^ _U(size)
    h ^= h >> _U(29)
    h *= _M1
    h ^= h >> _U(32)
    g ^= g >> _U(31)
    g *= _M2
    g ^= g >> _U(27)
    return h | _U3, np.int64(g)


@jit
def _hash(p, s, e, n):
    """Two independent 64-bit hashes of the bytes s..e: their 8-byte little-endian words folded in
    turn (the inline loop of :func:`scan` gives the same)."""
    h = _H0
    g = _G0
    q = s
    while q + 8 <= e:
        w = _ld8(p, q)
        h = (h ^ w) * _HP
        g = (g ^ w) * _GP
        q += 8
    tail = _U0
    if q < e:
        if q + 8 <= n:
            tail = _ld8(p, q) & _low(e - q)
        else:
            for k in range(e - q):
                tail |= _U(_ld1(p, q + k)) << _U(k << 3)
    return _finish(h, g, tail, e - s)


@inline
def _key_is(p, s, L, n, kw, k):
    """Whether the L bytes at s are those of key ``k`` (at address ``kw``: 4 little-endian uint64
    words per key, zero padded)."""
    base = k << 5
    if s + L + 8 <= n:
        for t in range(0, L, 8):
            w = _ld8(p, s + t)
            if L - t < 8:
                w &= _low(L - t)
            if w != _ld8(kw, base + t):
                return False
        return True
    for t in range(L):
        if _ld1(p, s + t) != _ld1(kw, base + t):
            return False
    return True


# The next-key predictions: a row of 5 uint64 per previous key (PRED_ROW bytes; the last row: no
# previous key): the key that came next last time (all ones: none), its length, the word of its
# first bytes followed by the closing quote (keys under 8 bytes), that word's mask, and (keys of
# 8..15 bytes) the word ending at the quote.
PRED_ROW = 40
_ALL = _U(0xFFFFFFFFFFFFFFFF)
_QUOTE = _U(34)


@inline
def _predicted(p, s, n, pa, prev, kw):
    """The key predicted after key ``prev`` (prediction table at address ``pa``) when the bytes at
    s are it followed by a quote (one or two word compares), else -1.  (Plain bytes then a quote:
    :func:`_strend` would have stopped at the same quote.)"""
    r = PRED_ROW * prev
    k = _ldq(pa, r)
    if k < 0:
        return -1
    L = _ldq(pa, r + 8)
    if s + L + 1 > n:
        return -1
    if L < 16 and s + 8 <= n:
        if _ld8(p, s) & _ldw(pa, r + 24) != _ldw(pa, r + 16):
            return -1
        if L >= 8 and _ld8(p, s + L - 7) != _ldw(pa, r + 32):
            return -1
        return k
    if _ld1(p, s + L) != 34 or not _key_is(p, s, L, n, kw, k):
        return -1
    return k


@inline
def _learn(pa, prev, k, L, kw):
    """Key ``k`` (L bytes) came after key ``prev``: predict it next time (its words from the key
    table's words at address ``kw``)."""
    r = PRED_ROW * prev
    _stw(pa, r, _U(k))
    _stw(pa, r + 8, _U(L))
    base = k << 5
    if L < 8:
        _stw(pa, r + 16, _ld8(kw, base) | (_QUOTE << _U(L << 3)))
        _stw(pa, r + 24, _low(L + 1) if L < 7 else _ALL)
        _stw(pa, r + 32, _U0)
    else:
        _stw(pa, r + 16, _ld8(kw, base))
        _stw(pa, r + 24, _ALL)
        _stw(pa, r + 32, (_ld8(kw, base + L - 7) & _low(7)) | (_QUOTE << _U(56)) if L < 32 else _U0)


@jit
def _scan(b, pos, lim, kn, iv, fv, ks, ss, se, sh, sg, klen, kword, kslot, klut, aklen, akword, akslot,
          aklut, tpred_, apred_):
    """Walk ``[ev, ev, ...]`` once, filling row ``ev`` of the (event, field) tables: (status, events).

    From the array's start when ``pos[0]`` is 0, else from byte ``pos[0]`` (an event's start, where
    an earlier call paused): after ``lim`` events it stops at the next event's start, sets
    ``pos[0]`` there and returns PAUSE (the rows start at 0 in every call).

    One flat loop; the 8-bytes-at-a-time helpers are inlined; single bytes are read through the
    address too (an array index also pays for Python's negative-index wraparound).  A number's value is derived only
    for the fields kept (the others are only validated).  A key is matched by its (length, first byte, last byte) slot in a 4096-entry
    table and then compared word by word with the key's bytes (``kword``: 4 words per key, zero
    padded).  Text values are hashed while their bodies are scanned."""
    n = len(b)
    p = b.ctypes.data
    kwp = kword.ctypes.data
    akwp = akword.ctypes.data
    cap = kn.shape[0]
    nkn = kn.shape[1]
    nks = ks.shape[1]
    nt, na = len(klen), len(aklen)                      # key tables' sizes = the "no previous key" rows
    tpred, apred = tpred_.ctypes.data, apred_.ctypes.data
    tprev, aprev = nt, na
    i = pos[0]
    if i == 0:
        i = _ws(p, 0, n)
        if i >= n or _ld1(p, i) != 91:
            return BAD_JSON, 0
        i = _ws(p, i + 1, n)
        if i < n and _ld1(p, i) == 93:
            i = _ws(p, i + 1, n)
            return (OK if i == n else BAD_JSON), 0
    ev = 0
    while True:                                         # one event per turn
        if i >= n:
            return BAD_JSON, ev
        if _ld1(p, i) != 123:
            return MISMATCH, ev
        if ev >= cap:
            return TOO_MANY, ev
        for f in range(nkn):                            # the row's kinds: all absent until read
            kn[ev, f] = 0
        for f in range(nks):
            ks[ev, f] = 0
        if i + 8 <= n and _ld8(p, i) & _LOW7 == _OBQ:  # '{\n    "': the first key at +6
            i += 6
        else:
            i = _ws(p, i + 1, n)
            if i >= n:
                return BAD_JSON, ev
        inargs = False
        tprev = nt
        nxt = False                                     # the event's end and the next one's '{' seen
        closed = _ld1(p, i) == 125
        if closed:
            i += 1
        while not closed:                               # one member per turn
            # -- the key
            if _ld1(p, i) != 34:
                return BAD_JSON, ev
            s = i + 1
            # the key that followed the previous one last time, checked in place; else found by its end
            k = _predicted(p, s, n, apred, aprev, akwp) if inargs else _predicted(p, s, n, tpred, tprev, kwp)
            if k >= 0:
                e = s + (aklen[k] if inargs else klen[k])
            else:
                e = _strend(p, s, n)
            if e + 8 <= n and _ld8(p, e) & _LOW3 == _QCS:   # '": ' as Kineto writes it: one compare
                i = e + 3
                if _ld1(p, i) <= 32:
                    i = _ws(p, i, n)
            else:
                if e >= n:
                    return BAD_JSON, ev
                if _ld1(p, e) != 34:
                    return (ESC_KEY if _ld1(p, e) == 92 else BAD_JSON), ev
                i = _ws(p, e + 1, n)
                if i >= n or _ld1(p, i) != 58:
                    return BAD_JSON, ev
                i = _ws(p, i + 1, n)
            if i >= n:
                return BAD_JSON, ev
            slot = -1
            L = e - s
            if k >= 0:
                slot = akslot[k] if inargs else kslot[k]
            elif L > 0:
                code = (((L & 31) << 7) ^ _ld1(p, s) ^ (_ld1(p, e - 1) << 4)) & 4095
                if inargs:
                    k = aklut[code]
                    if k >= 0 and aklen[k] == L and _key_is(p, s, L, n, akwp, k):
                        slot = akslot[k]
                        _learn(apred, aprev, k, L, akwp)
                    else:
                        k = -1
                else:
                    k = klut[code]
                    if k >= 0 and klen[k] == L and _key_is(p, s, L, n, kwp, k):
                        slot = kslot[k]
                        _learn(tpred, tprev, k, L, kwp)
                    else:
                        k = -1
            if inargs:
                aprev = k if k >= 0 else na
            else:
                tprev = k if k >= 0 else nt
            # -- the value
            c = _ld1(p, i)
            f = slot - 1000                             # >= 0: a text / raw field
            vs = i                                      # the value's span, for text and raw fields
            if slot == 9999:
                if c != 123:
                    return MISMATCH, ev
                if i + 16 <= n and _ld8(p, i) == _OB6 and _ld1(p, i + 8) == 34:   # '{\n      "'
                    i += 8
                    inargs = True
                    aprev = na
                    continue
                i = _ws(p, i + 1, n)
                if i >= n:
                    return BAD_JSON, ev
                if _ld1(p, i) != 125:
                    inargs = True
                    aprev = na
                    continue                            # the args' first key
                i += 1                                  # empty args
            elif c == 34:                               # a string
                if 0 <= f < N_RAW0:                     # text: hashed while scanned, span between the quotes
                    q = i + 1
                    h = _H0
                    g = _G0
                    j = 0
                    while True:
                        if q + 8 <= n:
                            x = _ld8(p, q)
                            m = _special(x)
                            if m == _U0:
                                h = (h ^ x) * _HP
                                g = (g ^ x) * _GP
                                q += 8
                                continue
                            r = _first(m)
                            if _ld1(p, q + r) == 34:
                                hs, gs = _finish(h, g, x & _low(r), q + r - i - 1)
                                j = q + r + 1
                                break
                        j = _string(p, q, n)            # an escape, a bad byte, or the end is near
                        if j < 0:
                            return BAD_JSON, ev
                        hs, gs = _hash(p, i + 1, j - 1, n)
                        break
                    ks[ev, f] = K_STR
                    ss[ev, f] = i + 1
                    se[ev, f] = j - 1
                    sh[ev, f] = hs
                    sg[ev, f] = gs
                    i = j
                else:
                    j = _string(p, i + 1, n)
                    if j < 0:
                        return BAD_JSON, ev
                    if f >= 0:                          # raw: the span with its quotes
                        ks[ev, f] = K_STR
                        ss[ev, f] = i
                        se[ev, f] = j
                        sh[ev, f], sg[ev, f] = _hash(p, i, j, n)
                    elif slot >= 0:                     # a number field holding text: its span
                        kn[ev, slot] = K_STR
                        iv[ev, slot] = ((i + 1) << 32) | (j - 1)
                    i = j
            elif c == 45 or 48 <= c <= 57:              # a number
                j, isfloat, has_exp, neg, whole, wd, frac, fd = _number(p, i, n)
                if j < 0:
                    return BAD_JSON, ev
                i = j
                if f >= 0:
                    if f < N_RAW0:
                        return MISMATCH, ev
                    ks[ev, f] = K_STR
                    ss[ev, f] = vs
                    se[ev, f] = j
                    sh[ev, f], sg[ev, f] = _hash(p, vs, j, n)
                elif slot >= 0:
                    kind, v, ns, d = _num_values(isfloat, has_exp, neg, whole, wd, frac, fd)
                    kn[ev, slot] = kind
                    if slot == N_TS or slot == N_DUR:
                        iv[ev, slot] = ns
                    else:
                        iv[ev, slot] = v
                    fv[ev, slot] = d
            elif c == 123 or c == 91:                   # an object or array
                j = _skip(p, i, n)
                if j < 0:
                    return (BAD_JSON if j == -1 else TOO_DEEP), ev
                i = j
                if f >= N_RAW0:
                    ks[ev, f] = K_STR
                    ss[ev, f] = vs
                    se[ev, f] = j
                    sh[ev, f], sg[ev, f] = _hash(p, vs, j, n)
                elif slot >= 0:
                    return MISMATCH, ev
            else:                                       # true / false / null
                j = _literal(p, i, n)
                if j < 0:
                    return BAD_JSON, ev
                i = j
                if f >= N_RAW0:
                    ks[ev, f] = K_STR
                    ss[ev, f] = vs
                    se[ev, f] = j
                    sh[ev, f], sg[ev, f] = _hash(p, vs, j, n)
                elif slot >= 0:
                    if c != 110:
                        return MISMATCH, ev
                    if f >= 0:
                        ks[ev, f] = K_NULL
                        sh[ev, f] = 1
                    else:
                        kn[ev, slot] = K_NULL
            # -- after the value: ',' and the next key, or '}' (of the args, then of the event)
            if i + 16 <= n:
                x = _ld8(p, i)
                if x & _LOW3 == _CSQ:                   # ', "' as Kineto writes it: one compare
                    i += 2
                    continue
                if x & _LOW2 == _CNL:                   # ',\n' and the next line's indent
                    if x & _LOW7 == _CNL4Q:             # a top-level member's
                        i += 6
                        continue
                    if x == _CNL6 and _ld1(p, i + 8) == 34:   # an args member's
                        i += 8
                        continue
                    i = _ws(p, i + 2, n)
                    if i >= n:
                        return BAD_JSON, ev
                    continue
                if x == _ENDA0:                         # '\n    }\n  },\n  {': args and event closed
                    if inargs and _ld8(p, i + 8) & _LOW7 == _ENDA1:
                        i += 14
                        nxt = True
                        break
                elif x == _END0 and not inargs and _ld1(p, i + 8) == 123:   # '\n  },\n  {'
                    i += 8
                    nxt = True
                    break
            while True:
                i = _ws(p, i, n)
                if i >= n:
                    return BAD_JSON, ev
                if _ld1(p, i) == 44:
                    i = _ws(p, i + 1, n)
                    if i >= n:
                        return BAD_JSON, ev
                    break
                if _ld1(p, i) != 125:
                    return BAD_JSON, ev
                i += 1
                if inargs:
                    inargs = False
                    continue
                closed = True
                break
        ev += 1
        if nxt:                                         # at the next event's '{', its comma passed
            if ev >= lim:
                pos[0] = i
                return PAUSE, ev
            continue
        i = _ws(p, i, n)
        if i >= n:
            return BAD_JSON, ev
        if _ld1(p, i) == 44:
            i = _ws(p, i + 1, n)
            if ev >= lim:
                pos[0] = i
                return PAUSE, ev
            continue
        if _ld1(p, i) == 93:
            i = _ws(p, i + 1, n)
            return (OK if i == n else BAD_JSON), ev
        return BAD_JSON, ev


@jit
def scan(b, pos, lim, kn, iv, fv, ks, ss, se, sh, sg, klen, kword, kslot, klut, aklen, akword, akslot, aklut):
    """:func:`_scan` with fresh next-key prediction tables (one row per key of each key table, and one
    for "no previous key").  They are made here and handed down as arrays: this function holds
    them until :func:`_scan` returns.  (Made inside :func:`_scan`, where only their addresses are
    used, numba would free them right after the address is taken -- its variables die at their
    last use -- and the scan would read and write freed memory.)"""
    tpred_ = np.full((len(klen) + 1, PRED_ROW // 8), _ALL, np.uint64)
    apred_ = np.full((len(aklen) + 1, PRED_ROW // 8), _ALL, np.uint64)
    return _scan(b, pos, lim, kn, iv, fv, ks, ss, se, sh, sg, klen, kword, kslot, klut, aklen, akword,
                 akslot, aklut, tpred_, apred_)


@jit
def first_seen(h):
    """Number the distinct values of ``h`` (uint64) in order of first appearance: (code of each
    row, the row where each code first appears).  An open-addressing table, no sort."""
    n = len(h)
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    size = 1 << bits
    shift = np.uint64(64 - bits)
    slots = np.full(size, -1, np.int64)
    keys = np.empty(size, np.uint64)
    codes = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    m = 0
    for r in range(n):
        x = h[r]
        p = np.int64((x * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        while True:
            c = slots[p]
            if c < 0:
                slots[p] = m
                keys[p] = x
                first[m] = r
                codes[r] = m
                m += 1
                break
            if keys[p] == x:
                codes[r] = c
                break
            p = (p + 1) & (size - 1)
    return codes, first[:m]
