"""A sheet's table rows as XML bytes, a whole column at a time (``xlsx_writer.Sheet.rows``'s
quick path): each distinct value of a column (with its style) is escaped, formatted and encoded
once, as the cell's XML after its row number up to the next cell's opening (``" s="3"
t="inlineStr"><is><t>…</t></is></c><c r="E``); a row is then its row number and those pieces,
joined as bytes in blocks of ~2 MB.  Module call stacks, kernel details and allocation texts
repeat thousands of times in the big sheets: per cell this path touches only references, and
the XML is never held as a ``str`` (no second copy to encode).

The bytes are those of :meth:`.xlsx_writer.Sheet._cell` row by row.  A column with a value of
another type than str / float / int / None, with ints and floats mixed (``1`` and ``1.0`` are
one dict key), or with a cell that has no style (such a blank is left out of the row) is not
taken: :func:`block_xml` answers None and the caller writes the rows its general way.
"""
from __future__ import annotations

from itertools import chain
from math import copysign

import numpy as np

from .xlsx_cells import _PLAIN, escape_text

_BLOCK_BYTES = 2 << 20       # XML bytes per block handed to the deflate thread


def _text(v: str) -> str:
    e = escape_text(v)
    return f'<t xml:space="preserve">{e}</t>' if e[:1].isspace() or e[-1:].isspace() else f"<t>{e}</t>"


def _piece(v, style: int, nxt: str) -> bytes:
    """A cell's XML after its row number (``style``: its xf, not 0), then ``nxt``."""
    t = type(v)
    if t is str:
        s = f'" s="{style}" t="inlineStr"><is>{_text(v)}</is></c>{nxt}'
    elif (t is float and v - v == 0) or t is int:
        s = f'" s="{style}"><v>{v!r}</v></c>{nxt}'
    else:                       # None, inf, NaN: a styled blank
        s = f'" s="{style}"/>{nxt}'
    return s.encode("utf-8")


def _negative_zeros(vals, kinds: set) -> list:
    """Positions of the -0.0 values (a dict or set cannot tell them from 0.0)."""
    if kinds <= {float, type(None)}:
        f = np.array(vals, dtype=np.float64)                # None -> NaN
        return np.flatnonzero((f == 0) & np.signbit(f)).tolist()
    return [i for i, v in enumerate(vals) if type(v) is float and v == 0 and copysign(1.0, v) < 0]


def column_pieces(vals, style, nxt: str) -> list | None:
    """Each value's piece (:func:`_piece`), ``style`` one xf or one per value; None when the
    column is not for this path (see the module's docstring)."""
    kinds = set(map(type, vals))
    if not kinds <= _PLAIN or (int in kinds and float in kinds):
        return None
    per_row = type(style) is not int
    if not (all(style) if per_row else style):
        return None
    if kinds == {int} and not per_row:              # order ids: all distinct, nothing to share
        return list(map(f'" s="{style}"><v>%d</v></c>{nxt}'.encode().__mod__, vals))
    keys = list(zip(vals, style)) if per_row else vals
    memo: dict = {}
    zero = nan = False
    for k in set(keys):
        v = k[0] if per_row else k
        if type(v) is float:
            if v != v:                              # NaN: not found again by value
                nan = True
                continue
            if v == 0:                              # 0.0 and -0.0: one key, 0.0's piece
                zero, v = True, 0.0
        memo[k] = _piece(v, k[1] if per_row else style, nxt)
    out = list(map(memo.get, keys))
    for i in _negative_zeros(vals, kinds) if zero else ():
        out[i] = _piece(-0.0, style[i] if per_row else style, nxt)
    if nan:                                         # one by one
        i = -1
        try:
            while True:
                i = out.index(None, i + 1)
                out[i] = _piece(vals[i], style[i] if per_row else style, nxt)
        except ValueError:
            pass
    return out


def block_xml(first: int, rows: list, styles: list, letters: list):
    """The XML of ``rows`` as rows ``first``, ``first + 1``, … (0-based), in blocks of bytes (an
    iterator), or None when a column is not for this path.  ``styles[c]``: column c's xf or one
    per row; ``letters``: the columns' letters."""
    width = len(styles)
    cols = list(zip(*rows))
    pieces = []
    for c in range(width):
        p = column_pieces(cols[c], styles[c], f'<c r="{letters[c + 1]}' if c + 1 < width else "</row>")
        if p is None:
            return None
        pieces.append(p)
    del cols
    n = len(rows)
    rns = [b"%d" % r for r in range(first + 1, first + n + 1)]
    heads = [b'<row r="%d"><c r="A' % r for r in range(first + 1, first + n + 1)]
    size = sum(map(len, heads)) + width * sum(map(len, rns)) + sum(sum(map(len, p)) for p in pieces)
    step = max(64, min(n, n * _BLOCK_BYTES // max(size, 1)))
    return _blocks(heads, rns, pieces, step)


def _blocks(heads: list, rns: list, pieces: list, step: int):
    for lo in range(0, len(heads), step):
        hi = lo + step
        r = rns[lo:hi]
        cols = [heads[lo:hi]]
        for p in pieces:
            cols += (r, p[lo:hi])
        yield b"".join(chain.from_iterable(zip(*cols)))
