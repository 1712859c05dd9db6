"""The comparison workbook (.xlsx): the reference's sheets, then ours, from one Comparison.

Every number comes from the memoised engine results of :class:`~tb_compare_plugin.comparison.
Comparison`, so the workbook, the UI and the CLI agree.  Sheets, in this order (a sheet with no
rows is not written):

Reference sheets (names, headers, banner spans and column widths of ``msprof-analyze compare``,
spec e; users' scripts read them):

1. ``OverallMetrics`` — the time split (spec b.6): Index (literal TABs, cell indent = depth),
   Duration(ms) / Duration Ratio (= duration / that side's E2E) / Number ("/" for pure time)
   per side, Diff Duration(ms), Diff Ratio; rows from ``cmp.overall().rows`` (ours may add rows
   such as ``Wait``, ``SDMA``, ``Lccl``; see docs/deviations.md).
2. ``CommunicationCompare`` — ``reference_rows.communication_compare_rows`` (tasks paired by name).
3. ``ModuleCompareStatistic`` + ``ModuleCompare`` when both sides have ``nn.Module`` events,
   else ``OperatorCompareStatistic`` + ``OperatorCompare``.
4. ``MemoryCompareStatistic``, ``MemoryCompare``.
5. ``ApiCompare``.
6. ``KernelCompare`` — also for GPU profiles (kernels grouped by name; the reference has none).

Our sheets (then one sheet per registered analysis whose outputs hold "sheet", in
registration order; ``xlsx_analysis``):

* ``Summary`` — both sides' time split (``cmp.overall().to_dict()`` rows, unrounded, with each
  row's share of E2E, diff and ratio), the two profiles' identity (run, worker, path, device,
  format, step, steps, memory peak, bandwidth) and every note (per-step scaling, Level0 data,
  sheets left out and why).
* ``CommunicationByGroup`` — one row per (collective, communication group) with calls, total /
  avg / max / min, wait and transit time, bytes and bandwidth per side, each followed by its
  tasks (``|`` rows), all in ms.
* ``MemoryPeak`` — bytes live at each side's memory peak, by module path and by operator,
  side by side and sorted by the growth (``engines.memory_peak``).
* ``MemoryCurve`` — each side's allocated / reserved memory over time (ms from the side's first
  event), thinned to ≤ 2,000 points with every peak kept.
* ``Operators`` — when the module sheets took the operator sheets' place (both sides have
  ``nn.Module`` data): the tab's Operator view, per operator name (``analyses`` "operator").
* ``StepCompare``, ``Efficiency`` — the step comparison (``xlsx_steps``: the ``compare/steps``
  answer): per step both sides' duration, breakdown and phases, then per step-level metric the
  across-step statistics, diff, ratio and noise verdict (within noise greyed); each side's
  device efficiency and the difference.
* ``HostOverhead`` — graph mode only (``xlsx_host_overhead``): the framework / TorchAir (Python,
  C++) / GE host parts of the graph runs per side, per graph run, and per step.

Layout of every sheet: row 1 the banners ``Base Profiling: <path>`` (green ``00FF00``, bold) and
``Comparison Profiling: <path>`` (yellow ``FFFF00``, bold) merged over each side's columns; row 2
empty; row 3 the bold headers (yellow inside the target span, green elsewhere); data from row 4;
Arial 11, left, vertically centred, thin border; frozen under the header, autofilter on it.
In reference sheets a ratio > 1 (target larger / slower) is filled red ``FF0000`` and an
infinite ratio is the string ``INF``.  In our sheets a regression is red and a gain green.

Differences from the reference workbook, on purpose: diffs and ratios are not rounded (the cell
formats still show 2 decimals; spec f.16); every ratio cell uses the percent format (the
reference switches API / Kernel ratios to percent only when > 1); freeze panes and autofilters
are added; OverallMetrics is written even when a side's E2E is 0 (its shares are then blank).
An engine that fails to import or run leaves its sheets out with a note in ``Summary``; when the
module engine fails, the operator sheets are written instead.
"""
from __future__ import annotations

import io
import logging
import math
import os
import re
from datetime import datetime, timezone

from ..gcpause import gc_paused
from . import reference_rows as R
from . import xlsx_style as S
from .xlsx_style import SheetData, StyleBook, write_sheet
from .xlsx_host_overhead import HOST_OVERHEAD, host_overhead_sheet
from .xlsx_steps import EFFICIENCY_SHEET, STEP_COMPARE, steps_sheets
from .xlsx_writer import Workbook

