"""Look of the comparison workbook: colours, number formats, and the layout of every sheet
(headers, column types, fixed widths, banner spans).

The reference sheets copy ``msprof-analyze compare``'s layout (spec e; measured on the golden
``reference.xlsx`` files): headers, widths and the column spans of the two row-1 banners are the
reference's, so scripts written against its workbooks read ours.  Our own sheets follow the
same conventions.

Column types (``Layout.types``):

* ``id``    integer format ``#,##0`` (Order Id, Top, counts, levels);
* ``text``  plain text (the reference gives text columns the integer format; so do we);
* ``name``  bold text with the General format (operator / API / kernel name columns);
* ``float`` ``#,##0.00``; ``ms3`` ``#,##0.000`` (our sheets' milliseconds);
* ``pct``   ``0.00%`` (shares such as Duration Ratio), never highlighted;
* ``ratio`` target / baseline in ``0.00%``; > 1 (target slower / larger) is filled red ``FF0000``,
  infinite is the string ``INF`` (red);
* ``diff``  our sheets: a signed target − baseline value, red when > 0, green when < 0;
* ``rratio`` our sheets: a ratio, red when > 1, green when < 1;
* ``num``   our sheets: a plain number in the General format (p-values).

A row marked ``muted`` (``SheetData.muted``, a block's ``muted``: a difference within
step-to-step noise) is greyed, grey text on a light grey fill, and never red or green.

:func:`write_sheet` renders a :class:`SheetData` (rows under a layout) into a worksheet.
"""
from __future__ import annotations

from dataclasses import dataclass, field

GREEN = "00FF00"          # baseline banner / headers
YELLOW = "FFFF00"         # target banner / headers
RED = "FF0000"            # reference ratio > 1
BLUE = "00BFFF"           # OverallMetrics top-level rows
LIGHT_BLUE = "87CEFA"     # OverallMetrics second-level rows of the style map
WORSE = "FFC7CE"          # our sheets: regression (fill) ...
WORSE_FONT = "9C0006"
BETTER = "C6EFCE"         # ... and gain
BETTER_FONT = "006100"
MUTED = "F2F2F2"          # our sheets: a row within step-to-step noise (fill) ...
MUTED_FONT = "808080"     # ... greyed text, no regression / gain colour

FMT_INT = "#,##0"
FMT_FLOAT = "#,##0.00"
FMT_MS3 = "#,##0.000"
FMT_PCT = "0.00%"
RATIO_COLUMNS = frozenset({"Diff Ratio", "Diff Total Ratio", "Diff Avg Ratio", "Diff Calls Ratio", "Diff Self Ratio"})
HEADER_ROW, FIRST_DATA_ROW = 2, 3          # 0-based: header on row 3, data from row 4


@dataclass(frozen=True)
class Layout:
    name: str
    headers: tuple
    types: tuple
    widths: tuple
    base_span: tuple            # (first col, last col), 0-based, of the baseline banner
    target_span: tuple

    def __post_init__(self) -> None:
        assert len(self.headers) == len(self.types) == len(self.widths), self.name


def _layout(name, cols, base_span, target_span) -> Layout:
    return Layout(name, tuple(c[0] for c in cols), tuple(c[1] for c in cols), tuple(c[2] for c in cols),
                  base_span, target_span)


# ------------------------------------------------------------------------- reference sheets

_OVERALL_SIDE = [("Duration(ms)", "float", 20), ("Duration Ratio", "pct", 20), ("Number", "id", 10)]
OVERALL = _layout("OverallMetrics", [("Index", "text", 40), *_OVERALL_SIDE, *_OVERALL_SIDE,
                                     ("Diff Duration(ms)", "float", 20), ("Diff Ratio", "ratio", 10)],
                  (1, 3), (4, 6))

_COMM_SIDE = [("Communication OP Name", "name", 25), ("Task Name", "text", 20), ("Calls", "id", 10),
              ("Total Duration(us)", "float", 17), ("Avg Duration(us)", "float", 17),
              ("Max Duration(us)", "float", 17), ("Min Duration(us)", "float", 17)]
COMMUNICATION = _layout("CommunicationCompare", [("Order Id", "id", 10), *_COMM_SIDE, *_COMM_SIDE,
                                                 ("Diff Duration(us)", "float", 20), ("Diff Ratio", "ratio", 20)],
                        (1, 7), (8, 14))

OPERATOR_STATS = _layout("OperatorCompareStatistic", [
    ("Top", "id", 10), ("Operator Name", "name", 30), ("Base Device Duration(ms)", "float", 25),
    ("Base Operator Number", "id", 25), ("Comparison Device Duration(ms)", "float", 30),
    ("Comparison Operator Number", "id", 30), ("Diff Duration(ms)", "float", 20), ("Diff Ratio", "ratio", 20)],
    (2, 3), (4, 5))

