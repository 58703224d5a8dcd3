"""/mcp is served by `strongroom serve` itself (issue 20), with several workers: the transport
is stateless, so each request may land on any worker (or replica)."""

from __future__ import annotations

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.mcp.test_tools import call, expected_tools
from tests.processes import ServeProcess


async def test_strongroom_serve_with_two_workers_serves_mcp(postgres_settings):
    runtime = Runtime.create(postgres_settings)
    credential = await issue_credential(runtime)
    await runtime.close()
    async with ServeProcess(postgres_settings, 2) as server:
        for mode in ("legacy", "2026-07-28"):
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {credential.key}"})
            transport = streamable_http_client(f"{server.base}/mcp", http_client=http)
            async with Client(transport, mode=mode) as client:
                assert {tool.name for tool in (await client.list_tools()).tools} == (
                    expected_tools()
                )
                for _ in range(6):
                    me = await call(client, "meta_me")
                    assert me["api_key_id"] == str(credential.api_key.id)
            await http.aclose()
