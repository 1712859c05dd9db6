"""A small streaming xlsx (Office Open XML spreadsheet) writer: the package parts and sheets
written straight into the zip (cell text, numbers and the style registry: :mod:`.xlsx_cells`).

Why not xlsxwriter (the design card names it): even in its fastest mode (``constant_memory``,
rows streamed to a temporary file; typed ``write_*`` calls) it costs ~5.9 µs per cell on this
2-core machine when it is quiet, several times ours.  ``python -m bench.xlsx_bench`` writes the
same operator-like sheet with both (docs/performance.md: under load, 11 µs of CPU per cell for
xlsxwriter against 1.6-1.9 µs for this writer, deflate included).  Writing the sheet XML
directly keeps memory flat (rows go to the zip as they are produced): ~1.5-2 µs per cell row by
row (:meth:`Sheet.row`); column by column (:meth:`Sheet.rows`, one list comprehension per column)
about twice as fast when values repeat, as names and durations do in real sheets (escaped text
and float reprs are memoised), while a worker thread deflates the previous chunk.  Only
what the workbook presenter needs is supported: numbers, inline strings, blanks, one border
style, fills, bold / coloured Arial 11, left + vertically centred alignment with indent, number
formats, fixed column widths, merged cells, a frozen header and an autofilter.

Strings follow Excel's rules: control characters become ``_xHHHH_`` escapes (a carriage return
is stored as ``_x000D_``, as xlsxwriter does), and text longer than 32,767 characters (Excel's
cell limit) is truncated.  Infinite or NaN numbers are written as blanks; callers turn infinite
ratios into the string ``INF`` first.
"""
from __future__ import annotations

import queue
import re
import struct
import threading
import zipfile
from datetime import datetime, timezone
from itertools import chain, repeat

from ..envflags import switched_off
from .xlsx_cells import (_CT, _HEAD, _INF, _NS, _NS_R, _PKG_REL, _PLAIN, _REL, WIDTH_PAD, Styles, _attr,
                         _number, cell_ref, col_letter, escape_text)
from .xlsx_cells import MAX_CELL_CHARS  # noqa: F401  (part of this module's interface)
from .xlsx_columns import block_xml


def _fast_deflate():
    """ISA-L's deflate (the ``isal`` package) when it is installed and not turned off
    (``TB_COMPARE_XLSX_ISAL=0``), else None (zlib, through :mod:`zipfile`).  It deflates the parts
    written at a quick level (<= 2: sheets over ``Sheet.BIG_PART``, big workbooks); the XML is the
    same, the deflate bytes other (equally valid) and ~5x faster: the 43 MB ModuleCompare sheet
    of npu_500mb in 0.03 s of CPU at ISA-L's level 1 against zlib's 0.17 s at level 2, for a part
    of about the same size (3.8 MB).  Parts at level 6 stay zlib's (ISA-L's would be ~35 % bigger)."""
    if switched_off("TB_COMPARE_XLSX_ISAL"):
        return None
    try:
        from isal import isal_zlib
    except ImportError:
        return None
    return isal_zlib


_ISAL = _fast_deflate()