log = logging.getLogger(__name__)

ENGINES = ("overall", "communication", "operator", "memory", "api", "kernel", "steps")
DETAIL_SHEETS = frozenset({"OperatorCompare", "ModuleCompare", "MemoryCompare"})
MIB = float(1 << 20)


# ----------------------------------------------------------------------------- helpers

def _ratio_cell(r, base=None, target=None):
    """An engine ratio -> cell value: inf (or None with a zero baseline) -> "INF"."""
    if r is None:
        if base is not None and target is not None and not base and target:
            return "INF"
        return None
    if isinstance(r, str):
        return r
    r = float(r)
    if math.isinf(r):
        return "INF"
    return None if math.isnan(r) else r


def _count_cell(c):
    if c is None:
        return "/"
    if isinstance(c, float) and c.is_integer():
        return int(c)
    return c


def _fix_ratios(rows: list, layout: S.Layout) -> list:
    """Infinite ratios -> "INF"; a row is copied before it is changed (engine rows are left alone)."""
    for i in (i for i, k in enumerate(layout.types) if k in ("ratio", "rratio")):
        bad = [n for n, r in enumerate(rows) if isinstance(r[i], float) and math.isinf(r[i])]
        for n in bad:
            rows[n] = list(rows[n])
            rows[n][i] = "INF"
    return rows


def _checked(rows, layout: S.Layout) -> SheetData:
    rows = [r if type(r) is list else list(r) for r in rows]
    width = len(layout.headers)
    bad = next((r for r in rows if len(r) != width), None)
    if bad is not None:
        raise TypeError(f"{layout.name}: engine rows have {len(bad)} cells, the sheet has "
                        f"{width} columns")
    return SheetData(layout, _fix_ratios(rows, layout))


# ----------------------------------------------------------------------------- sheets

def overall_sheets(cmp) -> list[SheetData]:
    res = cmp.overall()
    rows = res.rows

    def e2e(side):
        r = next((x for x in rows if x["name"] == "E2E Time" and x["depth"] == 0), None)
        return r[side]["duration_ms"] if r else 0.0
    eb, et = e2e("baseline"), e2e("target")
    om, sm, fills, indents = [], [], [], []
    for r in rows:
        b, t, depth = r["baseline"], r["target"], int(r["depth"])
        bd, td = b["duration_ms"], t["duration_ms"]
        ratio = _ratio_cell(r["ratio"], bd, td)
        om.append(["\t" * depth + r["name"], bd, bd / eb if eb else None, _count_cell(b["count"]),
                   td, td / et if et else None, _count_cell(t["count"]), r["diff_ms"], ratio])
        sm.append([r["name"], bd, b["count"], bd / eb if eb else None, td, t["count"], td / et if et else None,
                   r["diff_ms"], ratio])
        fills.append(S.BLUE if depth == 0 else
                     S.LIGHT_BLUE if depth == 1 and r["name"] not in ("SDMA", "Free") else None)
        indents.append(depth)
    out = []
    if om:
        out.append(SheetData(S.OVERALL, om, fills=fills, indents=indents))
    out.append(SheetData(S.SUMMARY, sm, indents=indents))
    return out


def communication_sheets(cmp) -> list[SheetData]:
    res = cmp.communication()
    out = [_checked(R.communication_compare_rows(res), S.COMMUNICATION)]

    def side(d):
        d = d or {}
        return [d.get("calls"), d.get("total_ms"), d.get("avg_ms"), d.get("max_ms"), d.get("min_ms"),
                d.get("wait_ms"), d.get("transit_ms"), d.get("bytes"), d.get("bandwidth_gbps")]
    rows = []
    for r in res.to_list():
        group = "(all groups)" if r.get("aggregate") else r.get("group", "")
        rows.append([len(rows) + 1, r["name"], group, None, r["status"], *side(r["baseline"]),
                     *side(r["target"]), r["diff_ms"],
                     _ratio_cell(r["ratio"], r["baseline"]["total_ms"], r["target"]["total_ms"])])
        for tk in r.get("tasks", []):
            rows.append([len(rows) + 1, "|", group, tk["name"], tk["status"], *side(tk["baseline"]),
                         *side(tk["target"]), tk["diff_ms"],
                         _ratio_cell(tk["ratio"], tk["baseline"]["total_ms"], tk["target"]["total_ms"])])
    out.append(SheetData(S.COMM_GROUPS, rows))
    return out


