"""The numba-compiled body of :mod:`.ascend_fast` (imported only when numba is present).

:func:`scan` walks one chunk ``[ev, ev, ...]`` of an Ascend ``trace_view.json`` once and fills one
row per event of a kinds table (uint8) and a values table (int64), plus the ``dur`` doubles.  Text
values of the fields the loader reads are not copied: each gets an id from a table of distinct raw
spans that lives across chunks (two 64-bit hashes and the length of the raw bytes between the
quotes, and the id + 1, 0 for a free slot: one 32-byte entry of a uint64 array, so a lookup touches
one cache line); the spans first seen in this chunk are listed so the caller decodes each distinct text once.
It checks the JSON it walks at least as strictly as msgspec does (grammar, escapes, control
characters, nesting); anything it does not accept, or cannot read exactly, returns a status other
than OK and the caller hands the chunk to the general decoder.

The memory intrinsics (``_ld1``/``_ld8``/``_ldq``/``_ldw``/``_stw``/``_low``) and the key-prediction
helpers are written in each scanner module, not shared: numba's cache checks only the cached
function's own file, so a change in a shared module would leave the cached scanners stale.
"""
import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

# statuses
OK, BAD, ODD, FULL, TOO_MANY, ODD_X, ODD_FLOW = 0, 1, 2, 3, 4, 5, 6
# value kinds (kinds table)
K_ABSENT, K_NULL, K_INT, K_STR, K_FLOAT, K_OBJ, K_OTHER, K_HARD = 0, 1, 2, 3, 4, 5, 6, 7
# K_HARD: a dur this scanner does not read exactly; its value is (start << 32) | end of its text
# columns of the kinds / values tables
F_PID, F_TID, F_TS, F_ID, F_NAME, F_CAT, F_PH, F_ARGS, F_DUR, F_START, F_END, F_A0 = range(12)
# top-level keys (index = column), then the args keys from F_A0 on
TOP_KEYS = ("pid", "tid", "ts", "id", "name", "cat", "ph", "args", "dur")
# how a top-level value is read: 0 skip, 1 int, 2 ts text, 3 interned text or int (id), 4 text, 5 dur
TOP_MODE = (1, 1, 2, 3, 4, 4, 6, 7, 5)
MAX_DEPTH = 48
MAX_PENDING = 16                                        # text values of one event looked up at its end (9 at most)

_H0 = np.uint64(0xcbf29ce484222325)                    # two 64-bit hashes of a text's raw bytes,
_HP = np.uint64(0x100000001b3)                          # 8 bytes (little-endian) folded at a time
_M1 = np.uint64(0xff51afd7ed558ccd)
_G0 = np.uint64(0x2545F4914F6CDD1D)
_GP = np.uint64(0x9e3779b97f4a7c15)
_M2 = np.uint64(0xbf58476d1ce4e5b9)
_ONES = np.uint64(0x0101010101010101)                   # word-at-a-time tests of 8 bytes
_HIGH = np.uint64(0x8080808080808080)
_QUOTES = np.uint64(0x2222222222222222)
_SLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)
_SPACES = np.uint64(0x2020202020202020)
_COMMAS = np.uint64(0x2C2C2C2C2C2C2C2C)
_LFS = np.uint64(0x0A0A0A0A0A0A0A0A)
_LOW3 = np.uint64(0xFFFFFF)
_QCS = np.uint64(0x203A22)                              # '": ' (little-endian: byte 0 the quote)
_CSQ = np.uint64(0x22202C)                              # ', "'
_ZERO = np.uint64(0)
_U1, _U3 = np.uint64(1), np.uint64(3)
_U8 = np.uint64(8)
_DIG0 = np.uint64(0x3030303030303030)                   # '0' in each byte
_DIG9 = np.uint64(0x7676767676767676)                   # + (byte - '0'): bit 7 set iff byte - '0' > 9
_FF2 = np.uint64(0x000000FF000000FF)
_E1 = np.uint64(100 + (1000000 << 32))
_E2 = np.uint64(1 + (10000 << 32))
_U10, _U16, _U32, _U1E8 = np.uint64(10), np.uint64(16), np.uint64(32), np.uint64(100000000)
_U64 = np.uint64(64)
_S29, _S32, _S31, _S27 = np.uint64(29), np.uint64(32), np.uint64(31), np.uint64(27)
_POW10 = np.array([10.0 ** k for k in range(23)])
_IPOW10 = np.array([10 ** k for k in range(19)], np.int64)
_UPOW10 = np.array([10 ** k for k in range(20)], np.uint64)

jit = nb.njit(cache=True, nogil=True, boundscheck=False)
inline = nb.njit(cache=True, nogil=True, boundscheck=False, inline="always")


# The helpers take the chunk as its address, not as an array: numba updates an array's reference
# count (atomically) wherever one is passed, even to an inlined function.
@intrinsic
def _ld1(typingctx, addr, idx):
    """The byte at address ``addr + idx`` (as int64)."""
    sig = types.int64(addr, idx)

    def codegen(context, builder, signature, args):
        a, i = args
        v = builder.load(builder.inttoptr(builder.add(a, i), ir.IntType(8).as_pointer()))
        return builder.zext(v, ir.IntType(64))
    return sig, codegen


