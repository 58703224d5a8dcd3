"""Issue 42.1: `POST /api/v2/vault/documents/{id}/reprocess` answers 202 and ingests the
stored file again, keeping the id: the document is `processing` under a new ingestion job,
then `ready` with its passages replaced, never doubled."""

from __future__ import annotations

import uuid

from sqlalchemy import func
from sqlmodel import col, select

from strongroom.corpus.models import DocumentChunk
from tests.vault.conftest import Vault, unique_word
from tests.vault.test_document_deletion import count


async def reprocess(vault: Vault, document_id: str, status: int = 202, **headers: str) -> dict:
    response = await vault.client.post(
        f"/api/v2/vault/documents/{document_id}/reprocess", headers=vault.headers | headers
    )
    assert response.status_code == status, await response.get_data(as_text=True)
    return await response.get_json()


async def test_a_reprocessed_document_keeps_its_id_and_is_ingested_again(vault, runtime):
    word = unique_word()
    project_id = await vault.create_project()
    document = await vault.ingested(
        f"The {word} bond is ten per cent.".encode(), "b.txt", project_id
    )
    passages = select(func.count()).where(
        col(DocumentChunk.document_id) == uuid.UUID(document["id"])
    )
    before = await count(runtime, passages)

    accepted = await reprocess(vault, document["id"])
    assert accepted["id"] == document["id"]
    assert accepted["status"] == "processing"
    assert accepted["ingestion_job_id"] != document["ingestion_job_id"]
    job = await vault.wait_for_job(accepted["ingestion_job_id"])
    assert job["status"] == "succeeded"

    again = await vault.get(f"/api/v2/vault/documents/{document['id']}")
    assert again["status"] == "ready" and again["ingestion_job_id"] == job["id"]
    assert await count(runtime, passages) == before  # replaced, not added
    hits = (await vault.search(query=word))["data"]
    assert [hit["document_id"] for hit in hits] == [document["id"]]
    old = await vault.get(f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}")
    assert old["status"] == "succeeded"  # the first job is kept


async def test_a_replayed_reprocess_answers_its_202_and_queues_one_job(vault):
    project_id = await vault.create_project()
    document = await vault.ingested(b"Once more.", "o.txt", project_id)
    key = {"Idempotency-Key": f"reprocess-{uuid.uuid4()}"}
    first = await reprocess(vault, document["id"], **key)
    assert await reprocess(vault, document["id"], **key) == first
    await vault.wait_for_job(first["ingestion_job_id"])
    assert (await vault.get(f"/api/v2/vault/documents/{document['id']}"))[
        "ingestion_job_id"
    ] == first["ingestion_job_id"]


async def test_reprocessing_an_unknown_document_is_404(vault):
    assert (await reprocess(vault, str(uuid.uuid4()), 404))["code"] == "not_found"
