"""Issue 42.2: `DELETE /api/v2/vault/projects/{id}` answers 202 with the deletion as a job (a
project may hold thousands of documents), and the project leaves every list and lookup at
once (404), its documents every list, lookup, search and answer; the job then removes the
documents, their passages and stored files, and the project's row. A `project.deleted` event
is recorded. Another tenant's project is 404 and untouched (tests/security)."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import func
from sqlmodel import col, select

from strongroom.corpus.models import Document, DocumentChunk
from strongroom.vault.models import Project
from tests.vault.conftest import JOB_DEADLINE, Vault, unique_word
from tests.vault.test_document_deletion import blob_files, count, recorded, subscribe


async def delete_project(vault: Vault, project_id: str, status: int = 202, **headers: str):
    response = await vault.client.delete(
        f"/api/v2/vault/projects/{project_id}", headers=vault.headers | headers
    )
    assert response.status_code == status, await response.get_data(as_text=True)
    return await response.get_json()


async def until_removed(runtime, project_id: str) -> None:
    """Wait for the deletion job to remove the project's row (a bound, not a measurement)."""
    gone = uuid.UUID(project_id)
    async with asyncio.timeout(JOB_DEADLINE):
        while await count(runtime, select(func.count()).where(col(Project.id) == gone)):  # noqa: ASYNC110
            await asyncio.sleep(0.1)


async def test_a_deleted_project_is_gone_at_once_and_its_rows_and_files_after(
    vault, runtime, settings
):
    word = unique_word()
    kept_project = await vault.create_project("Kept")
    kept = await vault.ingested(f"The {word} crane arrives Monday.".encode(), "k.txt", kept_project)
    before = blob_files(settings)
    project_id = await vault.create_project("Doomed")
    doomed = [
        await vault.ingested(f"Clause {n}: the {word} bond.".encode(), f"{n}.txt", project_id)
        for n in range(3)
    ]
    assert len(blob_files(settings) - before) == 3

    accepted = await delete_project(vault, project_id)
    assert accepted == {"project_id": project_id, "status": "deleting", "document_count": 3}

    await vault.get(f"/api/v2/vault/projects/{project_id}", 404)
    listed = await vault.get("/api/v2/vault/projects?page_size=100")
    assert project_id not in {item["id"] for item in listed["data"]}
    await vault.get(f"/api/v2/vault/documents?project_id={project_id}", 404)
    documents = await vault.get("/api/v2/vault/documents?page_size=100")
    assert {item["id"] for item in documents["data"]} == {kept["id"]}
    for document in doomed:
        await vault.get(f"/api/v2/vault/documents/{document['id']}", 404)
    hits = (await vault.search(query=word))["data"]
    assert {hit["document_id"] for hit in hits} == {kept["id"]}
    assert (await vault.search(404, query=word, project_ids=[project_id]))["code"] == "not_found"
    upload = await vault.upload(project_id, b"Too late.", "late.txt")
    assert upload.status_code == 404

    await until_removed(runtime, project_id)
    ids = [uuid.UUID(document["id"]) for document in doomed]
    assert await count(runtime, select(func.count()).where(col(Document.id).in_(ids))) == 0
    passages = select(func.count()).where(col(DocumentChunk.document_id).in_(ids))
    assert await count(runtime, passages) == 0
    assert blob_files(settings) - before == set()
    assert len((await vault.search(query=word))["data"]) == 1  # the other project's


async def test_a_replayed_project_delete_answers_its_202(vault):
    project_id = await vault.create_project()
    key = {"Idempotency-Key": f"delete-{uuid.uuid4()}"}
    first = await delete_project(vault, project_id, **key)
    assert await delete_project(vault, project_id, **key) == first
    assert (await delete_project(vault, project_id, 404))["code"] == "not_found"


async def test_deleting_a_project_records_a_project_deleted_event(vault, runtime):
    await subscribe(vault, "project.deleted")
    project_id = await vault.create_project("Announced")
    await vault.ingested(b"One document.", "one.txt", project_id)
    await delete_project(vault, project_id)
    [body] = [
        body
        for body in await recorded(runtime, "project.deleted")
        if body["data"]["id"] == project_id
    ]
    assert body["data"]["name"] == "Announced"
    assert body["data"]["status"] == "active"  # as its GET answered it
    assert body["data"]["document_count"] == 1


async def test_an_unknown_project_is_404(vault):
    assert (await delete_project(vault, str(uuid.uuid4()), 404))["code"] == "not_found"
