"""Passage vectors held in the process (issue 16): one float32 matrix per (tenant,
environment, model), loaded from the database once and kept coherent with it, so a hybrid
search scores vectors already in memory instead of reading every one on every query.

This is the vector path of the embedded SQLite default and of PostgreSQL without pgvector
(docs/embeddings.md says why not sqlite-vec, with numbers).

Loading: a partition's first search loads its vectors itself when they are few (at most
`INLINE_ROWS` passages); more are loaded in the background, in a session of their own,
while the searches meanwhile read the vectors from the database as they would without this
module (bounded by `search_max_vectors`): no request waits seconds for a load.

Coherence: every search first reads its partition's row of `vault_generations`, which
triggers bump in the transaction of any change to its documents (added, deleted, status,
project) or to their `vectors_version` (itself bumped by a trigger whenever a passage's
vector is updated, and by ingestion when it replaces a document's passages; migration 0014).
Unchanged: what is held is current. Changed: the partition's `ready` documents are listed
(id, project, `vectors_version`); a document not held, or held at another version, has its
passages' vectors (re)loaded, one no longer listed (deleted, failed) is dropped. So a change
made by any process (`strongroom reembed`, a worker, another API replica) is seen by the
next search. The generation is read before the list and the passages after it, so what is
held is never older than what it is filed under (at worst it is read again).

Filters: the project, document and `ready` conditions become a mask over the matrix before
any vector is scored, so no passage outside them is a candidate and no page comes back
short; the matrix only ever holds the partition's own tenant and environment.

Bound: all partitions together hold at most `search_vector_memory_mb`; the least recently
searched partition is dropped first. A partition that cannot fit alone is not held: its
searches take the database path of strongroom.vault.semantic (`search_max_vectors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import String, select, type_coerce
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.tenants.partition import Partition
from strongroom.vault.models import Document, DocumentChunk, DocumentStatus, VaultGeneration

if TYPE_CHECKING:
    from strongroom.vault.search import Filters

log = logging.getLogger("strongroom.vault")

ROW_OVERHEAD = 120  # bytes a held passage costs besides its vector: its id, its document code
LOAD_BATCH = 200  # documents whose passages are read per statement
EXECUTOR_ROWS = 20_000  # past this many rows, scoring runs off the event loop
INLINE_ROWS = 2_000  # a search loads at most this many passages itself; more load apart
GROWTH = 1.25  # a matrix grows by a quarter, so a partition near the bound still fits

Key = tuple[uuid.UUID, str, str]  # tenant, environment, model


@dataclass
class _Held:
    """One partition's vectors. Rows are only appended (a search scoring rows [:rows]
    while another appends is unaffected); compaction and growth build new arrays."""

    matrix: np.ndarray  # (capacity, dimensions) float32, rows [:rows] in use
    codes: np.ndarray  # (capacity,) int32: the code of the (document, version) of each row
    ids: list  # chunk id of each row, as the driver gives it
    rows: int = 0
    generation: int | None = None  # the partition's generation when last refreshed
    # document key -> (code, vectors_version, project key)
    documents: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    live_rows: dict[int, int] = field(default_factory=dict)  # code -> rows it holds
    next_code: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def nbytes(self) -> int:
        return self.matrix.nbytes + self.codes.nbytes + ROW_OVERHEAD * len(self.ids)


class TooLarge(Exception):
    """A partition's vectors cannot fit in the memory bound on their own."""


