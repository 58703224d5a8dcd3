"""A stored file into the passages search indexes (D42, D43): extraction and chunking in
one pass, within the bounds of one document (issue 18). Blocking: the ingestion job runs
`read_indexed_passages` in a child process of its own (strongroom.jobs.bounded, issue 28)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.chunking import TARGET_CHARS, Chunk, Page, chunk_pages
from strongroom.ingest.extract import extract_document, reading
from strongroom.ingest.limits import IngestLimits
from strongroom.text.analysis import index_texts


@dataclass(frozen=True)
class Passages:
    page_count: int
    chunks: list[Chunk]


@dataclass(frozen=True)
class IndexedPassages:
    """The passages and the index terms of each (strongroom.text.analysis.index_text)."""

    passages: Passages
    terms: list[str]


def read_passages(
    path: Path,
    document_type: DocumentType,
    *,
    limits: IngestLimits,
    charset: str = "utf-8",
    target: int = TARGET_CHARS,
) -> Passages:
    """The passages of the file at `path`. Raises UnreadableDocument, or DocumentTooLarge as
    soon as a bound is passed (pages are read as they are chunked, so nothing past it is)."""
    pages_seen = [0]

    def counted(pages: Iterator[Page]) -> Iterator[Page]:
        for page in pages:
            pages_seen[0] += 1
            yield page

    with reading(document_type):
        pages = extract_document(path, document_type, limits=limits, charset=charset)
        chunks = chunk_pages(
            counted(pages),
            target,
            max_passages=limits.max_passages,
            max_text_chars=limits.max_text_chars,
        )
    return Passages(pages_seen[0], chunks)


def read_indexed_passages(
    path: Path, document_type: DocumentType, *, limits: IngestLimits, charset: str = "utf-8"
) -> IndexedPassages:
    """`read_passages` and the passages' index terms in one call: everything that costs
    CPU in proportion to the file, for the ingestion job's bounded child process (issue 28:
    no parsing or analysis of a hostile file in the worker or the API process)."""
    passages = read_passages(path, document_type, limits=limits, charset=charset)
    return IndexedPassages(passages, index_texts([chunk.content for chunk in passages.chunks]))
