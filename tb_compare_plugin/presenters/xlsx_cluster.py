"""The cluster workbook (``tb-compare cluster --xlsx``, route ``cluster/xlsx``), from the cluster
JSON (``ClusterResult.to_dict()``, docs/cluster.md) so the workbook, the route and the CLI agree.

The reference's cluster tables first, with its column names and units (µs in the step tables,
MB / ms / GB/s in the matrix), each followed by our columns (``Run`` names the run a row belongs
to, so with ``--against`` both runs share one sheet):

* ``ClusterStepTrace`` — msprof-analyze's ``cluster_step_trace_time.csv``: Step, Type, Index,
  Computing, Communication(Not Overlapped), Overlapped, Communication, Free, Stage, Bubble,
  Communication(Not Overlapped and Exclude Receive), Preparing; then Step Time, Wait, Transmit,
  Worker, Run.
* ``ClusterTimeSummary`` — its ``cluster_time_summary.csv``: Rank, Step, Step Time(us),
  Computation(us), Communication Not Overlap Computation(us), Communication Overlap
  Computation(us), Communication(us), Free(us), Communication Wait Stage Time(us), Communication
  Transmit Stage Time(us), Memory(us), Memory Not Overlap Computation Communication(us); then Run.
* ``CommunicationMatrix`` — its ``cluster_communication_matrix.csv``: step, hccl_op_name,
  group_name, src_rank, dst_rank, transport_type, op_name, transit_size, transit_time, bandwidth;
  then slow, Run.

Then ours: ``SlowRanks``, ``SlowLinks`` (by src, dst, transport), ``LinkPairs`` (the heatmap's
cells), ``Hints`` (with the notes and warnings), and with a second run ``ClusterDiff`` (per rank
and the median / max rows: each metric's baseline, target and difference, ms).

Figures the summaries do not hold are left empty and said so in the notes: Stage is the
profiler's identity Computing + Communication(Not Overlapped) + Free; the Exclude-Receive column
equals Communication(Not Overlapped) where the rank ran no receive, else is empty; Memory is not
summarised.
"""
from __future__ import annotations

import io
import re
from datetime import datetime, timezone

from .xlsx_style import FMT_INT, GREEN, YELLOW
from .xlsx_writer import Workbook

FMT_US = "#,##0.000"
FMT_MS = "#,##0.000"
FMT_GB = "#,##0.00"

STEP_TRACE = "ClusterStepTrace"
TIME_SUMMARY = "ClusterTimeSummary"
MATRIX = "CommunicationMatrix"
SLOW_RANKS, SLOW_LINKS, LINK_PAIRS, HINTS, DIFF = "SlowRanks", "SlowLinks", "LinkPairs", "Hints", "ClusterDiff"

# the reference's columns (cluster_step_trace_time.csv), our JSON key or how the figure is made
STEP_TRACE_COLS = ("Step", "Type", "Index", "Computing", "Communication(Not Overlapped)", "Overlapped",
                   "Communication", "Free", "Stage", "Bubble",
                   "Communication(Not Overlapped and Exclude Receive)", "Preparing")
STEP_TRACE_OURS = ("Step Time", "Wait", "Transmit", "Worker", "Run")
TIME_SUMMARY_COLS = ("Rank", "Step", "Step Time(us)", "Computation(us)",
                     "Communication Not Overlap Computation(us)", "Communication Overlap Computation(us)",
                     "Communication(us)", "Free(us)", "Communication Wait Stage Time(us)",
                     "Communication Transmit Stage Time(us)", "Memory(us)",
                     "Memory Not Overlap Computation Communication(us)")
MATRIX_COLS = ("step", "hccl_op_name", "group_name", "src_rank", "dst_rank", "transport_type", "op_name",
               "transit_size", "transit_time", "bandwidth")
DIFF_METRICS = ("step_time", "computing", "communication_not_overlapped", "overlapped", "communication",
                "free", "wait", "transmit", "preparing", "bubble")
DIFF_LABELS = {"step_time": "Step Time", "computing": "Computing",
               "communication_not_overlapped": "Communication(Not Overlapped)", "overlapped": "Overlapped",
               "communication": "Communication", "free": "Free", "wait": "Wait", "transmit": "Transmit",
               "preparing": "Preparing", "bubble": "Bubble"}
