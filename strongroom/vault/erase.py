"""Removing documents for good (issue 42): one on a DELETE (strongroom.vault.documents), a
project's in its deletion job (strongroom.vault.project_deletion), a tenant's at its erasure.

The rows go by statement: a document's passages (with their vectors and index terms), the
jobs that work on it (its ingestion, a re-embedding), then the document. A running job whose
row is deleted is cancelled (strongroom.jobs.runner). Every process holding passages drops the
document at its next search: the partition's generation is bumped by the documents' trigger
(strongroom.retrieval.held). The stored files are removed once the rows' transaction has
committed; a process killed between the two leaves files that the sweep removes
(strongroom.vault.blob_sweep).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

import sqlalchemy
from sqlalchemy.sql import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.models import Document, DocumentChunk
from strongroom.jobs.models import Job, JobKind
from strongroom.services import Services

log = logging.getLogger("strongroom.vault")

ERASE_BATCH = 100  # documents removed per transaction: a bound on one transaction's rows
DOCUMENT_JOBS = (JobKind.INGESTION.value, JobKind.REEMBEDDING.value)  # subject: a document


async def delete_document_rows(session: AsyncSession, document_ids: list[uuid.UUID]) -> int:
    """Delete those documents, their passages and their jobs, in the session's transaction;
    how many documents were deleted (another transaction may have deleted some first)."""
    await session.exec(  # type: ignore[call-overload]
        sqlalchemy.delete(DocumentChunk).where(col(DocumentChunk.document_id).in_(document_ids))
    )
    await session.exec(  # type: ignore[call-overload]
        sqlalchemy.delete(Job).where(
            col(Job.subject_id).in_(document_ids), col(Job.kind).in_(DOCUMENT_JOBS)
        )
    )
    deleted = await session.exec(  # type: ignore[call-overload]
        sqlalchemy.delete(Document).where(col(Document.id).in_(document_ids))
    )
    return deleted.rowcount


async def remove_blobs(services: Services, keys: list[str]) -> None:
    """Remove stored files whose documents are gone, in as few requests as the store allows;
    those that fail are left to the sweep."""
    try:
        await services.blobs.delete_many(keys)
    except Exception:
        log.warning("deleted documents' files are left to the sweep", exc_info=True)


async def erase_documents(
    services: Services,
    where: ColumnElement[bool],
    *,
    batch: int = ERASE_BATCH,
    first: Callable[[AsyncSession], Awaitable[None]] | None = None,
) -> int:
    """Delete every document `where` selects, `batch` at a time, each batch in a transaction
    of its own (begun by `first`, a tenant's erasure's check) and its files removed after it
    commits, outside any transaction; how many were deleted. Safe to run again after a
    crash: what is left is taken up where it stopped."""
    erased = 0
    while True:
        async with services.sessions() as session:
            if first is not None:
                await first(session)
            statement = select(Document.id, Document.blob_key).where(where).limit(batch)
            rows = (await session.exec(statement)).all()
            if not rows:
                return erased
            await delete_document_rows(session, [document_id for document_id, _ in rows])
            await session.commit()
        await remove_blobs(services, [key for _, key in rows])
        erased += len(rows)
