"""A document is ready when its words are in, and its vectors follow as a job of their own
(issue 50), on both backends. The jobs are run here, in this process, by the runner itself
(`run_now`), with a provider that counts what it is asked to embed: not a model (the real
offline one runs in test_hybrid_search.py and test_sentence_vectors.py), because what these
tests check is which work is done, and when it stops."""

from __future__ import annotations

import asyncio
import hashlib
import uuid

import numpy as np
import pytest
from sqlmodel import select

import strongroom.answers.extractive
from strongroom.corpus.models import DocumentChunk
from strongroom.embeddings import EmbeddingError
from strongroom.jobs.fairness import JobDeferred
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.jobs.runner import run_now, stop_resumable_jobs
from strongroom.jobs.turns import in_turn
from strongroom.vault.reembedding import PIECE
from tests.vault.conftest import unique_word
from tests.vault.vectors import HeldQueue

DIMENSIONS = 8


class Counting:
    """An embeddings provider answering each text with a unit vector made from its hash; it
    counts its calls and the texts asked for, and may take `pause` seconds a call (a piece
    of a large document, as the test needs it to be slow enough to stop)."""

    model = "test:counting"
    answer_floor = 0.5

    def __init__(self, pause: float = 0.0) -> None:
        self.pause = pause
        self.calls = 0
        self.texts: list[str] = []
        self._called = asyncio.Event()

    async def called(self, times: int) -> None:
        """Once it has been called `times` times (bounded: a hung job fails the test)."""
        async with asyncio.timeout(60):
            while self.calls < times:
                await self._called.wait()
                self._called.clear()

    async def embed(self, texts) -> np.ndarray:
        self.calls += 1
        self.texts += list(texts)
        self._called.set()
        if self.pause:
            await asyncio.sleep(self.pause)
        rows = [
            np.random.default_rng(
                int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")
            ).standard_normal(DIMENSIONS)
            for t in texts
        ]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), DIMENSIONS)
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


class Failing(Counting):
    async def embed(self, texts) -> np.ndarray:
        raise EmbeddingError("the embeddings upstream is down")


@pytest.fixture
def held(runtime, monkeypatch) -> HeldQueue:
    """The runtime's queue keeps the jobs it is given for the test to run."""
    queue = HeldQueue()
    monkeypatch.setattr(runtime, "jobs", queue)
    return queue


def with_provider(runtime, monkeypatch, provider) -> None:
    monkeypatch.setattr(runtime, "embeddings", provider)
    monkeypatch.setattr(runtime, "_document_remembered", None)


def long_text(word: str, paragraphs: int) -> str:
    """Paragraphs of about 1,000 characters each, each a passage of its own."""
    return "\n\n".join(
        f"Clause {n}. "
        + " ".join(f"The {word} item {n} part {k} shall be done." for k in range(25))
        for n in range(paragraphs)
    )


async def upload(vault, text: str) -> dict:
    project_id = await vault.create_project()
    response = await vault.upload(project_id, text.encode(), "spec.txt")
    assert response.status_code == 202, await response.get_json()
    return await response.get_json()


async def vectors_job_of(runtime, document_id: str) -> Job:
    async with runtime.sessions() as session:
        statement = select(Job).where(
            Job.subject_id == uuid.UUID(document_id), Job.kind == JobKind.REEMBEDDING.value
        )
        return (await session.exec(statement)).one()


async def embedded(runtime, document_id: str) -> list[tuple[bool, bool]]:
    """(has a vector, has sentence vectors) of each of the document's passages, in order."""
    table = DocumentChunk.__table__
    async with runtime.engine.connect() as connection:
        rows = await connection.execute(
            select(table.c.embedding_model, table.c.sentence_embeddings)
            .where(table.c.document_id == uuid.UUID(document_id))
            .order_by(table.c.ordinal)
        )
        return [(model is not None, blob is not None) for model, blob in rows]


async def test_a_document_is_ready_when_its_words_are_in_and_its_meaning_follows(
    vault, runtime, held, monkeypatch
):
    provider = Counting()
    with_provider(runtime, monkeypatch, provider)
    word = unique_word()
    document = await upload(vault, long_text(word, 3))
    assert document["meaning"] == "pending"
    [ingestion] = held.queued
    await run_now(runtime, ingestion)

    found = await vault.get(f"/api/v2/vault/documents/{document['id']}")
    assert (found["status"], found["meaning"]) == ("ready", "pending")
    assert provider.texts == []  # no vector made before it was ready
    assert await embedded(runtime, document["id"]) == [(False, False)] * 3
    hits = (await vault.search(query=word))["data"]
    assert {hit["document_id"] for hit in hits} == {document["id"]}  # by its words

    job = await vectors_job_of(runtime, document["id"])
    assert held.queued == [ingestion, job.id]
    await run_now(runtime, job.id)
    found = await vault.get(f"/api/v2/vault/documents/{document['id']}")
    assert (found["status"], found["meaning"]) == ("ready", "complete")
    assert await embedded(runtime, document["id"]) == [(True, True)] * 3


async def test_without_a_provider_no_vectors_job_is_queued_and_meaning_is_off(vault, runtime, held):
    document = await upload(vault, long_text(unique_word(), 1))
    assert document["meaning"] == "off"
    await run_now(runtime, held.queued[0])
    found = await vault.get(f"/api/v2/vault/documents/{document['id']}")
    assert (found["status"], found["meaning"]) == ("ready", "off")
    assert len(held.queued) == 1


