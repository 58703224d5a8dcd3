"""Sentence vectors made at ingestion (issue 40) on both backends: stored beside each passage
by the ingestion job and by `reembed`, handed to the answer engine with the passages chat and
template fill retrieve, read for those passages only, and never by a search's hits. The
embeddings are the real offline all-MiniLM-L6-v2 (`minilm`), no mock."""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import numpy as np
import pytest
from alembic import command
from sqlalchemy import event, inspect, select, update
from sqlalchemy.exc import InvalidRequestError

from strongroom.answers.extractive import sentence_texts
from strongroom.chat.service import retrieve
from strongroom.corpus.models import Document, DocumentChunk
from strongroom.db.migrate import alembic_config
from strongroom.embeddings.minilm import MODEL, MiniLMEmbeddings
from strongroom.jobs.models import Job
from strongroom.retrieval import vectors
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import search_chunks
from strongroom.retrieval.semantic import Semantic
from strongroom.retrieval.sentence_vectors import from_blob, key
from strongroom.runtime import Runtime
from strongroom.tenants.partition import DataPartition
from strongroom.text.question import Question
from strongroom.vault import reembedding
from tests.conftest import make_settings, migrated, own_postgres_database
from tests.vault.vectors import DIMENSIONS, ChosenQuestion, Tenancy, ingest_here, random_unit

CONTRACT = (
    "1. Payment. The Employer shall pay the Contractor within 30 days of each invoice. "
    "The Employer may retain 5% of each payment until practical completion.\n\n"
    "2. Safety. Workers must wear hard hats, high-visibility vests and steel-toed boots at "
    "all times on the site."
)
QUESTION = "how long does the employer have to pay an invoice"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


@pytest.fixture
def hybrid(runtime, minilm, monkeypatch) -> MiniLMEmbeddings:
    """The app's runtime with the `minilm` provider configured, for this test only."""
    monkeypatch.setattr(runtime, "embeddings", minilm)
    yield minilm


async def ingested_here(vault, runtime) -> tuple[str, dict]:
    """A project with CONTRACT, ingested by the job run in this process (on PostgreSQL the
    suite's worker process has no provider), with the runtime's provider."""
    project_id = await vault.create_project()
    document = await vault.ingested(CONTRACT.encode(), "conditions.txt", project_id)
    async with runtime.sessions() as session:
        job = await session.get(Job, uuid.UUID(document["ingestion_job_id"]))
    await ingest_here(runtime, job)
    return project_id, document


async def stored(runtime, document_id) -> list:
    """(content, embedding_model, sentence_embeddings) of the document's passages."""
    table = DocumentChunk.__table__
    async with runtime.engine.connect() as connection:
        found = await connection.execute(
            select(table.c.content, table.c.embedding_model, table.c.sentence_embeddings)
            .where(table.c.document_id == uuid.UUID(str(document_id)))
            .order_by(table.c.ordinal)
        )
        return found.all()


