"""The ingestion job (D42, D46): read a document's text page by page, cut it into chunks and
index them for search, then mark the document `ready`, or `failed` with the problem: a file
that cannot be read is `unreadable_document`, one past a bound of strongroom.ingest.limits
`document_too_large` (issue 18); either way nothing is stored.

Ready when the words are in (issue 50): the passages and their terms are stored and the
document is `ready` (searched by words, answered, `document.ready` sent); with an embeddings
provider configured, the job that makes its vectors is queued in the same transaction as the
passages (strongroom.vault.reembedding), and the document's `meaning` says `pending` until it
has.

Safe to run again after a worker died half-way: the document's chunks are replaced, never
added twice. Extraction, chunking and the passages' index terms run in a child process of
their own with the job's memory and CPU limits (strongroom.jobs.bounded, issue 28): a hostile
file costs that process, never the worker's (or, in the embedded default, the API process's)
memory, and a job that times out kills it. A parser that crashes it makes the file
`unreadable_document`; one past a limit fails the job with `job_resource_limit`.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import delete, insert, update
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.kinds import DOCUMENT_DELETING
from strongroom.corpus.models import (
    Document,
    DocumentChunk,
    DocumentMeaning,
    DocumentStatus,
    DocumentType,
)
from strongroom.db.types import utcnow
from strongroom.ingest.detect import charset_of
from strongroom.ingest.limits import DocumentTooLarge, IngestLimits, UnreadableDocument
from strongroom.ingest.passages import (
    IndexedPassages,
    Passages,
    Unrecognised,
    index_pages,
    read_indexed_passages,
)
from strongroom.ingest.recognition import OcrLimits, ReadPage, ToRecognise, page_text
from strongroom.jobs.bounded import BoundedWorkDied
from strongroom.jobs.models import Job
from strongroom.jobs.runner import JobContext, JobFailed
from strongroom.metrics import INGESTED_PAGES, OCR_PAGES
from strongroom.services import Services
from strongroom.vault.documents import meaning_to_come
from strongroom.vault.reembedding import queue_vectors

log = logging.getLogger("strongroom.vault")

INSERT_BATCH = 500
_CHUNKS = DocumentChunk.__table__


async def ingest(context: JobContext[Services]) -> None:
    services, job = context.services, context.job
    async with services.sessions() as session:
        document = await session.get(Document, job.subject_id)
    if document is None:
        raise JobFailed("not_found", "The document no longer exists.")
    document_type = DocumentType(document.document_type)
    limits = IngestLimits.from_settings(services.settings)
    ocr = OcrLimits.from_settings(services.settings)
    try:
        async with services.blobs.local_copy(document.blob_key) as path:
            first = await services.work.run(
                read_indexed_passages,
                path,
                document_type,
                limits=limits,
                charset=charset_of(document.content_type),
                ocr=ocr,
            )
            read = first
            if isinstance(first, Unrecognised) and ocr is not None:  # only with OCR on
                read = await _read_by_ocr(context, path, document_type, first, limits, ocr)
    except BoundedWorkDied as error:
        detail = f"The file could not be read as {document_type.value} (its reader crashed)."
        raise JobFailed("unreadable_document", detail) from error
    except DocumentTooLarge as error:
        raise JobFailed("document_too_large", str(error)) from error
    except UnreadableDocument as error:
        raise JobFailed("unreadable_document", str(error)) from error
    except FileNotFoundError as error:
        raise JobFailed("not_found", "The document's stored file is missing.") from error
    passages, terms = read.passages, read.terms
    chunks = passages.chunks
    if not chunks:
        raise JobFailed("no_text", no_text_detail(document_type, passages, ocr is not None))
    await context.progress(0.6)
    rows = [
        {
            "id": uuid.uuid4(),
            "document_id": document.id,
            "tenant_id": document.tenant_id,
            "environment": document.environment,
            "project_id": document.project_id,
            "ordinal": ordinal,
            "page_number": chunk.page_number,
            "content": chunk.content,
            "index_terms": terms[ordinal],
            "embedding": None,
            "embedding_model": None,
            "sentence_embeddings": None,
        }
        for ordinal, chunk in enumerate(chunks)
    ]
    vectors_job: tuple[uuid.UUID, int] | None = None
    async with services.sessions() as session:
        # The document's row first: it is locked (PostgreSQL) until the commit, so a DELETE
        # of it waits and cascades to what is written here; deleted already, nothing is.
        updated = await session.exec(  # type: ignore[call-overload]
            update(Document)
            .where(col(Document.id) == document.id, col(Document.status) != DOCUMENT_DELETING)
            .values(
                page_count=passages.page_count,
                ocr_page_count=passages.ocr_pages,
                empty_page_count=passages.empty_pages,
                passage_count=len(rows),
                passages_version=Document.passages_version + 1,
                meaning=meaning_to_come(services),
            )
        )
        if updated.rowcount == 0:
            raise JobFailed("not_found", "The document was deleted.")
        await session.exec(
            delete(DocumentChunk).where(col(DocumentChunk.document_id) == document.id)
        )  # type: ignore[call-overload]
        connection = await session.connection()
        for start in range(0, len(rows), INSERT_BATCH):
            await connection.execute(insert(_CHUNKS), rows[start : start + INSERT_BATCH])
        if services.embeddings is not None:
            vectors_job = await queue_vectors(session, document)
        await session.commit()
    INGESTED_PAGES.inc(passages.page_count)
    if vectors_job is not None:
        await _enqueue(services, *vectors_job)


async def _read_by_ocr(
    context: JobContext[Services],
    path: Path,
    document_type: DocumentType,
    unrecognised: Unrecognised,
    limits: IngestLimits,
    ocr: OcrLimits,
) -> IndexedPassages:
    """The document's pages with those in images read by OCR, one child call a page (its
    own CPU budget, progress page by page, stopped between pages when the job is), then
    chunked and indexed in one more call."""
    from strongroom.ingest.ocr import read_page  # Tesseract and PDFium: in the child only

    pages = list(unrecognised.pages)
    wanted = [(i, page) for i, page in enumerate(pages) if isinstance(page, ToRecognise)]
    ocr_pages = unread = 0
    for done, (position, page) in enumerate(wanted, start=1):
        found: ReadPage = await context.services.work.run(
            read_page, path, document_type, page.index, ocr
        )
        unread += found.gave_up
        read = page_text(page, found)
        if read is found.blocks:
            ocr_pages += 1
        pages[position] = read
        OCR_PAGES.inc()
        await context.progress(_OCR_SHARE * done / len(wanted))
    return await context.services.work.run(
        index_pages,
        pages,
        limits=limits,
        scanned_pages=len(wanted),
        ocr_pages=ocr_pages,
        unread_pages=unread,
    )


# The share of the job's progress that OCR's pages take (the rest: storing the passages).
_OCR_SHARE = 0.55


def no_text_detail(document_type: DocumentType, passages: Passages, ocr_on: bool) -> str:
    """What was tried, for a document from which no text came (issue 51)."""
    pages = passages.page_count
    tried = "OCR found no text" if ocr_on else "OCR is off (STRONGROOM_OCR)"
    if document_type.is_image:
        what = "The image" if pages == 1 else f"The image's {pages} pages"
        return f"{what} hold{'s' if pages == 1 else ''} text only as pixels, and {tried}."
    if passages.scanned_pages:
        what = "The PDF's page holds" if pages == 1 else f"The PDF's {pages} pages hold"
        return f"{what} no text layer, and {tried}."
    return f"The {document_type.value} document holds no text."


async def _enqueue(services: Services, job_id: uuid.UUID, priority: int) -> None:
    """Queue the document's vectors' job; committed but not queued (the queue was down), it
    stays `pending` and a worker's sweep, or the embedded default's next start, queues it."""
    try:
        await services.jobs.enqueue(job_id, priority=priority)
    except Exception:
        log.warning("queueing a document's vectors failed; left to the sweep", exc_info=True)


async def set_document_status(
    session: AsyncSession, job: Job, problem: dict[str, Any] | None
) -> None:
    status = DocumentStatus.FAILED if problem else DocumentStatus.READY
    values: dict[str, Any] = {"status": status.value, "error": problem, "updated_at": utcnow()}
    if problem:
        values["meaning"] = DocumentMeaning.OFF.value  # no passages: no vectors to come
    # The document's row before its passages', as its deletion and ingestion take them.
    await session.exec(  # type: ignore[call-overload]
        update(Document).where(col(Document.id) == job.subject_id).values(**values)
    )
    if problem:  # a failed document has no passages, even those of an earlier ingestion
        await session.exec(  # type: ignore[call-overload]
            delete(DocumentChunk).where(col(DocumentChunk.document_id) == job.subject_id)
        )
