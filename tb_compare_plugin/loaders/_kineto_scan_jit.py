"""The numba-compiled body of :mod:`.kineto_scan` (imported only when numba is present)."""
import numba as nb
import numpy as np

from .kineto_scan_codes import (BAD_JSON, ESC_KEY, K_FLOAT, K_HARD, K_INT, K_NULL, K_OTHER, K_STR, MISMATCH, N_DUR,
                                N_RAW0, N_TS, NO_NS, OK, TOO_DEEP, TOO_MANY)

_POW10 = np.array([10.0 ** k for k in range(23)])
_IPOW10 = np.array([10 ** k for k in range(19)], np.int64)

jit = nb.njit(cache=True, nogil=True, boundscheck=False)
# the helpers that take the column arrays are inlined: a call passing arrays costs a reference
# count update per array, which made the scanner ~5x slower
inline = nb.njit(cache=True, nogil=True, boundscheck=False, inline="always")


@jit
def _ws(b, i, n):
    while i < n:
        c = b[i]
        if c != 32 and c != 10 and c != 13 and c != 9:
            return i
        i += 1
    return i


@jit
def _string(b, i, n):
    """b[i] is the opening quote: (index after the closing quote, has escape), -1 when bad."""
    i += 1
    esc = False
    while i < n:
        c = b[i]
        if c == 34:
            return i + 1, esc
        if c == 92:
            esc = True
            if i + 1 >= n:
                return -1, esc
            d = b[i + 1]
            if d == 117:                        # \uXXXX
                if i + 5 >= n:
                    return -1, esc
                for j in range(i + 2, i + 6):
                    h = b[j]
                    if not ((48 <= h <= 57) or (65 <= h <= 70) or (97 <= h <= 102)):
                        return -1, esc
                i += 6
                continue
            if d not in (34, 92, 47, 98, 102, 110, 114, 116):
                return -1, esc
            i += 2
            continue
        if c < 32:
            return -1, esc
        i += 1
    return -1, esc


@inline
def _number(b, i, n):
    """JSON number at i: (end, kind, int value, ns (ts/dur; -1 when not exact), double)."""
    neg = False
    if b[i] == 45:
        neg = True
        i += 1
    if i >= n or not (48 <= b[i] <= 57):
        return -1, 0, 0, NO_NS, 0.0
    if b[i] == 48 and i + 1 < n and 48 <= b[i + 1] <= 57:
        return -1, 0, 0, NO_NS, 0.0
    whole = 0
    wd = 0
    while i < n and 48 <= b[i] <= 57:
        if wd < 18:
            whole = whole * 10 + (b[i] - 48)
        wd += 1
        i += 1
    frac = 0
    fd = 0
    isfloat = False
    if i < n and b[i] == 46:
        isfloat = True
        i += 1
        if i >= n or not (48 <= b[i] <= 57):
            return -1, 0, 0, NO_NS, 0.0
        while i < n and 48 <= b[i] <= 57:
            if fd < 18:
                frac = frac * 10 + (b[i] - 48)
            fd += 1
            i += 1
    has_exp = False
    if i < n and (b[i] == 101 or b[i] == 69):
        isfloat = True
        has_exp = True
        i += 1
        if i < n and (b[i] == 43 or b[i] == 45):
            i += 1
        if i >= n or not (48 <= b[i] <= 57):
            return -1, 0, 0, NO_NS, 0.0
        while i < n and 48 <= b[i] <= 57:
            i += 1
    if i < n:
        c = b[i]
        if not (c == 44 or c == 125 or c == 93 or c == 32 or c == 10 or c == 13 or c == 9):
            return -1, 0, 0, NO_NS, 0.0
    if not isfloat:
        if wd > 18:
            return i, K_HARD, 0, NO_NS, 0.0
        v = -whole if neg else whole
        ns = v * 1000 if whole < 9_000_000_000_000_000 else NO_NS
        return i, K_INT, v, ns, float(v)
    if has_exp or fd > 18 or wd > 18:
        return i, K_FLOAT, 0, NO_NS, np.nan
    ns = NO_NS
    if fd <= 3 and whole < 9_000_000_000_000_000:
        ns = whole * 1000 + frac * _IPOW10[3 - fd]
        if neg:
            ns = -ns
    d = np.nan                                        # not exact: the caller falls back
    if wd + fd <= 15:
        d = float(whole * _IPOW10[fd] + frac) / _POW10[fd]
        if neg:
            d = -d
    return i, K_FLOAT, 0, ns, d