async def test_sentences_are_cut_in_the_bounded_child_not_in_this_process(
    vault, runtime, held, monkeypatch
):
    def not_here(content: str) -> list[str]:
        raise AssertionError("sentences cut in the service process")

    with_provider(runtime, monkeypatch, Counting())
    document = await upload(vault, long_text(unique_word(), 2))
    await run_now(runtime, held.queued[0])
    monkeypatch.setattr(strongroom.answers.extractive, "sentence_texts", not_here)
    await run_now(runtime, (await vectors_job_of(runtime, document["id"])).id)
    found = await vault.get(f"/api/v2/vault/documents/{document['id']}")
    assert found["meaning"] == "complete"


async def test_deleting_the_document_stops_its_vectors_job(vault, runtime, held, monkeypatch):
    provider = Counting(pause=0.3)
    with_provider(runtime, monkeypatch, provider)
    paragraphs = 12 * PIECE
    document = await upload(vault, long_text(unique_word(), paragraphs))
    await run_now(runtime, held.queued[0])
    job = await vectors_job_of(runtime, document["id"])
    running = asyncio.create_task(run_now(runtime, job.id))
    await provider.called(1)
    response = await vault.client.delete(
        f"/api/v2/vault/documents/{document['id']}", headers=vault.headers
    )
    assert response.status_code in (200, 204), await response.get_json()
    async with asyncio.timeout(60):  # a bound for a hung job, not a measurement
        await running
    assert provider.calls < paragraphs // PIECE  # it stopped, not ran to the end


async def test_a_stopped_vectors_job_goes_back_to_pending_and_resumes_where_it_stopped(
    vault, runtime, held, monkeypatch
):
    first = Counting(pause=0.2)
    with_provider(runtime, monkeypatch, first)
    pieces = 10
    document = await upload(vault, long_text(unique_word(), pieces * PIECE))
    await run_now(runtime, held.queued[0])
    job = await vectors_job_of(runtime, document["id"])
    running = asyncio.create_task(run_now(runtime, job.id))
    await first.called(2)
    assert stop_resumable_jobs() == 1  # as a process given SIGTERM does
    with pytest.raises(JobDeferred):
        async with asyncio.timeout(60):
            await running
    stopped = await vectors_job_of(runtime, document["id"])
    assert (stopped.status, stopped.attempts) == (JobStatus.PENDING.value, 0)
    done = await embedded(runtime, document["id"])
    kept = done.count((True, True))
    assert 0 < kept < len(done)
    assert set(done) <= {(True, True), (False, False)}  # nothing half-written
    assert done == sorted(done, reverse=True)  # from the start of the document

    second = Counting()
    with_provider(runtime, monkeypatch, second)
    await run_now(runtime, job.id)
    assert await embedded(runtime, document["id"]) == [(True, True)] * len(done)
    table = DocumentChunk.__table__
    async with runtime.engine.connect() as connection:
        contents = (
            await connection.execute(
                select(table.c.content)
                .where(table.c.document_id == uuid.UUID(document["id"]))
                .order_by(table.c.ordinal)
            )
        ).scalars()
        contents = list(contents)
    assert not set(second.texts) & set(contents[:kept])  # the kept pieces were not redone
    found = await vault.get(f"/api/v2/vault/documents/{document['id']}")
    assert found["meaning"] == "complete"


async def test_a_failing_provider_leaves_the_document_ready_by_words_and_meaning_failed(
    vault, runtime, held, monkeypatch
):
    with_provider(runtime, monkeypatch, Failing())
    word = unique_word()
    document = await upload(vault, long_text(word, 1))
    await run_now(runtime, held.queued[0])
    job = await vectors_job_of(runtime, document["id"])
    await run_now(runtime, job.id)
    found = await vault.get(f"/api/v2/vault/documents/{document['id']}")
    assert (found["status"], found["meaning"]) == ("ready", "failed")
    assert (await vectors_job_of(runtime, document["id"])).status == JobStatus.FAILED.value
    monkeypatch.setattr(runtime, "embeddings", None)
    hits = (await vault.search(query=word))["data"]
    assert [hit["document_id"] for hit in hits] == [document["id"]]


async def test_a_documents_vectors_wait_behind_every_job_a_client_waits_on(
    runtime, make_credential
):
    """Words before meaning: a vectors job of a tenant with no other job is queued behind an
    ingestion of a tenant with many pending; among vectors jobs, tenants take turns."""
    busy, idle = await make_credential(), await make_credential()
    async with runtime.sessions() as session:
        for tenant in (busy.tenant, busy.tenant, busy.tenant):
            session.add(Job(tenant_id=tenant.id, environment="test",
                            kind=JobKind.INGESTION.value, subject_id=uuid.uuid4()))  # fmt: skip
        await session.flush()
        ingestion = Job(tenant_id=busy.tenant.id, environment="test",
                        kind=JobKind.INGESTION.value, subject_id=uuid.uuid4())  # fmt: skip
        first, second = (
            Job(tenant_id=tenant.id, environment="test", kind=JobKind.REEMBEDDING.value,
                subject_id=uuid.uuid4())
            for tenant in (idle.tenant, busy.tenant)
        )  # fmt: skip
        session.add_all([ingestion, first])
        await session.flush()
        later = Job(tenant_id=idle.tenant.id, environment="test",
                    kind=JobKind.REEMBEDDING.value, subject_id=uuid.uuid4())  # fmt: skip
        session.add_all([second, later])
        await session.flush()
        behind = await in_turn(session, ingestion)
        assert await in_turn(session, first) < behind  # meaning after any tenant's words
        assert await in_turn(session, later) < await in_turn(session, second)  # turns
        await session.rollback()
