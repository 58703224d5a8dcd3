"""A stored file into the passages search indexes (D42, D43): extraction and chunking in
one pass, within the bounds of one document (issue 18). Blocking: the ingestion job runs
`read_indexed_passages` in a child process of its own (strongroom.jobs.bounded, issue 28).

A scan (issue 51) takes more than one call: `read_indexed_passages` finds the pages whose text
is in their image and answers `Unrecognised`; the job has each read by OCR in a call of its
own (strongroom.ingest.ocr.read_page: a CPU budget per page, progress page by page, stopped
between pages), then `index_pages` chunks and indexes the whole document, in page order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.chunking import TARGET_CHARS, Chunk, Page, chunk_pages
from strongroom.ingest.extract import drop_running_lines, extract_document, reading
from strongroom.ingest.limits import IngestLimits
from strongroom.ingest.recognition import OcrLimits, ToRecognise
from strongroom.text.analysis import index_texts


@dataclass(frozen=True)
class Passages:
    page_count: int
    chunks: list[Chunk]
    scanned_pages: int = 0  # pages whose text is in their image (issue 51)
    ocr_pages: int = 0  # of those, the pages whose text OCR read
    unread_pages: int = 0  # of those, the pages not read: OCR off, or its deadline passed

    @property
    def empty_pages(self) -> int:
        """Pages that gave no passage."""
        return self.page_count - len({chunk.page_number for chunk in self.chunks})


@dataclass(frozen=True)
class IndexedPassages:
    """The passages and the index terms of each (strongroom.text.analysis.index_text)."""

    passages: Passages
    terms: list[str]


@dataclass(frozen=True)
class Unrecognised:
    """A document some of whose pages OCR must read: its pages in order, each its text or a
    ToRecognise."""

    pages: list[Page | ToRecognise]


def read_passages(
    path: Path,
    document_type: DocumentType,
    *,
    limits: IngestLimits,
    charset: str = "utf-8",
    target: int = TARGET_CHARS,
    ocr: OcrLimits | None = None,
) -> Passages:
    """The passages of the file at `path`, pages to be read by OCR left unread (their scant
    text layer, if any, kept). Raises UnreadableDocument, or DocumentTooLarge as soon as a
    bound is passed (pages are read as they are chunked, so nothing past it is)."""
    seen = _Seen()
    with reading(document_type):
        pages = extract_document(path, document_type, limits=limits, charset=charset, ocr=ocr)
        chunks = chunk_pages(
            seen.count(pages),
            target,
            max_passages=limits.max_passages,
            max_text_chars=limits.max_text_chars,
        )
    return Passages(seen.pages, chunks, scanned_pages=seen.unread, unread_pages=seen.unread)


class _Seen:
    def __init__(self) -> None:
        self.pages = 0
        self.unread = 0

    def count(self, pages: Iterable[Page | ToRecognise]) -> Iterator[Page]:
        for page in pages:
            self.pages += 1
            if isinstance(page, ToRecognise):
                self.unread += 1
                yield page.layer
            else:
                yield page


def read_indexed_passages(
    path: Path,
    document_type: DocumentType,
    *,
    limits: IngestLimits,
    charset: str = "utf-8",
    ocr: OcrLimits | None = None,
) -> IndexedPassages | Unrecognised:
    """`read_passages` and the passages' index terms in one call: everything that costs
    CPU in proportion to the file, for the ingestion job's bounded child process (issue 28:
    no parsing or analysis of a hostile file in the worker or the API process). With OCR on
    (`ocr`), a PDF or image with pages to recognise is `Unrecognised`."""
    if ocr is not None and (document_type is DocumentType.PDF or document_type.is_image):
        with reading(document_type):
            pages = list(extract_document(path, document_type, limits=limits, ocr=ocr))
        if any(isinstance(page, ToRecognise) for page in pages):
            return Unrecognised(pages)
        return index_pages(pages, limits=limits)  # type: ignore[arg-type]
    passages = read_passages(path, document_type, limits=limits, charset=charset, ocr=ocr)
    return IndexedPassages(passages, index_texts([chunk.content for chunk in passages.chunks]))


def _without_running_lines(pages: list[Page]) -> list[Page]:
    """Pages of text blocks with the lines that run across most pages dropped; a page holding
    a table's rows is kept as it is (and takes no part in telling what runs)."""
    plain = [isinstance(page, list) and all(type(b) is str for b in page) for page in pages]
    texts = [
        "\n\n".join(page) if is_plain else (page if isinstance(page, str) else "")
        for page, is_plain in zip(pages, plain, strict=True)
    ]
    kept = drop_running_lines(texts)
    return [
        text if is_plain or isinstance(page, str) else page
        for page, text, is_plain in zip(pages, kept, plain, strict=True)
    ]


def index_pages(
    pages: list[Page],
    *,
    limits: IngestLimits,
    scanned_pages: int = 0,
    ocr_pages: int = 0,
    unread_pages: int = 0,
) -> IndexedPassages:
    """The passages of pages already read (a scan's, after OCR) and their index terms. A
    scan's running headers and footers (a title, "Page 3 of 10" at the top or bottom of most
    pages) are dropped, as a PDF's text layer's are."""
    if scanned_pages:
        pages = _without_running_lines(pages)
    chunks = chunk_pages(
        pages, max_passages=limits.max_passages, max_text_chars=limits.max_text_chars
    )
    passages = Passages(len(pages), chunks, scanned_pages, ocr_pages, unread_pages)
    return IndexedPassages(passages, index_texts([chunk.content for chunk in chunks]))
