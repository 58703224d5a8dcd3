"""Passage vectors (issue 16): made at ingestion, kept beside each passage as float32 bytes
with the name of the model that made them (migration 0011), or in pgvector's column where the
database has it (strongroom.retrieval.vector_pgvector). strongroom.vault.reembedding makes them
again when the model changes.

A passage whose vector is missing or of another model is searched by words only, never
compared with the configured model's vectors. An embeddings failure at ingestion does not
fail the document: it is stored without vectors (searchable by words) with a warning, and
`strongroom reembed` fills them in later.
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass

from sqlalchemy import Table, or_, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from strongroom.corpus.models import DocumentChunk
from strongroom.embeddings import EmbeddingError, EmbeddingProvider
from strongroom.lazy import numpy as np
from strongroom.retrieval import vector_pgvector

log = logging.getLogger("strongroom.vault")  # the name its logs had before the move: kept


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

    async def indexed(self, engine: AsyncEngine, model: str, dimensions: int) -> None:
        """After vectors of `model` were committed: its HNSW index exists (pgvector only). A
        failure is logged, not raised: search is then exact, by a scan, until the next write."""
        if not self.pgvector:
            return
        try:
            await vector_pgvector.ensure_index(engine, model, dimensions)
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


def stale(model: str):
    """Passages whose vector is missing or of another model than `model`."""
    table = DocumentChunk.__table__
    return or_(table.c.embedding_model.is_(None), table.c.embedding_model != model)


_READINESS_SECONDS = 60.0
# Per engine object, not per id(): an id is reused once its engine is collected (tests make
# one engine per app), and a reused id answered another database's vector index.
_readiness: weakref.WeakKeyDictionary[AsyncEngine, tuple[float, dict[str, str]]] = (
    weakref.WeakKeyDictionary()
)


async def search_readiness(
    provider: EmbeddingProvider | None, read_engine: AsyncEngine
) -> dict[str, str]:
    """What /readyz says of search: `search` is `lexical` (no provider) or `hybrid`, with the
    model; `vector_index` which vector search the database runs (`pgvector-hnsw`, or none:
    ranked in process); `vectors` whether some passage lacks a vector of the model (searched
    by words only until `strongroom reembed`). Looked up at most once a minute per process."""
    index = await vector_index(read_engine)
    if provider is None:
        return {
            "search": "lexical",
            "embeddings": "none: no embeddings provider configured",
            "vector_index": index,
        }
    now = time.monotonic()
    cached = _readiness.get(read_engine)
    if cached is not None and now - cached[0] < _READINESS_SECONDS:
        return cached[1]
    table = DocumentChunk.__table__
    try:
        async with read_engine.connect() as connection:
            lacking = (
                await connection.execute(select(table.c.id).where(stale(provider.model)).limit(1))
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
            if lacking is not None
            else "complete"
        ),
    }
    _readiness[read_engine] = (now, details)
    return details


_vector_indexes: weakref.WeakKeyDictionary[AsyncEngine, str] = weakref.WeakKeyDictionary()


async def vector_index(read_engine: AsyncEngine) -> str:
    """Which vector search this process's database runs (vector_pgvector.describe), looked up
    once per process; `unknown` while the database does not answer."""
    cached = _vector_indexes.get(read_engine)
    if cached is not None:
        return cached
    try:
        described = await vector_pgvector.describe(read_engine)
    except SQLAlchemyError as error:
        log.warning("checking for pgvector failed: %s", type(error).__name__)
        return "unknown"
    _vector_indexes[read_engine] = described
    return described
