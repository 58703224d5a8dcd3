"""Issue 52, item 7: deletions racing other calls on the same thing. The loser of a race gets
404 `not_found` (the thing is gone for it), never a 500 (SQLite's `StaleDataError` was one):
a reprocess racing a DELETE of its document, concurrent DELETEs of one document or one
project, and an upload into a project being deleted, which answers 404 or, when it came
first, has its document taken by the deletion with its ingestion job (no failed job row of a
vanished document is left). Each race is run several times with the calls sent together, on
PostgreSQL and SQLite."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import pytest
from sqlalchemy import func
from sqlmodel import col, select

from strongroom.corpus.models import Document
from strongroom.jobs.models import Job
from tests.vault.conftest import Vault
from tests.vault.test_document_deletion import count
from tests.vault.test_project_deletion import until_removed

ROUNDS = 6


async def status_of(response) -> int:
    if response.status_code >= 500:
        raise AssertionError(await response.get_data(as_text=True))
    return response.status_code


async def jobs_of(runtime, document_id: uuid.UUID) -> int:
    return await count(runtime, select(func.count()).where(col(Job.subject_id) == document_id))


async def documents_of(runtime, project_id: str) -> int:
    statement = select(func.count()).where(col(Document.project_id) == uuid.UUID(project_id))
    return await count(runtime, statement)


async def test_a_reprocess_racing_a_delete_of_its_document_loses_with_404(vault: Vault, runtime):
    project_id = await vault.create_project()
    outcomes: Counter[tuple[int, int]] = Counter()
    for round_ in range(ROUNDS):
        document = await vault.ingested(f"Clause {round_}.".encode(), "c.txt", project_id)
        path = f"/api/v2/vault/documents/{document['id']}"
        deleted, reprocessed = await asyncio.gather(
            vault.client.delete(path, headers=vault.headers),
            vault.client.post(f"{path}/reprocess", headers=vault.headers),
        )
        outcome = (await status_of(deleted), await status_of(reprocessed))
        outcomes[outcome] += 1
        assert outcome in {(204, 202), (204, 404)}, outcome
        if outcome[1] == 404:
            assert (await reprocessed.get_json())["code"] == "not_found"
        await vault.get(path, 404)
        # No ingestion job is left of the deleted document, the reprocess's neither.
        assert await jobs_of(runtime, uuid.UUID(document["id"])) == 0
    assert sum(outcomes.values()) == ROUNDS


async def test_concurrent_deletes_of_one_document_answer_one_204_and_404s(vault: Vault):
    project_id = await vault.create_project()
    for round_ in range(ROUNDS):
        document = await vault.ingested(f"Clause {round_}.".encode(), "c.txt", project_id)
        path = f"/api/v2/vault/documents/{document['id']}"
        responses = await asyncio.gather(
            *(vault.client.delete(path, headers=vault.headers) for _ in range(3))
        )
        statuses = sorted([await status_of(response) for response in responses])
        assert statuses == [204, 404, 404]


async def test_concurrent_deletes_of_one_project_answer_one_202_and_404s(vault: Vault, runtime):
    for round_ in range(ROUNDS):
        project_id = await vault.create_project(f"Doomed {round_}")
        await vault.ingested(b"The bond is due.", "b.txt", project_id)
        path = f"/api/v2/vault/projects/{project_id}"
        responses = await asyncio.gather(
            *(vault.client.delete(path, headers=vault.headers) for _ in range(3))
        )
        statuses = sorted([await status_of(response) for response in responses])
        assert statuses == [202, 404, 404]
        for response in responses:
            if response.status_code == 404:
                assert (await response.get_json())["code"] == "not_found"
        await until_removed(runtime, project_id)


async def test_an_upload_into_a_project_being_deleted_is_404_or_deleted_with_it(
    vault: Vault, runtime
):
    outcomes: Counter[int] = Counter()
    for round_ in range(ROUNDS):
        project_id = await vault.create_project(f"Doomed {round_}")
        await vault.ingested(b"The bond is due.", "b.txt", project_id)
        uploaded, deleted = await asyncio.gather(
            vault.upload(project_id, f"Late clause {round_}.".encode(), "late.txt"),
            vault.client.delete(f"/api/v2/vault/projects/{project_id}", headers=vault.headers),
        )
        assert await status_of(deleted) == 202
        outcome = await status_of(uploaded)
        outcomes[outcome] += 1
        assert outcome in {202, 404}
        document = await uploaded.get_json()
        if outcome == 404:
            assert document["code"] == "not_found"
        await until_removed(runtime, project_id)
        assert await documents_of(runtime, project_id) == 0
        if outcome == 202:
            # It came first: its document went with the project, and its ingestion job too
            # (not left `failed` for a document that vanished).
            job_path = f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}"
            await vault.get(job_path, 404)
            assert await jobs_of(runtime, uuid.UUID(document["id"])) == 0
    assert sum(outcomes.values()) == ROUNDS


@pytest.mark.parametrize("released", ["once marked", "once removed"])
async def test_an_upload_that_checked_its_project_before_its_deletion_answers_404(
    vault: Vault, runtime, monkeypatch, released
):
    """The race made certain: the upload has found its project and is storing its file when
    the DELETE of the project commits (and, `once removed`, its job has removed the row)."""
    project_id = await vault.create_project("Doomed")
    storing, go_on = asyncio.Event(), asyncio.Event()
    put_file = runtime.blobs.put_file

    async def put_file_after_the_deletion(key, path):
        storing.set()
        await go_on.wait()
        return await put_file(key, path)

    monkeypatch.setattr(runtime.blobs, "put_file", put_file_after_the_deletion)
    uploading = asyncio.create_task(vault.upload(project_id, b"Late clause.", "late.txt"))
    async with asyncio.timeout(60):
        await storing.wait()
    deleted = await vault.client.delete(
        f"/api/v2/vault/projects/{project_id}", headers=vault.headers
    )
    assert await status_of(deleted) == 202
    if released == "once removed":
        await until_removed(runtime, project_id)
    go_on.set()
    uploaded = await uploading
    assert await status_of(uploaded) == 404
    assert (await uploaded.get_json())["code"] == "not_found"
    await until_removed(runtime, project_id)
    assert await documents_of(runtime, project_id) == 0
