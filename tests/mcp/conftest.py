"""The app served by Hypercorn on a real 127.0.0.1 port in the test's event loop, so that the
official MCP SDK client talks Streamable HTTP to /mcp exactly as an assistant would, and its
OAuth flow follows the real discovery documents and redirects (whose URLs hold the port)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx2
import pytest
from hypercorn.asyncio import serve
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from quart import Quart

from strongroom.app import create_app
from strongroom.runtime import Runtime
from strongroom.server import hypercorn_config
from tests.conftest import REDIS_URL, make_settings, migrated, own_postgres_database
from tests.processes import WorkerProcess, free_port


@dataclass
class Served:
    app: Quart
    base: str

    @property
    def runtime(self) -> Runtime:
        return self.app.extensions["strongroom"]

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    def client(self, authorization: str | None = None, *, auth=None, **options) -> Client:
        """The SDK's client on /mcp, sending `authorization` on every request, or
        authorizing with `auth` (the SDK's OAuthClientProvider)."""
        headers = {"Authorization": authorization} if authorization else {}
        http = httpx2.AsyncClient(headers=headers, auth=auth, timeout=60)
        return Client(streamable_http_client(self.mcp_url, http_client=http), **options)


@contextlib.asynccontextmanager
async def serving(settings, port: int) -> AsyncIterator[Served]:
    app = create_app(settings)
    stop = asyncio.Event()
    base = f"http://127.0.0.1:{port}"
    task = asyncio.create_task(
        serve(app, hypercorn_config("127.0.0.1", port), shutdown_trigger=stop.wait)
    )
    async with httpx2.AsyncClient() as probe:
        for _ in range(200):
            try:
                if (await probe.get(f"{base}/healthz")).status_code == 200:
                    break
            except httpx2.TransportError:
                await asyncio.sleep(0.05)
        else:
            raise RuntimeError("the app did not start")
    try:
        yield Served(app, base)
    finally:
        stop.set()
        await task


@pytest.fixture(scope="session")
async def served(redis_prefix, tmp_path_factory) -> AsyncIterator[Served]:
    """Production's setup: PostgreSQL, Redis and a `strongroom worker` for the jobs, on a
    database of its own (its worker must not take the other tests' jobs)."""
    port = free_port()
    async with own_postgres_database() as url:
        settings = await migrated(
            make_settings(
                url,
                tmp_path_factory.mktemp("data-mcp"),
                base_url=f"http://127.0.0.1:{port}",
                redis_url=REDIS_URL,
                redis_prefix=f"{redis_prefix}mcp:",
            )
        )
        async with WorkerProcess(settings), serving(settings, port) as served:
            yield served


@pytest.fixture(scope="session")
async def served_embedded(tmp_path_factory) -> AsyncIterator[Served]:
    """The embedded default (`strongroom dev`): SQLite, in-process stores and jobs, in a
    database file of its own (its in-process jobs must not take the other tests')."""
    port = free_port()
    data_dir = tmp_path_factory.mktemp("data-mcp-embedded")
    settings = await migrated(
        make_settings(
            f"sqlite+aiosqlite:///{data_dir / 'strongroom.db'}", data_dir,
            base_url=f"http://127.0.0.1:{port}",
        )
    )  # fmt: skip
    async with serving(settings, port) as served:
        yield served
