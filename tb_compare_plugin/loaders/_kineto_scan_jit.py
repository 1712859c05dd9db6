"""The numba-compiled body of :mod:`.kineto_scan` (imported only when numba is present)."""
import numba as nb
import numpy as np

from .kineto_scan_codes import (BAD_JSON, ESC_KEY, K_FLOAT, K_HARD, K_INT, K_NULL, K_OTHER, K_STR, MISMATCH, N_DUR,
                                N_RAW0, N_TS, NO_NS, OK, TOO_DEEP, TOO_MANY)

_FNV0 = np.uint64(0xcbf29ce484222325)
_FNVP = np.uint64(0x100000001b3)
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


@jit
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


@jit
def _hash(b, s, e):
    h = _FNV0
    for j in range(s, e):
        h = (h ^ np.uint64(b[j])) * _FNVP
    return h | np.uint64(3)                            # 0..2 are left for absent / null


@inline
def _find_key(b, s, e, kb, koff, kslot, klut):
    L = e - s
    if L == 0:
        return -1
    k = klut[(((L & 31) << 7) ^ b[s] ^ (b[e - 1] << 4)) & 4095]
    if k < 0 or koff[k + 1] - koff[k] != L:
        return -1
    o = koff[k]
    for j in range(L):
        if b[s + j] != kb[o + j]:
            return -1
    return kslot[k]


@inline
def _field(b, i, n, ev, slot, kn, iv, fv, ks, ss, se, sh, stack):
    """One known field's value at b[i] into row ev: (index after it, status)."""
    c = b[i]
    if slot >= 1000:                                    # text / raw JSON
        f = slot - 1000
        j = _skip(b, i, n, stack)
        if j < 0:
            return -1, (BAD_JSON if j == -1 else TOO_DEEP)
        if f >= N_RAW0:
            ks[f, ev] = K_STR
            ss[f, ev] = i
            se[f, ev] = j
            sh[f, ev] = _hash(b, i, j)
        elif c == 34:
            ks[f, ev] = K_STR
            ss[f, ev] = i + 1
            se[f, ev] = j - 1
            sh[f, ev] = _hash(b, i + 1, j - 1)
        elif c == 110:
            ks[f, ev] = K_NULL
            sh[f, ev] = np.uint64(1)
        else:
            return -1, MISMATCH
        return j, OK
    if c == 45 or 48 <= c <= 57:                        # number (or string / null)
        j, kind, v, ns, d = _number(b, i, n)
        if j < 0:
            return -1, BAD_JSON
        kn[slot, ev] = kind
        if slot == N_TS or slot == N_DUR:
            iv[slot, ev] = ns
        else:
            iv[slot, ev] = v
        fv[slot, ev] = d
        return j, OK
    j = _skip(b, i, n, stack)
    if j < 0:
        return -1, (BAD_JSON if j == -1 else TOO_DEEP)
    if c == 34:
        kn[slot, ev] = K_STR
    elif c == 110:
        kn[slot, ev] = K_NULL
    else:
        return -1, MISMATCH
    return j, OK


@jit
def _key(b, i, n):
    """A key at b[i]: (key start, key end, index of its value, status)."""
    if i >= n or b[i] != 34:
        return 0, 0, -1, BAD_JSON
    s = i + 1
    j, esc = _string(b, i, n)
    if j < 0:
        return 0, 0, -1, BAD_JSON
    if esc:
        return 0, 0, -1, ESC_KEY
    k = _ws(b, j, n)
    if k >= n or b[k] != 58:
        return 0, 0, -1, BAD_JSON
    k = _ws(b, k + 1, n)
    if k >= n:
        return 0, 0, -1, BAD_JSON
    return s, j - 1, k, OK


@jit
def _after(b, i, n):
    """After a member: (index of the next key, 0) on ',', (index after '}', 1) on '}', (-1, -1) else."""
    i = _ws(b, i, n)
    if i >= n:
        return -1, -1
    if b[i] == 44:
        return _ws(b, i + 1, n), 0
    if b[i] == 125:
        return i + 1, 1
    return -1, -1