_OP_SIDE = [("Operator Name", "name", 30), ("Input Shape", "text", 20), ("Input Type", "text", 20),
            ("Kernel Details", "text", 20), ("Device Duration(us)", "float", 20)]
OPERATOR = _layout("OperatorCompare", [("Order Id", "id", 10), *_OP_SIDE, *_OP_SIDE,
                                       ("Diff Duration(us)", "float", 20), ("Diff Ratio", "ratio", 20)],
                   (1, 5), (6, 10))

_MODSTAT_SIDE = [("Kernel Details", "text", 20), ("Device Self Time(ms)", "float", 20), ("Number", "id", 10),
                 ("Device Total Time(ms)", "float", 20)]
MODULE_STATS = _layout("ModuleCompareStatistic", [
    ("Order Id", "id", 10), ("Module Class", "text", 20), ("Module Level", "id", 15), ("Module Name", "text", 35),
    ("Operator Name", "text", 25), *_MODSTAT_SIDE, *_MODSTAT_SIDE,
    ("Device Total Time Diff(ms)", "float", 20), ("Device Self Time Diff(ms)", "float", 20),
    ("Diff Total Ratio", "ratio", 15), ("Base Call Stack", "text", 30), ("Comparison Call Stack", "text", 30)],
    (5, 8), (9, 12))

MODULE = _layout("ModuleCompare", [
    ("Order Id", "id", 10), ("Module Class", "text", 20), ("Module Level", "id", 15), ("Module Name", "text", 35),
    ("Operator Name", "text", 25), ("Kernel Details", "text", 20), ("Device Self Time(us)", "float", 20),
    ("Device Total Time(us)", "float", 20), ("Operator Name", "text", 25), ("Kernel Details", "text", 20),
    ("Device Self Time(us)", "float", 20), ("Device Total Time(us)", "float", 20),
    ("Device Total Time Diff(us)", "float", 20), ("Device Self Time Diff(us)", "float", 20),
    ("Diff Total Ratio", "ratio", 15), ("Base Call Stack", "text", 30), ("Comparison Call Stack", "text", 30)],
    (4, 7), (8, 11))

MEMORY_STATS = _layout("MemoryCompareStatistic", [
    ("Top", "id", 10), ("Operator Name", "name", 30), ("Base Allocated Duration(ms)", "float", 25),
    ("Base Allocated Memory(MB)", "float", 30), ("Base Operator Number", "id", 25),
    ("Comparison Allocated Duration(ms)", "float", 27), ("Comparison Allocated Memory(MB)", "float", 33),
    ("Comparison Operator Number", "id", 25), ("Diff Memory(MB)", "float", 20), ("Diff Ratio", "ratio", 20)],
    (2, 4), (5, 7))

_MEM_SIDE = [("Operator Name", "name", 30), ("Input Shape", "text", 20), ("Input Type", "text", 20),
             ("Allocated Details", "text", 20), ("Size(KB)", "float", 20)]
MEMORY = _layout("MemoryCompare", [("Order Id", "id", 10), *_MEM_SIDE, *_MEM_SIDE,
                                   ("Diff Size(KB)", "float", 20), ("Diff Ratio", "ratio", 20)],
                 (1, 5), (6, 10))

_API_SIDE = [("Total Duration(ms)", "float", 20), ("Self Time(ms)", "float", 20), ("Avg Duration(ms)", "float", 20),
             ("Calls", "id", 20)]
API = _layout("ApiCompare", [("Order Id", "id", 10), ("api name", "name", 30), *_API_SIDE, *_API_SIDE,
                             ("Diff Total Ratio", "ratio", 20), ("Diff Self Ratio", "ratio", 20),
                             ("Diff Avg Ratio", "ratio", 20), ("Diff Calls Ratio", "ratio", 20)],
              (2, 5), (6, 9))

_KERNEL_SIDE = [("Total Duration(us)", "float", 20), ("Avg Duration(us)", "float", 20),
                ("Max Duration(us)", "float", 20), ("Min Duration(us)", "float", 20), ("Calls", "id", 20)]
KERNEL = _layout("KernelCompare", [("Order Id", "id", 10), ("Kernel", "name", 30), ("Input Shape", "text", 20),
                                   *_KERNEL_SIDE, *_KERNEL_SIDE,
                                   ("Diff Total Ratio", "ratio", 20), ("Diff Avg Ratio", "ratio", 20)],
                 (3, 7), (8, 12))

# ------------------------------------------------------------------------- our sheets

