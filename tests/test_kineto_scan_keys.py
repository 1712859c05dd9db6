"""The Kineto byte scanner's next-key prediction (loaders/_kineto_scan_jit.py): keys of 1..25 bytes,
known, unknown (some a known key's prefix or extension) and listed as skipped
(kineto_scan.SKIP_*_KEYS: their values go nowhere), in shuffled orders, in Kineto's own
layout and in compact JSON, cut short anywhere: the keys it reads are exactly the keys there, and
a key with an escape is still refused."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from tb_compare_plugin.loaders import kineto_scan
from tb_compare_plugin.loaders.kineto_scan_codes import K_ABSENT, K_INT, NUM

pytestmark = pytest.mark.skipif(not kineto_scan.available(),
                                reason=f"numba is not installed: {kineto_scan.unavailable_reason()}")

TOP = ["pid", "tid", "ts", "dur", "pidx", "pi", "zz", "t", *kineto_scan.SKIP_TOP_KEYS]
ARGS = ["External id", "Sequence number", "correlation", "stream", "registers per thread",
        "est. achieved occupancy %", "External i", "External idx", "correlatioN", "streamz", "s",
        "Trace name", "registers per threaD", *kineto_scan.SKIP_ARG_KEYS[1:4], "name", "Record function id"]
NUMERIC = [k for k in TOP + ARGS if k in NUM]


def _events(seed: int, n: int = 300) -> list[dict]:
    rng = random.Random(seed)
    evs = []
    for _ in range(n):
        ev = {k: rng.randrange(1, 10 ** 6) for k in rng.sample(TOP, rng.randrange(len(TOP) + 1))}
        ev["ph"] = "X"
        ev["args"] = {k: rng.randrange(1, 10 ** 6) for k in rng.sample(ARGS, rng.randrange(len(ARGS) + 1))}
        items = list(ev.items())
        rng.shuffle(items)
        evs.append(dict(items))
    return evs


def _scan(raw: bytes):
    st, n, kn, iv, *_ = kineto_scan.scan(np.frombuffer(bytearray(raw), np.uint8))
    return st, n, kn, iv


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("seed", range(3))
def test_keys_in_any_order(seed, indent):
    evs = _events(seed)
    raw = json.dumps(evs, indent=indent).encode()
    st, n, kn, iv = _scan(raw)
    assert st == kineto_scan.OK and n == len(evs)
    for r, ev in enumerate(evs):
        for key in NUMERIC:
            src = ev if key in TOP else ev["args"]
            col = NUM[key]
            if key in src:
                want = src[key] * 1000 if key in ("ts", "dur") else src[key]
                assert kn[r, col] == K_INT and iv[r, col] == want, (r, key)
            else:
                assert kn[r, col] == K_ABSENT, (r, key)


def test_cut_short_and_escaped_keys():
    raw = json.dumps(_events(5, 40)).encode()
    for cut in range(1, 200, 7):
        assert _scan(raw[:len(raw) - cut])[0] != kineto_scan.OK
    esc = raw.replace(b'"pid"', b'"p\\u0069d"')
    assert esc != raw and _scan(esc)[0] != kineto_scan.OK
