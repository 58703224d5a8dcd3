"""Text out of documents, page by page, as blocks (D42, issue 15), within the bounds of
strongroom.ingest.limits (issue 18). Every function here blocks: the ingestion job runs it
in a bounded child process (strongroom.ingest.passages.read_indexed_passages).

Pages are real pages for PDF, Word's pages for DOCX, sheets for XLSX, and form feeds for
plain text and Markdown (one page when there are none); an HTML page or a CSV file is one
page. A page whose text is in its image (a PDF page with less than `OCR_TEXT_FLOOR`
characters of text layer, a PNG, JPEG or TIFF frame) is a `ToRecognise`, read by OCR in calls
of its own (strongroom.ingest.ocr, issue 51). Pages are produced as they are read
(lazily), so a consumer that stops early (a bound passed) stops the reading too; read them
inside `reading(...)`, which turns what a parser raises into UnreadableDocument."""

from __future__ import annotations

import csv
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from pypdf import PdfReader

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.chunking import CELL_SEPARATOR, Block, Page, Row, page_texts
from strongroom.ingest.detect import detect
from strongroom.ingest.extract_html import html_blocks
from strongroom.ingest.extract_mail import email_pages
from strongroom.ingest.extract_office import docx_pages, xls_pages, xlsx_pages
from strongroom.ingest.extract_slides import pptx_pages
from strongroom.ingest.limits import (
    Budget,
    DocumentTooLarge,
    IngestLimits,
    UnreadableDocument,
)
from strongroom.ingest.reading import reading
from strongroom.ingest.recognition import OcrLimits, ToRecognise, letters, page_text

__all__ = [
    "DocumentTooLarge",
    "UnreadableDocument",
    "extract_document",
    "extract_pages",
    "reading",
]

# A running header or footer: a line among the first or last `_EDGE_LINES` of at least
# `_RUNNING_SHARE` of a PDF's pages with text (at least `_RUNNING_MIN_PAGES`), digits aside
# ("Page 3 of 10").
_EDGE_LINES = 2
_RUNNING_SHARE = 0.6
_RUNNING_MIN_PAGES = 3
_RUNNING_MAX_CHARS = 120
_DIGITS = re.compile(r"\d+")


def extract_document(
    path: Path,
    document_type: DocumentType,
    *,
    limits: IngestLimits,
    charset: str = "utf-8",
    ocr: OcrLimits | None = None,
) -> Iterator[Page | ToRecognise]:
    """The pages of the file at `path`, read as `document_type` (whatever the file's name),
    text types in `charset`. Iterate inside `reading(document_type)`. The pages OCR must read
    are ToRecognise, at most `max_pages` of them (DocumentTooLarge past it); `ocr` None is
    OCR off (an email's attachments are then read without it)."""
    bounds = ocr or OcrLimits()
    if document_type is DocumentType.PDF:
        return iter(_pdf(path, limits, bounds))
    if document_type.is_image:
        from strongroom.ingest.ocr import image_page_count  # Pillow: in the child only

        return (ToRecognise(index) for index in range(image_page_count(path, bounds)))
    if document_type is DocumentType.DOCX:
        return iter(docx_pages(path, limits))
    if document_type is DocumentType.XLSX:
        return xlsx_pages(path, limits)
    if document_type is DocumentType.XLS:
        return xls_pages(path, limits)
    if document_type is DocumentType.PPTX:
        return pptx_pages(path, limits)
    if document_type in (DocumentType.EML, DocumentType.MSG):
        return email_pages(path, document_type, limits, _AttachmentReader(limits, ocr))
    if document_type is DocumentType.HTML:
        return iter([html_blocks(path, charset)])
    if document_type is DocumentType.CSV:
        return iter([_csv_blocks(path, charset, Budget.text_of(limits))])
    return iter(_text(path, charset, limits).split("\f"))