class _PartWriter:
    """Writes the sheet parts into the zip on a worker thread, so deflating (zlib releases the
    GIL) overlaps building the next rows' XML.  ``put(job, arg)`` queues ``open_part((name,
    level))``, ``write(bytes)`` or ``close_part()``; a worker error is raised by the next call."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self._zip, self._fh, self._error, self._thread = zf, None, None, None
        self._jobs: queue.Queue = queue.Queue(maxsize=4)    # ≤ 4 chunks (≤ 2,000 rows each) waiting

    def _run(self) -> None:
        for job, arg in iter(self._jobs.get, None):
            if self._error is None:
                try:
                    job(arg)
                except BaseException as e:
                    self._error = e

    def put(self, job, arg=None) -> None:
        if self._error is not None:
            raise self._error
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="xlsx-deflate", daemon=True)
            self._thread.start()
        self._jobs.put((job, arg))

    def open_part(self, name_level: tuple) -> None:
        base, self._zip.compresslevel = self._zip.compresslevel, name_level[1]
        try:
            self._fh = self._zip.open(name_level[0], "w")
        finally:
            self._zip.compresslevel = base
        level = name_level[1]
        if _ISAL is not None and level is not None and level <= 2 and getattr(self._fh, "_compressor", None):
            # (zipfile's writer deflates through this object: compress(), then flush() at close)
            self._fh._compressor = _ISAL.compressobj(1, _ISAL.DEFLATED, -15)

    def write(self, data: bytes) -> None:
        self._fh.write(data)

    def write_all(self, chunks: list) -> None:
        for data in chunks:
            self._fh.write(data)

    def close_part(self, _=None) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.close()

    def copy_parts(self, src_names: tuple) -> None:
        """Append the members ``names`` of the finished zip in the binary file ``src`` as they
        are (their deflated bytes copied, not inflated and deflated again): the sheets another
        process wrote (``xlsx_split``).  Relies on :mod:`zipfile`'s writer state (``start_dir``,
        ``filelist``), which a test checks by reading the result back."""
        src, names = src_names
        src.seek(0)
        z = self._zip
        with zipfile.ZipFile(src) as zsrc:
            for name in names:
                info = zsrc.getinfo(name)
                src.seek(info.header_offset)
                head = struct.unpack(zipfile.structFileHeader, src.read(zipfile.sizeFileHeader))
                src.seek(head[zipfile._FH_FILENAME_LENGTH] + head[zipfile._FH_EXTRA_FIELD_LENGTH], 1)
                data = src.read(info.compress_size)
                if len(data) != info.compress_size:
                    raise OSError(f"the workbook part {name} is truncated")
                with z._lock:
                    z.fp.seek(z.start_dir)
                    info.header_offset = z.start_dir
                    z.fp.write(info.FileHeader())
                    z.fp.write(data)
                    z.start_dir = z.fp.tell()
                    z.filelist.append(info)
                    z.NameToInfo[name] = info
                    z._didModify = True

    def finish(self, ok: bool = True) -> None:
        """Wait for every job; then raise a worker error (``ok``) or drop the open part."""
        if self._thread is not None and self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()
        if ok and self._error is not None:
            raise self._error
        if not ok:
            try:
                self.close_part()
            except Exception:
                pass


class Sheet:
    """One worksheet being streamed: call :meth:`row` (or :meth:`rows`) with increasing row
    numbers, then close.  The part's first ``BIG_PART`` bytes are held back: a sheet that
    outgrows them is deflated at the workbook's ``big_level`` (faster), others at its level."""

    _FLUSH = 2000
    _BLOCK_CHARS = 2 << 20
    BIG_PART = 8 << 20

    def __init__(self, book: "Workbook", index: int, name: str, n_rows: int, n_cols: int, widths,
                 merges=(), freeze_rows: int = 0, autofilter: tuple | None = None) -> None:
        self.book, self.name = book, name
        self._letters = [col_letter(c) for c in range(max(n_cols, 1))]
        self._escaped: dict[str, str] = {}
        self._floats: dict[float, str] = {}
        self._buf: list[str] = []
        self._last_row = -1
        self._part = f"xl/worksheets/sheet{index}.xml"
        self._held: list[bytes] | None = []          # None once the part is open
        self._held_bytes = 0
        view = '<sheetView workbookViewId="0"' + (' tabSelected="1"' if index == 1 else "")
        if freeze_rows:
            top = cell_ref(freeze_rows, 0)
            view += (f'><pane ySplit="{freeze_rows}" topLeftCell="{top}" activePane="bottomLeft" state="frozen"/>'
                     f'<selection pane="bottomLeft" activeCell="{top}" sqref="{top}"/></sheetView>')
        else:
            view += "/>"
        cols = "".join(f'<col min="{c + 1}" max="{c + 1}" width="{w + WIDTH_PAD:.7f}" customWidth="1"/>'
                       for c, w in enumerate(widths) if w)
        dim = f"A1:{cell_ref(max(n_rows, 1) - 1, max(n_cols, 1) - 1)}"
        self._tail = "</sheetData>"
        if autofilter is not None:
            r0, r1, c0, c1 = autofilter
            ref = f"{cell_ref(r0, c0)}:{cell_ref(max(r0, r1), c1)}"
            self._tail += f'<autoFilter ref="{ref}"/>'
            quoted = name.replace("'", "''")
            book._defined.append(
                f'<definedName name="_xlnm._FilterDatabase" localSheetId="{index - 1}" hidden="1">'
                f"'{_attr(quoted)}'!${col_letter(c0)}${r0 + 1}:${col_letter(c1)}${max(r0, r1) + 1}</definedName>")
        if merges:
            self._tail += (f'<mergeCells count="{len(merges)}">'
                           + "".join(f'<mergeCell ref="{cell_ref(r0, c0)}:{cell_ref(r1, c1)}"/>'
                                     for r0, c0, r1, c1 in merges) + "</mergeCells>")
        self._tail += ('<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/>'
                       "</worksheet>")
        self._write(f'{_HEAD}<worksheet {_NS} {_NS_R}><dimension ref="{dim}"/><sheetViews>{view}</sheetViews>'
                    f'<sheetFormatPr defaultRowHeight="15"/>' + (f"<cols>{cols}</cols>" if cols else "")
                    + "<sheetData>")

    def _write(self, s: str) -> None:
        self._put(s.encode("utf-8"))

    def _put(self, data: bytes) -> None:
        if self._held is None:
            self.book._out.put(self.book._out.write, data)
            return
        self._held.append(data)
        self._held_bytes += len(data)
        if self._held_bytes >= self.BIG_PART:
            self._open_part(self.book.big_level)

    def _open_part(self, level: int) -> None:
        """Open the part at ``level`` and queue what was held back as one job (it is in memory
        already: queued chunk by chunk it would wait for the bounded queue, and this thread with it,
        while the worker deflates the first ones)."""
        out = self.book._out
        out.put(out.open_part, (self._part, level))
        if self._held:
            out.put(out.write_all, self._held)
        self._held = None

    def _escape(self, v: str) -> str:
        """``<t>`` element of a string (cached per sheet)."""
        e = self._escaped.get(v)
        if e is None:
            e = escape_text(v)
            e = f'<t xml:space="preserve">{e}</t>' if e[:1].isspace() or e[-1:].isspace() else f"<t>{e}</t>"
            if len(self._escaped) < 200_000:
                self._escaped[v] = e
        return e

    def _cell(self, ref: str, v, s) -> str:
        """One cell's XML ("" for an unstyled blank)."""
        t = type(v)
        if t is str:
            e = self._escape(v)
            return f'<c r="{ref}" s="{s}" t="inlineStr"><is>{e}</is></c>' if s \
                else f'<c r="{ref}" t="inlineStr"><is>{e}</is></c>'
        if v is None:
            return f'<c r="{ref}" s="{s}"/>' if s else ""
        if t is not int and t is not float:
            v = _number(v)
            if v is None:
                return f'<c r="{ref}" s="{s}"/>' if s else ""
            if type(v) is str:
                return f'<c r="{ref}" s="{s or 0}" t="inlineStr"><is><t>{escape_text(v)}</t></is></c>'
        if type(v) is float:
            if v != v or v in (_INF, -_INF):
                return f'<c r="{ref}" s="{s}"/>' if s else ""
            v = repr(v)
        return f'<c r="{ref}" s="{s}"><v>{v}</v></c>' if s else f'<c r="{ref}"><v>{v}</v></c>'

    def row(self, r: int, values, styles) -> None:
        """Write row ``r`` (0-based): ``values[c]`` with xf ``styles[c]``.  A None value with a
        style is a styled blank; None with style 0/None is skipped."""
        if r <= self._last_row:
            raise ValueError(f"sheet {self.name!r}: row {r + 1} written after row {self._last_row + 1}")
        self._last_row = r
        rn = str(r + 1)
        letters, cell = self._letters, self._cell
        self._buf.append(f'<row r="{rn}">' + "".join([cell(f"{letters[c]}{rn}", v, styles[c])
                                                      for c, v in enumerate(values)]) + "</row>")
        if len(self._buf) >= self._FLUSH:
            self._write("".join(self._buf))
            self._buf.clear()

    def rows(self, first: int, rows: list, styles: list) -> None:
        """Write ``rows`` as rows ``first``, ``first + 1``, ... column by column (the same XML as
        :meth:`row`, several times faster).  ``styles[c]``: column c's xf, or a list of one xf
        per row."""
        if not rows:
            return
        width = len(rows[0])
        if first <= self._last_row or len(styles) != width or any(len(r) != width for r in rows):
            for i, r in enumerate(rows):
                self.row(first + i, r, [s if type(s) is int else s[i] for s in styles[:len(r)]])
            return
        if self._buf:
            self._write("".join(self._buf))
            self._buf.clear()
        blocks = block_xml(first, rows, styles, self._letters)
        if blocks is not None:                      # whole columns, as bytes (xlsx_columns)
            for data in blocks:
                self._put(data)
            self._last_row = first + len(rows) - 1
            return
        lo, step = 0, min(self._FLUSH, 256)
        while lo < len(rows):
            block = rows[lo:lo + step]
            rns = [str(first + lo + i + 1) for i in range(len(block))]
            cols = [self._column(self._letters[c], vals, st if type(st) is int else st[lo:lo + len(block)], rns)
                    for c, (vals, st) in enumerate(zip(zip(*block), styles))]
            xml = "".join(chain.from_iterable(zip([f'<row r="{rn}">' for rn in rns], *cols, repeat("</row>"))))
            self._write(xml)
            lo += len(block)
            # rows per block: up to _FLUSH, fewer when rows are long (OperatorCompare's kernel
            # details: ~6 KB a row), so that the blocks waiting for the deflate hold ~_BLOCK_CHARS each
            step = max(64, min(self._FLUSH, self._BLOCK_CHARS * len(block) // max(len(xml), 1)))
        self._last_row = first + len(rows) - 1

    def _float(self, v: float) -> str:
        """repr of a finite float, memoised per sheet (durations and sizes repeat).  Zero is
        never stored: 0.0 and -0.0 are one dict key but print differently."""
        r = repr(v)
        if v and len(self._floats) < 200_000:
            self._floats[v] = r
        return r

    def _column(self, letter: str, vals, style, rns: list) -> list:
        """Cells of one column (see :meth:`_cell`); ``style``: one xf, or one per value."""
        if type(style) is int:
            attrs = repeat(f' s="{style}"' if style else "")
        else:
            attrs = map({s: f' s="{s}"' if s else "" for s in set(style)}.__getitem__, style)
        kinds = set(map(type, vals))
        if not kinds <= _PLAIN:
            return [self._cell(f"{letter}{rn}", v, s) for v, rn, s in
                    zip(vals, rns, repeat(style) if type(style) is int else style)]
        c = f'<c r="{letter}'
        get, esc, fget, fmt = self._escaped.get, self._escape, self._floats.get, self._float
        if type(style) is int and len(kinds) == 1:      # one type, one style: the common column
            sa = f' s="{style}"' if style else ""
            kind = kinds.pop()
            if kind is float:
                v_open, blank = f'"{sa}><v>', f'"{sa}/>'
                return [f'{c}{rn}{v_open}{fget(v) or fmt(v)}</v></c>' if v - v == 0
                        else (f'{c}{rn}{blank}' if sa else "") for v, rn in zip(vals, rns)]
            if kind is int:
                v_open = f'"{sa}><v>'
                return [f'{c}{rn}{v_open}{v}</v></c>' for v, rn in zip(vals, rns)]
            if kind is str:
                s_open = f'"{sa} t="inlineStr"><is>'
                return [f'{c}{rn}{s_open}{get(v) or esc(v)}</is></c>' for v, rn in zip(vals, rns)]
        return [f'{c}{rn}"{sa} t="inlineStr"><is>{get(v) or esc(v)}</is></c>' if (t := type(v)) is str
                else ((f'{c}{rn}"{sa}><v>{fget(v) or fmt(v)}</v></c>' if v - v == 0
                       else (f'{c}{rn}"{sa}/>' if sa else ""))
                      if t is float else f'{c}{rn}"{sa}><v>{v}</v></c>' if t is int
                      else (f'{c}{rn}"{sa}/>' if sa else "")) for v, rn, sa in zip(vals, rns, attrs)]

    def close(self) -> None:
        if self._buf:
            self._write("".join(self._buf))
            self._buf.clear()
        self._write(self._tail)
        if self._held is not None:
            self._open_part(self.book.compresslevel)
        self.book._out.put(self.book._out.close_part)
        self._escaped.clear()
        self._floats.clear()


def _sheet_number(info) -> int:
    m = re.fullmatch(r"xl/worksheets/sheet(\d+)\.xml", info.filename)
    return int(m.group(1)) if m else 1 << 30


class Workbook:
    """An xlsx package written to ``target`` (a path or a binary file-like object)."""

    def __init__(self, target, compresslevel: int = 6, big_level: int = 2) -> None:
        """``compresslevel``: deflate level of the parts; ``big_level``: of sheets over
        ``Sheet.BIG_PART`` bytes of XML (never above ``compresslevel``)."""
        self._target = target
        self._zip = zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel)
        self.compresslevel = compresslevel
        self.big_level = big_level if compresslevel is None else min(big_level, compresslevel)
        self._out = _PartWriter(self._zip)
        self.styles = Styles()
        self.sheet_names: list[str] = []
        self._defined: list[str] = []
        self._open: Sheet | None = None

    def add_sheet(self, name: str, n_rows: int, n_cols: int, widths=(), merges=(), freeze_rows: int = 0,
                  autofilter: tuple | None = None) -> Sheet:
        """Start a sheet (the previous one is closed).  ``merges``: (r0, c0, r1, c1) 0-based;
        ``autofilter``: (header row, last row, first col, last col)."""
        if self._open is not None:
            self._open.close()
        if len(name) > 31 or re.search(r"[\[\]:*?/\\]", name) or name in self.sheet_names:
            raise ValueError(f"invalid or duplicate sheet name {name!r}")
        self.sheet_names.append(name)
        self._open = Sheet(self, len(self.sheet_names), name, n_rows, n_cols, widths, merges, freeze_rows,
                           autofilter)
        return self._open

    def close_sheet(self) -> None:
        """Close the open sheet (its last rows are queued for the zip)."""
        if self._open is not None:
            self._open.close()
            self._open = None

    def reserve(self, names: list) -> int:
        """Count the sheets ``names`` another process writes (``xlsx_split``) as the next ones; the
        position in the defined names where theirs go (:meth:`adopt`)."""
        self.close_sheet()
        self.sheet_names.extend(names)
        return len(self._defined)

    def adopt(self, src, parts: list, defined: list, at: int) -> None:
        """Take the parts ``parts`` of the sheets :meth:`reserve` counted, from the finished zip in
        the binary file ``src`` (their deflated bytes copied as they are), and their defined names
        ``defined``, in place ``at``.  The caller sets the style registry those sheets left."""
        self._defined[at:at] = defined
        self._out.put(self._out.copy_parts, (src, parts))

    def discard(self) -> None:
        """Give up (after an error): release the zip without completing the package."""
        try:
            self._out.finish(ok=False)
            self._zip.close()
        except Exception:
            pass

    def close(self) -> None:
        if self._open is not None:
            self._open.close()
            self._open = None
        self._out.finish()
        n = len(self.sheet_names)
        if not n:
            raise ValueError("a workbook needs at least one sheet")
        z = self._zip
        z.filelist.sort(key=_sheet_number)       # adopted sheets (``adopt``) in their place
        sheets_ct = "".join(f'<Override PartName="/xl/worksheets/sheet{i}.xml" '
                            f'ContentType="{_CT}.spreadsheetml.worksheet+xml"/>' for i in range(1, n + 1))
        z.writestr("[Content_Types].xml",
                   f'{_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                   f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                   f'<Default Extension="xml" ContentType="application/xml"/>'
                   f'<Override PartName="/docProps/app.xml" ContentType="{_CT}.extended-properties+xml"/>'
                   f'<Override PartName="/docProps/core.xml" '
                   f'ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>'
                   f'<Override PartName="/xl/styles.xml" ContentType="{_CT}.spreadsheetml.styles+xml"/>'
                   f'<Override PartName="/xl/workbook.xml" ContentType="{_CT}.spreadsheetml.sheet.main+xml"/>'
                   f"{sheets_ct}</Types>")
        z.writestr("_rels/.rels",
                   f'{_HEAD}<Relationships xmlns="{_PKG_REL}">'
                   f'<Relationship Id="rId1" Type="{_REL}/officeDocument" Target="xl/workbook.xml"/>'
                   f'<Relationship Id="rId2" Type="{_PKG_REL}/metadata/core-properties" Target="docProps/core.xml"/>'
                   f'<Relationship Id="rId3" Type="{_REL}/extended-properties" Target="docProps/app.xml"/>'
                   "</Relationships>")
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        z.writestr("docProps/core.xml",
                   f'{_HEAD}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/'
                   'core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/'
                   'terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:creator>tb-compare</dc:creator>'
                   f'<dcterms:created xsi:type="dcterms:W3CDTF">{now}</dcterms:created>'
                   f'<dcterms:modified xsi:type="dcterms:W3CDTF">{now}</dcterms:modified></cp:coreProperties>')
        z.writestr("docProps/app.xml",
                   f'{_HEAD}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-'
                   'properties"><Application>tb-compare</Application></Properties>')
        sheets = "".join(f'<sheet name="{_attr(nm)}" sheetId="{i}" r:id="rId{i}"/>'
                         for i, nm in enumerate(self.sheet_names, 1))
        defined = f"<definedNames>{''.join(self._defined)}</definedNames>" if self._defined else ""
        z.writestr("xl/workbook.xml",
                   f'{_HEAD}<workbook {_NS} {_NS_R}><bookViews><workbookView activeTab="0"/></bookViews>'
                   f"<sheets>{sheets}</sheets>{defined}</workbook>")
        rels = "".join(f'<Relationship Id="rId{i}" Type="{_REL}/worksheet" Target="worksheets/sheet{i}.xml"/>'
                       for i in range(1, n + 1))
        z.writestr("xl/_rels/workbook.xml.rels",
                   f'{_HEAD}<Relationships xmlns="{_PKG_REL}">{rels}'
                   f'<Relationship Id="rId{n + 1}" Type="{_REL}/styles" Target="styles.xml"/></Relationships>')
        z.writestr("xl/styles.xml", self.styles.xml())
        z.close()

