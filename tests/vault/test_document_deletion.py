"""Issue 42: `DELETE /api/v2/vault/documents/{id}` answers 204; in the same commit the
document, its passages (their vectors and index terms with them) and its ingestion job go,
so no search or answer finds it again; its stored file is removed after the commit; a
`document.deleted` event is recorded for subscribed endpoints. Another tenant's document is
404 and untouched (tests/security/test_isolation_matrix.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from sqlalchemy import func
from sqlmodel import col, select

from strongroom.corpus.models import DocumentChunk
from strongroom.jobs.models import Job
from strongroom.outbox.models import WebhookEvent
from tests.vault.conftest import Vault, unique_word


async def delete(vault: Vault, document_id: str, status: int = 204, **headers: str):
    response = await vault.client.delete(
        f"/api/v2/vault/documents/{document_id}", headers=vault.headers | headers
    )
    assert response.status_code == status, await response.get_data(as_text=True)
    return response


async def count(runtime, statement) -> int:
    async with runtime.sessions() as session:
        return (await session.exec(statement)).one()


async def subscribe(vault: Vault, *events: str) -> None:
    """A webhook endpoint of the vault's tenant for `events`, so that they are recorded."""
    hook = await vault.client.post(
        "/api/v2/webhooks/endpoints",
        json={"url": "https://93.184.216.34/hook", "events": list(events)},
        headers=vault.headers,
    )
    assert hook.status_code == 201, await hook.get_json()


async def recorded(runtime, event_type: str) -> list[dict]:
    """The bodies of the recorded events of `event_type` (as the outbox records them: other
    test files of this process store rows of their own, with bodies of any shape)."""
    statement = select(WebhookEvent).where(col(WebhookEvent.type) == event_type)
    async with runtime.sessions() as session:
        bodies = [json.loads(event.body) for event in (await session.exec(statement)).all()]
    return [body for body in bodies if isinstance(body, dict) and "data" in body]


def blob_files(settings) -> set[Path]:
    return {path for path in Path(settings.blob_location).rglob("*") if path.is_file()}


async def test_a_deleted_document_is_gone_from_lookups_search_chat_and_storage(
    vault, runtime, settings
):
    word = unique_word()
    project_id = await vault.create_project()
    before = blob_files(settings)
    document = await vault.ingested(
        f"The retention for {word} is five per cent.".encode(), "junk.zip", project_id
    )
    kept = await vault.ingested(f"The {word} site opens at seven.".encode(), "k.txt", project_id)
    stored = blob_files(settings) - before
    assert len(stored) == 2
    assert len((await vault.search(query=word))["data"]) == 2

    response = await delete(vault, document["id"])
    assert await response.get_data() == b""

    assert (await vault.get(f"/api/v2/vault/documents/{document['id']}", 404))["code"] == (
        "not_found"
    )
    await vault.get(f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}", 404)
    listed = await vault.get(f"/api/v2/vault/documents?project_id={project_id}")
    assert [item["id"] for item in listed["data"]] == [kept["id"]]
    hits = (await vault.search(query=word))["data"]
    assert {hit["document_id"] for hit in hits} == {kept["id"]}
    asked = await vault.client.post(
        "/api/v2/chat", json={"query": f"What is the retention for {word}?"}, headers=vault.headers
    )
    cited = {citation["document_id"] for citation in (await asked.get_json())["citations"]}
    assert document["id"] not in cited
    gone = uuid.UUID(document["id"])
    passages = select(func.count()).where(col(DocumentChunk.document_id) == gone)
    assert await count(runtime, passages) == 0
    jobs = select(func.count()).where(col(Job.subject_id) == gone)
    assert await count(runtime, jobs) == 0
    assert len(blob_files(settings) - before) == 1  # the kept document's file only
    await delete(vault, document["id"], 404)


async def test_a_replayed_delete_answers_its_204(vault):
    project_id = await vault.create_project()
    document = await vault.ingested(b"Short lived.", "s.txt", project_id)
    key = {"Idempotency-Key": f"delete-{uuid.uuid4()}"}
    await delete(vault, document["id"], **key)
    replay = await delete(vault, document["id"], **key)
    assert await replay.get_data() == b""
    await delete(vault, document["id"], 404)  # a new key: the document is gone


async def test_deleting_records_a_document_deleted_event(vault, runtime):
    await subscribe(vault, "document.deleted")
    project_id = await vault.create_project()
    document = await vault.ingested(b"Soon deleted.", "d.txt", project_id)
    await delete(vault, document["id"])
    [body] = [
        body
        for body in await recorded(runtime, "document.deleted")
        if body["data"]["id"] == document["id"]
    ]
    assert body["type"] == "document.deleted"
    assert body["data"]["project_id"] == project_id and body["data"]["name"] == "d.txt"


async def test_an_unknown_document_is_404(vault):
    assert (await (await delete(vault, str(uuid.uuid4()), 404)).get_json())["code"] == "not_found"


async def test_a_stored_answer_says_its_cited_document_was_deleted(vault):
    """Issue 42.3: the answer keeps its quoted text; the citation says the document is gone."""
    word = unique_word()
    project_id = await vault.create_project()
    document = await vault.ingested(
        f"The {word} retention is five per cent.".encode(), "r.txt", project_id
    )
    asked = await vault.client.post(
        "/api/v2/chat", json={"query": f"What is the {word} retention?"}, headers=vault.headers
    )
    answer = await asked.get_json()
    assert asked.status_code == 200, answer
    [cited] = [c for c in answer["citations"] if c["document_id"] == document["id"]]
    assert cited["document_deleted"] is False
    path = f"/api/v2/conversations/{answer['conversation_id']}"

    await delete(vault, document["id"])

    stored = (await vault.get(path))["messages"][-1]
    [kept] = [c for c in stored["citations"] if c["document_id"] == document["id"]]
    assert kept["document_deleted"] is True
    assert kept["content"] == cited["content"]
