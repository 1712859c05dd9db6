"""Our streaming xlsx writer (tb_compare_plugin/presenters/xlsx_writer.py) against xlsxwriter,
the library the design card names, on the same sheet: µs per cell.

The sheet is shaped like the workbook's operator sheet: a bold header, then ``--rows`` rows of
13 columns (3 text: name, type, input shapes; 10 numbers: counts, µs durations, ratios) with
the same number formats, column widths, frozen header and autofilter on both sides.  Each
writer writes it ``--repeat`` times into a temporary folder, the writers taking turns; the best wall
time and the best CPU time (all threads of the process: our deflate thread included) are kept.
On a busy machine the CPU figure is the steadier one.

* ``ours (row)``: :meth:`Sheet.row`, one call per row (what an arbitrary caller does);
* ``ours (columns)``: :meth:`Sheet.rows`, column by column (what the workbook presenter does);
* ``xlsxwriter``: ``constant_memory=True`` (rows streamed to a temp file, its fastest mode),
  its typed calls (``write_string`` / ``write_number`` / ``write_blank``) with one format per
  column.

xlsxwriter is a benchmark-only dependency (``pip install -e '.[bench]'``), never a runtime one.

    python -m bench.xlsx_bench                  # 50,000 rows x 13 columns, best of 3
    python -m bench.xlsx_bench --rows 100000 --repeat 1
"""
from __future__ import annotations

import argparse
import os
import random
import tempfile
import time

HEADER = ["Name", "Type", "Input Shapes", "Base Calls", "Base Total (us)", "Base Avg (us)", "Base Max (us)",
          "Comp Calls", "Comp Total (us)", "Comp Avg (us)", "Comp Max (us)", "Diff (us)", "Ratio"]
TEXT_COLS = 3
FORMATS = [None, None, None, "0", "0.000", "0.000", "0.000", "0", "0.000", "0.000", "0.000", "0.000", "0.00"]
WIDTHS = [40, 14, 28, 10, 14, 14, 14, 10, 14, 14, 14, 12, 8]


def make_rows(n: int, seed: int = 7) -> list[list]:
    """Deterministic rows: names and shapes repeat (as operator names do), numbers are floats."""
    rnd = random.Random(seed)
    names = [f"aten::op_{i}" for i in range(2000)]
    types = ["MatMulV2", "Add", "LayerNormV3", "Cast", "TransData", "Softmax", "Gelu"]
    shapes = ["2048,1024;1024,4096", "4,512,1024", "1024", "32000,1024;2048,1024", ""]
    rows = []
    for _ in range(n):
        bc, cc = rnd.randint(1, 200), rnd.randint(1, 200)
        bt, ct = round(rnd.uniform(1, 5e4), 3), round(rnd.uniform(1, 5e4), 3)
        rows.append([rnd.choice(names), rnd.choice(types), rnd.choice(shapes), bc, bt, round(bt / bc, 3),
                     round(rnd.uniform(bt / bc, bt), 3), cc, ct, round(ct / cc, 3), round(rnd.uniform(ct / cc, ct), 3),
                     round(ct - bt, 3), round(ct / bt, 2)])
    return rows


def write_ours(path: str, rows: list[list], by_columns: bool) -> None:
    from tb_compare_plugin.presenters.xlsx_writer import Workbook
    wb = Workbook(path)
    head = wb.styles.xf(bold=True, fill="D9D9D9")
    styles = [wb.styles.xf(num_fmt=f) for f in FORMATS]
    ws = wb.add_sheet("Operators", len(rows) + 1, len(HEADER), widths=WIDTHS, freeze_rows=1,
                      autofilter=(0, len(rows), 0, len(HEADER) - 1))
    ws.row(0, HEADER, [head] * len(HEADER))
    if by_columns:
        ws.rows(1, rows, styles)
    else:
        for i, r in enumerate(rows, 1):
            ws.row(i, r, styles)
    wb.close()