class _AttachmentReader:
    """An email's attachment as pages (strongroom.ingest.extract_mail): its bytes written to
    a file of their own, its type told from its content as an upload's is, read as that
    type; None for a file Strongroom does not read, or an email attached to an email's
    attachment (one level of nesting). Pages in images are read by OCR here and now, in the
    email's own call (its CPU budget), since the attachment's file is gone after."""

    def __init__(self, limits: IngestLimits, ocr: OcrLimits | None, depth: int = 0) -> None:
        self.limits, self.ocr, self.depth = limits, ocr, depth

    def __call__(self, data: bytes, filename: str) -> list[Page] | None:
        with tempfile.TemporaryDirectory(prefix="strongroom-attachment-") as folder:
            path = Path(folder) / "attachment"
            path.write_bytes(data)
            detected = detect(path, filename)
            if detected is None:
                return None
            kind = detected.type
            if kind in (DocumentType.EML, DocumentType.MSG):
                if self.depth:
                    return None
                inner = _AttachmentReader(self.limits, self.ocr, self.depth + 1)
                return [list(page) for page in email_pages(path, kind, self.limits, inner)]
            pages = extract_document(
                path, kind, limits=self.limits, charset=detected.charset or "utf-8", ocr=self.ocr
            )
            return [self._read(path, kind, page) for page in pages]

    def _read(self, path: Path, kind: DocumentType, page: Page | ToRecognise) -> Page:
        if not isinstance(page, ToRecognise):
            return page if isinstance(page, str) else list(page)
        if self.ocr is None:
            return page.layer
        from strongroom.ingest.ocr import read_page  # in the child only

        return page_text(page, read_page(path, kind, page.index, self.ocr))


def extract_pages(
    path: Path,
    document_type: DocumentType,
    *,
    limits: IngestLimits | None = None,
    charset: str = "utf-8",
) -> list[str]:
    """Each page as plain text (blocks apart by blank lines, table rows line by line): for
    tests and benchmarks; ingestion chunks the blocks themselves."""
    with reading(document_type):
        pages = extract_document(
            path, document_type, limits=limits or IngestLimits(), charset=charset
        )
        return list(
            page_texts(page.layer if isinstance(page, ToRecognise) else page for page in pages)
        )


def _text(path: Path, charset: str, limits: IngestLimits) -> str:
    """The file's text, refused (DocumentTooLarge) past `max_text_chars` without reading
    more than that."""
    encoding = "utf-8-sig" if charset == "utf-8" else charset
    with open(path, encoding=encoding) as handle:
        text = handle.read(limits.max_text_chars + 1)
    if len(text) > limits.max_text_chars:
        raise DocumentTooLarge(
            f"The document holds more than {limits.max_text_chars:,} characters of text."
        )
    return text


def _pdf(path: Path, limits: IngestLimits, ocr: OcrLimits) -> list[str | ToRecognise]:
    reader = PdfReader(path)
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # an owner password alone still lets anyone read
        except Exception as error:
            raise UnreadableDocument("The PDF is encrypted.") from error
        if not opened:
            raise UnreadableDocument("The PDF is encrypted with a password.")
    text = Budget(limits.max_text_chars, "characters of text")
    pages = []
    for number, page in enumerate(reader.pages, start=1):
        on_page = Budget(limits.max_pdf_page_chars, f"characters of text on page {number}")
        # The visitor sees text as pypdf finds it, so a page holding far too much stops there
        # rather than after all of it is laid out.
        found = page.extract_text(visitor_text=lambda part, *_, page=on_page: page.spend(len(part)))
        content = found or ""
        on_page.spend(len(content) - on_page.spent)
        text.spend(len(content))
        pages.append(content)
    kept = drop_running_lines(pages)
    scanned = [i for i, page in enumerate(kept) if letters(page) < OCR_TEXT_FLOOR]
    if len(scanned) > ocr.max_pages:
        raise DocumentTooLarge(
            f"The PDF has {len(scanned):,} pages without text to read by OCR, more than "
            f"{ocr.max_pages:,}."
        )
    marked = set(scanned)
    return [ToRecognise(i, layer=page) if i in marked else page for i, page in enumerate(kept)]


