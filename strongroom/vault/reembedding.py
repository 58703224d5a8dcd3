"""A document's vectors, made by a job of their own after it is ready (issue 50), and made
again when the embeddings model changes (issue 16): `strongroom reembed` in the command's
process, or a `reembedding` job per document on the workers.

Ingestion stores a document's passages and terms and makes it `ready` (searched by words,
answered by the extractive engine); it queues this job, which fills in each passage's vector
and its sentences' vectors (issue 40). The job is like any other (strongroom.jobs.runner): a
job slot in its tenant's turn, behind the jobs clients wait on (strongroom.jobs.turns), and
it works a PIECE of passages at a time, each piece in its own short transaction:
- the piece's candidate sentences are cut in the job's bounded child (strongroom.jobs.bounded),
  never on the event loop;
- its distinct texts are embedded in one provider call on the provider's own threads; the
  document embeddings (`Services.document_embeddings`) remember the last texts' vectors, so a
  passage or sentence repeated across pieces and documents is embedded once;
- the piece is written, or nothing of it is.
So the process holds one piece's texts and vectors whatever the document's size, a piece is
a bounded amount of CPU (at most PIECE passages of 256 tokens and MAX_SENTENCES sentences
each), and between pieces, or while one is embedded, the job stops when its document is
deleted (its job row goes with it), when its borrowed slot is wanted by another tenant, or
when the process stops (a resumable kind: strongroom.jobs.runner.stop_resumable_jobs). A job
run again takes up where its last piece ended: only passages still stale are read.

The document's `meaning` says `complete` once no passage of it is stale, `failed` if the job
failed (its passages are searched by words until `strongroom reembed`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import sqlmodel
from sqlalchemy import bindparam, delete, select, update
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.answers.extractive import candidate_sentences
from strongroom.corpus.models import Document, DocumentChunk, DocumentMeaning, DocumentStatus
from strongroom.embeddings import EmbeddingProvider
from strongroom.jobs.bounded import raise_if_interrupted, until_interrupted
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.jobs.runner import JobContext, JobFailed
from strongroom.jobs.turns import in_turn
from strongroom.retrieval.vectors import MAX_SENTENCES, VectorStore, embed_piece, stale
from strongroom.services import Services

# Passages embedded and written per piece: with their sentences about 0.3-0.6 s of one core
# (at most about 3 s for passages of 64 sentences each): what a deletion or a shutdown waits
# for at worst, and the texts and vectors the process holds at once.
PIECE = 8

Progress = Callable[[int], Awaitable[None]]


async def reembed(
    services: Services, document_id: uuid.UUID | None = None, *, progress: Progress | None = None
) -> int:
    """Embed every passage (of one document, or all) whose vector is missing or of another
    model than the configured one, or whose sentence vectors are missing, a PIECE at a time
    (in ordinal order for a document, by id for all), each piece in its own transaction (safe
    while serving; resumes where an interrupted run stopped). A passage whose vector is current
    gets only its sentence vectors (its vector, and pgvector's index, are left alone).
    `progress(done)` after each piece. Returns how many passages were embedded. Raises
    EmbeddingError if the provider fails (for the sentences too: a passage left without them
    would be stale again), LookupError if none is configured, WorkInterrupted when the job
    running it is stopped."""
    provider = _provider(services)
    done, after, indexed = 0, None, False
    while True:
        raise_if_interrupted()
        async with services.sessions() as session:
            statement = _piece(provider.model, document_id, after)
            rows = (await session.exec(statement)).all()  # type: ignore[call-overload]
        if not rows:
            break
        sentences = await services.work.run(
            candidate_sentences, [row.content for row in rows], MAX_SENTENCES
        )
        wanted = [row.embedding_model != provider.model for row in rows]
        vectors, blobs = await until_interrupted(
            embed_piece(
                services.document_embeddings, [row.content for row in rows], sentences, wanted
            )
        )
        passages = [
            (row, vector) for row, vector in zip(rows, vectors, strict=True) if vector is not None
        ]
        async with services.sessions() as session:
            connection = await session.connection()
            store = await VectorStore.of(connection)
            by_id = update(store.table).where(store.table.c.id == bindparam("chunk_id"))
            if passages:
                await connection.execute(
                    by_id,
                    [
                        {"chunk_id": row.id, **store.values(vector, provider.model)}
                        for row, vector in passages
                    ],
                )
            await connection.execute(
                by_id,
                [
                    {"chunk_id": row.id, "sentence_embeddings": blob}
                    for row, blob in zip(rows, blobs, strict=True)
                ],
            )
            await session.commit()
        if passages and not indexed:
            await store.indexed(services.engine, provider.model, len(passages[0][1]))
            indexed = True
        done += len(rows)
        after = rows[-1].ordinal if document_id is not None else rows[-1].id
        if progress is not None:
            await progress(done)
    async with services.sessions() as session:
        await _mark_complete(session, provider.model, document_id)
        await session.commit()
    return done


def _piece(model: str, document_id: uuid.UUID | None, after: Any):
    """The next PIECE of stale passages after `after`: of one document in ordinal order (its
    index), or of all by id."""
    table = DocumentChunk.__table__
    statement = select(table.c.id, table.c.ordinal, table.c.content, table.c.embedding_model).where(
        stale(model)
    )
    if document_id is not None:
        statement = statement.where(table.c.document_id == document_id)
    order = table.c.ordinal if document_id is not None else table.c.id
    if after is not None:
        statement = statement.where(order > after)
    return statement.order_by(order).limit(PIECE)


async def _mark_complete(session: AsyncSession, model: str, document_id: uuid.UUID | None) -> None:
    """`meaning` is `complete` for the document (or every ready one) none of whose passages
    is stale now."""
    table = DocumentChunk.__table__
    unfinished = select(table.c.id).where(table.c.document_id == Document.id, stale(model)).exists()
    statement = update(Document).where(
        ~unfinished, col(Document.meaning) != DocumentMeaning.COMPLETE.value
    )
    if document_id is not None:
        statement = statement.where(col(Document.id) == document_id)
    else:
        statement = statement.where(col(Document.status) == DocumentStatus.READY.value)
    await session.exec(statement.values(meaning=DocumentMeaning.COMPLETE.value))  # type: ignore[call-overload]


async def queue_vectors(session: AsyncSession, document: Document) -> tuple[uuid.UUID, int]:
    """Add the job that makes the document's vectors to the session (replacing one still to
    run; the caller sets the document's `meaning` to `pending`); returns the job's id and the
    priority to queue it with once the session commits (in its tenant's turn, behind the jobs
    clients wait on)."""
    await session.exec(  # type: ignore[call-overload]
        delete(Job).where(
            col(Job.subject_id) == document.id,
            col(Job.kind) == JobKind.REEMBEDDING.value,
            col(Job.status) == JobStatus.PENDING.value,
        )
    )
    job = Job(
        tenant_id=document.tenant_id,
        environment=document.environment,
        kind=JobKind.REEMBEDDING.value,
        subject_id=document.id,
    )
    session.add(job)
    await session.flush()
    return job.id, await in_turn(session, job)


async def queue_reembedding(services: Services) -> int:
    """One `reembedding` job per document holding a stale passage, for the workers, each
    document's `meaning` `pending`; returns how many were queued."""
    provider = _provider(services)
    table = DocumentChunk.__table__
    statement = select(table.c.document_id).where(stale(provider.model)).distinct()
    queued: list[tuple[uuid.UUID, int]] = []
    async with services.sessions() as session:
        ids = [row[0] for row in (await session.exec(statement)).all()]  # type: ignore[call-overload]
        listed = sqlmodel.select(Document).where(col(Document.id).in_(ids))
        documents = (await session.exec(listed)).all()
        for document in documents:
            queued.append(await queue_vectors(session, document))
            document.meaning = DocumentMeaning.PENDING.value
        await session.commit()
    for job_id, priority in queued:
        await services.jobs.enqueue(job_id, priority=priority)
    return len(queued)


async def reembed_document(context: JobContext[Services]) -> None:
    services, document_id = context.services, context.job.subject_id
    count = select(Document.passage_count).where(col(Document.id) == document_id)
    async with services.sessions() as session:
        passages = (await session.exec(count)).scalar()  # type: ignore[call-overload]
    total = max(1, passages or 0)

    async def progress(done: int) -> None:
        await context.progress(done / total)

    try:
        await reembed(services, document_id, progress=progress)
    except LookupError as error:
        raise JobFailed("not_configured", str(error)) from error


async def set_document_meaning(
    session: AsyncSession, job: Job, problem: dict[str, Any] | None
) -> None:
    """A failed job leaves its document's meaning `failed` (searched by words only until
    `strongroom reembed`); one that succeeded has marked it `complete` already."""
    if problem is None:
        return
    await session.exec(  # type: ignore[call-overload]
        update(Document)
        .where(col(Document.id) == job.subject_id)
        .values(meaning=DocumentMeaning.FAILED.value)
    )


def _provider(services: Services) -> EmbeddingProvider:
    """The configured embeddings provider; raises LookupError when there is none."""
    if services.embeddings is None:
        raise LookupError("no embeddings provider is configured (STRONGROOM_EMBEDDINGS_PROVIDER)")
    return services.embeddings