@intrinsic
def _ld8(typingctx, addr, idx):
    """The 8 bytes at address ``addr + idx`` as one uint64 (unaligned; little-endian machines)."""
    sig = types.uint64(addr, idx)

    def codegen(context, builder, signature, args):
        a, i = args
        return builder.load(builder.inttoptr(builder.add(a, i), ir.IntType(64).as_pointer()), align=1)
    return sig, codegen


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


@intrinsic
def _prefetch(typingctx, addr, idx):
    """Ask for the cache line at address ``addr + idx`` (llvm.prefetch: read, keep in all levels);
    nothing waits for it."""
    sig = types.void(addr, idx)

    def codegen(context, builder, signature, args):
        a, i = args
        ptr = builder.inttoptr(builder.add(a, i), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return sig, codegen


@inline
def _ws(b, i, n):
    while i < n and (_ld1(b, i) == 32 or _ld1(b, i) == 10 or _ld1(b, i) == 13 or _ld1(b, i) == 9):
        i += 1
    return i


@inline
def _low(k):
    """A mask of the low k bytes (0 <= k <= 7)."""
    return (_U1 << np.uint64(k << 3)) - _U1


@inline
def _first(m):
    """The index of the lowest byte whose bit 7 is set in m (m != 0)."""
    return np.int64(trailing_zeros(m) >> _U3)


@inline
def _str_end(b, i, n, allow_u):
    """_ld1(b, i) is just after an opening quote: the index of the closing quote; -1 bad JSON, -2 a
    \\u escape where ``allow_u`` is False (msgspec checks those even in values it skips).
    ``b`` is the chunk's address (as in every helper).  8 bytes are tested at a time: the lowest
    flagged byte of the word (quote, backslash or control character; the borrow of the classic
    zero-byte test only flags bytes above a true one) is found with ``trailing_zeros`` and an
    escape is stepped over without leaving the word loop."""
    j = i
    while True:
        if j + 8 <= n:
            x = _ld8(b, j)
            t = x ^ _QUOTES
            u = x ^ _SLASHES
            m = (((t - _ONES) & ~t) | ((u - _ONES) & ~u) | ((x - _SPACES) & ~x)) & _HIGH
            if m == _ZERO:
                j += 8
                continue
            j += _first(m)
        else:
            while j < n:
                c = _ld1(b, j)
                if c == 34 or c == 92 or c < 32:
                    break
                j += 1
            if j >= n:
                return -1
        c = _ld1(b, j)
        if c == 34:
            return j
        if c != 92:
            return -1                                   # a control character
        if j + 1 >= n:
            return -1
        d = _ld1(b, j + 1)
        if d == 117:
            if not allow_u:
                return -2
            if j + 5 >= n:
                return -1
            for q in range(j + 2, j + 6):
                h = _ld1(b, q)
                if not ((48 <= h <= 57) or (65 <= h <= 70) or (97 <= h <= 102)):
                    return -1
            j += 6
        elif d == 34 or d == 92 or d == 47 or d == 98 or d == 102 or d == 110 or d == 114 or d == 116:
            j += 2
        else:
            return -1


@inline
def _exponent_end(b, i, n):
    """Just after a number's 'e' / 'E': the index after its exponent's sign and digits, -1 when
    no digit follows."""
    if i < n and (_ld1(b, i) == 43 or _ld1(b, i) == 45):
        i += 1
    if i >= n or not (48 <= _ld1(b, i) <= 57):
        return -1
    while i < n and 48 <= _ld1(b, i) <= 57:
        i += 1
    return i


@inline
def _num_start(b, i, n):
    """Where a JSON number's digits start at _ld1(b, i) (past a minus sign); -1 when no number
    starts there (no digit, or a 0 followed by a digit)."""
    if _ld1(b, i) == 45:
        i += 1
    if i >= n or not (48 <= _ld1(b, i) <= 57):
        return -1
    if _ld1(b, i) == 48 and i + 1 < n and 48 <= _ld1(b, i + 1) <= 57:
        return -1
    return i


@inline
def _num_end_bytes(b, i, n):
    """A JSON number at _ld1(b, i): (end, is_int, digits before the dot, digits after, exponent seen,
    v); v is the value of all the digits (the dot left out) when they are at most 18, or an int of
    19 digits within int64; -1 for a longer int, 2**53 when there are more than 18 digits with a
    dot.  End -1 when it is not a JSON number.  Byte by byte: :func:`_num_end` (the same answers)
    reads the digits a word at a time and comes here for more than 18 digits before the dot."""
    i = _num_start(b, i, n)
    if i < 0:
        return -1, False, 0, 0, False, 0
    v = 0
    wd = 0
    while i < n and 48 <= _ld1(b, i) <= 57:
        d = _ld1(b, i) - 48
        if wd < 18 or (wd == 18 and (v < 922337203685477580 or (v == 922337203685477580 and d <= 7))):
            v = v * 10 + d
        elif wd == 18:
            v = -1                                      # beyond int64
        wd += 1
        i += 1
    fd = 0
    isint = True
    if i < n and _ld1(b, i) == 46:
        isint = False
        i += 1
        if i >= n or not (48 <= _ld1(b, i) <= 57):
            return -1, False, 0, 0, False, 0
        while i < n and 48 <= _ld1(b, i) <= 57:
            if wd + fd < 18:
                v = v * 10 + (_ld1(b, i) - 48)
            else:
                v = 9007199254740992                   # (only the 18 first digits are kept)
            fd += 1
            i += 1
    exp = i < n and (_ld1(b, i) == 101 or _ld1(b, i) == 69)
    if exp:
        isint = False
        i = _exponent_end(b, i + 1, n)
        if i < 0:
            return -1, False, 0, 0, False, 0
    return i, isint, wd, fd, exp, v


@inline
def _eight(t):
    """The number written by the 8 digit values (0..9) in the bytes of t, byte 0 the first."""
    t = t * _U10 + (t >> _U8)
    return ((t & _FF2) * _E1 + ((t >> _U16) & _FF2) * _E2) >> _U32


@inline
def _digits(b, i, n):
    """The run of decimal digits at i: (index after it, its value (exact up to 19 digits, uint64),
    count).  The lowest byte flagged by the word test is the first non-digit (borrows go up)."""
    v = _ZERO
    c = 0
    while i + 8 <= n:
        t = _ld8(b, i) - _DIG0
        nd = ((t + _DIG9) | t) & _HIGH                 # bytes that are not digits
        if nd == _ZERO:
            v = v * _U1E8 + _eight(t)
            c += 8
            i += 8
            continue
        k = _first(nd)
        if k != 0:
            w = _eight((t & _low(k)) << np.uint64(64 - (k << 3)))
            v = w if c == 0 else v * _UPOW10[k] + w
            c += k
            i += k
        return i, v, c
    while i < n:
        d = _ld1(b, i) - 48
        if d < 0 or d > 9:
            break
        v = v * _U10 + np.uint64(d)
        c += 1
        i += 1
    return i, v, c


@inline
def _num_end(b, i, n):
    """:func:`_num_end_bytes` with the digits read a word at a time (the same answers)."""
    i0 = i
    i = _num_start(b, i, n)
    if i < 0:
        return -1, False, 0, 0, False, 0
    i, uv, wd = _digits(b, i, n)
    if wd > 18:
        return _num_end_bytes(b, i0, n)
    v = np.int64(uv)
    fd = 0
    isint = True
    if i < n and _ld1(b, i) == 46:
        isint = False
        i, uf, fd = _digits(b, i + 1, n)
        if fd == 0:
            return -1, False, 0, 0, False, 0
        if wd + fd <= 18:
            v = v * _IPOW10[fd] + np.int64(uf)
        else:
            v = 9007199254740992                        # (only the 18 first digits are kept)
    exp = i < n and (_ld1(b, i) == 101 or _ld1(b, i) == 69)
    if exp:
        isint = False
        i = _exponent_end(b, i + 1, n)
        if i < 0:
            return -1, False, 0, 0, False, 0
    return i, isint, wd, fd, exp, v


@inline
def _ts_ns(b, s, j):
    """(all digits?, value) of the ts text b + s .. j (its length 5..20, a dot at j - 4; s >= 8):
    the digits before the dot, then the 3 after it, read a word at a time."""
    e = j - 4
    p = s
    bad = _ZERO
    v = _ZERO
    r = (e - p) & 7
    if r != 0:
        t = (_ld8(b, p + r - 8) >> np.uint64(64 - 8 * r)) - _DIG0
        bad |= ((t + _DIG9) | t) & _HIGH & _low(r)
        v = _eight((t & _low(r)) << np.uint64(64 - 8 * r))
        p += r
    while p < e:
        t = _ld8(b, p) - _DIG0
        bad |= ((t + _DIG9) | t) & _HIGH
        v = v * _U1E8 + _eight(t)
        p += 8
    t = (_ld8(b, j - 8) >> np.uint64(40)) - _DIG0
    bad |= ((t + _DIG9) | t) & _HIGH & _low(3)
    v = v * np.uint64(1000) + _eight((t & _low(3)) << np.uint64(40))
    return bad == _ZERO, np.int64(v)


@inline
def _skip(b, i, n, stack):
    """Skip the JSON value at _ld1(b, i) (nested values included): the index after it; -1 bad JSON,
    -2 something the scanner leaves to the general decoder."""
    depth = 0
    while True:
        i = _ws(b, i, n)
        if i >= n:
            return -1
        c = _ld1(b, i)
        if c == 123 or c == 91:                         # open: first member / element, or empty
            if depth >= MAX_DEPTH:
                return -2
            stack[depth] = c
            depth += 1
            i = _ws(b, i + 1, n)
            if i >= n:
                return -1
            if (c == 123 and _ld1(b, i) == 125) or (c == 91 and _ld1(b, i) == 93):
                depth -= 1
                i += 1
            elif c == 123:
                if _ld1(b, i) != 34:
                    return -1
                j = _str_end(b, i + 1, n, False)
                if j < 0:
                    return j
                i = _ws(b, j + 1, n)
                if i >= n or _ld1(b, i) != 58:
                    return -1
                i += 1
                continue
            else:
                continue
        elif c == 34:
            j = _str_end(b, i + 1, n, False)
            if j < 0:
                return j
            i = j + 1
        elif c == 45 or 48 <= c <= 57:
            i = _num_end(b, i, n)[0]
            if i < 0:
                return -1
        elif c == 116 and i + 4 <= n and _ld1(b, i + 1) == 114 and _ld1(b, i + 2) == 117 and _ld1(b, i + 3) == 101:
            i += 4
        elif c == 102 and i + 5 <= n and _ld1(b, i + 1) == 97 and _ld1(b, i + 2) == 108 and _ld1(b, i + 3) == 115 and _ld1(b, i + 4) == 101:
            i += 5
        elif c == 110 and i + 4 <= n and _ld1(b, i + 1) == 117 and _ld1(b, i + 2) == 108 and _ld1(b, i + 3) == 108:
            i += 4
        else:
            return -1
        while True:                                     # after a value: close containers or go on
            if depth == 0:
                return i
            i = _ws(b, i, n)
            if i >= n:
                return -1
            c = _ld1(b, i)
            top = stack[depth - 1]
            if c == 44:
                i = _ws(b, i + 1, n)
                if top == 123:
                    if i >= n or _ld1(b, i) != 34:
                        return -1
                    j = _str_end(b, i + 1, n, False)
                    if j < 0:
                        return j
                    i = _ws(b, j + 1, n)
                    if i >= n or _ld1(b, i) != 58:
                        return -1
                    i += 1
                break
            if (top == 123 and c == 125) or (top == 91 and c == 93):
                depth -= 1
                i += 1
                continue
            return -1


@inline
def _key(b, s, e, kb, koff, klut):
    """Index of the key at b + s .. e in a key table (addresses of its bytes, int64 offsets and
    int64 lookup), -1 when it is not one."""
    ln = e - s
    if ln <= 0:
        return -1
    k = _ldq(klut, 8 * ((((ln & 31) << 7) ^ _ld1(b, s) ^ (_ld1(b, e - 1) << 4) ^ (_ld1(b, s + ln // 2) << 2)) & 4095))
    if k < 0:
        return -1
    o = _ldq(koff, 8 * k)
    if _ldq(koff, 8 * k + 8) - o != ln:
        return -1
    for q in range(ln):
        if _ld1(b, s + q) != _ld1(kb, o + q):
            return -1
    return k


@inline
def _guess(b, s, n, k, kb, koff):
    """``k`` when the bytes at b + s are key ``k`` of a key table (addresses of its bytes, padded
    with 8 zero bytes, and int64 offsets) followed by a quote, else -1 (also for k < 0).  Compared
    a word at a time, the last word overlapping the one before (or masked for a key under 8 bytes)."""
    if k < 0:
        return -1
    o = _ldq(koff, 8 * k)
    ln = _ldq(koff, 8 * k + 8) - o
    if s + ln >= n or _ld1(b, s + ln) != 34:
        return -1
    if ln < 8:
        if s + 8 <= n:
            if (_ld8(b, s) ^ _ld8(kb, o)) & _low(ln) != _ZERO:
                return -1
            return k
        for q in range(ln):
            if _ld1(b, s + q) != _ld1(kb, o + q):
                return -1
        return k
    q = 0
    while q + 8 < ln:
        if _ld8(b, s + q) != _ld8(kb, o + q):
            return -1
        q += 8
    if _ld8(b, s + ln - 8) != _ld8(kb, o + ln - 8):
        return -1
    return k


# The next-key predictions: a row of 5 uint64 per previous key (PRED_ROW bytes): the key that came
# next last time (all ones: none), its length, the word of its first bytes followed by the closing
# quote (keys under 8 bytes), that word's mask, and (keys of 8..15 bytes) the word ending at the quote.
PRED_ROW = 40
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_QUOTE = np.uint64(34)


@inline
def _predicted(b, s, n, pa, prev, kb, koff):
    """The key predicted after key ``prev`` (prediction table at address ``pa``) when the bytes at
    b + s are it followed by a quote (one or two word compares), else -1."""
    r = PRED_ROW * prev
    k = _ldq(pa, r)
    if k < 0:
        return -1
    ln = _ldq(pa, r + 8)
    if ln < 16 and s + ln + 1 <= n and s + 8 <= n:
        if _ld8(b, s) & _ldw(pa, r + 24) != _ldw(pa, r + 16):
            return -1
        if ln >= 8 and _ld8(b, s + ln - 7) != _ldw(pa, r + 32):
            return -1
        return k
    return _guess(b, s, n, k, kb, koff)


@inline
def _learn(pa, prev, k, kb, koff):
    """Key ``k`` came after key ``prev``: predict it next time (its words from the key table)."""
    o = _ldq(koff, 8 * k)
    ln = _ldq(koff, 8 * k + 8) - o
    r = PRED_ROW * prev
    _stw(pa, r, np.uint64(k))
    _stw(pa, r + 8, np.uint64(ln))
    if ln < 8:
        _stw(pa, r + 16, (_ld8(kb, o) & _low(ln)) | (_QUOTE << np.uint64(ln << 3)))
        _stw(pa, r + 24, _low(ln + 1) if ln < 7 else _ALL)
        _stw(pa, r + 32, _ZERO)
    else:
        _stw(pa, r + 16, _ld8(kb, o))
        _stw(pa, r + 24, _ALL)
        _stw(pa, r + 32, (_ld8(kb, o + ln - 7) & _low(7)) | (_QUOTE << np.uint64(56)))


@inline
def _word(b, p, e):
    """The bytes at b + p .. min(p + 8, e) as a little-endian uint64 (zero-padded).  A short tail is
    the top of the word ending at e, shifted down (e >= 8 in a chunk but for tiny test chunks)."""
    if p + 8 <= e:
        return _ld8(b, p)
    if e >= 8:
        return _ld8(b, e - 8) >> np.uint64((8 - (e - p)) << 3)
    x = _ZERO
    q = e - 1
    while q >= p:
        x = (x << _U8) | np.uint64(_ld1(b, q))
        q -= 1
    return x


@inline
def _hash(b, s, e):
    """The two 64-bit hashes of the raw bytes b + s .. e."""
    ln = np.uint64(e - s)
    h = _H0 ^ ln
    g = _G0 ^ ln
    p = s
    while p < e:
        x = _word(b, p, e)
        h = (h ^ x) * _HP
        g = (g ^ x) * _GP
        p += 8
    h ^= h >> _S29
    h *= _M1
    h ^= h >> _S32
    g ^= g >> _S31
    g *= _M2
    g ^= g >> _S27
    return h, g


@jit
def _scan(buf, K, V, DV, xok, fok, tt, state, new_s, new_e, tkb_, tkoff_, tklut_, tmode, akb_, akoff_,
          aklut_, amode, tpred_, apred_):
    """Walk ``[ev, ev, ...]`` (``buf``) once: (status, events).  K[r, f] and V[f, r] hold event r's
    value kind and value of column F_* f (V is column-major: an event writes a few of its columns,
    each column a sequential stream), DV[r] its ``dur``; text values are ids into the distinct-span
    table (``tt``: 4 uint64 per slot, see the module doc; ``state`` = [ids handed out so far, new spans in this call, entries in
    the table]; a full table is replaced by a bigger empty one: a text met again gets a new id).  Integers
    of 2**53 or more are read only in ``id`` (elsewhere the general decoder may keep them as objects)."""
    b = buf.ctypes.data
    n = len(buf)
    tkb, tkoff, tklut = tkb_.ctypes.data, tkoff_.ctypes.data, tklut_.ctypes.data
    akb, akoff, aklut = akb_.ctypes.data, akoff_.ctypes.data, aklut_.ctypes.data
    tmask = np.uint64(len(tt) // 4 - 1)
    cap = K.shape[0]
    nf = K.shape[1]
    stack = np.zeros(MAX_DEPTH + 1, np.uint8)
    nt, na = len(tmode), len(amode)                     # key tables' sizes = the "no previous key" state
    tpred, apred = tpred_.ctypes.data, apred_.ctypes.data
    tprev = nt
    aprev = na
    ttp = tt.ctypes.data
    pf = np.empty(2 * MAX_PENDING, np.int64)            # two events' texts (this one's from cur,
    pS = np.empty(2 * MAX_PENDING, np.int64)            # the previous one's from prv): column,
    pE = np.empty(2 * MAX_PENDING, np.int64)            # span, hashes
    pH = np.empty(2 * MAX_PENDING, np.uint64)
    pG = np.empty(2 * MAX_PENDING, np.uint64)
    cur, prv = 0, MAX_PENDING
    npend = 0
    nprev = 0
    last = False
    state[1] = 0
    i = _ws(b, 0, n)
    if i >= n or _ld1(b, i) != 91:
        return BAD, 0
    i = _ws(b, i + 1, n)
    if i < n and _ld1(b, i) == 93:
        i = _ws(b, i + 1, n)
        return (OK if i == n else BAD), 0
    ev = 0
    while True:                                         # one event per turn
        # the previous event's texts: their ids (new ones listed in new_s / new_e); their slots' cache
        # lines were asked for when they were read, an event ago
        for t in range(prv, prv + nprev):
            h = pH[t]
            g = pG[t]
            s = pS[t]
            j = pE[t]
            q = np.int64(h & tmask)
            r = -1
            ln = np.uint64(j - s)
            while True:
                c = tt[4 * q + 3]
                if c == _ZERO:
                    break
                if tt[4 * q] == h and tt[4 * q + 1] == g and tt[4 * q + 2] == ln:
                    r = np.int64(c) - 1
                    break
                q = np.int64((np.uint64(q) + np.uint64(1)) & tmask)
            if r < 0:
                r = state[0]
                k = state[1]
                if 2 * (state[2] + 1) > len(tt) // 4 or k >= len(new_s):
                    return FULL, ev
                state[2] += 1
                tt[4 * q + 3] = np.uint64(r + 1)
                tt[4 * q] = h
                tt[4 * q + 1] = g
                tt[4 * q + 2] = ln
                new_s[k] = s
                new_e[k] = j
                state[0] = r + 1
                state[1] = k + 1
            V[pf[t], ev - 1] = r
        nprev = 0
        if last:
            return (OK if i == n else BAD), ev
        if i >= n:
            return BAD, ev
        if _ld1(b, i) != 123:
            return ODD, ev
        if ev >= cap:
            return TOO_MANY, ev
        for f in range(nf):
            K[ev, f] = K_ABSENT
        V[F_START, ev] = i
        DV[ev] = np.nan
        i = _ws(b, i + 1, n)
        if i >= n:
            return BAD, ev
        inargs = False
        tprev = nt
        closed = _ld1(b, i) == 125
        if closed:
            i += 1
        while not closed:                               # one member per turn
            if i >= n or _ld1(b, i) != 34:
                return BAD, ev
            s = i + 1
            # the key that followed the previous one last time, checked in place (its bytes, then
            # the closing quote: plain bytes, so _str_end would end there too); else read and looked up
            if inargs:
                k = _predicted(b, s, n, apred, aprev, akb, akoff)
                if k < 0:
                    j = _str_end(b, s, n, False)
                    if j < 0:
                        return (BAD if j == -1 else ODD), ev
                    k = _key(b, s, j, akb, akoff, aklut)
                    if k >= 0:
                        _learn(apred, aprev, k, akb, akoff)
                else:
                    j = s + _ldq(apred, PRED_ROW * aprev + 8)
                aprev = k if k >= 0 else na
                mode = amode[k] if k >= 0 else 0
                f = F_A0 + k
            else:
                k = _predicted(b, s, n, tpred, tprev, tkb, tkoff)
                if k < 0:
                    j = _str_end(b, s, n, False)
                    if j < 0:
                        return (BAD if j == -1 else ODD), ev
                    k = _key(b, s, j, tkb, tkoff, tklut)
                    if k >= 0:
                        _learn(tpred, tprev, k, tkb, tkoff)
                else:
                    j = s + _ldq(tpred, PRED_ROW * tprev + 8)
                tprev = k if k >= 0 else nt
                mode = tmode[k] if k >= 0 else 0
                f = k
            if j + 8 <= n and _ld8(b, j) & _LOW3 == _QCS and _ld1(b, j + 3) > 32:
                i = j + 3                               # '": ' then the value (one compare)
            else:
                i = _ws(b, j + 1, n)
                if i >= n or _ld1(b, i) != 58:
                    return BAD, ev
                i = _ws(b, i + 1, n)
                if i >= n:
                    return BAD, ev
            if mode != 0 and K[ev, f] != K_ABSENT:      # a repeated key: the general decoder decides
                return ODD, ev
            c = _ld1(b, i)
            if mode == 7 and c == 123:                  # args: its members are read as ours
                K[ev, F_ARGS] = K_OBJ
                i = _ws(b, i + 1, n)
                if i < n and _ld1(b, i) == 125:
                    i += 1
                else:
                    inargs = True
                    aprev = na
                    continue
            elif c == 34:                               # a string
                j = _str_end(b, i + 1, n, mode == 3 or mode == 4 or mode == 6)
                if j < 0:
                    return (BAD if j == -1 else ODD), ev
                s = i + 1
                i = j + 1
                if mode == 3 or mode == 4:
                    # the text's id in the cross-chunk table, looked up at the event's end (its
                    # slot's cache line asked for now: a miss to L3 no longer stalls the scan)
                    h, g = _hash(b, s, j)
                    _prefetch(ttp, np.int64(h & tmask) << 5)
                    if npend >= MAX_PENDING:
                        return ODD, ev
                    pf[cur + npend] = f
                    pS[cur + npend] = s
                    pE[cur + npend] = j
                    pH[cur + npend] = h
                    pG[cur + npend] = g
                    npend += 1
                    K[ev, f] = K_STR
                elif mode == 6:                         # ph: one letter
                    K[ev, f] = K_STR if j - s == 1 else K_OTHER
                    V[f, ev] = _ld1(b, s)
                elif mode == 2:                         # ts: digits "." 3 digits -> exact ns
                    ln = j - s
                    # 4..19 digits, as ascend_columns.ts_ns reads them (19: below the int64 limit)
                    ok = 5 <= ln <= 20 and _ld1(b, j - 4) == 46 and (ln < 20 or _ld1(b, s) <= 56)
                    v = 0
                    done = False
                    if ok and s >= 8:
                        done, v = _ts_ns(b, s, j)
                        if not done:
                            v = 0
                    if ok and not done:                 # byte by byte (the value where it stopped, as before)
                        for q in range(s, j):
                            d = _ld1(b, q)
                            if q == j - 4:
                                continue
                            if not (48 <= d <= 57):
                                ok = False
                                break
                            v = v * 10 + (d - 48)
                    K[ev, f] = K_STR if ok else K_OTHER
                    V[f, ev] = v
                elif mode != 0:
                    K[ev, f] = K_OTHER
            elif c == 45 or 48 <= c <= 57:              # a number
                s0 = i
                j, isint, wd, fd, exp, v = _num_end(b, i, n)
                if j < 0:
                    return BAD, ev
                neg = c == 45
                i = j
                if mode == 1 or mode == 3:
                    if isint and wd <= 19 and v >= 0 and (mode == 3 or v < 9007199254740992):
                        K[ev, f] = K_INT
                        V[f, ev] = -v if neg else v
                    else:
                        K[ev, f] = K_OTHER
                elif mode == 5:                         # dur: the double when exact here, else its span
                    if not exp and wd + fd <= 18 and v < 9007199254740992:
                        d = v / _POW10[fd]              # both exact: one correctly rounded division
                        DV[ev] = -d if neg else d
                        K[ev, f] = K_INT if isint else K_FLOAT
                    elif isint and wd > 18:
                        K[ev, f] = K_OTHER
                    else:
                        K[ev, f] = K_HARD
                        V[f, ev] = (s0 << 32) | j
                elif mode != 0:
                    K[ev, f] = K_OTHER
            elif c == 110 and i + 4 <= n and _ld1(b, i + 1) == 117 and _ld1(b, i + 2) == 108 and _ld1(b, i + 3) == 108:
                i += 4
                if mode != 0:
                    K[ev, f] = K_NULL
            else:                                       # true / false / array / object
                j = _skip(b, i, n, stack)
                if j < 0:
                    return (BAD if j == -1 else ODD), ev
                i = j
                if mode != 0:
                    K[ev, f] = K_OTHER
            # after the member: ',' next member, '}' closes args or the event
            if i + 8 <= n and _ld8(b, i) & _LOW3 == _CSQ:     # ', "': the next key (one compare)
                i += 2
                continue
            while True:
                i = _ws(b, i, n)
                if i >= n:
                    return BAD, ev
                c = _ld1(b, i)
                if c == 44:
                    i = _ws(b, i + 1, n)
                    break
                if c == 125:
                    i += 1
                    if inargs:
                        inargs = False
                        continue
                    closed = True
                    break
                return BAD, ev
        V[F_END, ev] = i
        cur, prv = prv, cur                             # its texts: looked up after the next event
        nprev = npend
        npend = 0
        # the phase (one letter the schema knows) and, for X and flow events, every value read
        # of a kind the fast path takes (xok / fok: column x kind -> 1)
        if K[ev, F_PH] != K_STR:
            return ODD, ev
        ph = V[F_PH, ev]
        if not ((65 <= ph <= 90 and ph != 83) or 97 <= ph <= 122):
            return ODD, ev
        if ph == 88:
            for f in range(nf):
                if xok[f, K[ev, f]] == 0:
                    return ODD_X, ev
        elif ph == 115 or ph == 102:
            for f in range(nf):
                if fok[f, K[ev, f]] == 0:
                    return ODD_FLOW, ev
        ev += 1
        i = _ws(b, i, n)
        if i >= n:
            return BAD, ev
        c = _ld1(b, i)
        if c == 44:
            i = _ws(b, i + 1, n)
            continue
        if c == 93:
            i = _ws(b, i + 1, n)
            last = True                                 # (the last event's texts first)
            continue
        return BAD, ev


@jit
def scan(buf, K, V, DV, xok, fok, tt, state, new_s, new_e, tkb_, tkoff_, tklut_, tmode, akb_, akoff_, aklut_, amode):
    """:func:`_scan` with fresh next-key prediction tables (one row per key of each key table, and one
    for "no previous key").  They are made here and handed down as arrays: this function holds
    them until :func:`_scan` returns.  (Made inside :func:`_scan`, where only their addresses are
    used, numba would free them right after the address is taken -- its variables die at their
    last use -- and the scan would read and write freed memory.)"""
    tpred_ = np.full((len(tmode) + 1, PRED_ROW // 8), _ALL, np.uint64)
    apred_ = np.full((len(amode) + 1, PRED_ROW // 8), _ALL, np.uint64)
    return _scan(buf, K, V, DV, xok, fok, tt, state, new_s, new_e, tkb_, tkoff_, tklut_, tmode, akb_, akoff_,
                 aklut_, amode, tpred_, apred_)


# -- the columns of one chunk's rows (ascend_fast.Scanner._ints / _texts): one pass each instead of
# a numpy call per step over a strided column of the tables
@jit
def take_ints(K, V, rows, c, out, miss):
    """out[i] = V[c, rows[i]] where that value is an int (K_INT), else -1 with miss[i] set; the
    number of ints."""
    n_int = 0
    for i in range(len(rows)):
        r = rows[i]
        if K[r, c] == K_INT:
            out[i] = V[c, r]
            miss[i] = False
            n_int += 1
        else:
            out[i] = -1
            miss[i] = True
    return n_int


@jit
def take_texts(K, V, rows, c, lut, out):
    """out[i] = lut[text id] where the value is a text (K_STR), else -1; the number of texts whose
    lut entry is still -2 (not looked up yet)."""
    todo = 0
    for i in range(len(rows)):
        r = rows[i]
        if K[r, c] == K_STR:
            v = lut[V[c, r]]
            out[i] = v
            if v == -2:
                todo += 1
        else:
            out[i] = -1
    return todo


# -- the plain CSVs of an Ascend export (csv_simple.read): the separators found and checked in one
# pass, the cells cut into words in one more, the number cells read in one
@jit
def csv_seps(b, body, size, eol, crlf, out):
    """The offsets of the separators ("," or ``eol``) of ``b[body:size]``, row by row into ``out``
    (rows, ncol); the number of rows, or -1 when a row's separators are not ncol - 1 commas then
    ``eol`` (with ``crlf``, a CR followed by LF), when a row is cut short, when there is no row, or
    when ``out`` has too few rows (the caller sizes it by the body's LFs: never, for a good file).
    With ``crlf`` every LF of the body must end a row (else pandas would see a line break in a cell).
    8 bytes are tested at a time for a comma, CR or LF (``b`` holds 8 bytes past ``size``)."""
    a = b.ctypes.data
    ncol = out.shape[1]
    cap = out.shape[0]
    eolw = _ONES * np.uint64(eol)
    r = 0
    j = 0
    lf = 0
    i = body
    while i < size:
        x = _ld8(a, i)
        t = x ^ _COMMAS
        u = x ^ eolw
        v = x ^ _LFS
        if (((t - _ONES) & ~t) | ((u - _ONES) & ~u) | ((v - _ONES) & ~v)) & _HIGH == _ZERO:
            i += 8
            continue
        stop = min(i + 8, size)
        while i < stop:
            c = _ld1(a, i)
            i += 1
            if c == 10:
                lf += 1
            if c != 44 and c != eol:
                continue
            if j < ncol - 1:
                if c != 44:
                    return -1
                out[r, j] = i - 1
                j += 1
                continue
            if c != eol or r >= cap:
                return -1
            if crlf and _ld1(a, i) != 10:
                return -1
            out[r, j] = i - 1
            r += 1
            j = 0
    if j != 0 or r == 0 or (crlf and lf != r):
        return -1
    return r


@jit
def cell_words(b, lo, hi, out):
    """out[i, w] = the 8 bytes of cell i from ``lo[i] + 8 w`` as a little-endian uint64, the bytes
    past the cell's end ``hi[i]`` zero (``b`` holds 8 bytes past every cell's end)."""
    a = b.ctypes.data
    k = out.shape[1]
    for i in range(len(lo)):
        s = lo[i]
        n = hi[i] - s
        for w in range(k):
            m = n - 8 * w
            if m <= 0:
                out[i, w] = _ZERO
            elif m >= 8:
                out[i, w] = _ld8(a, s + 8 * w)
            else:
                out[i, w] = _ld8(a, s + 8 * w) & ((_U1 << np.uint64(8 * m)) - _U1)
    return k


@inline
def _number(a, s, e):
    """(ok, value) of the cell ``[s, e)`` by :func:`cell_floats`' rule."""
    if s == e or (e - s == 3 and _ld1(a, s) == 78 and _ld1(a, s + 1) == 47 and _ld1(a, s + 2) == 65):
        return True, np.nan
    neg = _ld1(a, s) == 45
    p = s + 1 if neg else s
    v = 0
    nd = 0
    nw = 0
    nf = -1
    while p < e:
        c = _ld1(a, p)
        if 48 <= c <= 57:
            v = v * 10 + (c - 48)
            nd += 1
            if nf >= 0:
                nf += 1
            else:
                nw += 1
            if nd > 15:
                return False, 0.0
        elif c == 46 and nf < 0:
            nf = 0
        else:
            return False, 0.0
        p += 1
    if nw == 0 or nf == 0:
        return False, 0.0
    x = np.float64(v) / _POW10[max(nf, 0)]
    return True, -x if neg else x


@jit
def cell_floats(b, lo, hi, out):
    """out[i] = cell i read as ``[-]digits[.digits]`` (at most 15 digits: the integer over 10**decimals,
    both exact doubles, so the correctly rounded value, as Python's ``float()``), NaN for "" and
    "N/A" (:func:`_number`); the index of the first cell of another form, or -1 when every cell was read."""
    a = b.ctypes.data
    for i in range(len(lo)):
        ok, x = _number(a, lo[i], hi[i])
        if not ok:
            return i
        out[i] = x
    return -1


# -- CSVs with quoted cells (csv_quoted.read_columns: kernel_details.csv): one pass, row by row
@inline
def _mix(h1, h2, c):
    """The two hashes of a text cell (:func:`csv_read`) with its next byte ``c`` mixed in."""
    h1 = (h1 ^ np.uint64(c)) * _HP
    h2 = (h2 ^ np.uint64(c)) * _GP
    return h1, h2 ^ (h2 >> _S29)


@jit
def csv_read(b, body, size, eol, crlf, kind, slot, nums, tlo, thi, th1, th2):
    """Read the rows of ``b[body:size]`` in one pass: of file column ``j``, ``kind[j]`` 0 skipped,
    1 text (its span ``tlo``/``thi`` and two 64-bit hashes of its bytes ``th1``/``th2`` at
    ``[slot[j], row]``), 2 number (``nums[slot[j], row]``, read as :func:`cell_floats` reads a
    cell).  A quoted cell starts with the quote and ends with the quote before a comma or ``eol``;
    ``""`` in it is one quote (its span: the text inside the quotes, ``""`` kept).  The number of
    rows, or -1 for a row of another number of cells, a quote anywhere else, a CR or LF in a quoted
    cell, an ``eol`` not followed by LF (``crlf``), an LF in a cell (``crlf``), no row or more rows
    than ``nums`` holds; -2 for a number cell quoted or of another form."""
    a = b.ctypes.data
    ncol = len(kind)
    cap = tlo.shape[1]
    r = 0
    i = body
    while i < size:
        if r >= cap:
            return -1
        for j in range(ncol):
            k = kind[j]
            h1 = _H0
            h2 = _G0
            s = i
            q = False
            if i < size and _ld1(a, i) == 34:
                q = True
                i += 1
                s = i
                while True:
                    if i >= size:
                        return -1
                    c = _ld1(a, i)
                    if c == 34:
                        if _ld1(a, i + 1) != 34:
                            break
                        if k == 1:
                            h1, h2 = _mix(h1, h2, c)
                        i += 1
                    elif c == 10 or c == 13:
                        return -1
                    if k == 1:
                        h1, h2 = _mix(h1, h2, c)
                    i += 1
                e = i
                i += 1
                c = _ld1(a, i) if i < size else -1
            else:
                while True:
                    if i >= size:
                        return -1
                    c = _ld1(a, i)
                    if c == 44 or c == eol:
                        break
                    if c == 34 or c == 10 or c == 13:
                        return -1
                    if k == 1:
                        h1, h2 = _mix(h1, h2, c)
                    i += 1
                e = i
            if j < ncol - 1:
                if c != 44:
                    return -1
            else:
                if c != eol:
                    return -1
                if crlf:
                    if _ld1(a, i + 1) != 10:
                        return -1
                    i += 1
            if k == 1:
                m = slot[j]
                tlo[m, r] = s
                thi[m, r] = e
                th1[m, r] = h1
                th2[m, r] = h2
            elif k == 2:
                if q:
                    return -2
                ok, x = _number(a, s, e)
                if not ok:
                    return -2
                nums[slot[j], r] = x
            i += 1
        r += 1
    return r if r > 0 else -1