NOTES = ("Stage = Computing + Communication(Not Overlapped) + Free (the profiler's identity; the "
         "summaries keep its parts, not its own column).",
         "Communication(Not Overlapped and Exclude Receive) = Communication(Not Overlapped) for a rank "
         "that ran no receive operation in the step; empty otherwise (the summaries do not split "
         "receive time out of the non-overlapped communication).",
         "Memory(us) and Memory Not Overlap Computation Communication(us) are empty: the cluster "
         "summaries do not read memory operations.",
         "Step tables in µs as the reference's; the matrix in MB, ms and GB/s; our sheets in ms.")


def _us(v):
    return None if v is None else v * 1000.0


def _receivers(d: dict) -> set:
    """(rank, step) pairs that ran a receive (their Exclude-Receive figure is unknown)."""
    out = set()
    for c in d.get("collectives") or []:
        text = f"{c.get('op_type') or ''} {c.get('collective') or ''}".lower()
        if "receive" in text or "recv" in text:
            out.add((c.get("rank"), c.get("step")))
    return out


def _rows_by_step(d: dict) -> list:
    return sorted(d.get("ranks") or [], key=lambda r: (r["step"] if r["step"] is not None else -1, r["rank"]))


def step_trace_rows(d: dict) -> list:
    recv = _receivers(d)
    out = []
    for r in _rows_by_step(d):
        parts = [r.get("computing_ms"), r.get("communication_not_overlapped_ms"), r.get("free_ms")]
        stage = sum(parts) if all(p is not None for p in parts) else None
        exclude = None if (r["rank"], r["step"]) in recv else r.get("communication_not_overlapped_ms")
        out.append([r["step"], "rank", r["rank"], _us(r.get("computing_ms")),
                    _us(r.get("communication_not_overlapped_ms")), _us(r.get("overlapped_ms")),
                    _us(r.get("communication_ms")), _us(r.get("free_ms")), _us(stage), _us(r.get("bubble_ms")),
                    _us(exclude), _us(r.get("preparing_ms")),
                    _us(r.get("step_time_ms")), _us(r.get("wait_ms")), _us(r.get("transmit_ms")),
                    r.get("worker"), d.get("run")])
    return out


def time_summary_rows(d: dict) -> list:
    return [[r["rank"], r["step"], _us(r.get("step_time_ms")), _us(r.get("computing_ms")),
             _us(r.get("communication_not_overlapped_ms")), _us(r.get("overlapped_ms")),
             _us(r.get("communication_ms")), _us(r.get("free_ms")), _us(r.get("wait_ms")),
             _us(r.get("transmit_ms")), None, None, d.get("run")]
            for r in sorted(d.get("ranks") or [], key=lambda r: (r["rank"], r["step"] if r["step"] is not None else -1))]


def matrix_rows(d: dict) -> list:
    return [[f"step{l['step']}" if l.get("step") is not None else None, l.get("collective"), l.get("group"),
             l.get("src_rank"), l.get("dst_rank"), l.get("transport"), l.get("op_name"), l.get("size_mb"),
             l.get("time_ms"), l.get("bandwidth_gbps"), "yes" if l.get("slow") else "", d.get("run")]
            for l in d.get("links") or []]


def slow_rank_rows(d: dict) -> list:
    return [[s.get("rank"), s.get("metric"), s.get("value_ms"), s.get("median_ms"), s.get("score"),
             s.get("method"), s.get("phase"), s.get("reason"), d.get("run")] for s in d.get("slow_ranks") or []]


def slow_link_rows(d: dict) -> list:
    return [[s.get("src_rank"), s.get("dst_rank"), s.get("transport"), s.get("bandwidth_gbps"),
             s.get("median_gbps"), s.get("ratio"), s.get("slow_collectives"), s.get("collectives"),
             s.get("reason"), d.get("run")] for s in d.get("slow_links") or []]


