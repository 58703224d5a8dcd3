"""An answer given before the request body has arrived reaches the client whole, through a
real `strongroom serve` (Hypercorn): not a connection reset. Before api/unread_body.py a
refused 8 MiB upload was answered with a reset every time, so the client could not tell a
refusal from a lost request. The connection stays usable afterwards."""

from __future__ import annotations

import httpx
import pytest

from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.processes import ServeProcess

EIGHT_MIB = 8 * 1024 * 1024


@pytest.fixture
async def served(postgres_settings):
    runtime = Runtime.create(postgres_settings)
    credential = await issue_credential(runtime)
    await runtime.close()
    server = ServeProcess(postgres_settings)
    server.env["STRONGROOM_UPLOAD_MAX_BYTES"] = str(1024 * 1024)
    async with server, httpx.AsyncClient(base_url=server.base, timeout=30) as client:
        yield client, {"Authorization": f"Bearer {credential.key}"}


def upload(size: int) -> dict:
    return {"files": {"file": ("big.txt", b"x" * size, "text/plain")}, "data": {"project_id": "p"}}


async def answer(client: httpx.AsyncClient, headers: dict, **request) -> tuple[int, str]:
    response = await client.post(headers=headers, **request)
    assert response.headers["content-type"] == "application/problem+json"
    return response.status_code, response.json()["code"]


async def test_an_upload_refused_for_its_key_gets_the_401(served):
    client, _ = served
    bad_key = {"Authorization": "Bearer ak_test_" + "x" * 40}
    for _ in range(3):
        request = upload(EIGHT_MIB) | {"url": "/api/v2/vault/documents"}
        assert await answer(client, bad_key, **request) == (401, "invalid_api_key")


async def test_an_upload_over_the_limit_gets_the_413_and_the_connection_goes_on(served):
    client, headers = served
    request = upload(EIGHT_MIB) | {"url": "/api/v2/vault/documents"}
    assert await answer(client, headers, **request) == (413, "file_too_large")
    assert (await client.get("/api/v2/me", headers=headers)).status_code == 200


async def test_a_json_body_over_the_limit_gets_the_413(served):
    client, headers = served
    request = {
        "url": "/api/v2/vault/projects",
        "content": b'{"name": "' + b"x" * EIGHT_MIB + b'"}',
        "headers": headers | {"Content-Type": "application/json"},
    }
    response = await client.post(**request)
    assert (response.status_code, response.json()["code"]) == (413, "payload_too_large")
