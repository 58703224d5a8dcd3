"""Passage vectors (issue 16): made at ingestion, kept beside each passage as float32 bytes
with the name of the model that made them (migration 0011), or in pgvector's column where the
database has it (strongroom.retrieval.vector_pgvector). strongroom.vault.reembedding makes them
again when the model changes.

A passage whose vector is missing or of another model is searched by words only, never
compared with the configured model's vectors. An embeddings failure does not fail the
document: its vectors' job fails (the document's `meaning` says `failed`), it stays
searchable by words, and `strongroom reembed` fills them in later.

Sentence vectors (issue 40): with the passage vectors, each passage's candidate sentences are
embedded (at most MAX_SENTENCES a passage, each distinct text once a piece) and kept as one
blob in `sentence_embeddings` (strongroom.retrieval.sentence_vectors), so that an answer chosen
by meaning embeds only the question. A passage whose vector is current but whose sentence
vectors are missing is stale too.

Both are made after a document is ready, by its own job, a piece at a time (issue 50,
strongroom.vault.reembedding): `embed_piece`, then `VectorStore.values` in the piece's
transaction.
"""

from __future__ import annotations

import logging
import time
import uuid
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Table, or_, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.models import DocumentChunk
from strongroom.embeddings import EmbeddingProvider, normalised
from strongroom.lazy import numpy as np
from strongroom.retrieval import vector_pgvector
from strongroom.retrieval.sentence_vectors import to_blob

log = logging.getLogger("strongroom.vault")  # the name its logs had before the move: kept

# A passage's sentences embedded at most (its first ones; an answer embeds any further one at
# question time), so that text cut into many tiny "sentences" cannot multiply the work.
MAX_SENTENCES = 64


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


async def embed_piece(
    provider: EmbeddingProvider,
    contents: list[str],
    sentences: list[list[str]],
    wanted: Sequence[bool],
) -> tuple[list[np.ndarray | None], list[bytes]]:
    """The vectors of a piece of a document (issue 50): for each passage of `contents`, its
    vector where `wanted` (else None: its vector is current), and its sentence vectors blob
    (strongroom.retrieval.sentence_vectors.to_blob) of its candidate `sentences` (at most
    MAX_SENTENCES each, as strongroom.answers.extractive.candidate_sentences cuts them, in the
    job's bounded child).

    A passage's vector is the normalised mean of its sentences' vectors when the provider says
    `passages_from_sentences` (`minilm`), else, and for a passage without a candidate sentence,
    its own run. A run costs in proportion to its tokens, so embedding a passage beside its
    sentences ran every token twice; the mean halves the CPU, and on bench/quality it found the
    right passage and answered as well (held-out halves: search top 5 92% -> 93%, answers right
    47% -> 48%, wrong 9%, unanswerable held 93%; bench/RESULTS.md, 2026-12-07). Each distinct
    text is embedded once, whichever passage holds it. Raises EmbeddingError as the provider
    does."""
    from_sentences = getattr(provider, "passages_from_sentences", False)
    row_of: dict[str, int] = {}
    for texts in sentences:
        for text in texts:
            row_of.setdefault(text, len(row_of))
    for content, texts, want in zip(contents, sentences, wanted, strict=True):
        if want and not (from_sentences and texts):
            row_of.setdefault(content, len(row_of))
    if not row_of:
        return [None] * len(contents), [to_blob([], None) for _ in sentences]
    matrix = np.asarray(await provider.embed(list(row_of)), dtype=np.float32)
    vectors: list[np.ndarray | None] = []
    for content, texts, want in zip(contents, sentences, wanted, strict=True):
        if not want:
            vectors.append(None)
        elif from_sentences and texts:
            mean = matrix[[row_of[text] for text in texts]].mean(axis=0, keepdims=True)
            vectors.append(normalised(mean)[0])
        else:
            vectors.append(matrix[row_of[content]])
    half = matrix.astype(np.float16)  # what the blobs keep, exactly: half the memory
    blobs = [to_blob(texts, half[[row_of[text] for text in texts]]) for texts in sentences]
    return vectors, blobs


def stale(model: str):
    """Passages whose vector is missing or of another model than `model` (`passage_stale`),
    or whose sentence vectors are missing."""
    table = DocumentChunk.__table__
    return or_(passage_stale(model), table.c.sentence_embeddings.is_(None))


def passage_stale(model: str):
    """Passages whose vector is missing or of another model than `model`."""
    table = DocumentChunk.__table__
    return or_(table.c.embedding_model.is_(None), table.c.embedding_model != model)


async def stored_sentences(
    session: AsyncSession, chunk_ids: Iterable[uuid.UUID], model: str
) -> dict[uuid.UUID, bytes]:
    """The sentence vectors blobs of the passages `chunk_ids` that hold ones of `model` (one
    query; the caller bounds the ids: a question's k passages)."""
    ids = list(chunk_ids)
    if not ids:
        return {}
    table = DocumentChunk.__table__
    statement = select(table.c.id, table.c.sentence_embeddings).where(
        table.c.id.in_(ids),
        table.c.embedding_model == model,
        table.c.sentence_embeddings.is_not(None),
    )
    rows = (await session.exec(statement)).all()  # type: ignore[call-overload]
    return {chunk_id: blob for chunk_id, blob in rows}


_READINESS_SECONDS = 60.0
PASSAGES_MISSING = (
    "missing for some passages: they are searched by words only until their documents' "
    "vectors jobs (documents with `meaning` pending) or `strongroom reembed` make them"
)
SENTENCES_MISSING = (
    "sentence vectors missing for some passages: their answers embed sentences at question "
    "time until `strongroom reembed`"
)
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
    by words only until `strongroom reembed`), or else some lacks its sentence vectors
    (SENTENCES_MISSING). Looked up at most once a minute per process."""
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
    try:
        async with read_engine.connect() as connection:
            vectors = await _completeness(connection, provider.model)
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
        "vectors": vectors,
    }
    _readiness[read_engine] = (now, details)
    return details


async def _completeness(connection, model: str) -> str:
    """`vectors` of search_readiness: one query when nothing is stale (or a passage vector is
    missing), a second when the first stale passage found lacks only its sentence vectors."""
    table = DocumentChunk.__table__
    first = (
        await connection.execute(select(table.c.embedding_model).where(stale(model)).limit(1))
    ).first()
    if first is None:
        return "complete"
    if first.embedding_model != model:
        return PASSAGES_MISSING
    passages = select(table.c.id).where(passage_stale(model)).limit(1)
    if (await connection.execute(passages)).first() is not None:
        return PASSAGES_MISSING
    return SENTENCES_MISSING


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
