"""Cell-level pieces of the streaming xlsx writer (:mod:`.xlsx_writer`): cell references, Excel's
text escaping and truncation, number rendering, the package's XML constants, and the registry
of cell styles that becomes ``xl/styles.xml``.
"""
from __future__ import annotations

import numbers
import re

MAX_CELL_CHARS = 32767
WIDTH_PAD = 0.7109375            # Excel stores a column width with this padding (Calibri 11)
_NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_NS_R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_CT = "application/vnd.openxmlformats-officedocument"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\ufffe\uffff]")
_CTRL_BYTES = bytes([*range(0x00, 0x09), *range(0x0b, 0x20)])


def col_letter(c: int) -> str:
    """0-based column index -> Excel letters (0 -> A, 26 -> AA)."""
    s = ""
    c += 1
    while c:
        c, rem = divmod(c - 1, 26)
        s = chr(65 + rem) + s
    return s


def cell_ref(r: int, c: int) -> str:
    """0-based (row, column) -> "A1" reference."""
    return f"{col_letter(c)}{r + 1}"


def _attr(s: str) -> str:
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def escape_text(s: str) -> str:
    """Cell text -> XML text content (truncated to Excel's limit, control chars escaped)."""
    if len(s) > MAX_CELL_CHARS:
        s = s[:MAX_CELL_CHARS]
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if "\r" in s:
        s = s.replace("\r", "_x000D_")
    if s.isascii():                  # bytes.translate finds control chars ~3x faster than _CTRL
        b = s.encode("ascii")
        if len(b.translate(None, _CTRL_BYTES)) == len(b):
            return s
    if _CTRL.search(s):
        s = _CTRL.sub(lambda m: f"_x{ord(m.group()):04X}_", s)
    return s


_INF = float("inf")
_PLAIN = frozenset({str, float, int, type(None)})


def _number(v):
    """numpy / other scalars -> int or float (bool -> 0/1); pandas NA / NaT -> None; anything
    else -> its str()."""
    if type(v).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return str(v)


class Styles:
    """Registry of cell formats (xf records): every cell style is Arial 11, left, vertically
    centred, thin border; the variable parts are number format, bold, font colour, fill, indent."""

    def __init__(self) -> None:
        self._numfmts: dict[str, int] = {}
        self._fonts: dict[tuple, int] = {}
        self._fills: dict[str, int] = {}
        self._xfs: dict[tuple, int] = {}

    def xf(self, num_fmt: str | None = None, bold: bool = False, fill: str | None = None,
           color: str | None = None, indent: int = 0) -> int:
        key = (num_fmt or "General", bool(bold), fill, color, int(indent))
        got = self._xfs.get(key)
        if got is None:
            got = self._xfs[key] = len(self._xfs) + 1          # xf 0 is the workbook default
        return got

    def _numfmt_id(self, fmt: str) -> int:
        if fmt == "General":
            return 0
        return self._numfmts.setdefault(fmt, 164 + len(self._numfmts))

    def _font_id(self, bold: bool, color: str | None) -> int:
        return self._fonts.setdefault((bold, color), 1 + len(self._fonts))

    def _fill_id(self, fill: str | None) -> int:
        if fill is None:
            return 0
        return self._fills.setdefault(fill, 2 + len(self._fills))

    def xml(self) -> str:
        xfs = []
        for (fmt, bold, fill, color, indent) in self._xfs:      # insertion order == xf ids 1..n
            ind = f' indent="{indent}"' if indent else ""
            xfs.append(f'<xf numFmtId="{self._numfmt_id(fmt)}" fontId="{self._font_id(bold, color)}" '
                       f'fillId="{self._fill_id(fill)}" borderId="1" xfId="0" applyNumberFormat="1" '
                       f'applyFont="1" applyFill="1" applyBorder="1" applyAlignment="1">'
                       f'<alignment horizontal="left" vertical="center"{ind}/></xf>')
        numfmts = "".join(f'<numFmt numFmtId="{i}" formatCode="{_attr(f)}"/>' for f, i in self._numfmts.items())
        fonts = ['<font><sz val="11"/><color theme="1"/><name val="Calibri"/><family val="2"/>'
                 '<scheme val="minor"/></font>']
        for (bold, color) in self._fonts:
            col = f'<color rgb="FF{color}"/>' if color else '<color theme="1"/>'
            fonts.append(f'<font>{"<b/>" if bold else ""}<sz val="11"/>{col}<name val="Arial"/>'
                         '<family val="2"/></font>')
        fills = ['<fill><patternFill patternType="none"/></fill>', '<fill><patternFill patternType="gray125"/></fill>']
        fills += [f'<fill><patternFill patternType="solid"><fgColor rgb="FF{f}"/><bgColor indexed="64"/>'
                  '</patternFill></fill>' for f in self._fills]
        thin = '<{0} style="thin"><color auto="1"/></{0}>'
        borders = ('<border><left/><right/><top/><bottom/><diagonal/></border><border>'
                   + "".join(thin.format(s) for s in ("left", "right", "top", "bottom")) + "<diagonal/></border>")
        return (f'{_HEAD}<styleSheet {_NS}>'
                + (f'<numFmts count="{len(self._numfmts)}">{numfmts}</numFmts>' if self._numfmts else "")
                + f'<fonts count="{len(fonts)}">{"".join(fonts)}</fonts>'
                + f'<fills count="{len(fills)}">{"".join(fills)}</fills>'
                + f'<borders count="2">{borders}</borders>'
                + '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
                + f'<cellXfs count="{len(xfs) + 1}"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
                + "".join(xfs) + '</cellXfs>'
                + '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
                + '<dxfs count="0"/><tableStyles count="0" defaultTableStyle="TableStyleMedium9" '
                'defaultPivotStyle="PivotStyleLight16"/></styleSheet>')