_SUM_SIDE = [("Duration(ms)", "ms3", 16), ("Number", "id", 10), ("Share of E2E", "pct", 14)]
SUMMARY = _layout("Summary", [("Metric", "text", 44), *_SUM_SIDE, *_SUM_SIDE,
                              ("Diff Duration(ms)", "diff", 18), ("Ratio", "rratio", 12)],
                  (1, 3), (4, 6))

_GRP_SIDE = [("Calls", "id", 8), ("Total(ms)", "ms3", 14), ("Avg(ms)", "ms3", 12), ("Max(ms)", "ms3", 12),
             ("Min(ms)", "ms3", 12), ("Wait(ms)", "ms3", 12), ("Transit(ms)", "ms3", 12), ("Bytes", "id", 16),
             ("Bandwidth(GB/s)", "ms3", 16)]
COMM_GROUPS = _layout("CommunicationByGroup", [
    ("Order Id", "id", 10), ("Collective", "name", 18), ("Group", "text", 36), ("Task Name", "text", 20),
    ("Status", "text", 14), *_GRP_SIDE, *_GRP_SIDE, ("Diff Duration(ms)", "diff", 18), ("Ratio", "rratio", 12)],
    (5, 13), (14, 22))

_PEAK_SIDE = [("Live Memory(MB)", "float", 18), ("Allocations", "id", 12)]
MEMORY_PEAK = _layout("MemoryPeak", [("Kind", "text", 10), ("Name", "name", 50), *_PEAK_SIDE, *_PEAK_SIDE,
                                     ("Diff Memory(MB)", "diff", 18), ("Status", "text", 14)],
                      (2, 3), (4, 5))

_CURVE_SIDE = [("Time(ms)", "ms3", 14), ("Allocated(MB)", "float", 16), ("Reserved(MB)", "float", 16)]
MEMORY_CURVE = _layout("MemoryCurve", [*_CURVE_SIDE, *_CURVE_SIDE], (0, 2), (3, 5))


def fixed_format(kind: str) -> str | None:
    """Number format of a column kind (None = General, also for banners and headers)."""
    return {"id": FMT_INT, "text": FMT_INT, "name": None, "float": FMT_FLOAT, "ms3": FMT_MS3, "pct": FMT_PCT,
            "ratio": FMT_PCT, "diff": FMT_MS3, "rratio": FMT_PCT}.get(kind)


# ------------------------------------------------------------------------- rendering

@dataclass
class SheetData:
    """One sheet's content: rows under ``layout``'s headers, plus free-form blocks after them."""
    layout: Layout
    rows: list
    fills: list | None = None             # per row: fill colour or None (OverallMetrics)
    indents: list | None = None           # per row: indent of column 0
    blocks: list = field(default_factory=list)   # [(header row, rows)] or Block, written after the table
    muted: list | None = None             # per row: greyed (within noise), no highlight


@dataclass
class Block:
    """A table written after a sheet's main table: its own bold header, and per column a kind
    (``Layout.types``; None = every cell plain text) and per row whether it is greyed."""
    header: list
    rows: list
    kinds: tuple | None = None
    muted: list | None = None


class StyleBook:
    """Cell styles of one workbook, cached by (column kind, variant, fill, indent)."""

    def __init__(self, styles) -> None:
        self.styles = styles
        self._cache: dict = {}

    def get(self, kind: str, variant: str = "", fill: str | None = None, indent: int = 0) -> int:
        key = (kind, variant, fill, indent)
        got = self._cache.get(key)
        if got is None:
            fmt, bold, color = fixed_format(kind), kind == "name", None
            if variant == "red":
                fmt, fill = FMT_PCT, RED
            elif variant in ("worse", "better"):
                fill, color = (WORSE, WORSE_FONT) if variant == "worse" else (BETTER, BETTER_FONT)
            elif variant == "muted":
                fill, color = MUTED, MUTED_FONT
            elif variant in ("head_base", "head_target", "banner_base", "banner_target"):
                fmt, bold, fill = None, True, YELLOW if variant.endswith("target") else GREEN
            got = self._cache[key] = self.styles.xf(fmt, bold, fill, color, indent)
        return got

    def variant(self, kind: str, v) -> str:
        if kind == "ratio":
            if isinstance(v, str):
                return "red"
            return "red" if v is not None and v > 1 else ""
        if kind == "rratio":
            if isinstance(v, str):
                return "worse"
            return "" if v is None or v == 1 else ("worse" if v > 1 else "better")
        if kind == "diff":
            return "" if not v or isinstance(v, str) else ("worse" if v > 0 else "better")
        return ""