def link_pair_rows(d: dict) -> list:
    return [[p.get("src_rank"), p.get("dst_rank"), p.get("transport"), p.get("size_mb"), p.get("time_ms"),
             p.get("bandwidth_gbps"), p.get("rows"), "yes" if p.get("slow") else "", d.get("run")]
            for p in d.get("link_pairs") or []]


def diff_rows(d: dict) -> list:
    out = []
    for r in d.get("diff") or []:
        row = [r.get("scope"), r.get("rank"), r.get("base_worker"), r.get("target_worker")]
        for m in DIFF_METRICS:
            row += [r.get(f"{m}_base_ms"), r.get(f"{m}_ms"), r.get(f"{m}_diff_ms")]
        out.append(row)
    return out


def _sides(d: dict) -> list:
    return [d] + ([d["against"]] if isinstance(d.get("against"), dict) else [])


class _Writer:
    """Sheets of the cluster workbook: header on the first row (as the reference's CSV files),
    frozen, with an autofilter; reference columns green, ours yellow; then free blocks."""

    def __init__(self, book: Workbook) -> None:
        self.book = book
        st = book.styles
        self.head_ref = st.xf(None, True, GREEN)
        self.head_ours = st.xf(None, True, YELLOW)
        self.bold = st.xf(None, True)
        self.fmt = {"int": st.xf(FMT_INT), "us": st.xf(FMT_US), "ms": st.xf(FMT_MS), "gb": st.xf(FMT_GB),
                    "num": st.xf("0.0000"), "text": st.xf(None), "pct": st.xf("0.0%")}

    def sheet(self, name: str, cols: list, rows: list, n_ref: int = 0, blocks=()) -> None:
        """``cols``: (header, kind, width); the first ``n_ref`` are the reference's."""
        n = len(cols)
        extra = sum(2 + len(b[1]) for b in blocks)
        width = max([n] + [len(b[0]) for b in blocks])
        sh = self.book.add_sheet(name, len(rows) + 1 + extra, width, [c[2] for c in cols], freeze_rows=1,
                                 autofilter=(0, max(len(rows), 0), 0, n - 1))
        sh.row(0, [c[0] for c in cols], [self.head_ref if i < n_ref else self.head_ours for i in range(n)])
        if rows:
            sh.rows(1, rows, [self.fmt[c[1]] for c in cols])
        r = len(rows) + 2
        for header, brows in blocks:
            sh.row(r, list(header), [self.bold] * len(header))
            for row in brows:
                r += 1
                sh.row(r, row, [self.fmt["text"]] * len(row))
            r += 2


def write_cluster_workbook(d: dict, target) -> list[str]:
    """Write the workbook of the cluster JSON ``d`` to ``target`` (a path, written atomically,
    or a binary file); the sheet names written, in order."""
    from .xlsx_workbook import write_book
    n_links = sum(len(s.get("links") or []) for s in _sides(d))
    return write_book(target, n_links, lambda book: _write(_Writer(book), d))


