"""Text out of documents, page by page (D42). Every function here blocks: the ingestion job
runs it through `asyncio.to_thread`.

Pages are real pages for PDF, explicit page breaks for DOCX, sheets for XLSX, and form feeds
for the text formats (one page when there are none)."""

from __future__ import annotations

import csv
import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from bs4 import BeautifulSoup
from docx import Document as open_docx
from docx.oxml.ns import qn
from openpyxl import load_workbook
from pypdf import PdfReader
from pypdf.errors import PdfReadError, PyPdfError

from strongroom.vault.models import DocumentType

_INFLATE_STEP = 64 * 1024
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., file name length, extra length
_HTML_BLOCKS = [
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "td", "th",
    "title", "tr", "ul",
]  # fmt: skip


class UnreadableDocument(Exception):
    """The file cannot be read as its type (corrupt, encrypted, a zip bomb)."""


def extract_pages(
    path: Path, document_type: DocumentType, *, max_unzipped: int, charset: str = "utf-8"
) -> list[str]:
    """The text of each page of the file at `path`, read as `document_type` (whatever the
    file's name), text types in `charset`. Raises UnreadableDocument."""
    try:
        if document_type is DocumentType.PDF:
            return _pdf(path)
        if document_type is DocumentType.DOCX:
            _check_zip(path, max_unzipped)
            return _docx(path)
        if document_type is DocumentType.XLSX:
            _check_zip(path, max_unzipped)
            return _xlsx(path)
        text = path.read_text(encoding="utf-8-sig" if charset == "utf-8" else charset)
        if document_type is DocumentType.HTML:
            text = _html_text(text)
        elif document_type is DocumentType.CSV:
            text = _csv_text(text)
        return text.split("\f")
    except UnreadableDocument:
        raise
    except (PyPdfError, PdfReadError, zipfile.BadZipFile, KeyError, ValueError, OSError) as error:
        raise UnreadableDocument(f"The file could not be read as {document_type.value}.") from error
    except Exception as error:  # parsers of hostile files fail in many ways
        raise UnreadableDocument(
            f"The file could not be read as {document_type.value} ({type(error).__name__})."
        ) from error


def _pdf(path: Path) -> list[str]:
    reader = PdfReader(path)
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # an owner password alone still lets anyone read
        except Exception as error:
            raise UnreadableDocument("The PDF is encrypted.") from error
        if not opened:
            raise UnreadableDocument("The PDF is encrypted with a password.")
    return [page.extract_text() or "" for page in reader.pages]


def _check_zip(path: Path, limit: int) -> None:
    """Refuse archives that would expand past `limit` bytes.

    The sizes in the headers are only claims: zipfile stops a member's output at its declared
    size, but `ZipFile.read` (which python-docx and openpyxl use) first inflates everything
    the member's deflate stream holds, up to 1 GiB per call. So besides the sum of the claims,
    every member is inflated here in small steps, and one that holds more than it claims is
    refused as soon as it does. Members must be stored or deflated (the only methods Office
    Open XML allows; zipfile inflates bzip2 and LZMA without any bound) and not encrypted."""
    with zipfile.ZipFile(path) as archive, open(path, "rb") as raw:
        members = archive.infolist()
        total = sum(info.file_size for info in members)
        if total > limit:
            raise UnreadableDocument(
                f"The file expands to {total} bytes, more than the limit of {limit}."
            )
        for info in members:
            _check_member(raw, info)


def _check_member(raw: BinaryIO, info: zipfile.ZipInfo) -> None:
    if info.flag_bits & 0x1:
        raise UnreadableDocument(f"The archive member {info.filename!r} is encrypted.")
    if info.compress_type == zipfile.ZIP_STORED:
        if info.compress_size != info.file_size:
            raise UnreadableDocument(f"The archive member {info.filename!r} is corrupt.")
        return
    if info.compress_type != zipfile.ZIP_DEFLATED:
        raise UnreadableDocument(
            f"The archive member {info.filename!r} uses compression method "
            f"{info.compress_type}, which Office documents do not use."
        )
    raw.seek(info.header_offset)
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    if signature != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
    raw.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    left, produced, pending = info.compress_size, 0, b""
    while not inflater.eof:
        if not pending:
            pending = raw.read(min(_INFLATE_STEP, left))
            if not pending:
                break
            left -= len(pending)
        produced += len(inflater.decompress(pending, _INFLATE_STEP))
        pending = inflater.unconsumed_tail
        if produced > info.file_size:
            raise UnreadableDocument(
                f"The archive member {info.filename!r} holds more than the "
                f"{info.file_size} bytes its header declares."
            )
    if produced + len(inflater.flush()) != info.file_size:
        raise UnreadableDocument(f"The archive member {info.filename!r} is corrupt.")


