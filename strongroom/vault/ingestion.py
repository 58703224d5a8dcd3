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
from strongroom.ingest.passages import IndexedPassages, read_indexed_passages
from strongroom.jobs.bounded import BoundedWorkDied
from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import JobContext, JobFailed, job_kind, on_finished
from strongroom.metrics import INGESTED_PAGES
from strongroom.services import Services
from strongroom.vault.documents import meaning_to_come
from strongroom.vault.reembedding import queue_vectors

log = logging.getLogger("strongroom.vault")

INSERT_BATCH = 500
_CHUNKS = DocumentChunk.__table__


@job_kind(JobKind.INGESTION.value)
async def ingest(context: JobContext[Services]) -> None:
    services, job = context.services, context.job
    async with services.sessions() as session:
        document = await session.get(Document, job.subject_id)
    if document is None:
        raise JobFailed("not_found", "The document no longer exists.")
    document_type = DocumentType(document.document_type)
    try:
        async with services.blobs.local_copy(document.blob_key) as path:
            read: IndexedPassages = await services.work.run(
                read_indexed_passages,
                path,
                document_type,
                limits=IngestLimits.from_settings(services.settings),
                charset=charset_of(document.content_type),
            )
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


async def _enqueue(services: Services, job_id: uuid.UUID, priority: int) -> None:
    """Queue the document's vectors' job; committed but not queued (the queue was down), it
    stays `pending` and a worker's sweep, or the embedded default's next start, queues it."""
    try:
        await services.jobs.enqueue(job_id, priority=priority)
    except Exception:
        log.warning("queueing a document's vectors failed; left to the sweep", exc_info=True)


@on_finished(JobKind.INGESTION.value)
async def set_document_status(
    session: AsyncSession, job: Job, problem: dict[str, Any] | None
) -> None:
    status = DocumentStatus.FAILED if problem else DocumentStatus.READY
    values: dict[str, Any] = {"status": status.value, "error": problem, "updated_at": utcnow()}
    if problem:  # a failed document has no passages, even those of an earlier ingestion
        await session.exec(  # type: ignore[call-overload]
            delete(DocumentChunk).where(col(DocumentChunk.document_id) == job.subject_id)
        )
        values["meaning"] = DocumentMeaning.OFF.value  # no passages: no vectors to come
    await session.exec(  # type: ignore[call-overload]
        update(Document).where(col(Document.id) == job.subject_id).values(**values)
    )
