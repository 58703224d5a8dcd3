"""Passage vectors held in the process (strongroom.retrieval.vector_memory, issue 16), on both
backends: the same ranking as reading every vector from the database, filters applied
before scoring, coherent with changes made by other sessions and processes, bounded.

The passages are inserted with SQL, each with a vector of 16 dimensions chosen by the test,
under a model of the test's own (`SetVectors`, a provider that returns the vector the test
sets: what is compared is the ranking of stored vectors, not what a model makes of words).
"""

from __future__ import annotations

import asyncio
import uuid

import numpy as np
import pytest
from sqlmodel import delete, select, update

from strongroom.corpus.models import Document, DocumentChunk
from strongroom.jobs.models import Job
from strongroom.jobs.runner import JobContext
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import _scope, search_chunks
from strongroom.retrieval.semantic import POOL, Semantic, vector_ranking
from strongroom.retrieval.vector_memory import VectorMemory
from strongroom.retrieval.vectors import to_bytes
from strongroom.runtime import Runtime
from strongroom.tenants.partition import DataPartition, Environment
from strongroom.text import analysis
from strongroom.vault.ingestion import ingest
from strongroom.vault.reembedding import PIECE
from tests.conftest import issue_credential
from tests.vault.seeding import Seeded, new_project, passage_row, ready_document, store

DIMENSIONS = 16
WORDS = "the contractor shall pour the concrete slab"


class SetVectors:
    """An embeddings provider returning the vector the test set (see the docstring)."""

    def __init__(self) -> None:
        self.model = f"test:set-{uuid.uuid4().hex[:8]}"
        self.query = unit(np.ones(DIMENSIONS))
        self.calls = 0

    async def embed(self, texts) -> np.ndarray:
        self.calls += 1
        return np.stack([self.query] * len(texts))


def unit(vector) -> np.ndarray:
    vector = np.asarray(vector, np.float32)
    return vector / np.linalg.norm(vector)


async def seed(
    runtime: Runtime,
    credential,
    model: str,
    vectors: np.ndarray,
    *,
    projects: int = 1,
    per_document: int = 10,
    environment: Environment = Environment.TEST,
) -> Seeded:
    """Ready documents of `per_document` passages holding `vectors` in order, spread over
    `projects` new projects of the credential's tenant."""
    tenant_id, owner_id = credential.tenant.id, credential.user.id
    project_rows = [
        new_project(tenant_id, owner_id, environment.value, f"Project {number}")
        for number in range(projects)
    ]
    documents, chunks = [], []
    terms = analysis.index_texts([WORDS])[0]
    for number, start in enumerate(range(0, len(vectors), per_document)):
        block = vectors[start : start + per_document]
        document = ready_document(
            tenant_id, owner_id, environment.value,
            project_rows[number % projects].id, len(block), f"Contract {number}.txt",
        )  # fmt: skip
        documents.append(document)
        chunks += [
            passage_row(
                document, ordinal, WORDS, terms, embedding=to_bytes(vector), embedding_model=model
            )
            for ordinal, vector in enumerate(block)
        ]
    await store(runtime, project_rows, documents, chunks)
    return Seeded(
        DataPartition(tenant_id, environment),
        [project.id for project in project_rows],
        [document.id for document in documents],
    )


def random_vectors(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSIONS))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


async def ranking(runtime, provider, partition, filters, memory=None):
    """vector_ranking of the partition under `filters`: held in `memory`, or (None) read
    from the database."""
    semantic = Semantic(provider, max_vectors=10**9, memory=memory)
    async with runtime.sessions() as session:
        return await vector_ranking(
            session,
            semantic,
            lambda statement: _scope(statement, partition, filters),
            "which passages",
            [],
            partition,
            filters,
        )


async def held_ids(runtime, provider, seeded, memory) -> list[uuid.UUID]:
    """The chunk ids of the partition's ranking by held vectors, best first."""
    ranked = await ranking(runtime, provider, seeded.partition, Filters(), memory)
    return [chunk_id for chunk_id, _ in ranked]