def _docx(path: Path) -> list[str]:
    document = open_docx(str(path))
    pages: list[list[str]] = [[]]
    for block in _blocks(document.element.body):
        if block.tag == qn("w:p"):
            for text, page_break in _paragraph_runs(block):
                if page_break:
                    pages.append([])
                if text:
                    pages[-1].append(text)
        else:
            for line in _table_lines(block):
                pages[-1].append(line)
    return ["\n".join(lines) for lines in pages]


def _blocks(parent) -> Iterator:
    """The paragraphs and tables of the body in order, including those inside content
    controls (`w:sdt`, as in cover pages and tables of contents) and custom XML."""
    for child in parent.iterchildren():
        if child.tag in (qn("w:p"), qn("w:tbl")):
            yield child
        elif child.tag == qn("w:sdt"):
            for content in child.iterchildren(qn("w:sdtContent")):
                yield from _blocks(content)
        elif child.tag == qn("w:customXml"):
            yield from _blocks(child)


def _table_lines(table) -> Iterator[str]:
    """One line per row, cells apart by tabs; a cell's paragraphs (and any table nested in
    it) apart by spaces, so their words never run together."""
    for row in table.iterchildren(qn("w:tr")):
        cells = []
        for cell in row.iterchildren(qn("w:tc")):
            paragraphs = (
                "".join(text for text, _ in _paragraph_runs(p)) for p in cell.iter(qn("w:p"))
            )
            cells.append(" ".join(p.strip() for p in paragraphs if p.strip()))
        line = "\t".join(cell for cell in cells if cell)
        if line:
            yield line


def _paragraph_runs(paragraph) -> Iterator[tuple[str, bool]]:
    """(text, starts a new page) for a paragraph: its text, split at explicit page breaks.
    Other breaks (line, column) and carriage returns become newlines."""
    parts: list[str] = []
    for node in paragraph.iter(qn("w:t"), qn("w:br"), qn("w:cr"), qn("w:tab")):
        if node.tag == qn("w:br") and node.get(qn("w:type")) == "page":
            yield "".join(parts), False
            parts = []
            yield "", True
        elif node.tag in (qn("w:br"), qn("w:cr")):
            parts.append("\n")
        elif node.tag == qn("w:tab"):
            parts.append("\t")
        elif node.tag == qn("w:t"):
            parts.append(node.text or "")
    yield "".join(parts), False


def _xlsx(path: Path) -> list[str]:
    # A file object, not the path: openpyxl refuses paths not ending in .xlsx, and stored
    # blobs have no extension.
    with open(path, "rb") as handle:
        workbook = load_workbook(handle, read_only=True, data_only=True)
        try:
            pages = []
            for sheet in workbook.worksheets:
                lines = [f"Sheet: {sheet.title}"]
                for row in sheet.iter_rows(values_only=True):
                    cells = [str(value) for value in row if value is not None]
                    if cells:
                        lines.append("\t".join(cells))
                pages.append("\n".join(lines))
            return pages
        finally:
            workbook.close()


def _html_text(html: str) -> str:
    """The visible text: one line per block element; inline markup (`<b>`, `<a>`) never
    splits a line, or a word."""
    soup = BeautifulSoup(html, "html.parser")
    for hidden in soup(["script", "style", "noscript", "template"]):
        hidden.decompose()
    for block in soup(_HTML_BLOCKS):
        block.insert_before("\n")
        block.insert_after("\n")
    lines = (" ".join(line.split()) for line in soup.get_text().splitlines())
    return "\n".join(line for line in lines if line)


def _csv_text(text: str) -> str:
    """Rows as lines, cells apart by tabs; text that does not parse as CSV (an unbalanced
    quote, a field past the csv module's limit) is kept as it is."""
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        return text
    return "\n".join("\t".join(row) for row in rows if any(cell.strip() for cell in row))
