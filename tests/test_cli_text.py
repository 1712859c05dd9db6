"""The CLI's overview text (issue 14, item 10): collective names longer than the column are
shortened in the middle with an ellipsis (start and end readable, never cut mid-word at the
end), the table stays within 80 columns, and ``--wide`` shows every name whole."""
from __future__ import annotations

from tb_compare_plugin.presenters.cli_text import fit, overview_table

from test_cli import tbc
from conftest import CORPUS, needs_corpus

LONG = "hcom_allReduce__413_0_1"
GROUP = "10.170.22.98%enp67s0f5_60000_0_1708156014257149"


def _payload(rows):
    side = {"run": "run", "worker": "w", "device": "NPU", "format": "ascend-text"}
    return {"baseline": side, "target": side, "overall_metrics": [], "notes": [],
            "communication": rows}


def _row(name, group, aggregate=False):
    return {"name": name, "group": group, "aggregate": aggregate, "baseline": {"total_ms": 1.0},
            "target": {"total_ms": 2.0}, "diff_ms": 1.0, "ratio": 2.0}


def test_fit_keeps_both_ends():
    assert fit("short", 10) == "short"
    s = fit("allreduce [Group 0 Communication] and more", 20)
    assert len(s) == 20 and s.startswith("allreduce") and s.endswith("and more") and "…" in s


def test_long_collective_names_are_shortened_in_the_middle_and_whole_with_wide():
    name = f"{LONG} [{GROUP}]"
    text = overview_table(_payload([_row(LONG, GROUP)]))
    line = next(l for l in text.splitlines() if l.startswith(LONG[:10]))
    assert max(len(l) for l in text.splitlines()) <= 80
    cell = line[:33].rstrip()
    assert "…" in cell and cell.startswith(f"{LONG} [10.") and name.endswith(cell.split("…")[1])
    wide = overview_table(_payload([_row(LONG, GROUP)]), wide=True)
    assert name in wide and "…" not in wide
    assert len({len(l) for l in wide.splitlines()[-3:-1]}) == 1       # header rule as wide as the header


@needs_corpus
def test_cli_collective_names_in_80_columns_and_whole_with_wide():
    run = CORPUS / "npu/alexnet_ddp_2rank_level1"
    for extra in ((), ("--wide",)):
        r = tbc(run / "rank0_ascend_pt", run / "rank1_ascend_pt", "--no-progress", *extra)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        coll = lines[lines.index(next(l for l in lines if l.startswith("Collective"))) + 2]
        if extra:
            assert coll.startswith("allreduce [Group 0 Communication]")
        else:
            table = [l for l in lines if not l.startswith("note:")]
            assert max(len(l) for l in table) <= 80
            assert coll.startswith("allreduce [Group 0 Communication]") or "…" in coll[:34]
