"""Hybrid search (issue 16) on both backends: passage vectors stored at ingestion and by
`reembed`, the ranking by meaning fused with the ranking by words, inside the caller's
scope only. The embeddings are the real offline all-MiniLM-L6-v2 (`minilm`), no mock."""

from __future__ import annotations

import asyncio
import threading
import uuid

import numpy as np
import pytest
from sqlmodel import select, update

from strongroom.answers.extractive import sentence_texts
from strongroom.corpus.models import Document, DocumentChunk
from strongroom.embeddings.minilm import MODEL, MiniLMEmbeddings
from strongroom.embeddings.openai import OpenAIEmbeddings
from strongroom.jobs.models import Job
from strongroom.retrieval import vectors
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import search_chunks
from strongroom.retrieval.semantic import Semantic
from strongroom.retrieval.vector_memory import VectorMemory
from strongroom.tenants.partition import DataPartition
from strongroom.vault import reembedding
from tests.vault.vectors import ingest_here

# A question whose words (through the vault's analysis and thesaurus) find only the second
# passage, while its meaning is the first's.
CLAUSE = "Workers must wear hard hats, high-visibility vests and steel-toed boots at all times."
NOTE = "The site office keeps a record of every delivery of protective equipment to the gate."
QUESTION = "what safety gear do people on site need to put on"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


@pytest.fixture
def hybrid(runtime, minilm, monkeypatch) -> MiniLMEmbeddings:
    """The app's runtime with the `minilm` provider configured, and vectors held in memory
    as the service then does (strongroom.retrieval.vector_memory), for this test only."""
    monkeypatch.setattr(runtime, "embeddings", minilm)
    monkeypatch.setattr(runtime, "vectors", VectorMemory(2**24, runtime.sessions))
    vectors._readiness.clear()
    yield minilm
    vectors._readiness.clear()


async def contract(vault, runtime, *, embedded: bool = True) -> tuple[str, list[dict]]:
    """A project with the clause and the note, as two documents ingested without vectors,
    then embedded by `reembed` (one document at a time) when `embedded`."""
    project_id = await vault.create_project()
    provider, runtime.embeddings = runtime.embeddings, None  # ingested by words only
    try:
        documents = [
            await vault.ingested(CLAUSE.encode(), "conditions.txt", project_id),
            await vault.ingested(NOTE.encode(), "site-rules.txt", project_id),
        ]
    finally:
        runtime.embeddings = provider
    if embedded:
        for document in documents:
            await reembedding.reembed(runtime, uuid.UUID(document["id"]))
    return project_id, documents


async def chunks_of(runtime, document_id: str) -> list[DocumentChunk]:
    async with runtime.sessions() as session:
        statement = select(DocumentChunk).where(DocumentChunk.document_id == uuid.UUID(document_id))
        return list((await session.exec(statement)).all())


async def test_the_ingestion_job_stores_each_passage_vector_with_its_model(vault, runtime, hybrid):
    project_id = await vault.create_project()
    document = await vault.ingested(CLAUSE.encode(), "conditions.txt", project_id)
    async with runtime.sessions() as session:
        job = await session.get(Job, uuid.UUID(document["ingestion_job_id"]))
    await ingest_here(runtime, job)  # the jobs' work, in this process (the provider)
    [chunk] = await chunks_of(runtime, document["id"])
    assert chunk.embedding_model == MODEL
    assert len(chunk.embedding) == 384 * 4
    # The mean of its sentences' vectors, normalised (issue 50: every token run once).
    mean = (await hybrid.embed(sentence_texts(chunk.content))).mean(axis=0)
    assert vectors.from_bytes([chunk.embedding])[0] == pytest.approx(
        mean / np.linalg.norm(mean), abs=1e-6
    )


async def test_without_a_provider_passages_are_stored_without_vectors(vault, runtime):
    project_id = await vault.create_project()
    document = await vault.ingested(NOTE.encode(), "site-rules.txt", project_id)
    [chunk] = await chunks_of(runtime, document["id"])
    assert chunk.embedding is None and chunk.embedding_model is None


async def test_reembed_fills_missing_vectors_and_replaces_another_models(vault, runtime, hybrid):
    _, documents = await contract(vault, runtime, embedded=False)
    document_id = uuid.UUID(documents[0]["id"])
    assert await reembedding.reembed(runtime, document_id) == 1
    assert await reembedding.reembed(runtime, document_id) == 0  # up to date: nothing to do
    async with runtime.sessions() as session:
        await session.exec(
            update(DocumentChunk)
            .where(DocumentChunk.document_id == document_id)
            .values(embedding_model="openai:an-older-model", embedding=b"\0" * 16)
        )
        await session.commit()
    assert await reembedding.reembed(runtime, document_id) == 1
    [chunk] = await chunks_of(runtime, documents[0]["id"])
    assert chunk.embedding_model == MODEL and len(chunk.embedding) == 384 * 4


async def test_reembed_without_a_provider_says_none_is_configured(runtime):
    with pytest.raises(LookupError, match="STRONGROOM_EMBEDDINGS_PROVIDER"):
        await reembedding.reembed(runtime)


