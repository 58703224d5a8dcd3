"""Hybrid search (issue 16) with the offline `wordllama` provider, on both backends: the
passages' vectors stored by `reembed` with the provider's model, and the ranking by meaning
lifting the passage a question means above the one that only shares its words. The
embeddings are the real WordLlama table from its wheel, no mock."""

from __future__ import annotations

import uuid

import pytest
from sqlmodel import select

from strongroom.corpus.models import DocumentChunk
from strongroom.embeddings.wordllama import MODEL, WordLlamaEmbeddings
from strongroom.retrieval import vectors
from tests.vault import test_hybrid_search as minilm_tests

# The clause and the note of the MiniLM tests; its words find only the note ("site"), its
# meaning is the clause's.
QUESTION = "which clothes are required on the site"


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbeddings:
    return WordLlamaEmbeddings()


@pytest.fixture
def hybrid(runtime, wordllama, monkeypatch) -> WordLlamaEmbeddings:
    monkeypatch.setattr(runtime, "embeddings", wordllama)
    vectors._readiness.clear()
    yield wordllama
    vectors._readiness.clear()


async def contract(vault, runtime) -> tuple[str, list[str]]:
    project_id, documents = await minilm_tests.contract(vault, runtime)
    return project_id, [document["id"] for document in documents]


async def test_reembed_stores_256_dimension_vectors_named_by_the_model(vault, runtime, hybrid):
    _, documents = await contract(vault, runtime)
    async with runtime.sessions() as session:
        statement = select(DocumentChunk).where(
            DocumentChunk.document_id == uuid.UUID(documents[0])
        )
        [chunk] = (await session.exec(statement)).all()
    assert chunk.embedding_model == MODEL and len(chunk.embedding) == 256 * 4


async def test_hybrid_search_ranks_the_clause_the_question_means_first(vault, runtime, hybrid):
    project_id, (clause, note) = await contract(vault, runtime)
    hits = (await vault.search(query=QUESTION, project_ids=[project_id]))["data"]
    assert [hit["document_id"] for hit in hits] == [clause, note]


async def test_by_words_only_the_same_search_finds_the_note(vault, runtime, hybrid, monkeypatch):
    project_id, (_, note) = await contract(vault, runtime)
    monkeypatch.setattr(runtime, "embeddings", None)
    hits = (await vault.search(query=QUESTION, project_ids=[project_id]))["data"]
    assert [hit["document_id"] for hit in hits] == [note]
