"""Real documents for tests, made with the libraries that write them (fpdf2, python-docx,
openpyxl, pypdf), plus the hostile ones: encrypted PDFs and zip bombs.

Every function returns the file's bytes; write them where the test needs them. PDF text goes
through fpdf2's core Helvetica font, so keep it to Latin-1.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from docx import Document
from docx.enum.text import WD_BREAK
from fpdf import FPDF
from openpyxl import Workbook
from pypdf import PdfReader, PdfWriter


def make_pdf(pages: Sequence[str]) -> bytes:
    """A PDF with one page per string (each string laid out as wrapped text)."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def make_encrypted_pdf(
    pages: Sequence[str],
    *,
    user_password: str = "",
    owner_password: str = "owner-secret",  # noqa: S107
    algorithm: str = "AES-256",
) -> bytes:
    """`make_pdf(pages)`, encrypted by pypdf. With an empty `user_password` anyone may open it
    (only the owner's permissions are protected); with one, nobody can read it without it."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(pages))))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx(
    paragraphs: Sequence[str],
    *,
    page_break_after: Iterable[int] = (),
    table: Sequence[Sequence[str]] | None = None,
) -> bytes:
    """A DOCX with these paragraphs; an explicit page break (`WD_BREAK.PAGE`) ends each
    paragraph whose index is in `page_break_after`; `table` (rows of cells) follows them."""
    breaks = set(page_break_after)
    document = Document()
    for index, text in enumerate(paragraphs):
        paragraph = document.add_paragraph(text)
        if index in breaks:
            paragraph.add_run().add_break(WD_BREAK.PAGE)
    if table:
        grid = document.add_table(rows=len(table), cols=max(len(row) for row in table))
        for row, values in zip(grid.rows, table, strict=False):
            for cell, value in zip(row.cells, values, strict=False):
                cell.text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_xlsx(sheets: dict[str, Sequence[Sequence[Any]]]) -> bytes:
    """A workbook with one worksheet per entry (title: rows of cell values), in order."""
    workbook = Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(list(row))
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_zip_bomb_docx(inflated_bytes: int, *, lie_about_size: bool = False) -> bytes:
    """A DOCX that inflates to more than `inflated_bytes`, from a few kilobytes.

    Honest: an extra member of `inflated_bytes` spaces whose header says so. Lying:
    `word/document.xml` is followed, inside the same deflate stream, by `inflated_bytes`
    spaces, while its headers give the size and CRC-32 of the real XML alone. zipfile then
    returns just the XML, and python-docx reads the document, but only after inflating the
    whole stream in one go."""
    return _zip_bomb(
        make_docx(["Nothing to see here."]), "word/document.xml", inflated_bytes, lie_about_size
    )


def make_zip_bomb_xlsx(inflated_bytes: int, *, lie_about_size: bool = False) -> bytes:
    """`make_zip_bomb_docx` for a workbook; the lying member is `xl/workbook.xml`."""
    return _zip_bomb(
        make_xlsx({"Sheet": [["quiet"]]}), "xl/workbook.xml", inflated_bytes, lie_about_size
    )


def _zip_bomb(office: bytes, target: str, inflated_bytes: int, lie: bool) -> bytes:
    with zipfile.ZipFile(io.BytesIO(office)) as archive:
        members = [(info.filename, archive.read(info)) for info in archive.infolist()]
    entries = []
    for name, data in members:
        if lie and name == target:
            packed = _deflate([data], inflated_bytes)
            entries.append((name, packed, zlib.crc32(data), len(data)))
        else:
            entries.append((name, _deflate([data]), zlib.crc32(data), len(data)))
    if not lie:
        crc = zlib.crc32(b"", 0)
        for piece in _spaces(inflated_bytes):
            crc = zlib.crc32(piece, crc)
        entries.append(
            ("word/media/padding.bin", _deflate([], inflated_bytes), crc, inflated_bytes)
        )
    return _raw_zip(entries)


def _spaces(count: int, piece: int = 1 << 20) -> Iterable[bytes]:
    while count > 0:
        yield b" " * min(piece, count)
        count -= piece


def _deflate(chunks: Iterable[bytes], trailing_spaces: int = 0) -> bytes:
    """Raw deflate (as in ZIP) of `chunks` then `trailing_spaces` spaces, in bounded memory."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = [compressor.compress(chunk) for chunk in chunks]
    out += [compressor.compress(piece) for piece in _spaces(trailing_spaces)]
    out.append(compressor.flush())
    return b"".join(out)


def _raw_zip(entries: Sequence[tuple[str, bytes, int, int]]) -> bytes:
    """A ZIP archive written by hand, so its headers can say anything: each entry is (name,
    deflated data, CRC-32, declared uncompressed size), the same in the local and central
    headers."""
    out = io.BytesIO()
    central = []
    for name, data, crc, size in entries:
        encoded = name.encode()
        offset = out.tell()
        # method, time, date (1980-01-01), CRC-32, compressed and uncompressed size, name size
        common = (zipfile.ZIP_DEFLATED, 0, 33, crc, len(data), size, len(encoded))
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, *common, 0) + encoded + data)
        central.append(
            struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, *common, 0, 0, 0, 0, 0, offset)
            + encoded
        )
    start, directory = out.tell(), b"".join(central)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(central), len(central),
                      len(directory), start, 0)  # fmt: skip
    return out.getvalue() + directory + end


