"""`tb-compare --reference-compat` reproduces the reference's OverallMetrics rows.

For each golden pair, the real CLI (a subprocess, on the paths the reference was given) writes
its JSON, and every row of the reference's OverallMetrics sheet must come back: name, depth,
order, both durations (within 10 ns: we sum int ns, it sums float µs), both Duration Ratios,
both Numbers, Diff and Diff Ratio (which it rounds to 2 and 4 decimals).  We may show no other
row.  The only exception is named in docs/deviations.md's machine-readable block ("compat").
"""
from __future__ import annotations

import json

import pytest

import overall_golden as og
from cli_inproc import run_cli
from conftest import CORPUS, needs_corpus


def cli_json(tmp_path, pair: str, *extra) -> dict:
    _, base, target = og.PAIRS[pair]
    out = tmp_path / f"{pair}.json"
    r = run_cli(CORPUS / base, CORPUS / target, "--json", out, "--quiet", "--no-progress", *extra)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(out.read_text())


@needs_corpus
@pytest.mark.parametrize("pair", list(og.PAIRS))
def test_cli_reference_compat_reproduces_every_overall_metrics_row(pair, golden, tmp_path):
    payload = cli_json(tmp_path, pair, "--reference-compat")
    assert payload["reference_compat"] is True and payload["per_step"] is False
    assert any("Reference-compatible" in n for n in payload["notes"])
    unreproduced = og.deviations()["compat"].get(pair, {})
    assert len([r for p in og.deviations()["compat"].values() for r in p]) <= 1, \
        "compat mode may leave at most one reference row unreproduced"
    ours = payload["overall_metrics"]
    e2e = {s: og.ms(og.by_name(ours), "E2E Time", s) for s in ("baseline", "target")}
    left = og.by_name(ours)
    order, problems = [], []
    for ref in og.golden_rows(pair):
        mine = left.get(ref["name"]) or []
        if ref["name"] in unreproduced:
            assert unreproduced[ref["name"]] == "float_noise"
            assert abs(ref["baseline"]["ms"]) < 1e-9 and abs(ref["target"]["ms"]) < 1e-9
            assert not mine, f"{pair}: {ref['name']} is listed as unreproduced but is there"
            continue
        if not mine:
            problems.append(f"{ref['name']}: missing")
            continue
        row = mine.pop(0)
        order.append(id(row))
        problems += [f"{ref['name']}: {m}" for m in og.row_mismatches(row, ref, e2e)]
    extra = [n for n, rs in left.items() if rs]
    assert not problems, f"pair {pair}: " + "; ".join(problems)
    assert not extra, f"pair {pair}: rows the reference does not have: {extra}"
    assert order == [id(r) for r in ours], f"pair {pair}: row order differs from the reference's"
