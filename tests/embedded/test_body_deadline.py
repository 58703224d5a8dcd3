"""Issue 28: every request body has a read deadline, `/mcp` included. A body that stalls is
answered 408 `request_timeout` (a problem, never a 500), through a real `strongroom serve`
(Hypercorn), whether or not the request carries a credential; the server goes on."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.processes import ServeProcess


@pytest.fixture
async def served(postgres_settings):
    runtime = Runtime.create(postgres_settings)
    credential = await issue_credential(runtime)
    await runtime.close()
    server = ServeProcess(postgres_settings)
    server.env["STRONGROOM_UPLOAD_IDLE_TIMEOUT_SECONDS"] = "1"
    server.env["STRONGROOM_REQUEST_BODY_TIMEOUT_SECONDS"] = "2"
    async with server:
        yield server, credential.key


async def stalled(server: ServeProcess, path: str, key: str | None, sent: bytes) -> tuple:
    """POST `path` declaring a 1,000-byte JSON body, send `sent` of it, and wait for the
    answer: (status, headers text, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    head = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: "
        + ("application/x-www-form-urlencoded" if "oauth" in path else "application/json"),
        "Accept: application/json, text/event-stream",
        "Content-Length: 1000",
    ]
    if key:
        head.append(f"Authorization: Bearer {key}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + sent)
    await writer.drain()
    try:
        async with asyncio.timeout(30):
            answer = await reader.read(-1)  # the server closes: Connection: close
    finally:
        writer.close()
    headers, _, body = answer.partition(b"\r\n\r\n")
    status = int(headers.split(b" ", 2)[1])
    return status, headers.decode("latin-1").lower(), body


@pytest.mark.parametrize(
    ("path", "with_key"),
    [("/api/v2/oauth/token", False), ("/api/v2/vault/projects", True), ("/mcp", True)],
    ids=["oauth-token-no-credential", "json-endpoint", "mcp"],
)
@pytest.mark.parametrize("sent", [b"", b'{"name": "'], ids=["nothing-sent", "part-sent"])
async def test_a_stalled_body_is_answered_408_request_timeout(served, path, with_key, sent):
    server, key = served
    status, headers, body = await stalled(server, path, key if with_key else None, sent)
    assert status == 408
    assert "application/problem+json" in headers
    assert json.loads(body)["code"] == "request_timeout"
    async with httpx.AsyncClient(base_url=server.base) as client:
        assert (await client.get("/healthz")).status_code == 200


async def test_a_body_that_trickles_in_is_cut_at_its_total_deadline(served):
    server, key = served
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        b"POST /api/v2/vault/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\nAuthorization: Bearer " + key.encode() + b"\r\n\r\n"
    )
    started = asyncio.get_running_loop().time()

    async def trickle() -> None:
        for _ in range(100):
            writer.write(b" ")  # a byte every half second: never idle for 1 s
            await writer.drain()
            await asyncio.sleep(0.5)

    sending = asyncio.create_task(trickle())
    try:
        async with asyncio.timeout(30):
            answer = await reader.read(-1)
    finally:
        sending.cancel()
        writer.close()
    assert answer.startswith(b"HTTP/1.1 408")
    assert asyncio.get_running_loop().time() - started < 10