def _both_have_modules(cmp) -> bool:
    try:
        from ..engines.module import use_module_sheets
        return bool(use_module_sheets(cmp.base, cmp.target,
                                      disable_module=getattr(cmp.options, "disable_module", False)))
    except ImportError:
        return bool(cmp.base.has()["modules"] and cmp.target.has()["modules"])


def operator_sheets(cmp, notes: list) -> list[SheetData]:
    if _both_have_modules(cmp):
        try:
            res = cmp.modules()
            if res.stats.attrs.get("note"):
                notes.append(f"Module sheets: {res.stats.attrs['note']}.")
            return [_checked(R.module_compare_statistic_rows(res), S.MODULE_STATS),
                    _checked(R.module_compare_rows(res), S.MODULE)]
        except (ImportError, AttributeError, NotImplementedError, TypeError) as e:
            notes.append(f"Module sheets not written ({type(e).__name__}: {e}); the operator sheets are "
                         "written instead.")
            log.warning("xlsx: module sheets skipped: %s", e)
    res = cmp.operators()
    return [_checked(R.operator_compare_statistic_rows(res), S.OPERATOR_STATS),
            _checked(R.operator_compare_rows(res), S.OPERATOR)]


def memory_sheets(cmp, notes: list) -> list[SheetData]:
    return memory_tables(cmp) + memory_extras(cmp, notes)


def memory_tables(cmp) -> list[SheetData]:
    """MemoryCompareStatistic, MemoryCompare (the memory engine failing fails the memory group)."""
    res = cmp.memory()
    return [_checked(R.memory_compare_statistic_rows(res), S.MEMORY_STATS),
            _checked(R.memory_compare_rows(res), S.MEMORY)]


def memory_extras(cmp, notes: list) -> list[SheetData]:
    """MemoryPeak, MemoryCurve: each one's failure costs that sheet only, with a note."""
    out = []
    for fn in (memory_peak_sheet, memory_curve_sheet):
        try:
            out.append(fn(cmp))
        except (ImportError, AttributeError, NotImplementedError, TypeError, KeyError) as e:
            notes.append(f"{fn.__name__.replace('_sheet', '')}: not written ({type(e).__name__}: {e})")
            log.warning("xlsx: %s skipped: %s", fn.__name__, e)
    return out


def memory_peak_sheet(cmp) -> SheetData:
    df = cmp.memory_peak()                   # memoised on the Comparison
    rows = []
    if len(df):
        ops = df[df["kind"] == "op"]
        tb, tt = int(ops["b_bytes"].sum()), int(ops["t_bytes"].sum())
        rows.append(["total", "all allocations live at the peak", tb / MIB, int(ops["b_count"].sum()),
                     tt / MIB, int(ops["t_count"].sum()), (tt - tb) / MIB, None])
        for r in df.itertuples(index=False):
            rows.append([r.kind, r.name, r.b_bytes / MIB, int(r.b_count), r.t_bytes / MIB, int(r.t_count),
                         r.diff_bytes / MIB, r.status])
    return SheetData(S.MEMORY_PEAK, rows)


def _curves(cmp) -> tuple[dict, dict]:
    c = cmp.memory_curves()
    return c["baseline"], c["target"]


def memory_curve_sheet(cmp) -> SheetData:
    b, t = _curves(cmp)
    n = max(len(b.get("t_ms", [])), len(t.get("t_ms", [])))

    def col(d, k, i):
        v = d.get(k) or []
        return v[i] if i < len(v) else None
    rows = [[col(b, "t_ms", i), col(b, "allocated_mb", i), col(b, "reserved_mb", i),
             col(t, "t_ms", i), col(t, "allocated_mb", i), col(t, "reserved_mb", i)] for i in range(n)]
    return SheetData(S.MEMORY_CURVE, rows)


def api_sheets(cmp) -> list[SheetData]:
    return [_checked(R.api_compare_rows(cmp.api()), S.API)]


def kernel_sheets(cmp) -> list[SheetData]:
    return [_checked(R.kernel_compare_rows(cmp.kernels()), S.KERNEL)]


