"""Passage vectors held in the process (issue 16): one float32 matrix per (tenant,
environment, model), loaded from the database once and kept coherent with it, so a hybrid
search scores vectors already in memory instead of reading every one on every query.

This is the vector path of the embedded SQLite default and of PostgreSQL without pgvector
(docs/embeddings.md says why not sqlite-vec, with numbers). Loading in the background,
coherence with changes made by any process, filters as masks and the memory bound
(`search_vector_memory_mb`, least recently searched partition dropped first) are
strongroom.retrieval.held's; a partition not held (too large, being loaded) has its vectors read
from the database by strongroom.retrieval.semantic (`search_max_vectors`).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from strongroom.corpus.models import DocumentChunk
from strongroom.lazy import numpy as np
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.held import Held, HeldPartitions, as_uuid, off_loop_if
from strongroom.tenants.partition import Partition

log = logging.getLogger("strongroom.vault")  # the name its logs had before the move: kept

ROW_OVERHEAD = 120  # bytes a held passage costs besides its vector: its id, its document code
EXECUTOR_ROWS = 20_000  # past this many rows, scoring runs off the event loop
GROWTH = 1.25  # a matrix grows by a quarter, so a partition near the bound still fits

Key = tuple[uuid.UUID, str, str]  # tenant, environment, model


@dataclass
class _HeldVectors(Held):
    """One partition's vectors: row i of `matrix` is the vector of chunk `ids[i]`."""

    matrix: np.ndarray = field(default_factory=lambda: np.empty((0, 0), np.float32))

    @property
    def nbytes(self) -> int:
        return self.matrix.nbytes + self.codes.nbytes + ROW_OVERHEAD * len(self.ids)


class VectorMemory(HeldPartitions[_HeldVectors]):
    """The vectors of the partitions searched lately, at most `max_bytes` in all."""

    kind = "vectors"
    setting = "STRONGROOM_SEARCH_VECTOR_MEMORY_MB"

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
        held = await self.current(session, key, partition)
        if held is None:
            return None
        rows, matrix, ids = held.rows, held.matrix, held.ids
        allowed = held.allowed(filters)
        if rows == 0 or not allowed.any():
            return []
        query = await embed()
        if query is None or query.shape[0] != matrix.shape[1]:
            return []
        arguments = (matrix[:rows], allowed, query, limit)
        best, cosines = await off_loop_if(rows > EXECUTOR_ROWS, _score, *arguments)
        ranked = [
            (as_uuid(ids[index]), float(cosine))
            for index, cosine in zip(best, cosines, strict=True)
        ]
        ranked.sort(key=lambda item: (-item[1], item[0]))
        return ranked

    def _new(self) -> _HeldVectors:
        return _HeldVectors()

    def _columns(self, key: Key):
        return (DocumentChunk.embedding,)

    def _where(self, key: Key):
        return (DocumentChunk.embedding_model == key[2],)

    async def _add(self, key: Key, held: _HeldVectors, loaded, expected: int) -> None:
        for code, passages in loaded:
            self._append(key, held, code, passages, expected)
            expected -= len(passages)

    def _append(
        self, key: Key, held: _HeldVectors, code: int, passages: list, expected: int
    ) -> None:
        """Append a document's passages under `code`; `expected`: how many passages this
        refresh still brings, these included (room is made for them all)."""
        # The stored little-endian float32 bytes (strongroom.retrieval.vectors.to_bytes).
        vectors = np.frombuffer(b"".join(blob for _, blob in passages), "<f4").reshape(
            len(passages), -1
        )
        if held.matrix.shape[0] and vectors.shape[1] != held.matrix.shape[1]:
            log.warning("a passage vector of %s has another length: not held", key[2])
            return
        if held.rows + len(passages) > held.matrix.shape[0]:
            # Growing drops the dead rows (of documents reloaded): `rows` may shrink.
            self._grow(key, held, held.rows + max(len(passages), expected), vectors.shape[1])
        needed = held.rows + len(passages)
        held.matrix[held.rows : needed] = vectors
        held.codes[held.rows : needed] = code
        held.ids.extend(chunk_id for chunk_id, _ in passages)
        held.rows = needed

    def _grow(self, key: Key, held: _HeldVectors, needed: int, dimensions: int) -> None:
        """New arrays holding the live rows (dropping the dead) and room for `needed - rows`
        more, dropping the least recently searched partitions to make room; raises TooLarge
        when the live rows and the new cannot fit in the bound on their own."""
        keep = held.live()
        needed = needed - held.rows + len(keep)
        row_bytes = dimensions * 4 + 4 + ROW_OVERHEAD
        others = self._room(key, needed * row_bytes)
        capacity = min(int(needed * GROWTH) + 64, (self.max_bytes - others) // row_bytes)
        matrix = np.empty((capacity, dimensions), np.float32)
        codes = np.empty(capacity, np.int32)
        if len(keep):
            matrix[: len(keep)] = held.matrix[keep]
            codes[: len(keep)] = held.codes[keep]
        held.ids = [held.ids[index] for index in keep]
        held.matrix, held.codes, held.rows = matrix, codes, len(keep)


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
