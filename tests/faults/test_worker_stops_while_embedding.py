"""Issue 50: a worker given SIGTERM while it made a large document's vectors did not stop
(40 s, then SIGKILL): the embedding ran in one thread outside the job machinery. Now a
document's vectors are a resumable job, made a piece at a time: SIGTERM stops it at once,
the job goes back to `pending` (its attempt not counted) and is queued again, and every piece
is written whole or not at all. The worker runs the real offline model (`minilm`)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from sqlalchemy import func, select

from strongroom.corpus.models import DocumentChunk, DocumentMeaning
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.faults.alone import queued_again, runtime_of_its_own
from tests.processes import WorkerProcess
from tests.vault.seeding import new_project, ready_document, store

PASSAGES = 600  # minutes of one core: far more than the test waits
GRACE_SECONDS = 120  # a worker that waited for its grace would fail the bound below


async def test_a_worker_making_a_documents_vectors_stops_at_once_and_the_job_resumes(
    tmp_path: Path, redis_prefix: str
):
    async with runtime_of_its_own(tmp_path, redis_prefix) as runtime:
        document_id, job_id = await document_to_embed(runtime)
        worker = WorkerProcess(
            runtime.settings,
            STRONGROOM_EMBEDDINGS_PROVIDER="minilm",
            STRONGROOM_JOB_SHUTDOWN_GRACE_SECONDS=str(GRACE_SECONDS),
        )
        async with worker:
            await runtime.jobs.enqueue(job_id)
            await until_some_embedded(runtime, document_id)
            worker.process.terminate()
            await asyncio.wait_for(worker.process.wait(), GRACE_SECONDS / 2)
        async with runtime.sessions() as session:
            job = await session.get(Job, job_id)
        assert (job.status, job.attempts) == (JobStatus.PENDING.value, 0)
        done = await embedded(runtime, document_id)
        assert set(done) <= {(True, True), (False, False)}  # nothing half-written
        assert 0 < done.count((True, True)) < PASSAGES
        # Queued again, for another worker or this one when it is back.
        assert await queued_again(runtime, job_id) == 1


async def document_to_embed(runtime: Runtime) -> tuple[uuid.UUID, uuid.UUID]:
    """A ready document of PASSAGES passages without vectors, and its vectors' job."""
    credential = await issue_credential(runtime)
    tenant_id, owner_id = credential.tenant.id, credential.user.id
    project = new_project(tenant_id, owner_id, "test")
    document = ready_document(tenant_id, owner_id, "test", project.id, PASSAGES)
    document.meaning = DocumentMeaning.PENDING.value
    passages = [
        DocumentChunk(
            document_id=document.id,
            tenant_id=tenant_id,
            environment="test",
            project_id=project.id,
            ordinal=n,
            page_number=1,
            content=" ".join(f"Clause {n}.{k}: protect item {k} of part {n}." for k in range(12)),
        )
        for n in range(PASSAGES)
    ]
    await store(runtime, [project], [document], passages)
    job = Job(
        tenant_id=tenant_id,
        environment="test",
        kind=JobKind.REEMBEDDING.value,
        subject_id=document.id,
    )
    async with runtime.sessions() as session:
        session.add(job)
        await session.commit()
    return document.id, job.id


async def embedded(runtime: Runtime, document_id: uuid.UUID) -> list[tuple[bool, bool]]:
    table = DocumentChunk.__table__
    async with runtime.engine.connect() as connection:
        rows = await connection.execute(
            select(table.c.embedding_model, table.c.sentence_embeddings).where(
                table.c.document_id == document_id
            )
        )
        return [(model is not None, blob is not None) for model, blob in rows]


async def until_some_embedded(runtime: Runtime, document_id: uuid.UUID) -> None:
    """Once a few pieces are written (the worker builds or loads the model first)."""
    table = DocumentChunk.__table__
    statement = select(func.count()).where(
        table.c.document_id == document_id, table.c.embedding_model.is_not(None)
    )
    async with asyncio.timeout(180):  # a bound, not a measurement: loaded CI machines
        while True:
            async with runtime.engine.connect() as connection:
                if await connection.scalar(statement) >= 16:
                    return
            await asyncio.sleep(0.2)