@inline
def _args(b, i, n, ev, kn, iv, fv, ks, ss, se, sh, akb, akoff, akslot, aklut, stack):
    i = _ws(b, i + 1, n)
    if i < n and b[i] == 125:
        return i + 1, OK
    while True:
        s, e, i, st = _key(b, i, n)
        if st != OK:
            return -1, st
        slot = _find_key(b, s, e, akb, akoff, akslot, aklut)
        if slot >= 0:
            i, st = _field(b, i, n, ev, slot, kn, iv, fv, ks, ss, se, sh, stack)
            if st != OK:
                return -1, st
        else:
            i = _skip(b, i, n, stack)
            if i < 0:
                return -1, (BAD_JSON if i == -1 else TOO_DEEP)
        i, end = _after(b, i, n)
        if end < 0:
            return -1, BAD_JSON
        if end == 1:
            return i, OK


@inline
def _object(b, i, n, ev, kn, iv, fv, ks, ss, se, sh, kb, koff, kslot, klut, akb, akoff, akslot, aklut, stack):
    """Fields of the event at b[i] == '{' into row ev: (index after it, status)."""
    i = _ws(b, i + 1, n)
    if i < n and b[i] == 125:
        return i + 1, OK
    while True:
        s, e, i, st = _key(b, i, n)
        if st != OK:
            return -1, st
        slot = _find_key(b, s, e, kb, koff, kslot, klut)
        if slot == 9999:
            if b[i] != 123:
                j = _skip(b, i, n, stack)
                return -1, (MISMATCH if j >= 0 else (BAD_JSON if j == -1 else TOO_DEEP))
            i, st = _args(b, i, n, ev, kn, iv, fv, ks, ss, se, sh, akb, akoff, akslot, aklut, stack)
            if st != OK:
                return -1, st
        elif slot >= 0:
            i, st = _field(b, i, n, ev, slot, kn, iv, fv, ks, ss, se, sh, stack)
            if st != OK:
                return -1, st
        else:
            i = _skip(b, i, n, stack)
            if i < 0:
                return -1, (BAD_JSON if i == -1 else TOO_DEEP)
        i, end = _after(b, i, n)
        if end < 0:
            return -1, BAD_JSON
        if end == 1:
            return i, OK


@jit
def scan(b, kn, iv, fv, ks, ss, se, sh, kb, koff, kslot, klut, akb, akoff, akslot, aklut):
    n = len(b)
    cap = kn.shape[1]
    stack = np.zeros(64, np.uint8)
    i = _ws(b, 0, n)
    if i >= n or b[i] != 91:
        return BAD_JSON, 0
    i = _ws(b, i + 1, n)
    ev = 0
    if i < n and b[i] == 93:
        i = _ws(b, i + 1, n)
        return (OK if i == n else BAD_JSON), 0
    while True:
        if i >= n:
            return BAD_JSON, ev
        if b[i] != 123:
            return MISMATCH, ev
        if ev >= cap:
            return TOO_MANY, ev
        i, st = _object(b, i, n, ev, kn, iv, fv, ks, ss, se, sh, kb, koff, kslot, klut, akb, akoff, akslot, aklut, stack)
        if st != OK:
            return st, ev
        ev += 1
        i = _ws(b, i, n)
        if i >= n:
            return BAD_JSON, ev
        if b[i] == 44:
            i = _ws(b, i + 1, n)
            continue
        if b[i] == 93:
            i = _ws(b, i + 1, n)
            return (OK if i == n else BAD_JSON), ev
        return BAD_JSON, ev


@jit
def same_spans(b, kind, s, e, rows, reps):
    """True when every row's span holds the same bytes as its representative's (rows of the same
    hash; absent and null values have no span)."""
    for k in range(len(rows)):
        r, q = rows[k], reps[k]
        if r == q or kind[r] != K_STR:
            continue
        L = e[r] - s[r]
        if e[q] - s[q] != L:
            return False
        a, c = s[r], s[q]
        for j in range(L):
            if b[a + j] != b[c + j]:
                return False
    return True