def write_xlsxwriter(path: str, rows: list[list]) -> None:
    import xlsxwriter
    wb = xlsxwriter.Workbook(path, {"constant_memory": True})
    base = {"font_name": "Arial", "font_size": 11, "border": 1, "align": "left", "valign": "vcenter"}
    head = wb.add_format(dict(base, bold=True, bg_color="#D9D9D9"))
    fmts = [wb.add_format(dict(base, num_format=f) if f else base) for f in FORMATS]
    ws = wb.add_worksheet("Operators")
    for c, w in enumerate(WIDTHS):
        ws.set_column(c, c, w)
    ws.freeze_panes(1, 0)
    ws.autofilter(0, 0, len(rows), len(HEADER) - 1)
    ws.write_row(0, 0, HEADER, head)
    # its fastest calls: the typed ones (write() would dispatch on each value's type)
    ws_str, ws_num, ws_blank = ws.write_string, ws.write_number, ws.write_blank
    text = list(zip(range(TEXT_COLS), fmts))
    nums = list(zip(range(TEXT_COLS, len(HEADER)), fmts[TEXT_COLS:]))
    for i, r in enumerate(rows, 1):
        for c, f in text:
            if r[c]:
                ws_str(i, c, r[c], f)
            else:
                ws_blank(i, c, None, f)
        for c, f in nums:
            ws_num(i, c, r[c], f)
    wb.close()


WRITERS = {
    "ours (columns)": lambda p, rows: write_ours(p, rows, by_columns=True),
    "ours (row)": lambda p, rows: write_ours(p, rows, by_columns=False),
    "xlsxwriter": write_xlsxwriter,
}


def check_same_cells(paths: dict[str, str], rows: list[list]) -> None:
    """The files hold the same values (openpyxl, when installed): header, first and last rows."""
    try:
        import openpyxl
    except ImportError:
        print("(openpyxl not installed: contents not compared)")
        return
    def norm(r):                # an empty string is a blank cell to xlsxwriter
        return [None if v == "" else v for v in r]
    want = [norm(r) for r in (HEADER, rows[0], rows[-1])]
    for name, p in paths.items():
        ws = openpyxl.load_workbook(p, read_only=True)["Operators"]
        got = [norm(r) for i, r in enumerate(ws.iter_rows(values_only=True)) if i in (0, 1, len(rows))]
        assert got == want, (name, got, want)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    try:
        import xlsxwriter
    except ImportError:
        raise SystemExit("xlsxwriter is a benchmark-only dependency: pip install -e '.[bench]'")
    __import__("tb_compare_plugin.presenters.xlsx_writer")      # imported before any timing
    rows = make_rows(args.rows)
    cells = len(rows) * len(HEADER)
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tbc-xlsx-bench-") as tmp:
        paths = {name: os.path.join(tmp, f"{i}.xlsx") for i, name in enumerate(WRITERS)}
        for _ in range(args.repeat):                      # interleaved: load changes hit every writer
            for name, write in WRITERS.items():
                t, c = time.perf_counter(), time.process_time()
                write(paths[name], rows)
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t)
                cpu[name] = min(cpu.get(name, float("inf")), time.process_time() - c)
        sizes = {name: os.path.getsize(p) for name, p in paths.items()}
        check_same_cells(paths, rows)
    print(f"{len(rows):,} rows x {len(HEADER)} columns = {cells:,} cells, best of {args.repeat}; "
          f"xlsxwriter {xlsxwriter.__version__}")
    print(f"{'writer':<16} {'seconds':>8} {'us/cell':>8} {'CPU us/cell':>12} {'MB':>6}")
    for name, s in best.items():
        print(f"{name:<16} {s:8.2f} {s / cells * 1e6:8.2f} {cpu[name] / cells * 1e6:12.2f} {sizes[name] / 1e6:6.1f}")
    return {name: s / cells * 1e6 for name, s in best.items()}


if __name__ == "__main__":
    main()