# ----------------------------------------------------------------------------- summary extras

def _side_info(cmp) -> list[list]:
    bs, ts = cmp.base_side, cmp.target_side
    rows = [["Run", bs.run, ts.run], ["Worker", bs.worker, ts.worker], ["Path", bs.path, ts.path]]
    for label, get in (("Device", lambda p: p.meta.device), ("Format", lambda p: getattr(p.meta, "format", None)),
                       ("Steps in capture", lambda p: ", ".join(map(str, p.step_ids())) or "none")):
        try:
            rows.append([label, get(cmp.base), get(cmp.target)])
        except Exception:                                    # identity is best effort
            pass
    o = cmp.options
    rows.append(["Step compared", "all" if o.base_step is None else o.base_step,
                 "all" if o.target_step is None else o.target_step])
    try:
        res = cmp.overall()
        d = res.to_dict()
        sc = cmp.step_scale()
        rows.append(["Figures", *(f"per step (÷{div})" if sc.per_step and marked else "whole capture"
                                  for div, marked in ((sc.base_div, sc.base_marked),
                                                      (sc.target_div, sc.target_marked)))])
        rows.append(["Peak reserved memory (GB)", d["memory"]["baseline"]["peak_reserved_gb"],
                     d["memory"]["target"]["peak_reserved_gb"]])
        rows.append(["Peak reserved memory is of", d["memory"]["baseline"]["peak_reserved_label"],
                     d["memory"]["target"]["peak_reserved_label"]])
        for k, label in (("rdma_gbps", "RDMA bandwidth (GB/s)"), ("sdma_gbps", "SDMA bandwidth (GB/s)")):
            bb, tb = d["bandwidth"]["baseline"].get(k), d["bandwidth"]["target"].get(k)
            if bb is not None or tb is not None:
                rows.append([label, bb, tb])
    except Exception:
        pass
    return rows


def _notes(cmp, extra: list) -> list[str]:
    notes = []
    try:        # what the statistic sheets' totals are (the overview's per-step choice)
        notes.append("Statistic sheets (Operator / Module / Memory / Api / Kernel): " + cmp.step_scale().note())
    except Exception:
        pass
    for get in (lambda: cmp.overall().notes, lambda: cmp.communication().notes):
        try:
            notes.extend(get())
        except Exception:
            pass
    return notes + list(extra)


# ----------------------------------------------------------------------------- writing

def plan_sheets(cmp, sheets, notes: list, groups=ENGINES) -> list[SheetData]:
    """The sheets of the engines in ``sheets`` (None = all), rows computed, in ``ENGINES`` order;
    an engine that fails costs only its sheets, with a note in ``notes`` (a ValueError fails
    the workbook).  ``groups``: the engines to plan (``"memory:tables"`` / ``"memory:extras"``:
    that half of the memory group; ``xlsx_split``)."""
    builders = {"overall": lambda: overall_sheets(cmp) + _host_overhead(cmp, notes), "communication": lambda: communication_sheets(cmp),
                "operator": lambda: operator_sheets(cmp, notes), "memory": lambda: memory_sheets(cmp, notes),
                "memory:tables": lambda: memory_tables(cmp), "memory:extras": lambda: memory_extras(cmp, notes),
                "api": lambda: api_sheets(cmp), "kernel": lambda: kernel_sheets(cmp),
                "steps": lambda: steps_sheets(cmp, notes)}
    planned: list[SheetData] = []
    for group in groups:
        eng = group.split(":")[0]
        if sheets is not None and eng not in sheets:
            continue
        try:
            planned.extend(builders[group]())
        except ValueError:
            raise
        except Exception as e:             # one engine must not cost the rest of the workbook
            notes.append(f"The {eng} sheets were not written: {type(e).__name__}: {e}")
            log.warning("xlsx: %s sheets skipped: %s", eng, e, exc_info=not isinstance(e, ImportError))
    if getattr(cmp.options, "disable_details", False):
        planned = [d for d in planned if d.layout.name not in DETAIL_SHEETS]
    return planned


def _host_overhead(cmp, notes: list) -> list[SheetData]:
    """The HostOverhead sheet (graph mode); a failure costs only this sheet, with a note."""
    try:
        return host_overhead_sheet(cmp)
    except Exception as e:
        notes.append(f"The {HOST_OVERHEAD} sheet was not written: {type(e).__name__}: {e}")
        log.warning("xlsx: %s sheet skipped: %s", HOST_OVERHEAD, e, exc_info=True)
        return []