@pytest.fixture
def provider() -> SetVectors:
    return SetVectors()


async def test_held_vectors_rank_exactly_as_the_vectors_read_from_the_database(
    runtime, credential, provider
):
    seeded = await seed(runtime, credential, provider.model, random_vectors(420, 1), projects=3)
    memory = VectorMemory(2**24, runtime.sessions)
    random = np.random.default_rng(2)
    for filters in (
        Filters(),
        Filters(project_ids=[seeded.projects[1]]),
        Filters(document_ids=seeded.documents[3:9]),
        Filters(project_ids=[seeded.projects[0]], document_ids=seeded.documents[:6]),
    ):
        for _ in range(3):
            provider.query = unit(random.standard_normal(DIMENSIONS))
            held = await ranking(runtime, provider, seeded.partition, filters, memory)
            read = await ranking(runtime, provider, seeded.partition, filters)
            assert [chunk_id for chunk_id, _ in held] == [chunk_id for chunk_id, _ in read]
            assert [score for _, score in held] == pytest.approx([s for _, s in read], abs=1e-5)
            assert len(held) == min(POOL, len(read)) and held
    assert memory.partitions() == [
        (seeded.partition.tenant_id, Environment.TEST.value, provider.model)
    ]


async def test_a_tenant_with_few_passages_among_anothers_many_gets_a_full_page_of_its_own(
    runtime, make_credential, provider
):
    crowd, few = await make_credential(), await make_credential()
    # The crowd's 600 passages all lie closer to the question than any of the few's 12.
    provider.query = unit(np.ones(DIMENSIONS))
    close = unit(np.ones(DIMENSIONS)) + random_vectors(600, 3) * 0.05
    far = -unit(np.ones(DIMENSIONS)) + random_vectors(12, 4) * 0.5
    await seed(runtime, crowd, provider.model, close / np.linalg.norm(close, axis=1)[:, None])
    mine = await seed(runtime, few, provider.model, far / np.linalg.norm(far, axis=1)[:, None])
    memory = VectorMemory(2**24, runtime.sessions)
    semantic = Semantic(provider, memory=memory)
    async with runtime.sessions() as session:
        hits = await search_chunks(
            session, mine.partition, WORDS, k=10, filters=Filters(), semantic=semantic
        )
    assert len(hits) == 10
    assert {hit.chunk.tenant_id for hit in hits} == {few.tenant.id}
    assert {chunk_id for chunk_id, _ in await ranking(
        runtime, provider, mine.partition, Filters(), memory
    )} == set(await chunk_ids(runtime, mine.documents))  # fmt: skip


async def test_another_environment_of_the_same_tenant_is_never_a_candidate(
    runtime, credential, provider
):
    live = await seed(
        runtime, credential, provider.model, random_vectors(30, 5), environment=Environment.LIVE
    )
    test = await seed(runtime, credential, provider.model, random_vectors(30, 6))
    memory = VectorMemory(2**24, runtime.sessions)
    assert set(await held_ids(runtime, provider, test, memory)) == set(
        await chunk_ids(runtime, test.documents)
    )
    assert set(await held_ids(runtime, provider, live, memory)) == set(
        await chunk_ids(runtime, live.documents)
    )


