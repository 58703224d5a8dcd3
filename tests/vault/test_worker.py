"""D46: a job is never stuck `running` when its process dies. On PostgreSQL a real
`strongroom worker` is killed mid-ingestion and the next worker retries the job; the embedded
default resumes, on start, the jobs its previous run left. Chunks are never duplicated."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import text as sql
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import delete, func, select, update

from strongroom.app import create_app
from strongroom.corpus.models import Document, DocumentChunk
from strongroom.ingest.chunking import chunk_pages
from strongroom.jobs.models import Job
from tests.vault.conftest import JOB_DEADLINE, Vault


async def chunk_count(runtime, document_id: str) -> int:
    async with runtime.sessions() as session:
        statement = select(func.count()).where(DocumentChunk.document_id == uuid.UUID(document_id))
        return (await session.exec(statement)).one()


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_a_job_of_a_killed_worker_is_retried_and_ends_succeeded(vault, worker, runtime):
    # Large enough that chunking and indexing take a few seconds: time to kill the worker.
    text = (
        "The contractor shall complete the works by the date for completion. " * 40 + "\n\n"
    ) * 6000
    project_id = await vault.create_project()
    response = await vault.upload(project_id, text.encode(), "long.txt")
    document = await response.get_json()
    job_path = f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}"
    # A bound for a hang, not a measurement: on a loaded machine the worker may take a while.
    async with asyncio.timeout(JOB_DEADLINE):
        while (job := await vault.get(job_path))["status"] == "pending":  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    assert job["status"] == "running", "the job ended before the worker could be killed"
    await worker.kill_and_restart()
    finished = await vault.wait_for_job(document["ingestion_job_id"])
    assert finished["status"] == "succeeded", finished["error"]
    assert (await vault.get(f"/api/v2/vault/documents/{document['id']}"))["status"] == "ready"
    assert await chunk_count(runtime, document["id"]) == len(chunk_pages([text]))


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_the_embedded_default_resumes_jobs_a_dead_process_left_running(
    vault, runtime, settings
):
    text = "Resumed after a crash. " * 200
    project_id = await vault.create_project()
    document = await vault.ingested(text.encode(), "resume.txt", project_id)
    document_id, job_id = uuid.UUID(document["id"]), uuid.UUID(document["ingestion_job_id"])
    # As if the process died mid-job: running, no chunks yet, the document processing.
    async with runtime.sessions() as session:
        await session.exec(delete(DocumentChunk).where(DocumentChunk.document_id == document_id))
        await session.exec(update(Job).where(Job.id == job_id).values(status="running"))
        await session.exec(
            update(Document).where(Document.id == document_id).values(status="processing")
        )
        await session.commit()
    restarted = create_app(settings)
    async with restarted.test_app():
        await restarted.extensions["strongroom"].jobs.idle()
    job = await vault.get(f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}")
    assert job["status"] == "succeeded"
    assert (await vault.get(f"/api/v2/vault/documents/{document['id']}"))["status"] == "ready"
    assert await chunk_count(runtime, document["id"]) == len(chunk_pages([text]))


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_stopping_the_embedded_default_finishes_its_running_job_and_frees_the_database(
    settings, make_credential, runtime
):
    """The CI failure this guards against: an app stopped right after an upload cancelled its
    ingestion mid-write and left SQLite's write lock held, so the next writer timed out."""
    app = create_app(settings)
    async with app.test_app():
        credential = await make_credential()
        vault = Vault(app.test_client(), credential.headers)
        project_id = await vault.create_project()
        response = await vault.upload(project_id, b"Stopped straight after. " * 400, "s.txt")
        assert response.status_code == 202
        document = await response.get_json()
    async with runtime.sessions() as session:
        job = await session.get(Job, uuid.UUID(document["ingestion_job_id"]))
        assert job is not None and job.status == "succeeded"
    engine = create_async_engine(settings.resolved_database_url, connect_args={"timeout": 0})
    try:
        async with engine.begin() as connection:  # fails at once if the write lock is held
            await connection.execute(sql("CREATE TABLE IF NOT EXISTS lock_probe (x INTEGER)"))
            await connection.execute(sql("DROP TABLE lock_probe"))
    finally:
        await engine.dispose()