# A PDF page with fewer characters of text layer than this (white space aside) is rendered
# and read by OCR: a scan, or a scan under a stamp or a scanner's one-line header. What OCR
# reads replaces the layer when it holds more text.
OCR_TEXT_FLOOR = 40


def _edge_lines(lines: list[str]) -> list[int]:
    """Indexes of the first and last `_EDGE_LINES` lines with text."""
    filled = [index for index, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:_EDGE_LINES] + filled[-_EDGE_LINES:]))


def _running_key(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.split()).lower())


def drop_running_lines(pages: list[str]) -> list[str]:
    """The pages without their running headers and footers (a title, "Page 3 of 10"): lines
    at the top or bottom of most pages, the same but for their digits. Glued to the first or
    last sentence of every page, they made answers quote them (issue 15)."""
    split = [page.splitlines() for page in pages]
    with_text = [lines for lines in split if any(line.strip() for line in lines)]
    if len(with_text) < _RUNNING_MIN_PAGES:
        return pages
    counts: Counter[str] = Counter()
    for lines in with_text:
        counts.update({_running_key(lines[index]) for index in _edge_lines(lines)})
    needed = max(_RUNNING_MIN_PAGES, _RUNNING_SHARE * len(with_text))
    running = {
        key for key, count in counts.items() if count >= needed and len(key) <= _RUNNING_MAX_CHARS
    }
    if not running:
        return pages
    kept = []
    for page, lines in zip(pages, split, strict=True):
        dropped = {i for i in _edge_lines(lines) if _running_key(lines[i]) in running}
        left = "\n".join(line for i, line in enumerate(lines) if i not in dropped)
        if dropped and not left.strip() and letters(page) >= _PAGE_OF_ITS_OWN:
            left = page  # a stack of one-line pages (dockets, forms): their text, not a header
        kept.append(left if dropped else page)
    return kept


# A page whose every line runs across the pages is kept whole when it holds at least this many
# letters: "Delivery docket 4471: 12 m3 delivered." on each of 30 scanned dockets is what they
# say, where "Page 3 of 10" alone is a blank page's footer.
_PAGE_OF_ITS_OWN = 20


def _csv_blocks(path: Path, charset: str, text: Budget) -> Iterator[Block]:
    """Rows as `Row`s, cells apart by ` | `, the first row with a value the header. Text that
    does not parse as CSV (an unbalanced quote, a field past the csv module's limit) is kept
    as it is: a first pass finds out, keeping nothing, so that rows are then streamed. Lines
    are read at most `LINE_PIECE_CHARS` at a time and every character read is spent from
    `text`: a one-line 99 MiB file stops at the bound (`document_too_large`, issue 44), never
    read whole."""
    encoding = "utf-8-sig" if charset == "utf-8" else charset
    with open(path, encoding=encoding, newline="") as handle:
        first_pass = Budget(text.limit, text.what)
        try:
            for _ in csv.reader(_pieces(handle, first_pass)):
                pass
        except csv.Error:
            handle.seek(0)
            yield from _text_blocks(_pieces(handle, text))
            return
        handle.seek(0)
        first = True
        for row in csv.reader(_pieces(handle, text)):
            cells = [" ".join(cell.split()) for cell in row]  # a row is one line
            while cells and not cells[-1].strip():
                cells.pop()
            if cells:
                yield Row(CELL_SEPARATOR.join(cells), header=first)
                first = False


LINE_PIECE_CHARS = 1024 * 1024


def _pieces(handle: TextIO, text: Budget) -> Iterator[str]:
    """The file's lines, a line longer than LINE_PIECE_CHARS in pieces of that length, each
    spent from `text` as it is read."""
    for piece in iter(lambda: handle.readline(LINE_PIECE_CHARS), ""):
        text.spend(len(piece))
        yield piece


def _text_blocks(lines: Iterable[str]) -> Iterator[str]:
    """Text as blocks at blank lines, line by line (never the whole file at once)."""
    block: list[str] = []
    for line in lines:
        if line.strip():
            block.append(line)
        elif block:
            yield "".join(block)
            block = []
    if block:
        yield "".join(block)
