"""The timeline's first paint and wide windows give the full lanes' own answers: lanes cut to a
window (``timeline_lanes.window_lanes``) draw every window inside it exactly as the full lanes do,
a first ``timeline_answer`` (full lanes not built) equals a later one, and the shortcuts of the LOD
(int keys for the bin edges, the per-block longest durations) find what a plain scan finds.
On samples/ (baseline_gpu vs target_npu) and the biggest corpus GPU trace."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import CORPUS, SAMPLES
from tb_compare_plugin.comparison import Comparison
from tb_compare_plugin.engines import timeline_lanes, timeline_lod
from tb_compare_plugin.engines.timeline_lanes import build_lanes, side_lanes, window_lanes
from tb_compare_plugin.engines.timeline_lod import _int_keys, window_items
from tb_compare_plugin.loaders import load
from tb_compare_plugin.model.derived import DERIVED
from tb_compare_plugin.service.timeline import Query, both_lanes, lanes_ready, timeline_answer

BIG_GPU = CORPUS / "gpu" / "hta_trace_diff" / "control" / "control.pt.trace.json.gz"


def _samples():
    if not (SAMPLES / "expected.json").is_file():
        pytest.skip("samples/ is missing")
    b = load("trace-json", str(SAMPLES / "baseline_gpu" / "worker0.pt.trace.json"))
    t = load("ascend-text", str(SAMPLES / "target_npu" / "rank0_ascend_pt"))
    return b, t


@pytest.fixture(scope="module")
def profiles():
    b, t = _samples()
    out = [b, t]
    if BIG_GPU.is_file():
        out.append(load("trace-json", str(BIG_GPU)))
    return out


def _host_extent(lanes):
    lo, hi = lanes.span
    host = [ln for ln in lanes.lanes if ln.kind == "host" and len(ln)]
    lo = min([lo] + [int(ln.start_ns.min()) for ln in host])
    hi = max([hi] + [int(ln.end_ns.max()) for ln in host])
    return lo, hi


def _windows(lo, hi):
    w = hi - lo
    return [(lo, hi), (lo - w // 10, hi + w // 10), (lo + w // 3, lo + w // 3 + w // 50),
            (lo + w // 2, lo + w // 2 + 2000), (lo + 7 * w // 10, hi - w // 20), (hi - 1, hi + 10 ** 6),
            (lo - 10 ** 9, lo - 10 ** 8)]


@pytest.mark.parametrize("cut_base", [False, True])
@pytest.mark.parametrize("many", [False, True])
def test_window_lanes_draw_what_the_full_lanes_draw(profiles, many, cut_base, monkeypatch):
    if many:                                    # every run summed from its prefix sums
        monkeypatch.setattr(timeline_lod, "FAST_MIN", 0)
    for prof in profiles:
        full = side_lanes(prof)
        if cut_base:                            # device lanes and idle gaps cut too, as before any full build
            monkeypatch.setattr(timeline_lanes, "_built", lambda profile, name: None)
        lo, hi = _host_extent(full)
        for a, b in _windows(lo, hi):
            cut = window_lanes(prof, a, b)
            assert cut is not None
            assert [ln.name for ln in cut.lanes] == [ln.name for ln in full.lanes]
            assert sum(len(ln) for ln in cut.lanes if ln.kind == "host") <= \
                sum(len(ln) for ln in full.lanes if ln.kind == "host")
            for px in (7, 300, 2000):
                assert window_items(cut, lo, a, b, px) == window_items(full, lo, a, b, px), (prof.meta.device, a, b, px)
            # a window inside the one it was cut to reads the same too
            m0, m1 = a + (b - a) // 4, a + (b - a) // 2 + 1
            assert window_items(cut, lo, m0, m1, 500) == window_items(full, lo, m0, m1, 500)


def test_the_first_answer_equals_a_later_one():
    b, t = _samples()
    fresh = Comparison(b, t)
    assert not lanes_ready(fresh)
    first = [timeline_answer(fresh, Query(px=px)) for px in (40, 900)]
    first.append(timeline_answer(fresh, Query(step=2, start_ms=-5.0, end_ms=30.0, px=600)))
    assert DERIVED.peek(b, "timeline_lanes") is None            # answered without the full lanes
    both_lanes(fresh)
    assert lanes_ready(fresh)
    later = [timeline_answer(fresh, Query(px=px)) for px in (40, 900)]
    later.append(timeline_answer(fresh, Query(step=2, start_ms=-5.0, end_ms=30.0, px=600)))
    assert first == later


def test_full_lanes_equal_a_rebuild(profiles):
    """The cached lanes (base shared with the window lanes) and a fresh build agree column by column."""
    for prof in profiles:
        a, b = side_lanes(prof), build_lanes(prof)
        assert timeline_lanes._span_of(prof) == a.span
        assert [ln.name for ln in a.lanes] == [ln.name for ln in b.lanes]
        for x, y in zip(a.lanes, b.lanes):
            for col in ("start_ns", "end_ns", "cls", "label", "row", "depth"):
                assert np.array_equal(getattr(x, col), getattr(y, col))
            assert x.runs == y.runs


def test_int_keys_search_as_the_float_edges_do():
    rng = np.random.default_rng(7)
    for base in (0, 10 ** 12, 1_661_203_462_599_325_000, 2 ** 53 - 5000, 9 * 10 ** 18):
        s = np.sort(base + rng.integers(0, 10 ** 7, 50_000)).astype(np.int64)
        for x in (np.float64(base) + np.arange(1, 1500) * (10 ** 7 / 1500.3), s[::97].astype(np.float64),
                  s[::89].astype(np.float64) + 0.5):
            assert np.array_equal(np.searchsorted(s, x), np.searchsorted(s, _int_keys(x)))


def test_wide_events_found_by_block_maxima(profiles):
    for prof in profiles:
        for ln in side_lanes(prof).lanes:
            for i, (_, lo, hi) in enumerate(ln.runs):
                n = hi - lo
                dur = ln.end_ns[lo:hi] - ln.start_ns[lo:hi]
                if not n:
                    continue
                for a, b in ((0, n), (n // 3, n // 3 + 1), (n // 5, max(n // 5 + 1, 4 * n // 5))):
                    for q in (0.5, 0.9, 0.999, 1.0):
                        t = float(np.quantile(dur, q)) + 0.5
                        want = np.flatnonzero(dur[a:b] >= t)
                        assert np.array_equal(ln.wide(i, a, b, t), want)


@pytest.mark.parametrize("per_run", [True, False])
def test_host_lanes_in_the_order_of_their_op_counts(profiles, per_run, monkeypatch):
    """The directory (counted per run of a thread's ops, or per op) = a plain count per (pid, tid)."""
    from tb_compare_plugin.engines.timeline_lanes import _build_host_directory
    monkeypatch.setattr(timeline_lanes, "RUN_COUNTING", 8 if per_run else 10 ** 12)
    for prof in profiles:
        ops = prof.ops
        ok = (ops["start_ns"] >= 0) & (ops["dur_ns"] >= 0)
        v = ops[ok]
        seen = {}
        for p, t in zip(v["pid"].tolist(), v["tid"].tolist()):
            seen[(p, t)] = seen.get((p, t), 0) + 1          # dicts keep the order first seen
        want = sorted(seen.items(), key=lambda kv: -kv[1])
        got = _build_host_directory(prof)
        assert [(g[1], g[2], g[3]) for g in got] == [(p, t, n) for (p, t), n in want]
