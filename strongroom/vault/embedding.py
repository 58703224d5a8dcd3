"""Passage vectors (issue 16): made at ingestion, kept beside each passage as float32 bytes
with the name of the model that made them (migration 0011), and made again when the model
changes (`strongroom reembed`, or a `reembedding` job per document).

A passage whose vector is missing or of another model is searched by words only, never
compared with the configured model's vectors. An embeddings failure at ingestion does not
fail the document: it is stored without vectors (searchable by words) with a warning, and
`strongroom reembed` fills them in later.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Table, bindparam, func, or_, select, update
from sqlalchemy.exc import SQLAlchemyError

from strongroom.corpus.models import DocumentChunk
from strongroom.embeddings import EmbeddingError, EmbeddingProvider
from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import JobContext, JobFailed, job_kind
from strongroom.retrieval import vector_pgvector
from strongroom.runtime import Runtime

log = logging.getLogger("strongroom.vault")

BATCH = 256  # passages embedded and written per transaction when re-embedding


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(blobs: list[bytes]) -> np.ndarray:
    """Stored vectors as one (n, dimensions) float32 matrix."""
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)


@dataclass(frozen=True)
class VectorStore:
    """Where this database keeps passage vectors, one copy each: `embedding` (float32 bytes)
    on SQLite and on PostgreSQL without pgvector; `embedding_vector` (pgvector, `embedding`
    left NULL) where migration 0013 found the extension (strongroom.retrieval.vector_pgvector).
    Ingestion and `reembed` write through `values`, then `indexed`."""

    pgvector: bool

    @classmethod
    async def of(cls, connection) -> VectorStore:
        return cls(await vector_pgvector.enabled(connection))

    @property
    def table(self) -> Table:
        return vector_pgvector.chunks_table() if self.pgvector else DocumentChunk.__table__

    def values(self, vector: np.ndarray | None, model: str | None) -> dict:
        """The columns that store `vector` (None: no vector) as the model's."""
        model = None if vector is None else model
        if self.pgvector:
            return {"embedding": None, vector_pgvector.COLUMN: vector, "embedding_model": model}
        return {"embedding": None if vector is None else to_bytes(vector), "embedding_model": model}

    async def indexed(self, runtime: Runtime, model: str, dimensions: int) -> None:
        """After vectors of `model` were committed: its HNSW index exists (pgvector only). A
        failure is logged, not raised: search is then exact, by a scan, until the next write."""
        if not self.pgvector:
            return
        try:
            await vector_pgvector.ensure_index(runtime.engine, model, dimensions)
        except SQLAlchemyError as error:
            log.warning("building the HNSW index of %s failed: %s", model, error)


async def embed_for_ingestion(
    provider: EmbeddingProvider | None, texts: list[str]
) -> tuple[list[np.ndarray | None], str | None]:
    """The vectors of a new document's passages and the model's name, or Nones (no provider,
    or it failed: the document is then searched by words until re-embedded)."""
    if provider is None or not texts:
        return [None] * len(texts), None
    try:
        vectors = await provider.embed(texts)
    except EmbeddingError as error:
        log.warning("embedding a document's passages failed, stored without vectors: %s", error)
        return [None] * len(texts), None
    return list(vectors), provider.model


def _stale(model: str):
    table = DocumentChunk.__table__
    return or_(table.c.embedding_model.is_(None), table.c.embedding_model != model)