class VectorMemory:
    """The vectors of the partitions searched lately, at most `max_bytes` in all.

    A search that would load more than `inline_rows` passages (a partition's first search,
    a large re-embedding) does not wait for them: they are loaded in the background with a
    session of `sessions`, and until then its searches read the vectors from the database
    (the caller's path), so no request pays for loading a large partition."""

    def __init__(
        self,
        max_bytes: int,
        sessions: async_sessionmaker[AsyncSession],
        inline_rows: int = INLINE_ROWS,
    ) -> None:
        self.max_bytes = max_bytes
        self.inline_rows = inline_rows
        self._sessions = sessions
        self._held: OrderedDict[Key, _Held] = OrderedDict()
        # key -> (generation, passages) when it did not fit: not tried again until it shrinks
        self._too_large: dict[Key, tuple[int | None, int]] = {}
        self._loading: dict[Key, asyncio.Task] = {}

    @property
    def nbytes(self) -> int:
        """Bytes held now, over all partitions (at most `max_bytes`)."""
        return sum(held.nbytes for held in self._held.values())

    def partitions(self) -> list[Key]:
        """The (tenant, environment, model) held, least recently searched first."""
        return list(self._held)

    async def settled(self) -> None:
        """Wait for the background loads under way (for benchmarks and tests)."""
        while self._loading:
            await asyncio.wait(list(self._loading.values()))

    async def close(self) -> None:
        """Stop the background loads."""
        for task in list(self._loading.values()):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._loading.values(), return_exceptions=True)
        self._loading.clear()

    async def nearest(
        self,
        session,
        partition: Partition,
        filters: Filters,
        model: str,
        embed,
        limit: int,
    ) -> list[tuple[uuid.UUID, float]] | None:
        """(chunk id, cosine) of the `limit` passages closest to the question among the
        partition's ready documents under `filters` holding a vector of `model`, best first,
        ties by id; [] when none does (the question is then not embedded). `embed()` returns
        the question's vector, or None (the search is then lexical). None when the
        partition's vectors are not held here now (too large, or being loaded): the caller
        then reads them from the database."""
        key = (partition.tenant_id, partition.environment.value, model)
        if key in self._loading:
            return None
        generation = await _generation(session, partition)
        if self._too_large.get(key, (None, 0))[0] == generation:
            return None
        held = self._held_for(key)
        if held.generation != generation:
            listed = await _ready_documents(session, partition)
            passages = sum(count for _, _, _, count in listed)
            if passages >= self._too_large.get(key, (None, passages + 1))[1]:
                return None
            if _to_load(held, listed) > self.inline_rows:
                self._loading[key] = asyncio.create_task(self._load(key, partition))
                return None
            try:
                async with held.lock:
                    await self._refresh(session, key, held, listed)
            except TooLarge:
                self._not_held(key, generation, passages)
                return None
            held.generation = generation
            self._too_large.pop(key, None)
        rows, matrix, codes, ids = held.rows, held.matrix, held.codes, held.ids
        allowed = _allowed_codes(held, filters)
        if rows == 0 or not allowed.any():
            return []
        query = await embed()
        if query is None or query.shape[0] != matrix.shape[1]:
            return []
        arguments = (matrix[:rows], allowed[codes[:rows]], query, limit)
        if rows > EXECUTOR_ROWS:
            loop = asyncio.get_running_loop()
            best, cosines = await loop.run_in_executor(None, _score, *arguments)
        else:
            best, cosines = _score(*arguments)
        ranked = [
            (_uuid(ids[index]), float(cosine)) for index, cosine in zip(best, cosines, strict=True)
        ]
        ranked.sort(key=lambda item: (-item[1], item[0]))
        return ranked

    def _held_for(self, key: Key) -> _Held:
        """The partition's held vectors (empty at first), now the most recently searched."""
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = _Held(np.empty((0, 0), np.float32), np.empty(0, np.int32), [])
        self._held.move_to_end(key)
        return held

    async def _load(self, key: Key, partition: Partition) -> None:
        """Refresh the partition's vectors in the background, in a session of its own."""
        generation = passages = 0
        try:
            async with self._sessions() as session:
                generation = await _generation(session, partition)
                listed = await _ready_documents(session, partition)
                passages = sum(count for _, _, _, count in listed)
                held = self._held_for(key)
                async with held.lock:
                    await self._refresh(session, key, held, listed)
                held.generation = generation
            self._too_large.pop(key, None)
        except TooLarge:
            self._not_held(key, generation, passages)
        except Exception:
            self._held.pop(key, None)
            log.exception("loading a partition's vectors failed: its searches read them")
        finally:
            self._loading.pop(key, None)

    def _not_held(self, key: Key, generation: int, passages: int) -> None:
        self._held.pop(key, None)
        self._too_large[key] = (generation, passages)
        log.warning(
            "a partition's vectors (%d passages) exceed STRONGROOM_SEARCH_VECTOR_MEMORY_MB: "
            "its searches read them from the database",
            passages,
        )

    async def _refresh(self, session, key: Key, held: _Held, listed) -> None:
        """Bring `held` to the listed documents: drop the unlisted, (re)load the new and
        the changed. Raises TooLarge when they cannot fit in the bound."""
        wanted = {document: (version, project) for document, project, version, _ in listed}
        for document in [d for d in held.documents if d not in wanted]:
            code, _, _ = held.documents.pop(document)
            held.live_rows.pop(code, None)
        stale = [
            document
            for document, (version, _) in wanted.items()
            if held.documents.get(document, (None, None))[1] != version
        ]
        # Room for all of them at once: one copy of what is held, not one per growth.
        loading = set(stale)
        expected = sum(count for document, _, _, count in listed if document in loading)
        for start in range(0, len(stale), LOAD_BATCH):
            batch = stale[start : start + LOAD_BATCH]
            rows = await _passages(session, key, batch)
            by_document: dict[str, list] = {document: [] for document in batch}
            for document, chunk_id, blob in rows:
                by_document[_key(document)].append((chunk_id, blob))
            for document in batch:
                old = held.documents.get(document)
                if old is not None:
                    held.live_rows.pop(old[0], None)
                version, project = wanted[document]
                code = held.next_code
                held.next_code += 1
                held.documents[document] = (code, version, project)
                passages = by_document[document]
                if passages:
                    self._append(key, held, code, passages, expected)
                expected -= len(passages)

    def _append(self, key: Key, held: _Held, code: int, passages: list, expected: int) -> None:
        """Append a document's passages under `code`; `expected`: how many passages this
        refresh still brings, these included (room is made for them all)."""
        # The stored little-endian float32 bytes (strongroom.vault.embedding.to_bytes).
        vectors = np.frombuffer(b"".join(blob for _, blob in passages), "<f4").reshape(
            len(passages), -1
        )
        if held.matrix.shape[0] and vectors.shape[1] != held.matrix.shape[1]:
            log.warning("a passage vector of %s has another length: not held", key[2])
            return
        needed = held.rows + len(passages)
        if needed > held.matrix.shape[0]:
            self._grow(key, held, max(needed, held.rows + expected), vectors.shape[1])
        held.matrix[held.rows : needed] = vectors
        held.codes[held.rows : needed] = code
        held.ids.extend(chunk_id for chunk_id, _ in passages)
        held.rows = needed
        held.live_rows[code] = len(passages)

    def _grow(self, key: Key, held: _Held, needed: int, dimensions: int) -> None:
        """New arrays holding the live rows (dropping the dead) and room for `needed - rows`
        more, dropping the least recently searched partitions to make room; raises TooLarge
        when the live rows and the new cannot fit in the bound on their own."""
        live = sum(held.live_rows.values())
        needed = needed - held.rows + live
        row_bytes = dimensions * 4 + 4 + ROW_OVERHEAD
        others = sum(h.nbytes for k, h in self._held.items() if k != key)
        if needed * row_bytes > self.max_bytes:
            raise TooLarge
        while others + needed * row_bytes > self.max_bytes and len(self._held) > 1:
            oldest = next(k for k in self._held if k != key)
            others -= self._held.pop(oldest).nbytes
        capacity = min(int(needed * GROWTH) + 64, (self.max_bytes - others) // row_bytes)
        matrix = np.empty((capacity, dimensions), np.float32)
        codes = np.empty(capacity, np.int32)
        keep = np.flatnonzero(np.isin(held.codes[: held.rows], list(held.live_rows)))
        if len(keep):
            matrix[: len(keep)] = held.matrix[keep]
            codes[: len(keep)] = held.codes[keep]
        held.ids = [held.ids[index] for index in keep]
        held.matrix, held.codes, held.rows = matrix, codes, len(keep)


def _to_load(held: _Held, listed) -> int:
    """How many passages a refresh of `held` to the listed documents would read."""
    return sum(
        count
        for document, _, version, count in listed
        if held.documents.get(document, (None, None))[1] != version
    )


def _allowed_codes(held: _Held, filters: Filters) -> np.ndarray:
    """allowed[code]: whether rows of that (document, version) may be candidates."""
    allowed = np.zeros(max(held.next_code, 1), bool)
    projects = None if filters.project_ids is None else {p.hex for p in filters.project_ids}
    documents = None if filters.document_ids is None else {d.hex for d in filters.document_ids}
    for document, (code, _, project) in held.documents.items():
        if projects is not None and project not in projects:
            continue
        if documents is not None and document not in documents:
            continue
        allowed[code] = True
    return allowed


def _score(
    matrix: np.ndarray, mask: np.ndarray, query: np.ndarray, limit: int
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices and cosines of the `limit` rows under `mask` closest to `query` (a mask
    keeping most rows is applied to the scores, one keeping few picks the rows first)."""
    allowed = int(mask.sum())
    limit = min(limit, allowed)
    if allowed * 2 >= len(mask):
        rows = None
        cosines = matrix @ query
        if allowed < len(mask):
            cosines[~mask] = -np.inf
    else:
        rows = np.flatnonzero(mask)
        cosines = matrix[rows] @ query
    if len(cosines) > limit:
        best = np.argpartition(-cosines, limit - 1)[:limit]
    else:
        best = np.arange(len(cosines))
    return (best if rows is None else rows[best]), cosines[best]


async def _generation(session, partition: Partition) -> int:
    """The partition's count of changes to its documents (0 before the first)."""
    statement = select(VaultGeneration.generation).where(
        VaultGeneration.tenant_id == partition.tenant_id,
        VaultGeneration.environment == partition.environment.value,
    )
    return (await session.exec(statement)).scalar_one_or_none() or 0


async def _ready_documents(session, partition: Partition) -> list[tuple[str, str, int, int]]:
    """(document key, project key, vectors_version, passage_count) of the partition's ready
    documents."""
    statement = select(
        type_coerce(Document.id, String),
        type_coerce(Document.project_id, String),
        Document.vectors_version,
        Document.passage_count,
    ).where(
        Document.tenant_id == partition.tenant_id,
        Document.environment == partition.environment.value,
        Document.status == DocumentStatus.READY.value,
    )
    rows = (await session.exec(statement)).all()
    return [
        (_key(document), _key(project), version, count)
        for document, project, version, count in rows
    ]


async def _passages(session, key: Key, documents: Sequence[str]) -> list:
    """(document id, chunk id, vector bytes) of those documents' passages with a vector of
    the model, inside the partition only."""
    tenant_id, environment, model = key
    statement = select(
        type_coerce(DocumentChunk.document_id, String),
        type_coerce(DocumentChunk.id, String),
        DocumentChunk.embedding,
    ).where(
        DocumentChunk.tenant_id == tenant_id,
        DocumentChunk.environment == environment,
        DocumentChunk.embedding_model == model,
        DocumentChunk.document_id.in_([uuid.UUID(hex=document) for document in documents]),
    )
    return list((await session.exec(statement)).all())


def _key(value) -> str:
    """An id as 32 hex digits, whether the driver gave a UUID (psycopg) or text (SQLite)."""
    return value.hex if isinstance(value, uuid.UUID) else value.replace("-", "")


def _uuid(value) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)
