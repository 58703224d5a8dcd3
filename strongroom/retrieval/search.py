"""Ranked full-text search over document chunks (D43), inside the caller's tenant and
environment only.

A question and the passages are seen through one analysis (strongroom.text.analysis:
Snowball stems, stop words, the construction thesaurus's concepts). Search runs in two steps:

1. The database finds the passages holding any of the question's terms in its full-text
   index of `index_terms` (PostgreSQL: GIN over `to_tsvector('simple', ...)`; SQLite: FTS5)
   and keeps the `POOL` it ranks best (`ts_rank`; FTS5's bm25).
2. Those are scored here with BM25 over their terms (document frequencies from the pool, which
   holds every passage with any of the terms unless the pool is full), and the `k` best are
   returned in score order, ties by chunk id.

So both backends give the same ranking whenever the pool is not full (every project-sized
search), and results are always in score order. A process holding the partition's terms
(strongroom.retrieval.term_memory, the default) skips both steps: it scores every passage in
scope with the same BM25 in numpy, so the pool is never full there, the backends agree on
every search, and step 1's cost (most of a search at 100,000 passages) is gone.

Snippets are cut here too, around the passage's densest stretch of matched words. Terms are
letters and digits only, so search syntax in a query (`'`, `&`, `:*`, `"`, `-`, `OR`) is
plain text.

With an embeddings provider configured, the ranking by words is fused with a ranking by
meaning over the same scope (strongroom.retrieval.semantic, issue 16), the passages holding
every term of the question kept above the others (issue 53).
"""

from __future__ import annotations

import html
import uuid
from collections import Counter
from dataclasses import dataclass

from sqlalchemy import column, func, literal_column, select, table
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.models import Document, DocumentChunk, DocumentStatus
from strongroom.metrics import SEARCH_HALVES
from strongroom.retrieval.bm25 import K1, B, idf
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.semantic import Semantic, fuse, vector_ranking
from strongroom.retrieval.term_memory import TermMemory
from strongroom.tenants.partition import Partition
from strongroom.text import analysis

POOL = 300  # passages the database hands over for scoring
SNIPPET_WORDS = 30


@dataclass(frozen=True)
class Hit:
    chunk: DocumentChunk
    document_name: str
    snippet: str
    score: float


@dataclass(frozen=True)
class Candidate:
    chunk_id: uuid.UUID
    terms: list[str]


async def search_chunks(
    session: AsyncSession,
    partition: Partition,
    query: str,
    *,
    k: int,
    filters: Filters,
    semantic: Semantic | None = None,
    terms: TermMemory | None = None,
    analysed: analysis.Query | None = None,
) -> list[Hit]:
    """The `k` best passages of `partition`'s ready documents for `query`, best first; []
    when it has no terms. With `terms` (the process's held terms), the ranking by words is
    scored there when the partition is held (the same scores, over every passage in scope);
    otherwise the database finds the pool. With `semantic` (an embeddings provider is
    configured), the lexical ranking is fused with the ranking by meaning
    (strongroom.retrieval.semantic) and `score` is the fused score. `analysed`: the query's
    analysis, when the caller has read it already (an answer reads its question once)."""
    wanted = analysis.query(query) if analysed is None else analysed
    if not wanted:
        return []
    held = None
    if terms is not None:
        held = await terms.ranked(session, partition, filters, wanted.terms, POOL)
    SEARCH_HALVES.labels("terms", "database" if held is None else "held").inc()
    if held is None:
        find = _postgres if session.bind.dialect.name == "postgresql" else _sqlite
        candidates, total = await find(session, partition, wanted.terms, filters)
        best = rank(wanted.terms, candidates, total)
        every = holding_every(wanted.terms, candidates) if semantic is not None else frozenset()
    else:
        best, every = held
    if semantic is not None:
        nearest = await vector_ranking(
            session,
            semantic,
            lambda statement: _scope(statement, partition, filters),
            query,
            [chunk_id for chunk_id, _ in best],
            partition,
            filters,
        )
        if nearest:
            best = fuse(semantic, best, nearest, every)
    best = best[:k]
    if not best:
        return []
    rows = (
        await session.exec(
            select(DocumentChunk, Document.name)
            .join(Document, Document.id == DocumentChunk.document_id)
            .where(DocumentChunk.id.in_([chunk_id for chunk_id, _ in best]))
        )
    ).all()
    found = {chunk.id: (chunk, name) for chunk, name in rows}
    return [
        Hit(
            found[chunk_id][0],
            found[chunk_id][1],
            snippet(found[chunk_id][0].content, wanted),
            score,
        )
        for chunk_id, score in best
        if chunk_id in found
    ]


def rank(
    terms: tuple[str, ...], candidates: list[Candidate], total: int
) -> list[tuple[uuid.UUID, float]]:
    """(chunk id, BM25 score) of each candidate holding a term, best first, ties by id.
    `total`: how many passages the search covers (for the terms' rarity)."""
    if not candidates:
        return []
    order = list(dict.fromkeys(terms))  # the question's terms, each once, in its order
    wanted = set(order)
    counts = [
        Counter(term for term in candidate.terms if term in wanted) for candidate in candidates
    ]
    frequency = Counter(term for count in counts for term in count)
    total = max(total, len(candidates))
    rarity = {term: idf(total, seen) for term, seen in frequency.items()}
    average = sum(len(candidate.terms) for candidate in candidates) / len(candidates) or 1.0
    scored = []
    for candidate, count in zip(candidates, counts, strict=True):
        norm = K1 * (1 - B + B * len(candidate.terms) / average)
        score = sum(
            rarity[term] * count[term] * (K1 + 1) / (count[term] + norm)
            for term in order
            if term in count
        )
        if score > 0:
            scored.append((candidate.chunk_id, score))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored


def holding_every(terms: tuple[str, ...], candidates: list[Candidate]) -> frozenset[uuid.UUID]:
    """The candidates holding every one of the question's `terms` (the fusion keeps them
    first: strongroom.retrieval.semantic.every_word_first)."""
    wanted = set(terms)
    return frozenset(
        candidate.chunk_id for candidate in candidates if wanted.issubset(candidate.terms)
    )


def _scope(statement, partition: Partition, filters: Filters):
    """The partition's chunks, of documents whose ingestion has finished (`ready`)."""
    return statement.join(Document, Document.id == DocumentChunk.document_id).where(
        *_covered(
            DocumentChunk.tenant_id,
            DocumentChunk.environment,
            DocumentChunk.project_id,
            DocumentChunk.document_id,
            partition,
            filters,
        )
    )


def _total(partition: Partition, filters: Filters):
    """How many passages the search covers, summed over its documents' `passage_count` (a
    few hundred rows, where counting the passages read thousands): one scalar subquery,
    evaluated once."""
    return (
        select(func.coalesce(func.sum(Document.passage_count), 0))
        .where(
            *_covered(
                Document.tenant_id,
                Document.environment,
                Document.project_id,
                Document.id,
                partition,
                filters,
            )
        )
        .scalar_subquery()
    )


def _covered(tenant_id, environment, project_id, document_id, partition, filters) -> list:
    """The conditions of what a search covers, on the given columns (a chunk's own, which
    its scope index serves, or its document's): the same for the passages searched and for
    the corpus size that ranks them."""
    conditions = [
        tenant_id == partition.tenant_id,
        environment == partition.environment.value,
        Document.status == DocumentStatus.READY.value,
    ]
    if filters.project_ids is not None:
        conditions.append(project_id.in_(filters.project_ids))
    if filters.document_ids is not None:
        conditions.append(document_id.in_(filters.document_ids))
    return conditions


async def _postgres(session, partition, terms, filters) -> tuple[list[Candidate], int]:
    simple = literal_column("'simple'::regconfig")
    # A scalar subquery: evaluated once per statement, also in PostgreSQL's generic plan of
    # a prepared statement (a plain call is parsed again for every matching row).
    wanted = select(func.to_tsquery(simple, " | ".join(terms))).scalar_subquery()
    vector = literal_column("document_chunks.search_vector")
    score = func.ts_rank(vector, wanted)
    statement = (
        _scope(
            select(DocumentChunk.id, DocumentChunk.index_terms, _total(partition, filters)).where(
                vector.op("@@")(wanted)
            ),
            partition,
            filters,
        )
        .order_by(score.desc(), DocumentChunk.id)
        .limit(POOL)
    )
    rows = (await session.exec(statement)).all()
    total = rows[0][2] if rows else 0
    return [Candidate(chunk_id, text.split()) for chunk_id, text, _ in rows], total


_FTS = table("document_chunks_fts", column("chunk_id"))


async def _sqlite(session, partition, terms, filters) -> tuple[list[Candidate], int]:
    fts = literal_column("document_chunks_fts")
    statement = (
        _scope(
            select(
                DocumentChunk.id,
                DocumentChunk.index_terms,
                _total(partition, filters),
                _FTS.c.chunk_id,
            )
            .select_from(_FTS)
            # The insert trigger gives the FTS row the chunk's rowid: joining on it is a lookup.
            .join(
                DocumentChunk,
                literal_column("document_chunks.rowid")
                == literal_column("document_chunks_fts.rowid"),
            ),
            partition,
            filters,
        )
        .where(fts.op("MATCH")(" OR ".join(f'"{term}"' for term in terms)))
        .order_by(func.bm25(fts), DocumentChunk.id)
        .limit(POOL)
    )
    rows = (await session.exec(statement)).all()
    total = rows[0][2] if rows else 0
    # The chunk id must agree too (VACUUM may renumber the rowids of document_chunks).
    return [
        Candidate(chunk_id, text.split())
        for chunk_id, text, _, fts_chunk_id in rows
        if fts_chunk_id == chunk_id.hex
    ], total


def snippet(content: str, wanted: analysis.Query, words: int = SNIPPET_WORDS) -> str:
    """About `words` words of `content` around its densest stretch of matched words, HTML-
    escaped, matches in <mark></mark>, `…` where text was cut: safe to render as HTML."""
    tokens = list(analysis.tokens(content))
    if not tokens:
        return html.escape(content[:300], quote=False)
    hits = [index for index, token in enumerate(tokens) if _matches(token, wanted)]
    start = 0
    if hits:
        best, most = hits[0], 0
        for index in hits:
            inside = {tokens[i].term for i in hits if index <= i < index + words}
            if len(inside) > most:
                best, most = index, len(inside)
        start = max(0, min(best - 3, len(tokens) - words))
    window = tokens[start : start + words]
    marked = set(hits)
    pieces = ["…" if start > 0 else ""]
    cursor = window[0].start
    for offset, token in enumerate(window, start=start):
        pieces.append(html.escape(content[cursor : token.start], quote=False))
        text = html.escape(token.raw, quote=False)
        pieces.append(f"<mark>{text}</mark>" if offset in marked else text)
        cursor = token.end
    if start + words < len(tokens):
        pieces.append("…")
    return "".join(pieces).strip()


def _matches(token: analysis.Token, wanted: analysis.Query) -> bool:
    if token.term is not None and token.term in wanted.highlight:
        return True
    return bool(analysis.concepts_of_acronym(token.raw) & set(wanted.terms))
