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
* ``rratio`` our sheets: a ratio, red when > 1, green when < 1.
"""
from __future__ import annotations

from dataclasses import dataclass

GREEN = "00FF00"          # baseline banner / headers
YELLOW = "FFFF00"         # target banner / headers
RED = "FF0000"            # reference ratio > 1
BLUE = "00BFFF"           # OverallMetrics top-level rows
LIGHT_BLUE = "87CEFA"     # OverallMetrics second-level rows of the style map
WORSE = "FFC7CE"          # our sheets: regression (fill) ...
WORSE_FONT = "9C0006"
BETTER = "C6EFCE"         # ... and gain
BETTER_FONT = "006100"

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

_INFO_SIDE = [("Baseline", "text", 40), ("Target", "text", 40)]


def fixed_format(kind: str) -> str | None:
    return {"id": FMT_INT, "text": FMT_INT, "name": None, "float": FMT_FLOAT, "ms3": FMT_MS3, "pct": FMT_PCT,
            "ratio": FMT_PCT, "diff": FMT_MS3, "rratio": FMT_PCT}[kind]
