"""Search by meaning (issue 16): the vector half of hybrid search, and its fusion with the
lexical ranking of strongroom.retrieval.search.

The question is embedded by the configured provider; the passages' stored vectors (of that
provider's model only) are read from the database with the same tenant, environment,
project, document and `ready` filters as the lexical search, applied in SQL before any
vector is scored; they are ranked by cosine (a dot product of unit vectors) in numpy, and
the `POOL` (300) closest take part in the fusion. At most `search_max_vectors` are read: a
search whose scope holds more scores by meaning only the passages the lexical search found
(its pool), so it cannot read an unbounded amount.

Fusion is a weighted sum of each ranking's scores min-max normalised over the candidates
(`blend`: on the construction-clause set it beat BM25 on 11 questions and lost none, where
reciprocal rank fusion did not help paraphrases; docs/embeddings.md), or weighted
reciprocal rank fusion (`rrf`). A passage without a vector of the model scores 0 by meaning;
one the lexical search did not find scores 0 by words.

Whichever fusion, the words asked are kept (issue 53): a passage holding every term of the
query (its analysed terms, so a thesaurus phrase counts as its concept) is placed above every
passage lacking one of them (`every_word_first`). The shape it serves is a search in the
user's own words: a keyword or a phrase ("liquidated damages") names what is wanted, and a
blend of two scores each normalised over the candidates could put a passage holding none of
the words above one holding all of them (issue 53: a contract's passage saying "liquidated
damages" came 8th of 10, behind clauses holding neither word). Meaning still orders the
passages within each group, and still lifts a passage sharing no word above one sharing only
some: it adds what the words miss without taking away what they found. A long question
seldom has a passage holding every one of its terms, and then the blend is as before. Which
passages hold every term is read from the passages the search by words hands over (its 300
best), from their stored terms.

Where the vectors are scored: on PostgreSQL with pgvector, by one SQL statement over an HNSW
index (strongroom.retrieval.vector_pgvector). Elsewhere (SQLite, PostgreSQL without the
extension): held in the process (strongroom.retrieval.vector_memory: read once, kept coherent,
filters as masks) when `memory` is set and the tenant's vectors fit its bound; otherwise read
from the database on every query as described above (float32 bytes in a `bytea`/BLOB column,
no extension, at most `search_max_vectors`). docs/embeddings.md.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import String, func, select, type_coerce

from strongroom.corpus.models import DocumentChunk
from strongroom.embeddings import EmbeddingError, EmbeddingProvider
from strongroom.lazy import numpy as np
from strongroom.metrics import SEARCH_HALVES
from strongroom.retrieval import vector_pgvector
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.held import as_uuid
from strongroom.retrieval.vector_memory import VectorMemory
from strongroom.retrieval.vectors import from_bytes
from strongroom.settings import Settings
from strongroom.tenants.partition import Partition

log = logging.getLogger("strongroom.vault")  # the name its logs had before the move: kept

RRF_K = 60
POOL = 300  # the best passages by meaning that take part in the fusion


@dataclass(frozen=True)
class Semantic:
    """How a search uses meaning: the provider and the fusion's settings."""

    provider: EmbeddingProvider
    lexical_weight: float = 0.4
    vector_weight: float = 0.6
    max_vectors: int = 20_000
    fusion: Literal["blend", "rrf"] = "blend"
    memory: VectorMemory | None = None  # the process's held vectors; None: read every query

    @classmethod
    def configured(
        cls,
        provider: EmbeddingProvider | None,
        settings: Settings,
        memory: VectorMemory | None = None,
    ) -> Semantic | None:
        if provider is None:
            return None
        return cls(
            provider,
            lexical_weight=settings.search_lexical_weight,
            vector_weight=settings.search_vector_weight,
            max_vectors=settings.search_max_vectors,
            fusion=settings.search_fusion,
            memory=memory,
        )