@jit
def _skip(b, i, n, stack):
    """Validate and skip one JSON value at i: the index after it, -1 when bad, -2 when too deep."""
    depth = 0
    while True:
        if i >= n:
            return -1
        c = b[i]
        if c == 123 or c == 91:                       # { or [
            i = _ws(b, i + 1, n)
            if i >= n:
                return -1
            if (c == 123 and b[i] == 125) or (c == 91 and b[i] == 93):
                i += 1
            else:
                if depth >= 64:
                    return -2
                stack[depth] = c
                depth += 1
                if c == 123:
                    if b[i] != 34:
                        return -1
                    i, _ = _string(b, i, n)
                    if i < 0:
                        return -1
                    i = _ws(b, i, n)
                    if i >= n or b[i] != 58:
                        return -1
                    i = _ws(b, i + 1, n)
                continue
        elif c == 34:
            i, _ = _string(b, i, n)
            if i < 0:
                return -1
        elif c == 45 or 48 <= c <= 57:
            i = _number(b, i, n)[0]
            if i < 0:
                return -1
        elif c == 116 and i + 4 <= n and b[i + 1] == 114 and b[i + 2] == 117 and b[i + 3] == 101:
            i += 4
        elif c == 102 and i + 5 <= n and b[i + 1] == 97 and b[i + 2] == 108 and b[i + 3] == 115 and b[i + 4] == 101:
            i += 5
        elif c == 110 and i + 4 <= n and b[i + 1] == 117 and b[i + 2] == 108 and b[i + 3] == 108:
            i += 4
        else:
            return -1
        while True:                                   # a value ended: close containers or go on
            if depth == 0:
                return i
            i = _ws(b, i, n)
            if i >= n:
                return -1
            c = b[i]
            top = stack[depth - 1]
            if c == 44:
                i = _ws(b, i + 1, n)
                if top == 123:
                    if i >= n or b[i] != 34:
                        return -1
                    i, _ = _string(b, i, n)
                    if i < 0:
                        return -1
                    i = _ws(b, i, n)
                    if i >= n or b[i] != 58:
                        return -1
                    i = _ws(b, i + 1, n)
                break
            if (c == 125 and top == 123) or (c == 93 and top == 91):
                depth -= 1
                i += 1
                continue
            return -1


_H0 = -3750763034362895579                             # FNV offset basis as int64
_HP = 0x100000001b3
_M1 = -49064778989728563                               # 0xff51afd7ed558ccd as int64
_G0 = 0x2545F4914F6CDD1D                               # the second hash: other seed, multiplier, mix
_GP = -7046029254386353131                             # 0x9e3779b97f4a7c15 as int64
_M2 = -4658895280553007687                             # 0xbf58476d1ce4e5b9 as int64


@jit
def _escape(b, j, n):
    """b[j] is a backslash inside a string: the index after the escape, -1 when it is not valid."""
    if j + 1 >= n:
        return -1
    d = b[j + 1]
    if d == 117:                                        # \uXXXX
        if j + 5 >= n:
            return -1
        for q in range(j + 2, j + 6):
            h = b[q]
            if not ((48 <= h <= 57) or (65 <= h <= 70) or (97 <= h <= 102)):
                return -1
        return j + 6
    if d == 34 or d == 92 or d == 47 or d == 98 or d == 102 or d == 110 or d == 114 or d == 116:
        return j + 2
    return -1


@jit
def _literal(b, i, n):
    """true / false / null at b[i]: the index after it, -1 when it is none of them."""
    c = b[i]
    if c == 116 and i + 4 <= n and b[i + 1] == 114 and b[i + 2] == 117 and b[i + 3] == 101:
        return i + 4
    if c == 102 and i + 5 <= n and b[i + 1] == 97 and b[i + 2] == 108 and b[i + 3] == 115 and b[i + 4] == 101:
        return i + 5
    if c == 110 and i + 4 <= n and b[i + 1] == 117 and b[i + 2] == 108 and b[i + 3] == 108:
        return i + 4
    return -1


