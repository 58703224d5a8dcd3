"""Server-Sent Events through a real `strongroom serve` (Hypercorn), where framing matters:
the in-process test client would accept a stream a real HTTP server refuses to send."""

from __future__ import annotations

import asyncio
import json
import urllib.request

from strongroom.runtime import Runtime
from tests.chat.conftest import parse_events
from tests.conftest import issue_credential
from tests.processes import ServeProcess


def stream(url: str, key: str, body: dict, headers: dict[str, str] | None = None):
    """POST and read the whole event stream (blocking: run it in a thread)."""
    request = urllib.request.Request(  # noqa: S310 (a local test server)
        url,
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            **(headers or {}),
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


async def test_a_chat_stream_is_sent_chunked_by_a_real_server(postgres_settings):
    runtime = Runtime.create(postgres_settings)
    credential = await issue_credential(runtime)
    await runtime.close()
    async with ServeProcess(postgres_settings) as server:
        url = server.base + "/api/v2/chat/stream"
        question = {"query": "What is the retention?"}
        status, headers, body = await asyncio.to_thread(
            stream, url, credential.key, question, {"Idempotency-Key": "served-stream"}
        )
        _, replay_headers, replayed = await asyncio.to_thread(
            stream, url, credential.key, question, {"Idempotency-Key": "served-stream"}
        )
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in headers
    kinds = [kind for kind, _ in parse_events(body)]
    assert kinds[0] == "progress" and kinds[-1] == "done" and "delta" in kinds
    assert replay_headers["idempotent-replayed"] == "true"
    assert replayed == body