async def vector_ranking(
    session,
    semantic: Semantic,
    scope,
    question: str,
    pool: Iterable[uuid.UUID],
    partition: Partition,
    filters: Filters,
) -> list[tuple[uuid.UUID, float]]:
    """(chunk id, cosine) of the `POOL` passages of the scope (`partition` under `filters`)
    closest to the question among those with a vector of the provider's model, best first;
    [] when none has one or the provider fails (the search is then lexical). On PostgreSQL
    with pgvector, the database ranks them with its HNSW index."""
    if await vector_pgvector.enabled(await session.connection()):
        SEARCH_HALVES.labels("vectors", "database").inc()
        query = await _embed(semantic, question)
        if query is None:
            return []
        return await vector_pgvector.ranking(
            session, semantic.provider.model, semantic.max_vectors, scope, query, POOL
        )
    model = semantic.provider.model
    if semantic.memory is not None:
        held = await semantic.memory.nearest(
            session, partition, filters, model, lambda: _embed(semantic, question), POOL
        )
        if held is not None:
            SEARCH_HALVES.labels("vectors", "held").inc()
            return held
    SEARCH_HALVES.labels("vectors", "database").inc()
    count = (
        await session.exec(
            scope(select(func.count()).select_from(DocumentChunk)).where(
                DocumentChunk.embedding_model == model
            )
        )
    ).scalar_one()
    if not count:
        return []
    query = await _embed(semantic, question)
    if query is None:
        return []
    # The id as the driver gives it (no per-row UUID conversion: that cost more than the
    # scoring); only the `POOL` best become UUIDs.
    raw_id = type_coerce(DocumentChunk.id, String)
    statement = scope(select(DocumentChunk.embedding, raw_id)).where(
        DocumentChunk.embedding_model == model
    )
    if count > semantic.max_vectors:
        statement = statement.where(DocumentChunk.id.in_(list(pool)))
    rows = (await session.exec(statement)).all()
    if not rows:
        return []
    vectors = from_bytes([blob for blob, _ in rows])
    if vectors.shape[1] != query.shape[0]:
        return []
    cosines = vectors @ query
    best = np.argpartition(-cosines, POOL - 1)[:POOL] if len(rows) > POOL else range(len(rows))
    ranked = [(as_uuid(rows[index][1]), float(cosines[index])) for index in best]
    ranked.sort(key=lambda item: (-item[1], item[0]))
    return ranked


async def _embed(semantic: Semantic, question: str) -> np.ndarray | None:
    """The question's vector; None when the provider fails (logged)."""
    try:
        (query,) = await semantic.provider.embed([question])
    except EmbeddingError as error:
        log.warning("embedding a search failed, searching by words only: %s", error)
        return None
    return query


def fuse(
    semantic: Semantic,
    lexical: list[tuple[uuid.UUID, float]],
    vectors: list[tuple[uuid.UUID, float]],
    holding_every: Collection[uuid.UUID] = frozenset(),
) -> list[tuple[uuid.UUID, float]]:
    """The two rankings as one, best first, ties by chunk id; the passages of
    `holding_every` (those holding every term of the query) first (`every_word_first`)."""
    scores: dict[uuid.UUID, float] = {}
    weighted = ((lexical, semantic.lexical_weight), (vectors, semantic.vector_weight))
    for ranking, weight in weighted:
        if semantic.fusion == "rrf":
            contributions = [
                (chunk_id, 1.0 / (RRF_K + rank))
                for rank, (chunk_id, _) in enumerate(ranking, start=1)
            ]
        else:
            contributions = _min_max(ranking)
        for chunk_id, score in contributions:
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight * score
    return every_word_first(
        sorted(scores.items(), key=lambda item: (-item[1], item[0])), holding_every
    )


def every_word_first(
    ranking: list[tuple[uuid.UUID, float]], holding_every: Collection[uuid.UUID]
) -> list[tuple[uuid.UUID, float]]:
    """`ranking` (best first) with the passages holding every term of the query
    (`holding_every`) above every other passage, each group in its own order. So that the
    scores still read best first, a passage of the first group scored below the best of the
    others is given that score (a tie, which its place breaks)."""
    every = [item for item in ranking if item[0] in holding_every]
    if not every or len(every) == len(ranking):
        return ranking
    rest = [item for item in ranking if item[0] not in holding_every]
    floor = rest[0][1]
    return [(chunk_id, max(score, floor)) for chunk_id, score in every] + rest


def _min_max(ranking: list[tuple[uuid.UUID, float]]) -> list[tuple[uuid.UUID, float]]:
    if not ranking:
        return []
    values = np.array([score for _, score in ranking])
    low, high = values.min(), values.max()
    spread = high - low
    normalised = (values - low) / spread if spread > 0 else np.ones_like(values)
    return list(zip((chunk_id for chunk_id, _ in ranking), normalised.tolist(), strict=True))
