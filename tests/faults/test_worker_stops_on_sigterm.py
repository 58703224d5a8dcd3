"""Issue 28: a worker parsing a hostile PDF did not stop on SIGTERM within 40 s (it waited
for its running jobs, whose parser threads could not be stopped). Now its running jobs get
`job_shutdown_grace_seconds`, then are cancelled, their bounded child processes killed,
and queued again for another worker: the worker stops within its grace period."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from strongroom.corpus.models import DocumentStatus
from strongroom.jobs.models import Job, JobKind
from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.faults.alone import queued_again, runtime_of_its_own
from tests.processes import WorkerProcess, bounded_children_of
from tests.unit.ingest.hostile import pdf_sharing_one_stream
from tests.vault.seeding import new_project, ready_document, store

GRACE_SECONDS = 2


async def test_a_worker_parsing_a_hostile_pdf_stops_within_its_grace_period(
    tmp_path: Path, redis_prefix: str
):
    async with runtime_of_its_own(tmp_path, redis_prefix) as runtime:
        job_id = await hostile_job(runtime, tmp_path)
        worker = WorkerProcess(
            runtime.settings, STRONGROOM_JOB_SHUTDOWN_GRACE_SECONDS=str(GRACE_SECONDS)
        )
        async with worker:
            children = await parsing(runtime, job_id, worker.process.pid)
            worker.process.terminate()
            # A bound on waiting: before the fix the worker had not stopped after 40 s.
            await asyncio.wait_for(worker.process.wait(), 30)
        assert not await asyncio.to_thread(still_running, children)
        # Queued again for another worker, not left `running` for ever.
        assert await queued_again(runtime, job_id) == 1


async def hostile_job(runtime: Runtime, tmp_path: Path) -> uuid.UUID:
    """An ingestion job, queued, for a 10,000-page PDF whose pages share one stream."""
    credential = await issue_credential(runtime)
    tenant_id, owner_id = credential.tenant.id, credential.user.id
    project = new_project(tenant_id, owner_id, "test")
    document = ready_document(tenant_id, owner_id, "test", project.id, 0, "slow.pdf")
    document.document_type, document.content_type = "pdf", "application/pdf"
    document.status = DocumentStatus.PROCESSING.value
    source = tmp_path / "slow.pdf"
    source.write_bytes(pdf_sharing_one_stream(10_000, 64 * 1024))
    await runtime.blobs.put_file(document.blob_key, source)
    await store(runtime, [project], [document], [])
    job = Job(
        id=document.ingestion_job_id,
        tenant_id=tenant_id,
        environment="test",
        kind=JobKind.INGESTION.value,
        subject_id=document.id,
    )
    async with runtime.sessions() as session:
        session.add(job)
        await session.commit()
    await runtime.jobs.enqueue(job.id)
    return job.id


async def parsing(runtime: Runtime, job_id: uuid.UUID, worker_pid: int) -> list[int]:
    """Once the worker runs the job's bounded child: its pids."""
    async with asyncio.timeout(60):
        while True:
            children = await asyncio.to_thread(bounded_children_of, worker_pid)
            if children:
                return children
            await asyncio.sleep(0.2)


def still_running(pids: list[int]) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]
