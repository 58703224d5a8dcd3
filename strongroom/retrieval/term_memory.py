"""Passage terms held in the process (issue 16): an inverted index of each partition's
`index_terms`, so the lexical half of a search is BM25 over every passage in scope, scored in
numpy in a few milliseconds. Without it the database's full-text index hands over a pool of
passages (GIN / FTS5, ranked by `ts_rank` / FTS5's bm25 over every match) that
strongroom.retrieval.search then scores in Python: 25-140 ms at 100,000 passages, and not exact
once more passages match than the pool holds.

The ranking is strongroom.retrieval.search.rank's, score for score (the same float64 operations
in the same order; tests compare the two): a passage's BM25 over the question's terms, each
term's rarity from how many passages in scope hold it, lengths normalised by the average
length of the passages holding any of the terms, ties by chunk id. Loading, coherence with
the database, filters (a row mask before anything is scored) and the memory bound
(`search_term_memory_mb`) are strongroom.retrieval.held's.

Layout: a partition's vocabulary (term -> id) and, per held row, its document code, its
length in terms and its chunk id; postings in segments, each three arrays sorted by term id
then row (term ids, rows, term frequencies). Each loaded batch of documents is a new segment;
the newest segments are merged while the one before is at most `MERGE_FACTOR` times larger
(tiered, as Lucene does), so a search visits a few segments, and merges drop the postings of
rows no longer held. Rows themselves are compacted when their arrays must grow.

The bound is decided before building (issue 28) and at the cost of about the bound at most
(issue 44.4: with a 32 MiB bound, refusing 37,476 passages had cost 202 MB, reading and
building batches of 20,000 before their sum was past the bound): a partition whose passages
could not fit even at a row and a posting each is not read at all; otherwise the terms of
the passages to load are streamed from the database a few hundred at a time and counted
(rows, postings, new vocabulary: what they will cost held) without being kept, holding only
the set of new terms (about what it counts), and refused as soon as the count passes the
bound. Only then are they read again and built, each batch's postings counted and refused
before any is built when they would not fit (the partition changed meanwhile). A partition
that fits is thus read twice at its first load (the terms only, the second time with ids).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from sqlalchemy import select

from strongroom.corpus.models import DocumentChunk
from strongroom.lazy import numpy as np
from strongroom.retrieval.bm25 import K1, B, idf
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.held import (
    LOAD_BATCH,
    Held,
    HeldPartitions,
    TooLarge,
    as_uuid,
    off_loop_if,
)
from strongroom.tenants.partition import Partition

ROW_OVERHEAD = 120  # bytes a held row costs besides its arrays: its id in a list
POSTING_BYTES = 12  # a posting: its term id, row and frequency (int32 each)
# What a passage costs at the least (its row, one posting): a partition whose passages
# cannot fit even so is not read at all.
FLOOR_BYTES_PER_PASSAGE = ROW_OVERHEAD + 8 + POSTING_BYTES
TERM_BYTES = 100  # a vocabulary entry: the string, its id, the dict's slot
MERGE_FACTOR = 4
GROWTH = 1.25  # the row arrays grow by a quarter
EXECUTOR_TEXTS = 500  # more passages than this are indexed off the event loop
EXECUTOR_ROWS = 150_000  # past this many rows, scoring runs off the event loop (100,000: 3 ms)
EXECUTOR_POSTINGS = 200_000  # merges of more postings than this run off the event loop
# Deciding whether a partition fits (issue 44.4): its passages' terms are fetched this many at
# most at a time, fewer under a small bound (a sixteenth of it at 1 KiB of terms a passage),
# and counted off the event loop past this many characters (a few milliseconds).
DECIDE_ROWS = 500
DECIDE_MIN_ROWS = 16
EXECUTOR_CHARACTERS = 1_000_000

Key = tuple[uuid.UUID, str]  # tenant, environment


@dataclass(frozen=True)
class _Segment:
    """Postings sorted by term id, then row: `rows[i]` holds term `terms[i]`
    `frequencies[i]` times."""

    terms: np.ndarray  # int32
    rows: np.ndarray  # int32
    frequencies: np.ndarray  # int32

    @property
    def size(self) -> int:
        return len(self.terms)

    @property
    def nbytes(self) -> int:
        return self.terms.nbytes + self.rows.nbytes + self.frequencies.nbytes

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        # Bounds of the term's dtype: other ones would convert the whole array on each call.
        start, end = np.searchsorted(self.terms, np.array((term, term + 1), self.terms.dtype))
        return self.rows[start:end], self.frequencies[start:end]

    def keeping(self, row_map: np.ndarray) -> _Segment:
        """The postings of the rows `row_map` keeps (>= 0), renumbered by it."""
        mapped = row_map[self.rows]
        kept = mapped >= 0
        return _Segment(self.terms[kept], mapped[kept], self.frequencies[kept])


@dataclass
class _HeldTerms(Held):
    lengths: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    vocabulary: dict[str, int] = field(default_factory=dict)
    segments: list[_Segment] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return (
            self.codes.nbytes
            + self.lengths.nbytes
            + ROW_OVERHEAD * len(self.ids)
            + TERM_BYTES * len(self.vocabulary)
            + sum(segment.nbytes for segment in self.segments)
        )


class TermMemory(HeldPartitions[_HeldTerms]):
    """The passage terms of the partitions searched lately, at most `max_bytes` in all."""

    kind = "terms"
    setting = "STRONGROOM_SEARCH_TERM_MEMORY_MB"

    async def ranked(
        self,
        session,
        partition: Partition,
        filters: Filters,
        terms: tuple[str, ...],
        limit: int,
    ) -> tuple[list[tuple[uuid.UUID, float]], frozenset[uuid.UUID]] | None:
        """(chunk id, BM25 score) of the `limit` best passages for the question's `terms`
        among the partition's ready documents under `filters`, best first, ties by id; and
        those of them that hold every one of the terms (the fusion keeps them first:
        strongroom.retrieval.semantic.every_word_first). None when the partition's terms
        are not held here now (too large, being loaded): the caller then asks the database."""
        key = (partition.tenant_id, partition.environment.value)
        held = await self.current(session, key, partition)
        if held is None:
            return None
        distinct = list(dict.fromkeys(terms))
        wanted = [held.vocabulary.get(term) for term in distinct]
        wanted = [term for term in wanted if term is not None]
        if not wanted or held.rows == 0:
            return [], frozenset()
        # What the scoring reads, taken now: a refresh meanwhile replaces, never changes, it.
        ids = held.ids
        arguments = (held.segments, held.lengths[: held.rows], held.allowed(filters), wanted)
        rows, scores, matched = await off_loop_if(held.rows > EXECUTOR_ROWS, _bm25, *arguments)
        return _best(ids, rows, scores, matched == len(distinct), limit)

    def _new(self) -> _HeldTerms:
        return _HeldTerms()

    def _columns(self, key: Key):
        return (DocumentChunk.index_terms,)

    def _floor(self, passages: int) -> int:
        return passages * FLOOR_BYTES_PER_PASSAGE

    async def _decide(self, session, key: Key, partition: Partition, held: _HeldTerms, changed):
        """TooLarge when what is held, less the rows of the `changed` documents' versions
        held now, plus their passages' rows, postings and new terms cannot fit: their terms
        streamed and counted, never kept (issue 44.4); see the module's docstring."""
        await super()._decide(session, key, partition, held, changed)
        if not changed:
            return
        replaced = [held.documents[entry[0]][0] for entry in changed if entry[0] in held.documents]
        rows, postings = _kept(held, replaced)
        total = (
            TERM_BYTES * len(held.vocabulary) + (ROW_OVERHEAD + 8) * rows + POSTING_BYTES * postings
        )
        new_terms: set[str] = set()
        size = max(DECIDE_MIN_ROWS, min(DECIDE_ROWS, self.max_bytes // 2**14))
        documents = [entry[0] for entry in changed]
        async with contextlib.aclosing(_terms(session, partition, documents, size)) as fetched:
            async for texts in fetched:
                large = sum(map(len, texts)) > EXECUTOR_CHARACTERS
                arguments = (texts, held.vocabulary, new_terms, total, self.max_bytes)
                total = await off_loop_if(large, _counted, *arguments)
                if total is None:
                    raise TooLarge  # counted past the bound: nothing built, nothing kept

    async def _add(self, key: Key, held: _HeldTerms, loaded, expected: int) -> None:
        texts = [text for _, passages in loaded for _, text in passages]
        needed = held.rows + len(texts)
        if needed > len(held.codes):
            await _compact(held, max(needed, held.rows + expected))
        # The room the batch's postings may take, decided before any is built (issue 28: a
        # first search of 171,000 passages took a process to 2 GB, then did not fit).
        large = len(texts) > EXECUTOR_TEXTS
        postings = await off_loop_if(large, postings_of, texts)
        batch_bytes = len(texts) * (ROW_OVERHEAD + 8) + postings * POSTING_BYTES
        if held.nbytes + batch_bytes > self.max_bytes and len(held.live()) < held.rows:
            await _compact(held, held.rows + len(texts))  # the rows of replaced documents first
        self._room(key, held.nbytes + batch_bytes)  # or TooLarge, before building
        first = held.rows
        added, lengths, segment = await off_loop_if(large, _index, texts, first, held.vocabulary)
        end = first + len(texts)
        held.lengths[first:end] = lengths
        row = first
        for code, passages in loaded:
            held.codes[row : row + len(passages)] = code
            held.ids.extend(chunk_id for chunk_id, _ in passages)
            row += len(passages)
        held.vocabulary.update(added)
        # The rows first, then the postings naming them, with no await between: a search
        # sees the held index without the batch or with all of it.
        held.rows = end
        held.segments = [*held.segments, segment]
        held.segments = await _merged(held.segments, held)
        if held.nbytes > self.max_bytes and len(held.live()) < held.rows:
            await _compact(held, held.rows)  # the rows of replaced documents first
        self._room(key, held.nbytes)


async def _terms(
    session, partition: Partition, documents: list[str], size: int
) -> AsyncIterator[list[str]]:
    """The `index_terms` of those documents' passages (inside the partition only), in lists
    of at most `size`: streamed (a server-side cursor), so no more are in the process at
    once. Close it (contextlib.aclosing) when stopping early."""
    for start in range(0, len(documents), LOAD_BATCH):
        batch = [uuid.UUID(hex=document) for document in documents[start : start + LOAD_BATCH]]
        statement = select(DocumentChunk.index_terms).where(
            DocumentChunk.tenant_id == partition.tenant_id,
            DocumentChunk.environment == partition.environment.value,
            DocumentChunk.document_id.in_(batch),
        )
        result = await session.stream(statement.execution_options(yield_per=size))
        try:
            async for rows in result.partitions():
                yield [text for (text,) in rows]
        finally:
            await result.close()


def _counted(
    texts: list[str], vocabulary: dict[str, int], new_terms: set[str], total: int, limit: int
) -> int | None:
    """`total` plus what `texts` cost held (a row each, a posting per distinct term, an
    entry per term neither in `vocabulary` nor in `new_terms`, which gets it); None as soon
    as that is past `limit`. Holds one text's terms at a time besides `new_terms`."""
    for text in texts:
        terms = set(text.split())
        added = terms - new_terms
        if vocabulary and added:
            added = {term for term in added if term not in vocabulary}
        new_terms |= added
        total += ROW_OVERHEAD + 8 + POSTING_BYTES * len(terms) + TERM_BYTES * len(added)
        if total > limit:
            return None
    return total


def _kept(held: _HeldTerms, replaced: list[int]) -> tuple[int, int]:
    """The rows of `held` still live once the codes `replaced` are retired, and their
    postings."""
    if not held.rows:
        return 0, 0
    alive = held.code_projects[: held.next_code] >= 0
    alive[replaced] = False
    kept = alive[held.codes[: held.rows]]
    postings = sum(int(np.count_nonzero(kept[segment.rows])) for segment in held.segments)
    return int(np.count_nonzero(kept)), postings


def postings_of(texts: list[str]) -> int:
    """How many postings `texts` give (each text's distinct terms), holding one text's
    terms at a time."""
    return sum(len(set(text.split())) for text in texts)


def _index(
    texts: list[str], first: int, vocabulary: dict[str, int]
) -> tuple[dict[str, int], np.ndarray, _Segment]:
    """The postings of `texts` (held rows `first`, `first + 1`...): the terms new to
    `vocabulary` with their ids, each text's length in terms, and the segment."""
    added: dict[str, int] = {}
    ids: list[int] = []
    lengths = np.empty(len(texts), np.int32)
    for number, text in enumerate(texts):
        terms = text.split()
        lengths[number] = len(terms)
        for term in terms:
            known = vocabulary.get(term)
            if known is None:
                known = added.get(term)
                if known is None:
                    known = added[term] = len(vocabulary) + len(added)
            ids.append(known)
    rows = np.repeat(np.arange(first, first + len(texts), dtype=np.int64), lengths)
    pairs, frequencies = np.unique(np.array(ids, np.int64) << 32 | rows, return_counts=True)
    segment = _Segment(
        (pairs >> 32).astype(np.int32),
        (pairs & 0xFFFFFFFF).astype(np.int32),
        frequencies.astype(np.int32),
    )
    return added, lengths, segment


async def _merged(segments: list[_Segment], held: _HeldTerms) -> list[_Segment]:
    """`segments` after merging the newest while the one before is at most `MERGE_FACTOR`
    times larger, dropping the postings of rows no longer held."""
    segments = list(segments)
    live = np.zeros(held.rows, bool)
    live[held.live()] = True
    while len(segments) > 1 and segments[-2].size <= MERGE_FACTOR * segments[-1].size:
        older, newer = segments[-2], segments[-1]
        large = older.size + newer.size > EXECUTOR_POSTINGS
        segments[-2:] = [await off_loop_if(large, _merge, older, newer, live)]
    return segments


def _merge(older: _Segment, newer: _Segment, live: np.ndarray) -> _Segment:
    """One segment of both (every row of `newer` is after every row of `older`, so a stable
    sort by term keeps rows in order), without the postings of rows not `live`."""
    terms = np.concatenate((older.terms, newer.terms))
    rows = np.concatenate((older.rows, newer.rows))
    frequencies = np.concatenate((older.frequencies, newer.frequencies))
    kept = live[rows]
    terms, rows, frequencies = terms[kept], rows[kept], frequencies[kept]
    order = np.argsort(terms, kind="stable")
    return _Segment(terms[order], rows[order], frequencies[order])


async def _compact(held: _HeldTerms, needed: int) -> None:
    """New row arrays holding the live rows only (the postings renumbered, those of dead
    rows dropped), with room for `needed - rows` more; built off the event loop when large,
    swapped in at once."""
    arguments = (held.codes[: held.rows], held.lengths[: held.rows], held.ids, held.segments)
    keep = held.live()
    capacity = int((needed - held.rows + len(keep)) * GROWTH) + 64
    large = sum(segment.size for segment in held.segments) > EXECUTOR_POSTINGS
    compacted = await off_loop_if(large, _compacted, *arguments, keep, capacity)
    held.codes, held.lengths, held.ids, held.segments = compacted
    held.rows = len(keep)


def _compacted(
    codes: np.ndarray,
    lengths: np.ndarray,
    ids: list,
    segments: list[_Segment],
    keep: np.ndarray,
    capacity: int,
) -> tuple[np.ndarray, np.ndarray, list, list[_Segment]]:
    """The rows `keep` of these arrays (in arrays of `capacity`) and the segments'
    postings renumbered to them."""
    row_map = np.full(len(codes), -1, np.int32)
    row_map[keep] = np.arange(len(keep), dtype=np.int32)
    new_codes = np.empty(capacity, np.int32)
    new_lengths = np.empty(capacity, np.int32)
    new_codes[: len(keep)] = codes[keep]
    new_lengths[: len(keep)] = lengths[keep]
    return (
        new_codes,
        new_lengths,
        [ids[index] for index in keep],
        [segment.keeping(row_map) for segment in segments],
    )


def _bm25(
    segments: list[_Segment], lengths: np.ndarray, allowed: np.ndarray, terms: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows holding any of `terms` among the `allowed`, their BM25 scores
    (strongroom.retrieval.search.rank's formula, operation for operation: float64, the terms
    summed in the question's order, so the scores are equal to the last bit), and how many
    of the (distinct) `terms` each holds."""
    found = []
    for term in terms:
        pieces = [segment.postings(term) for segment in segments]
        rows = np.concatenate([rows for rows, _ in pieces])
        frequencies = np.concatenate([frequencies for _, frequencies in pieces])
        kept = allowed[rows]
        if kept.any():
            found.append((rows[kept], frequencies[kept].astype(np.float64)))
    if not found:
        return np.empty(0, np.int64), np.empty(0), np.empty(0, np.int64)
    matched = np.zeros(len(lengths), np.int64)
    for rows, _ in found:
        matched[rows] += 1  # a row appears once in a term's postings
    candidates = np.flatnonzero(matched)
    total = max(int(allowed.sum()), len(candidates))
    average = int(lengths[candidates].sum()) / len(candidates) or 1.0
    norm = np.zeros(len(lengths))
    norm[candidates] = K1 * (1 - B + B * lengths[candidates].astype(np.float64) / average)
    scores = np.zeros(len(lengths))
    for rows, frequencies in found:
        seen = len(rows)
        scores[rows] += idf(total, seen) * frequencies * (K1 + 1) / (frequencies + norm[rows])
    return candidates, scores[candidates], matched[candidates]


def _best(ids: list, rows: np.ndarray, scores: np.ndarray, every: np.ndarray, limit: int):
    """(chunk id, score) of the `limit` best rows, best first, ties by chunk id; and the
    chunk ids of those that `every` marks (they hold every term)."""
    if len(rows) > limit:
        threshold = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        chosen = np.flatnonzero(scores >= threshold)
    else:
        chosen = np.arange(len(rows))
    ranked = [(as_uuid(ids[rows[index]]), float(scores[index]), every[index]) for index in chosen]
    ranked.sort(key=lambda item: (-item[1], item[0]))
    ranked = ranked[:limit]
    holding = frozenset(chunk_id for chunk_id, _, marked in ranked if marked)
    return [(chunk_id, score) for chunk_id, score, _ in ranked], holding