async def test_project_and_document_filters_apply_before_scoring_so_pages_are_full(
    runtime, credential, provider
):
    # Project 0's passages are the question's nearest; project 1's are the farthest.
    provider.query = unit(np.ones(DIMENSIONS))
    vectors = np.concatenate(
        [np.tile(provider.query, (10, 1)), np.tile(-provider.query, (10, 1))] * 20
    )
    seeded = await seed(runtime, credential, provider.model, vectors, projects=2)
    memory = VectorMemory(2**24, runtime.sessions)
    semantic = Semantic(provider, lexical_weight=0, vector_weight=1, memory=memory)
    far_project = seeded.projects[1]
    async with runtime.sessions() as session:
        hits = await search_chunks(
            session, seeded.partition, WORDS, k=30,
            filters=Filters(project_ids=[far_project]), semantic=semantic,
        )  # fmt: skip
    assert len(hits) == 30 and {hit.chunk.project_id for hit in hits} == {far_project}
    wanted = seeded.documents[1:4:2]  # two documents of the far project
    ranked = await ranking(
        runtime, provider, seeded.partition, Filters(document_ids=wanted), memory
    )
    assert len(ranked) == 20
    assert set(ranked_id for ranked_id, _ in ranked) == set(await chunk_ids(runtime, wanted))


async def chunk_ids(runtime, documents) -> list[uuid.UUID]:
    async with runtime.sessions() as session:
        statement = select(DocumentChunk.id).where(DocumentChunk.document_id.in_(documents))
        return list((await session.exec(statement)).all())


async def test_a_document_added_deleted_or_reembedded_elsewhere_is_seen_by_the_next_search(
    runtime, credential, provider
):
    provider.query = unit(np.ones(DIMENSIONS))
    seeded = await seed(runtime, credential, provider.model, random_vectors(50, 7))
    memory = VectorMemory(2**24, runtime.sessions)
    before = await held_ids(runtime, provider, seeded, memory)
    assert len(before) == 50
    # Another process (its own engine and sessions) changes the vault.
    other = Runtime.create(runtime.settings)
    try:
        added = await seed(other, credential, provider.model, np.tile(provider.query, (1, 1)))
        [new_chunk] = await chunk_ids(runtime, added.documents)
        assert (await held_ids(runtime, provider, seeded, memory))[0] == new_chunk

        moved = before[-1]
        async with other.sessions() as session:
            await session.exec(
                update(DocumentChunk)
                .where(DocumentChunk.id == moved)
                .values(embedding=to_bytes(provider.query * 0.999))
            )
            await session.exec(
                update(DocumentChunk)
                .where(DocumentChunk.id == new_chunk)
                .values(embedding=to_bytes(-provider.query))
            )
            await session.commit()
        after = await held_ids(runtime, provider, seeded, memory)
        assert after[0] == moved and after[-1] == new_chunk

        gone = set(await chunk_ids(runtime, [seeded.documents[0]]))
        assert gone & set(after)
        async with other.sessions() as session:
            await session.exec(delete(Document).where(Document.id == seeded.documents[0]))
            await session.commit()
        remaining = await held_ids(runtime, provider, seeded, memory)
        assert not gone & set(remaining)
        assert set(remaining) == set(await chunk_ids(runtime, seeded.documents + added.documents))
    finally:
        await other.close()


async def test_a_document_whose_vectors_arrive_piece_by_piece_is_held_whole_at_each_search(
    runtime, credential, provider
):
    """Issue 50: a document's vectors follow it a PIECE at a time, and each search between two
    pieces reloads it, leaving its earlier rows dead; growing the matrix drops them, which
    once shrank the rows under the append (a ValueError, the partition no longer held)."""
    seeded = await seed(
        runtime, credential, provider.model, random_vectors(40, 11), per_document=40
    )
    ids = await chunk_ids(runtime, seeded.documents)
    async with runtime.sessions() as session:
        await session.exec(
            update(DocumentChunk)
            .where(DocumentChunk.id.in_(ids[PIECE:]))
            .values(embedding=None, embedding_model=None)
        )
        await session.commit()
    memory = VectorMemory(2**24, runtime.sessions)
    for embedded in range(PIECE, 41, PIECE):  # the rows held, dead ones too, pass capacity
        if embedded > PIECE:
            async with runtime.sessions() as session:
                for chunk_id in ids[embedded - PIECE : embedded]:
                    await session.exec(
                        update(DocumentChunk)
                        .where(DocumentChunk.id == chunk_id)
                        .values(embedding=to_bytes(random_vectors(1, embedded)[0]),
                                embedding_model=provider.model)
                    )  # fmt: skip
                await session.commit()
        held = await held_ids(runtime, provider, seeded, memory)
        assert sorted(held) == sorted(ids[:embedded]) and not memory._failed