def _operator_sheet(cmp, sheets, by_name: dict, notes: list, taken: set) -> list[SheetData]:
    """Our ``Operators`` sheet (the tab's Operator view: per operator name, compute and
    communication split) when the reference's module sheets took the operator sheets' place."""
    if S.MODULE_STATS.name not in by_name or (sheets is not None and "operator" not in sheets):
        return []
    from ..analyses import get
    from .xlsx_analysis import analysis_sheet
    try:
        a = get("operator")
        d = analysis_sheet(a, cmp.analysis(a.name), taken)
    except Exception as e:             # the module sheets are written; this one is extra
        notes.append(f"The Operators sheet was not written: {type(e).__name__}: {e}")
        log.warning("xlsx: Operators sheet skipped: %s", e, exc_info=True)
        return []
    return [d]


def _analysis_sheets(cmp, sheets, notes: list, taken: set) -> list[SheetData]:
    """Sheets of the registered analyses whose outputs hold "sheet", after ours."""
    from ..analyses import Unavailable, analyses, missing_inputs
    from .xlsx_analysis import analysis_sheet
    out = []
    for a in analyses("sheet"):
        if sheets is not None and a.name not in sheets:
            continue
        missing = missing_inputs(a, cmp.base, cmp.target)
        if missing:
            notes.append(f"The {a.label} sheet was not written: neither profile holds {' or '.join(missing)}.")
            continue
        try:
            d = analysis_sheet(a, cmp.analysis(a.name), taken)
        except Unavailable as e:
            notes.append(f"The {a.label} sheet was not written: {e}")
            continue
        except Exception as e:             # one analysis must not cost the rest of the workbook
            notes.append(f"The {a.label} sheet was not written: {type(e).__name__}: {e}")
            log.warning("xlsx: %s sheet skipped: %s", a.name, e, exc_info=True)
            continue
        taken.add(d.layout.name)
        out.append(d)
    return out


OPERATORS = "Operators"          # ours: the Operator view's table when the module sheets are written
ORDER = [S.OVERALL.name, S.COMMUNICATION.name, S.MODULE_STATS.name, S.MODULE.name, S.OPERATOR_STATS.name,
         S.OPERATOR.name, S.MEMORY_STATS.name, S.MEMORY.name, S.API.name, S.KERNEL.name,
         S.SUMMARY.name, S.COMM_GROUPS.name, S.MEMORY_PEAK.name, S.MEMORY_CURVE.name, OPERATORS,
         STEP_COMPARE, EFFICIENCY_SHEET, HOST_OVERHEAD]


def open_target(target):
    """(file object or path to write, finish callback): paths are written to a temporary file
    beside the target and renamed into place on success."""
    if isinstance(target, (str, os.PathLike)):
        path = os.fspath(target)
        tmp = f"{path}.tmp-{os.getpid()}"

        def finish(ok: bool) -> None:
            if ok:
                os.replace(tmp, path)
            elif os.path.exists(tmp):
                os.unlink(tmp)
        return tmp, finish
    if not isinstance(target, io.IOBase) and not hasattr(target, "write"):
        raise TypeError("target must be a path or a binary file-like object")
    return target, lambda ok: None


def write_book(target, n_rows: int, fill) -> list[str]:
    """Open a :class:`Workbook` on ``target`` (:func:`open_target`; a quicker deflate above 50,000
    rows), let ``fill(book)`` write its sheets, close it; on any failure discard it and leave no
    file behind.  The names of the sheets written, in order."""
    fh, finish = open_target(target)
    book = None
    try:
        book = Workbook(fh, compresslevel=1 if n_rows > 50_000 else 6)
        fill(book)
        book.close()
    except BaseException:
        if book is not None:
            book.discard()
        finish(False)
        raise
    finish(True)
    return list(book.sheet_names)


def check_sheets(sheets):
    """``sheets`` (engine / analysis names, None = all) as a set; ValueError naming unknown ones."""
    if sheets is None:
        return None
    from ..analyses import analyses
    sheets = set(sheets)
    known = [*ENGINES, *(a.name for a in analyses("sheet"))]
    unknown = sheets - set(known)
    if unknown:
        raise ValueError(f"unknown sheet group(s) {sorted(unknown)}; choose from {', '.join(known)}")
    return sheets