async def reembed(runtime: Runtime, document_id: uuid.UUID | None = None) -> int:
    """Embed every passage (of one document, or all) whose vector is missing or of another
    model than the configured one, BATCH at a time in id order, each batch in its own short
    transaction (safe while serving; resumes where an interrupted run stopped). Returns how
    many were embedded. Raises EmbeddingError if the provider fails, LookupError if none is
    configured."""
    provider = runtime.embeddings
    if provider is None:
        raise LookupError("no embeddings provider is configured (STRONGROOM_EMBEDDINGS_PROVIDER)")
    table = DocumentChunk.__table__
    done = 0
    after: uuid.UUID | None = None
    while True:
        statement = select(table.c.id, table.c.content).where(_stale(provider.model))
        if document_id is not None:
            statement = statement.where(table.c.document_id == document_id)
        if after is not None:
            statement = statement.where(table.c.id > after)
        async with runtime.sessions() as session:
            rows = (await session.exec(statement.order_by(table.c.id).limit(BATCH))).all()  # type: ignore[call-overload]
        if not rows:
            return done
        vectors = await provider.embed([row.content for row in rows])
        async with runtime.sessions() as session:
            connection = await session.connection()
            store = await VectorStore.of(connection)
            await connection.execute(
                update(store.table).where(store.table.c.id == bindparam("chunk_id")),
                [
                    {"chunk_id": row.id, **store.values(vector, provider.model)}
                    for row, vector in zip(rows, vectors, strict=True)
                ],
            )
            await session.commit()
        await store.indexed(runtime, provider.model, vectors.shape[1])
        done += len(rows)
        after = rows[-1].id


async def queue_reembedding(runtime: Runtime) -> int:
    """One `reembedding` job per document holding a stale passage, for the workers; returns
    how many were queued."""
    provider = runtime.embeddings
    if provider is None:
        raise LookupError("no embeddings provider is configured (STRONGROOM_EMBEDDINGS_PROVIDER)")
    table = DocumentChunk.__table__
    statement = (
        select(table.c.document_id, func.min(table.c.tenant_id), func.min(table.c.environment))
        .where(_stale(provider.model))
        .group_by(table.c.document_id)
    )
    async with runtime.sessions() as session:
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
        await runtime.jobs.enqueue(job_id)
    return len(ids)


@job_kind(JobKind.REEMBEDDING.value)
async def reembed_document(context: JobContext) -> None:
    try:
        await reembed(context.runtime, context.job.subject_id)
    except LookupError as error:
        raise JobFailed("not_configured", str(error)) from error


_READINESS_SECONDS = 60.0
_readiness: dict[int, tuple[float, dict[str, str]]] = {}


async def search_readiness(runtime: Runtime) -> dict[str, str]:
    """What /readyz says of search: `search` is `lexical` (no provider) or `hybrid`, with the
    model; `vector_index` which vector search the database runs (`pgvector-hnsw`, or none:
    ranked in process); `vectors` whether some passage lacks a vector of the model (searched
    by words only until `strongroom reembed`). Looked up at most once a minute per process."""
    provider = runtime.embeddings
    index = await vector_index(runtime)
    if provider is None:
        return {
            "search": "lexical",
            "embeddings": "none: no embeddings provider configured",
            "vector_index": index,
        }
    now = time.monotonic()
    cached = _readiness.get(id(runtime))
    if cached is not None and now - cached[0] < _READINESS_SECONDS:
        return cached[1]
    table = DocumentChunk.__table__
    try:
        async with runtime.read_engine.connect() as connection:
            stale = (
                await connection.execute(select(table.c.id).where(_stale(provider.model)).limit(1))
            ).first()
    except SQLAlchemyError as error:
        log.warning("checking for passages without vectors failed: %s", type(error).__name__)
        return {
            "search": "hybrid",
            "embeddings": provider.model,
            "vector_index": index,
            "vectors": "unknown",
        }
    details = {
        "search": "hybrid",
        "embeddings": provider.model,
        "vector_index": index,
        "vectors": (
            "missing for some passages: they are searched by words only until `strongroom reembed`"
            if stale is not None
            else "complete"
        ),
    }
    _readiness[id(runtime)] = (now, details)
    return details


_vector_indexes: dict[int, str] = {}


async def vector_index(runtime: Runtime) -> str:
    """Which vector search this process's database runs (vector_pgvector.describe), looked up
    once per process; `unknown` while the database does not answer."""
    cached = _vector_indexes.get(id(runtime))
    if cached is not None:
        return cached
    try:
        described = await vector_pgvector.describe(runtime.read_engine)
    except SQLAlchemyError as error:
        log.warning("checking for pgvector failed: %s", type(error).__name__)
        return "unknown"
    _vector_indexes[id(runtime)] = described
    return described
