"""The reference's OverallMetrics rows on the golden pairs, and how to hold ours against them.

Shared by the default-mode check (tests/test_engine_overall.py: every row equals the
reference's or is a documented deviation) and the compat-mode check
(tests/test_overall_reference_compat.py: the CLI with --reference-compat reproduces every
row).  The documented deviations are read from the machine-readable block of
docs/deviations.md, so the prose and the tests name the same rows.
"""
from __future__ import annotations

import json
import re

from conftest import GOLDEN, ROOT

# pair -> (golden folder, baseline, target): the paths the reference was given (golden/README.md),
# relative to the corpus
PAIRS = {
    "i": ("i_npu_l1r0_vs_l1r1", "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt",
          "npu/alexnet_ddp_2rank_level1/rank1_ascend_pt"),
    "ii": ("ii_npu_l0r0_vs_l1r0", "npu/alexnet_ddp_2rank_level0/rank0_ascend_pt",
           "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"),
    "iii": ("iii_gpu_resnet50_vs_npu_l1r0",
            "gpu/kineto_resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
            "npu/alexnet_ddp_2rank_level1/rank0_ascend_pt"),
    "iv": ("iv_gpu_hta_control_vs_test", "gpu/hta_trace_diff/control", "gpu/hta_trace_diff/test"),
    "v": ("v_npu_db_l1r0_vs_l1r1", "npu/alexnet_ddp_2rank_db_level1/rank0_ascend_pt",
          "npu/alexnet_ddp_2rank_db_level1/rank1_ascend_pt"),
}

DURATION_NS = 10e-6        # ms: ours sum int ns, the reference float µs (docs: exact arithmetic)
SHARE = 1e-6               # Duration Ratio (duration / E2E)
DIFF = 0.005 + DURATION_NS  # the reference rounds Diff to 2 decimals
RATIO = 5e-5 + 1e-6        # ... and Diff Ratio to 4 (plus what DURATION_NS makes of a small baseline)


def deviations() -> dict:
    """{"default": {pair: {row: rule}}, "compat": {pair: {row: rule}}} from docs/deviations.md."""
    text = (ROOT / "docs" / "deviations.md").read_text()
    m = re.search(r"<!-- overall-deviations: begin -->\s*```json\n(.*?)```\s*<!-- overall-deviations: end -->",
                  text, re.S)
    assert m, "docs/deviations.md: the machine-readable overall-deviations block is missing"
    return json.loads(m.group(1))


def golden_rows(pair: str) -> list[dict]:
    """The reference's rows: name (TABs stripped), depth, per side ms / share / number, diff, ratio."""
    g = json.loads((GOLDEN / PAIRS[pair][0] / "golden.json").read_text())
    out = []
    for r in g["sheets"]["OverallMetrics"]["rows"]:
        out.append({"name": r[0].strip("\t"), "depth": len(r[0]) - len(r[0].lstrip("\t")),
                    "baseline": {"ms": r[1], "share": r[2], "number": r[3]},
                    "target": {"ms": r[4], "share": r[5], "number": r[6]},
                    "diff": r[7], "ratio": r[8]})
    return out


def by_name(rows: list, key=lambda r: r["name"]) -> dict:
    """name -> rows of that name, in order (group rows such as Wait repeat)."""
    out: dict = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return out


def ms(rows: dict, name: str, side: str) -> float:
    """Our duration of the (first) row ``name`` on ``side``; 0 when we show no such row."""
    r = rows.get(name)
    return r[0][side]["duration_ms"] if r else 0.0


def ref_ms(rows: dict, name: str, side: str) -> float:
    r = rows.get(name)
    return float(r[0][side]["ms"]) if r else 0.0


def number(v):
    return "/" if v is None else v


def differs(ours: dict, ref: dict) -> bool:
    """Does our row differ from the reference's row beyond the arithmetic tolerance?"""
    return any(abs(ours[s]["duration_ms"] - ref[s]["ms"]) > DURATION_NS
               or number(ours[s]["count"]) != ref[s]["number"] for s in ("baseline", "target"))


def row_mismatches(ours: dict, ref: dict, e2e: dict) -> list[str]:
    """Every column of a reference row that our row does not reproduce (empty = equal).

    ``e2e``: our E2E per side, ms (the Duration Ratio column is duration / E2E)."""
    bad = []
    if ours["depth"] != ref["depth"]:
        bad.append(f"depth {ours['depth']} != {ref['depth']}")
    for s in ("baseline", "target"):
        o, g = ours[s], ref[s]
        if abs(o["duration_ms"] - g["ms"]) > DURATION_NS:
            bad.append(f"{s} Duration(ms) {o['duration_ms']!r} != {g['ms']!r}")
        share = o["duration_ms"] / e2e[s] if e2e[s] else 0.0
        if abs(share - g["share"]) > SHARE:
            bad.append(f"{s} Duration Ratio {share!r} != {g['share']!r}")
        if number(o["count"]) != g["number"]:
            bad.append(f"{s} Number {number(o['count'])!r} != {g['number']!r}")
    if abs(ours["diff_ms"] - ref["diff"]) > DIFF:
        bad.append(f"Diff Duration(ms) {ours['diff_ms']!r} != {ref['diff']!r}")
    r, want = ours["ratio"], ref["ratio"]
    if want == "INF":
        if not (r is None and ours["baseline"]["duration_ms"] == 0 and ours["target"]["duration_ms"] != 0):
            bad.append(f"Diff Ratio {r!r} != INF")
    elif r is None or abs(r - want) > RATIO + DURATION_NS * (1 + abs(want)) / max(ref["baseline"]["ms"], 1e-12):
        bad.append(f"Diff Ratio {r!r} != {want!r}")
    return bad
