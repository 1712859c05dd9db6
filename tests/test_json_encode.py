"""The answers' JSON encoder (msgspec, presenters/json_encode.py) against the older rule it
replaced — json.dumps of a copy with NaN/inf as null and numpy values as Python values — on
real payloads of the samples: the same values, NaN and inf as null, nothing else lost."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tb_compare_plugin.comparison import Comparison, Options, Side
from tb_compare_plugin.loaders import load
from tb_compare_plugin.presenters.answers_json import communication_payload, memory_curve_payload
from tb_compare_plugin.presenters.json_encode import dumps, encode
from tb_compare_plugin.presenters.overall_json import overall_payload
from tb_compare_plugin.presenters.views import view_page

from conftest import SAMPLES


def old_dumps(obj) -> str:
    """The encoder the routes used before msgspec (http.py, 2026-11-24), kept as the oracle."""
    def clean(o):
        if isinstance(o, float):
            return o if math.isfinite(o) else None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    def default(o):
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            f = float(o)
            return f if math.isfinite(f) else None
        if isinstance(o, np.ndarray):
            return clean(o.tolist())
        raise TypeError(type(o).__name__)
    return json.dumps(clean(obj), separators=(",", ":"), allow_nan=False, default=default)


@pytest.fixture(scope="module")
def cmp():
    if not (SAMPLES / "expected.json").is_file():
        pytest.skip("samples not generated")
    b = load("trace-json", str(SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"))
    t = load("ascend-text", str(SAMPLES / "target_npu" / "rank0_ascend_pt"))
    return Comparison(b, t, Options(), Side("baseline_gpu", "worker0"), Side("target_npu", "rank0_ascend_pt"))


def payloads(cmp):
    yield "overall", overall_payload(cmp)
    yield "communication", communication_payload(cmp)
    yield "memory_curve", memory_curve_payload(cmp)
    for view in ("kernel", "api", "operator", "operator_pairs", "module", "memory", "memory_peak"):
        try:
            yield view, view_page(cmp, view, limit=1000)
        except Exception as e:  # noqa: BLE001 - a view that does not apply to this pair
            yield view, {"error": str(e)}


def test_same_values_as_the_old_encoder_on_real_payloads(cmp):
    n = 0
    for name, body in payloads(cmp):
        new = encode(body)
        assert json.loads(new) == json.loads(old_dumps(body)), name
        assert b"NaN" not in new and b"Infinity" not in new, name
        n += 1
    assert n == 10


def test_non_finite_and_numpy_values():
    body = {"a": float("nan"), "b": float("inf"), "c": -float("inf"), "d": np.float64("nan"),
            "e": np.int64(7), "f": np.float32(1.5), "g": np.array([1.0, np.inf, 2.0]), "h": (1, 2),
            "i": [np.int32(3), None, "é"], "j": 1e16, "k": 1e-5, "l": 0.1 + 0.2}
    assert json.loads(dumps(body)) == json.loads(old_dumps(body))
    assert json.loads(dumps(body)) == {"a": None, "b": None, "c": None, "d": None, "e": 7, "f": 1.5,
                                       "g": [1.0, None, 2.0], "h": [1, 2], "i": [3, None, "é"],
                                       "j": 1e16, "k": 1e-5, "l": 0.30000000000000004}
    with pytest.raises(TypeError):
        encode({"x": object()})
