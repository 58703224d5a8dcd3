"""Issue 28: a document is read (extracted, chunked, indexed) in a child process with the
job's memory and CPU limits, on both setups (the ingestion job is the same code in the
embedded default's in-process runner and in `strongroom worker`). What a hostile file costs is
that process's, the job fails with a clear code, and no reading outlives its job.

Each test copies an ingested document's row onto a hostile file and runs a new ingestion job
for it with its own runtime (its own limits) through `run_job`, as a worker does."""

from __future__ import annotations

import asyncio
import os
import resource
import uuid
from pathlib import Path

import pytest

from strongroom.corpus.models import Document
from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import run_job
from strongroom.runtime import Runtime
from tests.processes import bounded_children_of
from tests.unit.ingest.hostile import pdf_sharing_one_stream

MiB = 1024 * 1024


async def hostile_ingestion(vault, runtime: Runtime, content: bytes, tmp_path: Path) -> Job:
    """A new document (a copy of an ingested one's row) holding `content`, and its job."""
    project_id = await vault.create_project()
    model = await vault.ingested(b"A plain note.", "note.txt", project_id)
    async with runtime.sessions() as session:
        original = await session.get(Document, uuid.UUID(model["id"]))
    assert original is not None
    source = tmp_path / "hostile"
    source.write_bytes(content)
    document_id, job_id = uuid.uuid4(), uuid.uuid4()
    blob_key = original.blob_key.rsplit("/", 1)[0] + f"/{document_id}"
    await runtime.blobs.put_file(blob_key, source)
    fields = original.model_dump(exclude={"id", "blob_key", "ingestion_job_id", "status"})
    document = Document(
        **fields | {"document_type": "pdf", "content_type": "application/pdf"},
        id=document_id,
        blob_key=blob_key,
        ingestion_job_id=job_id,
    )
    job = Job(
        id=job_id,
        tenant_id=original.tenant_id,
        environment=original.environment,
        kind=JobKind.INGESTION.value,
        subject_id=document_id,
    )
    async with runtime.sessions() as session:
        session.add(document)
        session.add(job)
        await session.commit()
    return job


async def ended(runtime: Runtime, job: Job) -> tuple[Job, Document]:
    async with runtime.sessions() as session:
        found = await session.get(Job, job.id)
        document = await session.get(Document, job.subject_id)
    assert found is not None and document is not None
    return found, document


@pytest.fixture
async def limited(settings):
    runtime = Runtime.create(
        settings.model_copy(update={"job_cpu_limit_seconds": 2.0, "job_timeout_seconds": 120.0})
    )
    yield runtime
    await runtime.close()


def own_cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def child_cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


# 10,000 pages sharing one textless-looking stream cost pypdf seconds a page (the issue's).
SLOW_PDF = pdf_sharing_one_stream(10_000, 64 * 1024)


async def test_reading_a_document_costs_a_child_process_not_the_job_runners(
    vault, limited, tmp_path
):
    job = await hostile_ingestion(vault, limited, SLOW_PDF, tmp_path)
    own, children = own_cpu_seconds(), child_cpu_seconds()
    await run_job(limited, job.id)
    finished, document = await ended(limited, job)
    assert finished.status == "failed"
    assert finished.error["code"] == "job_resource_limit"
    assert "CPU time limit of 2 seconds" in finished.error["detail"]
    assert finished.attempts == 1  # not retried
    assert document.status == "failed" and document.error == finished.error
    assert child_cpu_seconds() - children >= 2.0  # the reading's CPU was the child's
    assert own_cpu_seconds() - own < 2.0  # and not this process's (it ran in a thread before)


async def test_a_document_whose_job_times_out_leaves_no_reader_running(vault, settings, tmp_path):
    runtime = Runtime.create(
        settings.model_copy(update={"job_cpu_limit_seconds": 60.0, "job_timeout_seconds": 3.0})
    )
    try:
        job = await hostile_ingestion(vault, runtime, SLOW_PDF, tmp_path)
        # Other runtimes of this test process may keep warm children (issue 41): not these.
        others = set(await asyncio.to_thread(bounded_children_of, os.getpid()))
        await run_job(runtime, job.id)
        finished, document = await ended(runtime, job)
        assert finished.error["code"] == "job_timeout"
        assert document.status == "failed"
        assert set(await asyncio.to_thread(bounded_children_of, os.getpid())) <= others
        assert runtime.work.children == 0
    finally:
        await runtime.close()
