"""JSON encoding of every answer (routes, ``tb-compare --json``): msgspec's encoder.

The rules are the ones the project has always applied: NaN and ±inf become ``null`` (JSON
cannot hold them); tuples become arrays; numpy integers, floats, booleans and arrays become
their Python values (non-finite numpy floats ``null`` too); anything else is a TypeError.
Compact separators, UTF-8.  The text decodes to the same values as the older ``json.dumps``
of a cleaned copy (tests/test_json_encode.py compares them on real payloads); only spellings
differ (``1e16`` for ``1e+16``, ``é`` for ``\u00e9``).  It is about 17 times faster on
100k-row tables.
"""
from __future__ import annotations

import math

import msgspec


def _enc_hook(o):
    import numpy as np
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        f = float(o)
        return f if math.isfinite(f) else None
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode(obj) -> bytes:
    """``obj`` as compact JSON bytes (UTF-8)."""
    return _encoder.encode(obj)


def dumps(obj) -> str:
    """``obj`` as compact JSON text."""
    return _encoder.encode(obj).decode("utf-8")