async def test_hybrid_search_finds_the_clause_a_question_means_in_other_words(
    vault, runtime, hybrid
):
    project_id, documents = await contract(vault, runtime)
    clause, note = documents[0]["id"], documents[1]["id"]
    hits = (await vault.search(query=QUESTION, project_ids=[project_id]))["data"]
    assert [hit["document_id"] for hit in hits] == [clause, note]


async def test_without_a_provider_the_same_search_is_lexical(vault, runtime, hybrid, monkeypatch):
    project_id, documents = await contract(vault, runtime)
    monkeypatch.setattr(runtime, "embeddings", None)
    hits = (await vault.search(query=QUESTION, project_ids=[project_id]))["data"]
    assert [hit["document_id"] for hit in hits] == [documents[1]["id"]]  # "site" only


async def test_vectors_are_searched_inside_the_filters_only(vault, runtime, hybrid):
    _, documents = await contract(vault, runtime)
    other_project = await vault.create_project()
    assert (await vault.search(query=QUESTION, project_ids=[other_project]))["data"] == []
    only_parking = await vault.search(query=QUESTION, document_ids=[documents[1]["id"]])
    assert [hit["document_id"] for hit in only_parking["data"]] == [documents[1]["id"]]


async def test_another_tenant_or_environment_never_gets_the_passages_by_meaning(
    owner_and_strangers, runtime, hybrid
):
    owner, strangers = owner_and_strangers
    await contract(owner, runtime)
    for stranger in strangers:
        assert (await stranger.search(query=QUESTION))["data"] == []
        assert (await stranger.search(query="hard hats and boots for workers"))["data"] == []


async def test_past_max_vectors_only_the_passages_found_by_words_are_scored(vault, runtime, hybrid):
    project_id, documents = await contract(vault, runtime)
    async with runtime.sessions() as session:
        partition = DataPartition.of(await session.get(Document, uuid.UUID(documents[0]["id"])))
        filters = Filters([uuid.UUID(project_id)])
        bounded = await search_chunks(
            session, partition, QUESTION, k=5, filters=filters,
            semantic=Semantic(hybrid, max_vectors=1),
        )  # fmt: skip
        unbounded = await search_chunks(
            session, partition, QUESTION, k=5, filters=filters,
            semantic=Semantic(hybrid, max_vectors=2),
        )  # fmt: skip
    assert [hit.chunk.document_id for hit in bounded] == [uuid.UUID(documents[1]["id"])]
    assert [hit.chunk.document_id for hit in unbounded] == [
        uuid.UUID(documents[0]["id"]),
        uuid.UUID(documents[1]["id"]),
    ]


async def test_a_failing_provider_leaves_search_lexical(vault, runtime):
    project_id, documents = await contract(vault, runtime, embedded=False)
    down = OpenAIEmbeddings(base_url="http://127.0.0.1:9/v1", upstream_model="m", max_retries=0)
    async with runtime.sessions() as session:
        await session.exec(
            update(DocumentChunk)
            .where(DocumentChunk.project_id == uuid.UUID(project_id))
            .values(embedding_model=down.model, embedding=b"\0" * 16)
        )
        await session.commit()
        partition = DataPartition.of(await session.get(Document, uuid.UUID(documents[0]["id"])))
        hits = await search_chunks(
            session, partition, QUESTION, k=5, filters=Filters([uuid.UUID(project_id)]),
            semantic=Semantic(down),
        )  # fmt: skip
    assert [hit.chunk.document_id for hit in hits] == [uuid.UUID(documents[1]["id"])]


async def test_readyz_says_search_is_lexical_without_a_provider(client):
    vectors._readiness.clear()
    body = await (await client.get("/readyz")).get_json()
    assert body["status"] == "ok" and body["details"]["search"] == "lexical"


async def test_readyz_says_search_is_hybrid_and_whether_vectors_are_missing(
    client, vault, runtime, hybrid
):
    await contract(vault, runtime, embedded=False)
    details = (await (await client.get("/readyz")).get_json())["details"]
    assert details["search"] == "hybrid" and details["embeddings"] == MODEL
    assert details["vectors"].startswith("missing")


async def test_readyz_is_not_ready_while_the_model_loads_at_start(client, runtime, monkeypatch):
    """Issue 50: the model loads in the background at start; until it has, the process is
    not ready, so no first search waits for it."""
    provider = MiniLMEmbeddings()
    monkeypatch.setattr(runtime, "embeddings", provider)
    release = threading.Event()
    monkeypatch.setattr(provider, "_load", lambda: release.wait(60))
    warming = provider.warm()
    response = await client.get("/readyz")
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert (await response.get_json())["code"] == "service_unavailable"
    release.set()
    await asyncio.wrap_future(warming)
    assert (await client.get("/readyz")).status_code == 200


async def test_readyz_says_vectors_are_ranked_in_process_without_pgvector(client, backend):
    # The suite's PostgreSQL has no pgvector (test_pgvector_search.py runs one that has).
    vectors._readiness.clear()
    body = await (await client.get("/readyz")).get_json()
    expected = {
        "postgresql": "none (no pgvector extension: vectors ranked in process)",
        "sqlite": "none (SQLite: vectors ranked in process)",
    }
    assert body["status"] == "ok" and body["details"]["vector_index"] == expected[backend]