def _styled_rows(sh, sb: StyleBook, data: SheetData, plain: list, first: int) -> None:
    """Rows with a fill / indent per row (OverallMetrics, Summary: a few dozen), row by row."""
    kinds = data.layout.types
    special = [(c, k) for c, k in enumerate(kinds) if k in ("ratio", "rratio", "diff")]
    fills, indents, muted = data.fills, data.indents, data.muted
    for i, row in enumerate(data.rows):
        if muted and muted[i]:
            sh.row(first + i, row, [sb.get(k, "muted") for k in kinds])
            continue
        fill = fills[i] if fills else None
        ind = indents[i] if indents else 0
        if fill or ind:
            styles = [sb.get(k, "", fill, ind if c == 0 else 0) for c, k in enumerate(kinds)]
        else:
            styles = plain
        for c, k in special:
            var = sb.variant(k, row[c])
            if var:
                if styles is plain:
                    styles = list(plain)
                styles[c] = sb.get(k, var, fill)
        sh.row(first + i, row, styles)


def _column_styles(sb: StyleBook, kinds, plain: list, rows: list) -> list:
    """Per column the xf of every row: ``plain[c]``, or for ratio / diff columns a list with
    each value's highlight.  New highlight styles are registered in the order a row-by-row
    pass meets them (row, then column), so the xf ids are the same."""
    out: list = list(plain)
    first_use = []
    for c, k in enumerate(kinds):
        if k not in ("ratio", "rratio", "diff"):
            continue
        if k == "ratio":          # sb.variant inlined for the common case
            var = ["red" if isinstance(v, str) or (v is not None and v > 1) else "" for v in (r[c] for r in rows)]
        else:
            var = [sb.variant(k, r[c]) for r in rows]
        seen = {}
        for i, v in enumerate(var):
            if v and v not in seen:
                seen[v] = i
        if seen:
            first_use += [(i, c, k, v) for v, i in seen.items()]
            out[c] = var
    ids = {}
    for _, c, k, v in sorted(first_use):
        ids[(c, v)] = sb.get(k, v, None)
    for c, var in enumerate(out):
        if type(var) is list:
            base = plain[c]
            out[c] = [ids[(c, v)] if v else base for v in var]
    return out


def write_sheet(book, sb: StyleBook, data: SheetData, base_label: str, target_label: str) -> None:
    """Banners (row 1), headers (row 3), the rows from row 4 with per-cell highlight, then the
    blocks (each after an empty row, with a bold header); frozen header, autofilter on it."""
    lay = data.layout
    n_cols = len(lay.headers)
    hdr = HEADER_ROW
    first = FIRST_DATA_ROW
    last_table = first + len(data.rows) - 1
    blocks = [b if isinstance(b, Block) else Block(*b) for b in data.blocks]
    extra_rows = sum(2 + len(b.rows) for b in blocks)
    width = max([n_cols] + [len(b.header) for b in blocks] + [len(r) for b in blocks for r in b.rows])
    (b0, b1), (t0, t1) = lay.base_span, lay.target_span
    merges = [(0, c0, 0, c1) for c0, c1 in ((b0, b1), (t0, t1)) if c1 > c0]    # no one-cell merges
    sh = book.add_sheet(lay.name, last_table + 1 + extra_rows, width, lay.widths, merges, freeze_rows=hdr + 1,
                        autofilter=(hdr, max(last_table, hdr), 0, n_cols - 1))
    banner = [None] * n_cols
    bstyle = [0] * n_cols
    for c in range(b0, b1 + 1):
        bstyle[c] = sb.get("", "banner_base")
    for c in range(t0, t1 + 1):
        bstyle[c] = sb.get("", "banner_target")
    banner[b0], banner[t0] = f"Base Profiling: {base_label}", f"Comparison Profiling: {target_label}"
    sh.row(0, banner, bstyle)
    sh.row(hdr, list(lay.headers),
           [sb.get("", "head_target" if t0 <= c <= t1 else "head_base") for c in range(n_cols)])
    kinds = lay.types
    plain = [sb.get(k) for k in kinds]
    if data.fills or data.indents or (data.muted and any(data.muted)):
        _styled_rows(sh, sb, data, plain, first)
    elif data.rows:
        sh.rows(first, data.rows, _column_styles(sb, kinds, plain, data.rows))
    r = last_table + 2
    for block in blocks:
        sh.row(r, block.header, [sb.get("", "head_base")] * len(block.header))
        text = sb.get("text")
        for i, row in enumerate(block.rows):
            r += 1
            if block.kinds is None:
                sh.row(r, row, [text if v is not None else 0 for v in row])
            elif block.muted and block.muted[i]:
                sh.row(r, row, [sb.get(k, "muted") for k in block.kinds[:len(row)]])
            else:
                sh.row(r, row, [sb.get(k, sb.variant(k, v)) if v is not None else 0
                                for k, v in zip(block.kinds, row)])
        r += 2
