"""Issue 42: a conversation can be renamed (`PATCH /api/v2/conversations/{id}`, `title`) and
deleted with its messages (`DELETE`, 204), scope `chat:write`; another tenant's is 404."""

from __future__ import annotations

import uuid

from sqlalchemy import func
from sqlmodel import col, select

from strongroom.chat.models import Message
from tests.vault.conftest import Vault


async def conversation_of(vault: Vault) -> str:
    project_id = await vault.create_project()
    await vault.ingested(b"The retention is five per cent.", "r.txt", project_id)
    response = await vault.client.post(
        "/api/v2/chat", json={"query": "What is the retention?"}, headers=vault.headers
    )
    assert response.status_code == 200, await response.get_json()
    return (await response.get_json())["conversation_id"]


async def test_a_conversation_is_renamed(vault):
    conversation_id = await conversation_of(vault)
    path = f"/api/v2/conversations/{conversation_id}"
    before = await vault.get(path)
    response = await vault.client.patch(path, json={"title": " Retention "}, headers=vault.headers)
    assert response.status_code == 200, await response.get_json()
    renamed = await response.get_json()
    assert renamed["title"] == "Retention" and renamed["id"] == conversation_id
    # Issue 52: `updated_at` is the latest answer's time (docs/api.md), not the rename's.
    assert renamed["updated_at"] == before["updated_at"]
    assert (await vault.get(path))["title"] == "Retention"
    for body in ({"title": ""}, {"title": None}, {"title": "x" * 256}, {"colour": "red"}):
        response = await vault.client.patch(path, json=body, headers=vault.headers)
        assert response.status_code == 422, body
    assert (await vault.get(path))["title"] == "Retention"


async def test_a_deleted_conversation_is_gone_with_its_messages(vault, runtime):
    conversation_id = await conversation_of(vault)
    path = f"/api/v2/conversations/{conversation_id}"
    response = await vault.client.delete(path, headers=vault.headers)
    assert response.status_code == 204 and await response.get_data() == b""
    assert (await vault.get(path, status=404))["code"] == "not_found"
    listed = await vault.get("/api/v2/conversations?limit=100")
    assert conversation_id not in [item["id"] for item in listed["data"]]
    again = await vault.client.delete(path, headers=vault.headers)
    assert again.status_code == 404
    follow_up = await vault.client.post(
        "/api/v2/chat",
        json={"query": "And the retention?", "conversation_id": conversation_id},
        headers=vault.headers,
    )
    assert follow_up.status_code == 404
    statement = select(func.count()).where(
        col(Message.conversation_id) == uuid.UUID(conversation_id)
    )
    async with runtime.sessions() as session:
        left = (await session.exec(statement)).one()
    assert left == 0


async def test_an_unknown_conversation_is_404(vault):
    path = f"/api/v2/conversations/{uuid.uuid4()}"
    assert (
        await vault.client.patch(path, json={"title": "x"}, headers=vault.headers)
    ).status_code == 404
    assert (await vault.client.delete(path, headers=vault.headers)).status_code == 404