async def test_an_update_of_a_passage_vector_bumps_its_documents_passages_version(
    runtime, credential, provider
):
    seeded = await seed(runtime, credential, provider.model, random_vectors(3, 8))
    async with runtime.sessions() as session:
        document = await session.get(Document, seeded.documents[0])
        version = document.passages_version
        await session.exec(
            update(DocumentChunk)
            .where(DocumentChunk.document_id == document.id)
            .values(embedding_model="test:another")
        )
        await session.commit()
        await session.refresh(document)
        assert document.passages_version > version


async def test_a_document_ingested_again_is_held_with_its_new_passages(vault, runtime, provider):
    project_id = await vault.create_project()
    uploaded = await vault.ingested(WORDS.encode(), "slab.txt", project_id)
    document_id = uuid.UUID(uploaded["id"])
    async with runtime.sessions() as session:
        await session.exec(
            update(DocumentChunk)
            .where(DocumentChunk.document_id == document_id)
            .values(embedding=to_bytes(provider.query), embedding_model=provider.model)
        )
        await session.commit()
        document = await session.get(Document, document_id)
        partition = DataPartition.of(document)
        job = await session.get(Job, uuid.UUID(uploaded["ingestion_job_id"]))
    seeded = Seeded(partition, [uuid.UUID(project_id)], [document_id])
    memory = VectorMemory(2**24, runtime.sessions)
    [old_chunk] = await held_ids(runtime, provider, seeded, memory)
    await ingest(JobContext(runtime, job))  # replaces the passages (no provider: no vectors)
    assert await held_ids(runtime, provider, seeded, memory) == []
    assert old_chunk not in await chunk_ids(runtime, [document_id])


async def test_the_memory_bound_holds_and_the_least_recently_searched_tenant_goes_first(
    runtime, make_credential, provider
):
    first = await seed(runtime, await make_credential(), provider.model, random_vectors(200, 9))
    second = await seed(runtime, await make_credential(), provider.model, random_vectors(200, 10))
    row = DIMENSIONS * 4 + 4 + 120
    # Room for one tenant's 200 passages, not two.
    memory = VectorMemory(300 * row, runtime.sessions)
    assert len(await held_ids(runtime, provider, first, memory)) == 200
    assert len(await held_ids(runtime, provider, second, memory)) == 200
    assert memory.nbytes <= memory.max_bytes
    assert [tenant for tenant, _, _ in memory.partitions()] == [second.partition.tenant_id]


async def test_a_tenant_too_large_for_the_bound_is_searched_from_the_database(
    runtime, credential, provider
):
    seeded = await seed(runtime, credential, provider.model, random_vectors(100, 11))
    memory = VectorMemory(50 * (DIMENSIONS * 4 + 4 + 120), runtime.sessions)
    read = await ranking(runtime, provider, seeded.partition, Filters())
    held = await ranking(runtime, provider, seeded.partition, Filters(), memory)
    assert held == read and len(held) == 100
    assert memory.partitions() == [] and memory.nbytes == 0


async def test_without_passages_to_score_the_question_is_not_embedded(
    runtime, credential, provider
):
    seeded = await seed(runtime, credential, provider.model, random_vectors(10, 12), projects=2)
    empty_project = seeded.projects[1]
    async with runtime.sessions() as session:
        await session.exec(delete(Document).where(Document.project_id == empty_project))
        await session.commit()
    memory = VectorMemory(2**24, runtime.sessions)
    filters = Filters(project_ids=[empty_project])
    assert await ranking(runtime, provider, seeded.partition, filters, memory) == []
    assert provider.calls == 0


