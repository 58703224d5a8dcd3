"""Passage vectors made again when the embeddings model changes (issue 16): `strongroom
reembed` in the command's process, or a `reembedding` job per document on the workers. Each
passage's sentence vectors (issue 40) are made with it, and made alone for a passage whose
vector is current but which has none (stored before issue 40, or their embedding failed)."""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, func, select, update

from strongroom.answers.extractive import sentence_texts
from strongroom.corpus.models import DocumentChunk
from strongroom.embeddings import EmbeddingProvider
from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import JobContext, JobFailed, job_kind
from strongroom.retrieval.vectors import VectorStore, sentence_blobs, stale
from strongroom.services import Services

BATCH = 256  # passages embedded and written per transaction when re-embedding


async def reembed(services: Services, document_id: uuid.UUID | None = None) -> int:
    """Embed every passage (of one document, or all) whose vector is missing or of another
    model than the configured one, or whose sentence vectors are missing, BATCH at a time in
    id order, each batch in its own short transaction (safe while serving; resumes where an
    interrupted run stopped). A passage whose vector is current gets only its sentence
    vectors (its vector, and pgvector's index, are left alone). Returns how many were
    embedded. Raises EmbeddingError if the provider fails (for the sentences too: a passage
    left without them would be stale again), LookupError if none is configured."""
    provider = _provider(services)
    table = DocumentChunk.__table__
    done = 0
    after: uuid.UUID | None = None
    while True:
        statement = select(table.c.id, table.c.content, table.c.embedding_model).where(
            stale(provider.model)
        )
        if document_id is not None:
            statement = statement.where(table.c.document_id == document_id)
        if after is not None:
            statement = statement.where(table.c.id > after)
        async with services.sessions() as session:
            rows = (await session.exec(statement.order_by(table.c.id).limit(BATCH))).all()  # type: ignore[call-overload]
        if not rows:
            return done
        passages = [row for row in rows if row.embedding_model != provider.model]
        vectors = await provider.embed([row.content for row in passages]) if passages else None
        sentences = await sentence_blobs(provider, [row.content for row in rows], sentence_texts)
        async with services.sessions() as session:
            connection = await session.connection()
            store = await VectorStore.of(connection)
            by_id = update(store.table).where(store.table.c.id == bindparam("chunk_id"))
            if passages:
                await connection.execute(
                    by_id,
                    [
                        {"chunk_id": row.id, **store.values(vector, provider.model)}
                        for row, vector in zip(passages, vectors, strict=True)
                    ],
                )
            await connection.execute(
                by_id,
                [
                    {"chunk_id": row.id, "sentence_embeddings": blob}
                    for row, blob in zip(rows, sentences, strict=True)
                ],
            )
            await session.commit()
        if passages:
            await store.indexed(services.engine, provider.model, vectors.shape[1])
        done += len(rows)
        after = rows[-1].id


async def queue_reembedding(services: Services) -> int:
    """One `reembedding` job per document holding a stale passage, for the workers; returns
    how many were queued."""
    provider = _provider(services)
    table = DocumentChunk.__table__
    statement = (
        select(table.c.document_id, func.min(table.c.tenant_id), func.min(table.c.environment))
        .where(stale(provider.model))
        .group_by(table.c.document_id)
    )
    async with services.sessions() as session:
        documents = (await session.exec(statement)).all()  # type: ignore[call-overload]
        jobs = [
            Job(
                tenant_id=tenant_id,
                environment=environment,
                kind=JobKind.REEMBEDDING.value,
                subject_id=document_id,
            )
            for document_id, tenant_id, environment in documents
        ]
        session.add_all(jobs)
        await session.commit()
        ids = [job.id for job in jobs]
    for job_id in ids:
        await services.jobs.enqueue(job_id)
    return len(ids)


@job_kind(JobKind.REEMBEDDING.value)
async def reembed_document(context: JobContext[Services]) -> None:
    try:
        await reembed(context.services, context.job.subject_id)
    except LookupError as error:
        raise JobFailed("not_configured", str(error)) from error


def _provider(services: Services) -> EmbeddingProvider:
    """The configured embeddings provider; raises LookupError when there is none."""
    if services.embeddings is None:
        raise LookupError("no embeddings provider is configured (STRONGROOM_EMBEDDINGS_PROVIDER)")
    return services.embeddings