def _write(w: _Writer, d: dict) -> None:
    sides = _sides(d)
    us, ms = "us", "ms"
    w.sheet(STEP_TRACE, [("Step", "int", 8), ("Type", "text", 8), ("Index", "int", 8),
                         *((c, us, 16) for c in STEP_TRACE_COLS[3:]),
                         ("Step Time", us, 14), ("Wait", us, 14), ("Transmit", us, 14), ("Worker", "text", 24),
                         ("Run", "text", 24)],
            [row for s in sides for row in step_trace_rows(s)], n_ref=len(STEP_TRACE_COLS))
    w.sheet(TIME_SUMMARY, [("Rank", "int", 8), ("Step", "int", 8), *((c, us, 18) for c in TIME_SUMMARY_COLS[2:]),
                           ("Run", "text", 24)],
            [row for s in sides for row in time_summary_rows(s)], n_ref=len(TIME_SUMMARY_COLS))
    w.sheet(MATRIX, [("step", "text", 10), ("hccl_op_name", "text", 22), ("group_name", "text", 22),
                     ("src_rank", "int", 9), ("dst_rank", "int", 9), ("transport_type", "text", 14),
                     ("op_name", "text", 26), ("transit_size", ms, 14), ("transit_time", ms, 14),
                     ("bandwidth", ms, 14), ("slow", "text", 6), ("Run", "text", 24)],
            [row for s in sides for row in matrix_rows(s)], n_ref=len(MATRIX_COLS))
    w.sheet(SLOW_RANKS, [("Rank", "int", 8), ("Metric", "text", 16), ("Value(ms)", ms, 12),
                         ("Median(ms)", ms, 12), ("Score", "num", 10), ("Method", "text", 14),
                         ("Phase", "text", 16), ("Reason", "text", 90), ("Run", "text", 24)],
            [row for s in sides for row in slow_rank_rows(s)])
    w.sheet(SLOW_LINKS, [("Src Rank", "int", 9), ("Dst Rank", "int", 9), ("Transport", "text", 11),
                         ("Bandwidth(GB/s)", "gb", 15), ("Peers' Median(GB/s)", "gb", 18), ("Ratio", "pct", 8),
                         ("Slow Collectives", "int", 15), ("Collectives", "int", 11), ("Reason", "text", 90),
                         ("Run", "text", 24)],
            [row for s in sides for row in slow_link_rows(s)])
    w.sheet(LINK_PAIRS, [("Src Rank", "int", 9), ("Dst Rank", "int", 9), ("Transport", "text", 11),
                         ("Size(MB)", ms, 14), ("Time(ms)", ms, 14), ("Bandwidth(GB/s)", "gb", 15),
                         ("Rows", "int", 8), ("Slow", "text", 6), ("Run", "text", 24)],
            [row for s in sides for row in link_pair_rows(s)])
    hints = [[h, s.get("run")] for s in sides for h in s.get("hints") or []]
    warn = [[f"{s.get('run')}: {x}"] for s in sides for x in s.get("warnings") or []]
    blocks = [(["Notes"], [[n] for n in NOTES])]
    if warn:
        blocks.append((["Warnings"], warn))
    w.sheet(HINTS, [("Hint", "text", 120), ("Run", "text", 24)], hints, blocks=blocks)
    if d.get("diff"):
        cols = [("Scope", "text", 8), ("Rank", "int", 8), ("Base Worker", "text", 22), ("Target Worker", "text", 22)]
        for m in DIFF_METRICS:
            lab = DIFF_LABELS[m]
            cols += [(f"{lab} Base(ms)", ms, 14), (f"{lab} Target(ms)", ms, 14), (f"{lab} Diff(ms)", ms, 14)]
        ds = d.get("diff_summary") or {}
        summary = [[f"baseline {d.get('run')}, target {(d.get('against') or {}).get('run')}; "
                    "Diff = target - baseline (positive: the target is slower)"]]
        for key, who in (("slowest_base", "baseline"), ("slowest_target", "target")):
            x = ds.get(key)
            if x:
                summary.append([f"slowest rank of the {who}: {x.get('rank')} (step {x.get('step_time_ms')} ms, "
                                f"own time {x.get('busy_ms')} ms)"])
        if ds.get("phase_regressed"):
            summary.append([f"phase regressed most: {ds['phase_regressed']} ({ds.get('phase_regressed_ms')} ms "
                            "on the medians)"])
        summary.append([f"median step time difference: {ds.get('step_time_diff_ms')} ms"])
        w.sheet(DIFF, cols, diff_rows(d), blocks=[(["Summary"], summary)])


def cluster_workbook_bytes(d: dict) -> bytes:
    buf = io.BytesIO()
    write_cluster_workbook(d, buf)
    return buf.getvalue()


def _safe(s: str, limit: int = 60) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", s or "").strip("._-")
    return s[:limit].rstrip("._-") or "run"


def cluster_workbook_filename(run: str, against: str | None = None, step: int | None = None,
                              now: datetime | None = None) -> str:
    """``tb_compare_cluster_<run>[_vs_<against>][_step<N>]_<UTC yyyymmddHHMMSS>.xlsx`` (safe chars)."""
    ts = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y%m%d%H%M%S")
    name = f"tb_compare_cluster_{_safe(run)}"
    if against:
        name += f"_vs_{_safe(against)}"
    if step is not None:
        name += f"_step{int(step)}"
    return f"{name}_{ts}.xlsx"