async def test_the_service_holds_vectors_only_with_a_provider_and_memory_for_them(runtime):
    assert runtime.vectors is None  # the test deployment has no embeddings provider
    with_provider = runtime.settings.model_copy(update={"embeddings_provider": "minilm"})
    switched_off = with_provider.model_copy(update={"search_vector_memory_mb": 0})
    for settings, held in ((with_provider, True), (switched_off, False)):
        created = Runtime.create(settings)
        try:
            assert (created.vectors is not None) == held
        finally:
            await created.close()


async def test_a_large_partition_loads_in_the_background_and_is_read_from_the_database_meanwhile(
    runtime, credential, provider
):
    seeded = await seed(runtime, credential, provider.model, random_vectors(120, 13))
    memory = VectorMemory(2**24, runtime.sessions, inline_rows=50)
    read = await ranking(runtime, provider, seeded.partition, Filters())
    assert await ranking(runtime, provider, seeded.partition, Filters(), memory) == read
    await memory.settled()
    assert memory.partitions() == [
        (seeded.partition.tenant_id, Environment.TEST.value, provider.model)
    ]
    held = await ranking(runtime, provider, seeded.partition, Filters(), memory)
    assert [chunk_id for chunk_id, _ in held] == [chunk_id for chunk_id, _ in read]
    # A small change is then loaded by the search itself, a large one in the background.
    added = await seed(runtime, credential, provider.model, np.tile(provider.query, (1, 1)))
    [new_chunk] = await chunk_ids(runtime, added.documents)
    assert (await held_ids(runtime, provider, seeded, memory))[0] == new_chunk


async def test_when_loading_fails_searches_read_the_vectors_from_the_database(
    runtime, credential, provider, caplog
):
    seeded = await seed(runtime, credential, provider.model, random_vectors(60, 14))

    def unavailable():
        raise OSError("the database went away")  # as a session factory that cannot connect

    memory = VectorMemory(2**24, unavailable, inline_rows=10)
    read = await ranking(runtime, provider, seeded.partition, Filters())
    assert await ranking(runtime, provider, seeded.partition, Filters(), memory) == read
    await memory.settled()
    assert memory.partitions() == []
    assert "loading a partition's vectors failed" in caplog.text
    assert await ranking(runtime, provider, seeded.partition, Filters(), memory) == read


async def test_on_postgresql_transactions_changing_documents_in_opposite_orders_do_not_deadlock(
    postgres_settings,
):
    """The generation row is bumped at commit (deferred triggers, migration 0014): holding it
    from the first document changed on would deadlock two such transactions."""
    runtime = Runtime.create(postgres_settings)
    try:
        credential = await issue_credential(runtime)
        seeded = await seed(
            runtime, credential, "test:order", random_vectors(2, 15), per_document=1
        )
        first, second = (
            await chunk_ids(runtime, seeded.documents[:1]),
            await chunk_ids(runtime, seeded.documents[1:]),
        )
        change = DocumentChunk.__table__.update().values(embedding=to_bytes(np.ones(DIMENSIONS)))
        async with runtime.engine.connect() as one, runtime.engine.connect() as other:
            await one.begin()
            await other.begin()
            await one.execute(change.where(DocumentChunk.id == first[0]))
            await asyncio.wait_for(other.execute(change.where(DocumentChunk.id == second[0])), 5)
            again = change.values(embedding=to_bytes(-np.ones(DIMENSIONS)))
            waiting = asyncio.create_task(one.execute(again.where(DocumentChunk.id == second[0])))
            await asyncio.sleep(0.2)  # `one` now waits for the document `other` holds
            await other.commit()
            await asyncio.wait_for(waiting, 5)
            await one.commit()
        async with runtime.sessions() as session:
            versions = [
                (await session.get(Document, document)).passages_version
                for document in seeded.documents
            ]
        assert versions == [1, 2]
    finally:
        await runtime.close()
