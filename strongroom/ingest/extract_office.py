"""DOCX and XLSX as pages of blocks (D42, issue 15), each file checked against the bounds of
strongroom.ingest.office_limits before a library parses it.

DOCX: every paragraph is a block (a heading, a list item and its lead-in stay apart) and every
table row a `Row` under the table's first row. Pages are those Word rendered when it last
saved the file (`w:lastRenderedPageBreak`), else those its explicit breaks make (page breaks,
paragraphs that start a page, sections that start on a new page). Tracked changes read as
the text now reads: insertions and moved-to text kept, deletions and moved-from text dropped.
Comments are blocks of their own, `Comment (<author>): <text>`, after the paragraph (or
table) where their range starts.

XLSX: one page per sheet, `Sheet: <name>` then the sheet's rows, its first row with a value
the header; a cell keeps its column (empty cells before it stay, as empty cells). openpyxl
streams the sheets; the cells it yields (the empty ones inside a row too) are counted against
`max_sheet_cells`, and their text, cut at Excel's 32,767 characters a cell, against
`max_text_chars` before it is copied (issue 28).
The parts parsed whole (a DOCX's every part, an XLSX's shared strings) are bounded in bytes
of XML (`max_xml_bytes`) before a library reads them.

XLS (Excel 97-2003, issue 51): pages as for XLSX, read by xlrd one sheet at a time
(`on_demand`, each sheet released once read) with rows as long as their last cell
(`ragged_rows`): otherwise xlrd pads every row of a sheet to its widest, and one cell at
IV65536 (or one merged range that wide) made 16.7 million cells of a 6 KB file. Cells count
against `max_sheet_cells` and text against `max_text_chars` as for XLSX."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import xlrd
from docx import Document as open_docx
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml.ns import qn
from openpyxl import load_workbook

from strongroom.ingest.chunking import CELL_SEPARATOR, Block, Row, table_row
from strongroom.ingest.limits import Budget, IngestLimits, UnreadableDocument
from strongroom.ingest.office_limits import check_docx, check_xlsx

_P, _TBL, _TR, _TC = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_T, _BR, _CR, _TAB = qn("w:t"), qn("w:br"), qn("w:cr"), qn("w:tab")
_RENDERED_BREAK = qn("w:lastRenderedPageBreak")
_TYPE, _VAL = qn("w:type"), qn("w:val")
_ID = qn("w:id")
_REMOVED = frozenset({qn("w:del"), qn("w:moveFrom")})
_COMMENT_START, _COMMENT_REFERENCE = qn("w:commentRangeStart"), qn("w:commentReference")
# Excel keeps at most this many characters in a cell; a file holding more was not made by
# it, and what is past it is not read.
EXCEL_MAX_CELL_CHARS = 32_767


def docx_pages(path: Path, limits: IngestLimits) -> list[list[Block]]:
    check_docx(
        path,
        max_unzipped=limits.max_unzipped_bytes,
        max_xml_tags=limits.max_xml_tags,
        max_xml_bytes=limits.max_xml_bytes,
    )
    document = open_docx(str(path))
    body = document.element.body
    text = Budget.text_of(limits)
    comments = _comments(document, text)
    rendered = next(body.iter(_RENDERED_BREAK), None) is not None
    pages: list[list[Block]] = [[]]
    for block in _blocks(body):
        if block.tag == _TBL:
            pages[-1].extend(_table_rows(block, text))
            pages[-1].extend(_anchored(block, comments))
            continue
        if not rendered and _starts_page(block) and pages[-1]:
            pages.append([])
        for run, page_break in _paragraph_runs(block, rendered, text):
            if page_break:
                if pages[-1] or run:
                    pages.append([])
            elif run.strip():
                pages[-1].append(run)
        pages[-1].extend(_anchored(block, comments))
        if not rendered and _ends_section_with_page(block):
            pages.append([])
    while len(pages) > 1 and not pages[-1]:
        pages.pop()
    return pages


def _comments(document, text: Budget) -> dict[str, str]:
    """The document's comments by id, each as the block `Comment (<author>): <text>`, read
    from its comments part (python-docx before 1.2 has no API for them); none without one."""
    try:
        part = document.part.part_related_by(RT.COMMENTS)
    except KeyError:
        return {}
    comments = {}
    for comment in part.element.iterchildren(qn("w:comment")):
        paragraphs = (
            "".join(run for run, _ in _paragraph_runs(p, False, text)) for p in comment.iter(_P)
        )
        content = "\n".join(p.strip() for p in paragraphs if p.strip())
        author = " ".join(comment.get(qn("w:author"), "").split())
        if content:
            label = f"Comment ({author})" if author else "Comment"
            comments[comment.get(_ID, "")] = f"{label}: {content}"
    return comments


def _anchored(element, comments: dict[str, str]) -> Iterator[str]:
    """The comments anchored in `element` (a paragraph, or a table: after its rows), each
    once, then forgotten: a comment whose range spans paragraphs follows the first."""
    if not comments:
        return
    for anchor in element.iter(_COMMENT_START, _COMMENT_REFERENCE):
        comment = comments.pop(anchor.get(_ID, ""), None)
        if comment is not None:
            yield comment


def _blocks(parent) -> Iterator:
    """The paragraphs and tables of the body in order, including those inside content
    controls (`w:sdt`, as in cover pages and tables of contents) and custom XML."""
    for child in parent.iterchildren():
        if child.tag in (_P, _TBL):
            yield child
        elif child.tag == qn("w:sdt"):
            for content in child.iterchildren(qn("w:sdtContent")):
                yield from _blocks(content)
        elif child.tag == qn("w:customXml"):
            yield from _blocks(child)


def _starts_page(paragraph) -> bool:
    properties = paragraph.find(qn("w:pPr"))
    if properties is None:
        return False
    flag = properties.find(qn("w:pageBreakBefore"))
    return flag is not None and flag.get(_VAL, "true") not in ("0", "false", "off")


def _ends_section_with_page(paragraph) -> bool:
    """A paragraph holding a section break whose next section starts on a new page (all
    kinds but `continuous`). Approximates the next section's own `w:type` by this one's."""
    properties = paragraph.find(qn("w:pPr"))
    section = properties.find(qn("w:sectPr")) if properties is not None else None
    if section is None:
        return False
    kind = section.find(_TYPE)
    return kind is None or kind.get(_VAL) != "continuous"


def _table_rows(table, text: Budget) -> Iterator[Row]:
    """One `Row` per row with text, cells apart by ` | `; a cell's paragraphs (and any table
    nested in it) apart by spaces, so their words never run together."""
    first = True
    for row in table.iterchildren(_TR):
        cells = []
        for cell in row.iterchildren(_TC):
            paragraphs = (
                "".join(run for run, _ in _paragraph_runs(p, False, text)) for p in cell.iter(_P)
            )
            cells.append(" ".join(" ".join(p.split()) for p in paragraphs if p.strip()))
        found = table_row(cells, header=first)
        if found is not None:
            yield found
            first = False


def _paragraph_runs(paragraph, rendered: bool, text: Budget) -> Iterator[tuple[str, bool]]:
    """(text, starts a new page) for a paragraph: its text, split where a page starts (a
    rendered page break when the file has them, else an explicit one). Other breaks (line,
    column) and carriage returns become newlines. Each text node is counted against `text`
    before it is kept (issue 28)."""
    parts: list[str] = []
    for node in paragraph.iter(_T, _BR, _CR, _TAB, _RENDERED_BREAK):
        if _removed(node, paragraph):
            continue
        tag = node.tag
        if tag == _RENDERED_BREAK or (tag == _BR and node.get(_TYPE) == "page"):
            if (tag == _RENDERED_BREAK) == rendered:
                yield "".join(parts), False
                parts = []
                yield "", True
        elif tag in (_BR, _CR):
            parts.append("\n")
        elif tag == _TAB:
            parts.append("\t")
        elif tag == _T:
            content = node.text or ""
            text.spend(len(content))
            parts.append(content)
    yield "".join(parts), False


def _removed(node, paragraph) -> bool:
    """Whether a tracked change took `node` out of the text as it now reads: deleted
    (`w:del`, whose text is `w:delText`, never read, but whose breaks and tabs are) or moved
    away (`w:moveFrom`, whose text is `w:t`); inserted and moved-to text stays."""
    for ancestor in node.iterancestors():
        if ancestor is paragraph:
            return False
        if ancestor.tag in _REMOVED:
            return True
    return False


def xlsx_pages(path: Path, limits: IngestLimits) -> Iterator[Iterator[Block]]:
    check_xlsx(
        path,
        max_unzipped=limits.max_unzipped_bytes,
        max_xml_tags=limits.max_xml_tags,
        max_xml_bytes=limits.max_xml_bytes,
    )
    cells = Budget(limits.max_sheet_cells, "spreadsheet cells")
    text = Budget.text_of(limits)
    # A file object, not the path: openpyxl refuses paths not ending in .xlsx, and stored
    # blobs have no extension.
    with open(path, "rb") as handle:
        workbook = load_workbook(handle, read_only=True, data_only=True)
        try:
            for sheet in workbook.worksheets:
                yield _sheet_blocks(sheet, cells, text)
        finally:
            workbook.close()


def _sheet_blocks(sheet, cells: Budget, text: Budget) -> Iterator[Block]:
    yield f"Sheet: {sheet.title}"
    # Rows as wide as their last cell, not as the sheet's declared dimensions (a sheet
    # claiming column XFD would make every row 16,384 cells).
    sheet.reset_dimensions()
    first = True
    for row in sheet.iter_rows(values_only=True):
        cells.spend(max(1, len(row)))
        values = [_cell_text(value, text) for value in row]
        while values and not values[-1]:
            values.pop()
        if values:
            yield Row(CELL_SEPARATOR.join(values), header=first)
            first = False


def _cell_text(value: object, text: Budget) -> str:
    """The cell as text, cut at Excel's own limit of a cell's characters and counted against
    `text` before any copy of it is made: one shared string of 8 MB in 10,000 cells is one
    string in openpyxl, and was 10,000 copies here (issue 28)."""
    if value is None:
        return ""
    if isinstance(value, str):
        value = value[:EXCEL_MAX_CELL_CHARS]
        text.spend(len(value))
        return " ".join(value.split())
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    return " ".join(str(value).split())


def xls_pages(path: Path, limits: IngestLimits) -> Iterator[Iterator[Block]]:
    """A legacy workbook's sheets as `xlsx_pages` gives a workbook's: `Sheet: <name>`, then
    its rows. Raises UnreadableDocument for a file xlrd cannot read (corrupt, truncated,
    encrypted), DocumentTooLarge past the cell or text bounds."""
    cells = Budget(limits.max_sheet_cells, "spreadsheet cells")
    text = Budget.text_of(limits)
    try:
        book = xlrd.open_workbook(str(path), on_demand=True, ragged_rows=True)
    except (xlrd.XLRDError, xlrd.compdoc.CompDocError, AssertionError) as error:
        raise UnreadableDocument(f"The file could not be read as xls ({error}).") from error
    try:
        for index in range(book.nsheets):
            yield _xls_sheet_blocks(book, index, cells, text)
    finally:
        book.release_resources()


def _xls_sheet_blocks(book, index: int, cells: Budget, text: Budget) -> Iterator[Block]:
    """One sheet's blocks, the sheet loaded when the page is read and unloaded after."""
    try:
        sheet = book.sheet_by_index(index)
    except (xlrd.XLRDError, xlrd.compdoc.CompDocError, AssertionError) as error:
        raise UnreadableDocument(f"The file could not be read as xls ({error}).") from error
    try:
        yield f"Sheet: {sheet.name}"
        first = True
        for row in range(sheet.nrows):
            length = sheet.row_len(row)
            cells.spend(max(1, length))
            values = [
                _xls_cell_text(sheet.cell(row, col), book.datemode, text) for col in range(length)
            ]
            while values and not values[-1]:
                values.pop()
            if values:
                yield Row(CELL_SEPARATOR.join(values), header=first)
                first = False
    finally:
        book.unload_sheet(index)


def _xls_cell_text(cell, datemode: int, text: Budget) -> str:
    """The cell as `_cell_text` gives an XLSX cell: numbers stored as floats that are whole
    without their `.0` (as openpyxl reads them), dates as ISO dates, errors as Excel shows
    them (`#DIV/0!`)."""
    kind, value = cell.ctype, cell.value
    if kind == xlrd.XL_CELL_TEXT:
        return _cell_text(value, text)
    if kind == xlrd.XL_CELL_NUMBER:
        return str(int(value)) if value.is_integer() else repr(value)
    if kind == xlrd.XL_CELL_DATE:
        try:
            return _cell_text(xlrd.xldate.xldate_as_datetime(value, datemode), text)
        except (xlrd.xldate.XLDateError, OverflowError, ValueError):
            return repr(value)  # a date format on a number no date can be
    if kind == xlrd.XL_CELL_BOOLEAN:
        return str(bool(value))
    if kind == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(value, "#ERROR")
    return ""