TemplateRun = str | tuple[str, dict[str, Any]]


def make_docx_template(
    paragraphs: Sequence[str | Sequence[TemplateRun]],
    *,
    table: Sequence[Sequence[str]] | None = None,
    header: Sequence[str] = (),
    footer: Sequence[str] = (),
    first_page_header: Sequence[str] = (),
    first_page_footer: Sequence[str] = (),
) -> bytes:
    """A DOCX template (for `{{ field }}` placeholders). Each paragraph is a string (one run)
    or a list of runs, each a string or (text, formatting), formatting keys being `bold`,
    `italic`, `underline`, `size` (points), `font` and `color` ("RRGGBB"), so a placeholder
    can be split across runs the way Word splits it:
    `["Dear ", ("{{", {"bold": True}), "client", ("_name }}", {"italic": True})]`.
    `table` (rows of cells) follows the paragraphs; headers and footers get one paragraph per
    string; a first-page header or footer turns on "different first page"."""
    document = Document()
    for content in paragraphs:
        paragraph = document.add_paragraph()
        for run in [content] if isinstance(content, str) else content:
            text, formatting = (run, {}) if isinstance(run, str) else run
            _format_run(paragraph.add_run(text), formatting)
    if table:
        grid = document.add_table(rows=len(table), cols=max(len(row) for row in table))
        for row, values in zip(grid.rows, table, strict=False):
            for cell, value in zip(row.cells, values, strict=False):
                cell.text = value
    section = document.sections[0]
    if first_page_header or first_page_footer:
        section.different_first_page_header_footer = True
    for story, lines in [
        (section.header, header),
        (section.footer, footer),
        (section.first_page_header, first_page_header),
        (section.first_page_footer, first_page_footer),
    ]:
        for index, line in enumerate(lines):
            if index == 0:
                story.paragraphs[0].text = line
            else:
                story.add_paragraph(line)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _format_run(run: Any, formatting: dict[str, Any]) -> None:
    from docx.shared import Pt, RGBColor

    for key, value in formatting.items():
        if key in ("bold", "italic", "underline"):
            setattr(run, key, value)
        elif key == "size":
            run.font.size = Pt(value)
        elif key == "font":
            run.font.name = value
        elif key == "color":
            run.font.color.rgb = RGBColor.from_string(value)
        else:
            raise ValueError(f"unknown run formatting {key!r}")


def make_pptx(slides: Sequence[dict[str, Any]]) -> bytes:
    """A deck with python-pptx, a slide per entry on the Title Only layout. Keys, all optional,
    placed in this order on the slide: `title`; `texts` (a text box each, its lines
    paragraphs); `group` (text boxes grouped together); `table` (rows of cells); `notes` (the
    speaker notes, lines as paragraphs)."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for spec in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        if "title" in spec:
            slide.shapes.title.text = spec["title"]
        top = 2
        for text in spec.get("texts", ()):
            box = slide.shapes.add_textbox(Inches(1), Inches(top), Inches(6), Inches(1))
            box.text_frame.text = text
            top += 1
        if "group" in spec:
            group = slide.shapes.add_group_shape()
            for text in spec["group"]:
                box = group.shapes.add_textbox(Inches(1), Inches(top), Inches(3), Inches(1))
                box.text_frame.text = text
                top += 1
        if "table" in spec:
            rows = spec["table"]
            columns = max(len(row) for row in rows)
            frame = slide.shapes.add_table(
                len(rows), columns, Inches(1), Inches(top), Inches(6), Inches(2)
            )
            for row, values in zip(frame.table.rows, rows, strict=False):
                for cell, value in zip(row.cells, values, strict=False):
                    cell.text = value
        if "notes" in spec:
            slide.notes_slide.notes_text_frame.text = spec["notes"]
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def make_xls(sheets: dict[str, Sequence[Sequence[Any]]], *, cells: dict[str, Any] = ()) -> bytes:
    """A legacy Excel 97-2003 workbook written by xlwt, one worksheet per entry (title: rows
    of cell values; dates and datetimes formatted as dates, so Excel shows them as such).
    `cells` maps a sheet's title to extra `(row, column, value)` triples, for cells far out."""
    import datetime

    import xlwt

    dates = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    times = xlwt.easyxf(num_format_str="YYYY-MM-DD HH:MM")
    workbook = xlwt.Workbook()
    for title, rows in sheets.items():
        sheet = workbook.add_sheet(title)
        placed = [(r, c, v) for r, row in enumerate(rows) for c, v in enumerate(row)]
        for row, column, value in placed + list(dict(cells).get(title, ())):
            if isinstance(value, datetime.datetime):
                sheet.write(row, column, value, times)
            elif isinstance(value, datetime.date):
                sheet.write(row, column, value, dates)
            elif value is not None:
                sheet.write(row, column, value)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()