@contextmanager
def statements(runtime):
    """The SQL statements the runtime's engine runs inside the block."""
    seen: list[str] = []

    def record(connection, cursor, statement, *_):
        seen.append(statement)

    event.listen(runtime.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(runtime.engine.sync_engine, "before_cursor_execute", record)


async def assert_the_models_vectors_of_its_sentences(provider, content: str, found: dict):
    texts = sentence_texts(content)
    assert len(texts) >= 3 and set(found) == {key(sentence) for sentence in texts}
    expected = await provider.embed(texts)
    for sentence, vector in zip(texts, expected, strict=True):
        np.testing.assert_allclose(found[key(sentence)], vector, rtol=0, atol=1e-3)  # float16


async def test_the_ingestion_job_stores_the_vectors_of_each_passages_sentences(
    vault, runtime, hybrid
):
    _, document = await ingested_here(vault, runtime)
    [(content, model, blob)] = await stored(runtime, document["id"])
    assert model == MODEL
    await assert_the_models_vectors_of_its_sentences(hybrid, content, from_blob(blob))


async def test_without_a_provider_passages_are_stored_without_sentence_vectors(vault, runtime):
    project_id = await vault.create_project()
    document = await vault.ingested(CONTRACT.encode(), "conditions.txt", project_id)
    assert [(model, blob) for _, model, blob in await stored(runtime, document["id"])] == [
        (None, None)
    ]


async def retrieved_here(vault, runtime, semantic: Semantic | None):
    """chat's retrieve over a document ingested here: its passages and the statements run."""
    project_id, document = await ingested_here(vault, runtime)
    async with runtime.sessions() as session:
        partition = DataPartition.of(await session.get(Document, uuid.UUID(document["id"])))
        with statements(runtime) as seen:
            passages = await retrieve(
                session, partition, Question.read(QUESTION), k=5,
                filters=Filters([uuid.UUID(project_id)]), semantic=semantic,
            )  # fmt: skip
    return passages, seen


async def test_retrieve_hands_each_passage_its_stored_sentence_vectors_in_one_query(
    vault, runtime, hybrid
):
    passages, seen = await retrieved_here(vault, runtime, Semantic(hybrid))
    [passage] = passages
    await assert_the_models_vectors_of_its_sentences(
        hybrid, passage.content, passage.sentence_vectors
    )
    assert len([s for s in seen if "sentence_embeddings" in s]) == 1


async def test_retrieve_without_a_provider_reads_no_sentence_vectors(vault, runtime, hybrid):
    passages, seen = await retrieved_here(vault, runtime, None)
    assert len(passages) == 1 and passages[0].sentence_vectors == {}
    assert not [s for s in seen if "sentence_embeddings" in s]


async def test_retrieve_hands_no_sentence_vectors_of_another_model(vault, runtime, hybrid):
    project_id, document = await ingested_here(vault, runtime)
    async with runtime.sessions() as session:
        await session.exec(
            update(DocumentChunk)
            .where(DocumentChunk.document_id == uuid.UUID(document["id"]))
            .values(embedding_model="openai:an-older-model")
        )
        await session.commit()
        partition = DataPartition.of(await session.get(Document, uuid.UUID(document["id"])))
        passages = await retrieve(
            session, partition, Question.read(QUESTION), k=5,
            filters=Filters([uuid.UUID(project_id)]), semantic=Semantic(hybrid),
        )  # fmt: skip
    assert len(passages) == 1 and passages[0].sentence_vectors == {}


async def test_a_search_loads_its_hits_without_their_sentence_vectors(vault, runtime, hybrid):
    project_id, document = await ingested_here(vault, runtime)
    async with runtime.sessions() as session:
        partition = DataPartition.of(await session.get(Document, uuid.UUID(document["id"])))
        with statements(runtime) as seen:
            [hit] = await search_chunks(
                session, partition, QUESTION, k=5, filters=Filters([uuid.UUID(project_id)]),
                semantic=Semantic(hybrid),
            )  # fmt: skip
        with pytest.raises(InvalidRequestError, match="raiseload"):
            hit.chunk.sentence_embeddings  # noqa: B018 (deferred: an access says so, never loads)
    assert not [s for s in seen if "sentence_embeddings" in s]


async def test_reembed_fills_sentence_vectors_a_current_passage_lacks_and_keeps_its_vector(
    vault, runtime, hybrid
):
    _, document = await ingested_here(vault, runtime)
    document_id = uuid.UUID(document["id"])
    table = DocumentChunk.__table__
    async with runtime.engine.begin() as connection:
        await connection.execute(
            update(table).where(table.c.document_id == document_id).values(sentence_embeddings=None)
        )
    before = await vector_and_version(runtime, document_id)
    assert await reembedding.reembed(runtime, document_id) == 1
    assert await reembedding.reembed(runtime, document_id) == 0  # up to date: nothing to do
    [(content, model, blob)] = await stored(runtime, document_id)
    assert model == MODEL
    await assert_the_models_vectors_of_its_sentences(hybrid, content, from_blob(blob))
    # Its vector is left as it was, so processes holding the document's vectors reload nothing.
    assert await vector_and_version(runtime, document_id) == before


async def vector_and_version(runtime, document_id: uuid.UUID) -> tuple[bytes, int]:
    """The passage's stored vector and its document's passages_version."""
    async with runtime.sessions() as session:
        statement = (
            select(DocumentChunk.embedding, Document.passages_version)
            .join(Document, Document.id == DocumentChunk.document_id)
            .where(DocumentChunk.document_id == document_id)
        )
        return tuple((await session.exec(statement)).one())


async def test_reembed_of_passages_without_vectors_stores_their_sentence_vectors(
    vault, runtime, hybrid
):
    project_id = await vault.create_project()
    runtime.embeddings = None  # ingested by words only (monkeypatch restores the provider)
    document = await vault.ingested(CONTRACT.encode(), "conditions.txt", project_id)
    runtime.embeddings = hybrid
    assert await reembedding.reembed(runtime, uuid.UUID(document["id"])) == 1
    [(content, model, blob)] = await stored(runtime, document["id"])
    assert model == MODEL
    await assert_the_models_vectors_of_its_sentences(hybrid, content, from_blob(blob))


@pytest.mark.parametrize("database", ["postgresql", "sqlite"])
async def test_a_database_from_before_sentence_vectors_gets_them_by_reembed(database, tmp_path):
    """Passages with vectors written before migration 0020 (a database of the test's own:
    readiness and `reembed` look at every tenant's passages) are stale until `reembed`
    fills their sentence vectors, and only those."""
    if database == "sqlite":
        await check_a_database_from_before(f"sqlite+aiosqlite:///{tmp_path / 'own.db'}", tmp_path)
        return
    async with own_postgres_database() as url:
        await check_a_database_from_before(url, tmp_path)


async def check_a_database_from_before(url: str, tmp_path) -> None:
    runtime = Runtime.create(await migrated(make_settings(url, tmp_path)))
    try:
        # Written before the downgrade: the models have the columns of later migrations
        # (0021's tenants, 0023's documents); the downgrade drops the sentence vectors.
        tenancy = await Tenancy.create(runtime)
        passage_vectors = random_unit(2, 40)
        _, document_id = await tenancy.document(passage_vectors)
        await _downgrade_to_0019(runtime)
        async with runtime.engine.begin() as connection:
            await connection.execute(
                update(DocumentChunk.__table__).values(content=CONTRACT)
            )  # sentences to embed
        await migrated(runtime.settings)
        provider = ChosenQuestion()
        vectors._readiness.clear()
        readiness = await vectors.search_readiness(provider, runtime.read_engine)
        assert readiness["vectors"] == vectors.SENTENCES_MISSING
        runtime.embeddings = provider
        assert await reembedding.reembed(runtime, document_id) == 2
        vectors._readiness.clear()
        readiness = await vectors.search_readiness(provider, runtime.read_engine)
        assert readiness["vectors"] == "complete"
        vectors._readiness.clear()
        rows = await stored(runtime, document_id)
        for _, _, blob in rows:
            found = from_blob(blob)
            assert set(found) == {key(sentence) for sentence in sentence_texts(CONTRACT)}
            assert all(vector.shape == (DIMENSIONS,) for vector in found.values())
        table = DocumentChunk.__table__
        async with runtime.engine.connect() as connection:
            kept = await connection.execute(
                select(table.c.embedding)
                .where(table.c.document_id == document_id)
                .order_by(table.c.ordinal)
            )
            assert [vectors.from_bytes([blob])[0].tolist() for (blob,) in kept] == (
                passage_vectors.tolist()
            )  # not embedded again: ChosenQuestion would have made them all one vector
    finally:
        await runtime.close()


async def _downgrade_to_0019(runtime: Runtime) -> None:
    def run(sync_connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = sync_connection
        command.downgrade(config, "0019")

    async with runtime.engine.begin() as connection:
        await connection.run_sync(run)
        columns = await connection.run_sync(
            lambda sync: [column["name"] for column in inspect(sync).get_columns("document_chunks")]
        )
    assert "sentence_embeddings" not in columns