def write_workbook(cmp, target, sheets=None) -> list[str]:
    """Write the comparison workbook to ``target`` (a path, written atomically, or a binary
    file-like object).  ``sheets``: engine names to include (``ENGINES``; None = all).  Returns
    the names of the sheets written, in order."""
    sheets = check_sheets(sheets)
    with gc_paused():          # ~10^5 row lists, no cycles: collections cost ~10% of the time
        return _write(cmp, target, sheets)


def labels(cmp) -> tuple[str, str]:
    """The row-1 banners' texts of both sides."""
    return (cmp.base_side.path or f"{cmp.base_side.run}/{cmp.base_side.worker}",
            cmp.target_side.path or f"{cmp.target_side.run}/{cmp.target_side.worker}")


def complete(cmp, sheets, by_name: dict, notes: list, any_rows: bool) -> list[SheetData]:
    """After the engines' sheets are planned (``by_name``; ``any_rows``: whether any planned sheet
    has rows): our Operators sheet into ``by_name``, the Summary's profile and notes blocks; the
    analyses' sheets (written after ``ORDER``'s)."""
    for d in _operator_sheet(cmp, sheets, by_name, notes, set(ORDER) - {OPERATORS}):
        by_name[d.layout.name] = d
    extra = _analysis_sheets(cmp, sheets, notes, set(ORDER))
    summary = by_name.get(S.SUMMARY.name)
    if summary is None and (not any_rows or notes):
        summary = by_name[S.SUMMARY.name] = SheetData(S.SUMMARY, [])
    if summary is not None:
        summary.blocks.append((["Profile", "Baseline", "Target"], _side_info(cmp)))
        all_notes = _notes(cmp, notes)
        if all_notes:
            summary.blocks.append((["Notes"], [[n] for n in all_notes]))
    return extra


def _write(cmp, target, sheets) -> list[str]:
    notes: list[str] = []
    planned = plan_sheets(cmp, sheets, notes)
    by_name = {d.layout.name: d for d in planned}
    extra = complete(cmp, sheets, by_name, notes, any(d.rows for d in planned))
    base_label, target_label = labels(cmp)

    def fill(book) -> None:
        sb = StyleBook(book.styles)
        for d in [by_name.get(name) for name in ORDER] + extra:
            if d is not None and (d.rows or d.blocks):
                write_sheet(book, sb, d, base_label, target_label)
    n_rows = sum(len(d.rows) for d in by_name.values()) + sum(len(d.rows) for d in extra)
    return write_book(target, n_rows, fill)


def _safe(s: str, limit: int = 60) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", s or "").strip("._-")
    return s[:limit].rstrip("._-") or "profile"


def _middle(s: str, limit: int) -> str:
    """``s`` shortened in the middle to at most ``limit`` characters (both ends say the most)."""
    if len(s) <= limit:
        return s
    keep = limit - 2
    return f"{s[:(keep + 1) // 2].rstrip('._-')}--{s[len(s) - keep // 2:].lstrip('._-')}"


def _side_name(side, other) -> str:
    """A side's part of the file name: its run, then its worker when the worker tells the two
    sides apart (the same run on both sides, or different workers); the worker alone when the
    run has no name (the logdir itself, a profile given without a run)."""
    run = "" if side.run in ("", ".") else _safe(side.run, 10_000)
    worker = _safe(side.worker or "", 10_000) if side.worker else ""
    if not run:
        return _middle(worker or "profile", 48)
    if worker and (side.run == other.run or side.worker != other.worker):
        return f"{_middle(run, 40)}_{_middle(worker, 24)}"
    return _middle(run, 48)


def workbook_filename(cmp, now: datetime | None = None) -> str:
    """``tb_compare_<baseline>_vs_<target>_<UTC yyyymmddHHMMSS>.xlsx``: each side named by its
    run (safe characters, shortened in the middle when long), plus its worker when that adds
    information (:func:`_side_name`)."""
    ts = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y%m%d%H%M%S")
    b, t = cmp.base_side, cmp.target_side
    return f"tb_compare_{_side_name(b, t)}_vs_{_side_name(t, b)}_{ts}.xlsx"