@jit
def scan(b, kn, iv, fv, ks, ss, se, sh, sg, kb, koff, kslot, klut, akb, akoff, akslot, aklut):
    """Walk ``[ev, ev, ...]`` once, filling row ``ev`` of the (event, field) tables: (status, events).

    One flat loop (no helper call on the common paths: a call passing the byte array costs two
    reference count updates); whitespace and string bodies are skipped with direct compares, which
    measured ~15% faster than 256-entry byte-class tables.  Text and raw values get a 64-bit hash of their bytes, 8 bytes folded
    at a time."""
    n = len(b)
    cap = kn.shape[0]
    stack = np.zeros(64, np.uint8)
    i = 0
    while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
        i += 1
    if i >= n or b[i] != 91:
        return BAD_JSON, 0
    i += 1
    while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
        i += 1
    if i < n and b[i] == 93:
        i += 1
        while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
            i += 1
        return (OK if i == n else BAD_JSON), 0
    ev = 0
    while True:                                         # one event per turn
        if i >= n:
            return BAD_JSON, ev
        if b[i] != 123:
            return MISMATCH, ev
        if ev >= cap:
            return TOO_MANY, ev
        i += 1
        while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
            i += 1
        if i >= n:
            return BAD_JSON, ev
        inargs = False
        closed = b[i] == 125
        if closed:
            i += 1
        while not closed:                               # one member per turn
            # -- the key
            if b[i] != 34:
                return BAD_JSON, ev
            s = i + 1
            j = s
            while j < n and b[j] != 34 and b[j] != 92 and b[j] >= 32:
                j += 1
            if j >= n:
                return BAD_JSON, ev
            if b[j] != 34:
                return (ESC_KEY if b[j] == 92 else BAD_JSON), ev
            e = j
            i = j + 1
            while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
                i += 1
            if i >= n or b[i] != 58:
                return BAD_JSON, ev
            i += 1
            while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
                i += 1
            if i >= n:
                return BAD_JSON, ev
            slot = -1
            L = e - s
            if L > 0:
                code = (((L & 31) << 7) ^ b[s] ^ (b[e - 1] << 4)) & 4095
                if inargs:
                    k = aklut[code]
                    if k >= 0 and akoff[k + 1] - akoff[k] == L:
                        o = akoff[k] - s
                        slot = akslot[k]
                        for q in range(s, e):
                            if b[q] != akb[o + q]:
                                slot = -1
                                break
                else:
                    k = klut[code]
                    if k >= 0 and koff[k + 1] - koff[k] == L:
                        o = koff[k] - s
                        slot = kslot[k]
                        for q in range(s, e):
                            if b[q] != kb[o + q]:
                                slot = -1
                                break
            # -- the value
            c = b[i]
            f = slot - 1000                             # >= 0: a text / raw field
            vs = i                                      # the value's span, for text and raw fields
            if slot == 9999:
                if c != 123:
                    return MISMATCH, ev
                i += 1
                while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
                    i += 1
                if i >= n:
                    return BAD_JSON, ev
                if b[i] != 125:
                    inargs = True
                    continue                            # the args' first key
                i += 1                                  # empty args
            elif c == 34:                               # a string
                j = i + 1
                while True:
                    while j < n and b[j] != 34 and b[j] != 92 and b[j] >= 32:
                        j += 1
                    if j >= n:
                        return BAD_JSON, ev
                    if b[j] == 34:
                        break
                    if b[j] != 92:
                        return BAD_JSON, ev
                    j = _escape(b, j, n)
                    if j < 0:
                        return BAD_JSON, ev
                i = j + 1
                if f >= 0:
                    ks[ev, f] = K_STR
                    if f < N_RAW0:                      # text: the span between the quotes
                        vs += 1
                        j = i - 1
                    else:
                        j = i
                    ss[ev, f] = vs
                    se[ev, f] = j
                    h = _H0 ^ (j - vs)
                    g = _G0 ^ (j - vs)
                    w = 0
                    m = 0
                    for q in range(vs, j):
                        w = (w << 8) | b[q]
                        m += 1
                        if m == 8:
                            h = (h ^ w) * _HP
                            g = (g ^ w) * _GP
                            w = 0
                            m = 0
                    h = (h ^ w) * _HP
                    g = (g ^ w) * _GP
                    h ^= (h >> 29) & 0x7ffffffff
                    h *= _M1
                    h ^= (h >> 32) & 0xffffffff
                    g ^= (g >> 31) & 0x1ffffffff
                    g *= _M2
                    g ^= (g >> 27) & 0x1fffffffff
                    sh[ev, f] = h | 3                   # 0..2 are left for absent / null
                    sg[ev, f] = g
                elif slot >= 0:                         # a number field holding text: its span
                    kn[ev, slot] = K_STR
                    iv[ev, slot] = ((vs + 1) << 32) | (i - 1)
            elif c == 45 or 48 <= c <= 57:              # a number
                j, kind, v, ns, d = _number(b, i, n)
                if j < 0:
                    return BAD_JSON, ev
                i = j
                if f >= 0:
                    if f < N_RAW0:
                        return MISMATCH, ev
                    ks[ev, f] = K_STR
                    ss[ev, f] = vs
                    se[ev, f] = j
                    sh[ev, f], sg[ev, f] = _hash(b, vs, j)
                elif slot >= 0:
                    kn[ev, slot] = kind
                    if slot == N_TS or slot == N_DUR:
                        iv[ev, slot] = ns
                    else:
                        iv[ev, slot] = v
                    fv[ev, slot] = d
            elif c == 123 or c == 91:                   # an object or array
                j = _skip(b, i, n, stack)
                if j < 0:
                    return (BAD_JSON if j == -1 else TOO_DEEP), ev
                i = j
                if f >= N_RAW0:
                    ks[ev, f] = K_STR
                    ss[ev, f] = vs
                    se[ev, f] = j
                    sh[ev, f], sg[ev, f] = _hash(b, vs, j)
                elif slot >= 0:
                    return MISMATCH, ev
            else:                                       # true / false / null
                j = _literal(b, i, n)
                if j < 0:
                    return BAD_JSON, ev
                i = j
                if f >= N_RAW0:
                    ks[ev, f] = K_STR
                    ss[ev, f] = vs
                    se[ev, f] = j
                    sh[ev, f], sg[ev, f] = _hash(b, vs, j)
                elif slot >= 0:
                    if c != 110:
                        return MISMATCH, ev
                    if f >= 0:
                        ks[ev, f] = K_NULL
                        sh[ev, f] = 1
                    else:
                        kn[ev, slot] = K_NULL
            # -- after the value: ',' and the next key, or '}' (of the args, then of the event)
            while True:
                while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
                    i += 1
                if i >= n:
                    return BAD_JSON, ev
                if b[i] == 44:
                    i += 1
                    while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
                        i += 1
                    if i >= n:
                        return BAD_JSON, ev
                    break
                if b[i] != 125:
                    return BAD_JSON, ev
                i += 1
                if inargs:
                    inargs = False
                    continue
                closed = True
                break
        ev += 1
        while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
            i += 1
        if i >= n:
            return BAD_JSON, ev
        if b[i] == 44:
            i += 1
            while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
                i += 1
            continue
        if b[i] == 93:
            i += 1
            while i < n and (b[i] == 32 or b[i] == 10 or b[i] == 13 or b[i] == 9):
                i += 1
            return (OK if i == n else BAD_JSON), ev
        return BAD_JSON, ev


@jit
def _hash(b, s, e):
    """The same two hashes as the inline ones in :func:`scan` (for raw JSON values)."""
    h = _H0 ^ (e - s)
    g = _G0 ^ (e - s)
    w = 0
    m = 0
    for q in range(s, e):
        w = (w << 8) | b[q]
        m += 1
        if m == 8:
            h = (h ^ w) * _HP
            g = (g ^ w) * _GP
            w = 0
            m = 0
    h = (h ^ w) * _HP
    g = (g ^ w) * _GP
    h ^= (h >> 29) & 0x7ffffffff
    h *= _M1
    h ^= (h >> 32) & 0xffffffff
    g ^= (g >> 31) & 0x1ffffffff
    g *= _M2
    g ^= (g >> 27) & 0x1fffffffff
    return h | 3, g


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
