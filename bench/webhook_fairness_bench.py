"""Issue 44, item 1: one tenant's webhook endpoints that hang, and another tenant's delivery.

    .venv/bin/python bench/webhook_fairness_bench.py [--backends postgresql sqlite]
        [--documents 40] [--limit 1200]

Tenant A registers 20 endpoints that take the request and never answer (an asyncio server
here) and uploads `--documents` text documents 0.2 s apart: each document's `document.ready`
goes to all 20, and every attempt lasts the 10 s timeout. Once A's documents are all
ingested (its events all recorded), tenant B (one endpoint, a receiver that answers 204 at
once) uploads one document. Measured:
B's wait, from its event's `timestamp` (its job's end) to its arrival at B's receiver; and
A's attempts, at most in flight at once and in all by then. Default settings otherwise
(8 delivery slots, 10 s timeout); PostgreSQL: `strongroom serve` and one `strongroom worker`
(job concurrency 2); SQLite: `strongroom dev`. `--limit`: give up waiting for B after this.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from stack import (
    Deployment,
    api_server,
    credentials,
    deployment,
    parser,
    print_footer,
    print_header,
    worker_process,
)
from vault_bench import create_project
from webhooks_bench import Receiver, upload_all

SETTINGS = {"STRONGROOM_WEBHOOKS_ALLOW_PRIVATE_URLS": "true"}
ENDPOINTS = 20


class Hanging:
    """Endpoints that never answer: each request stays open until the sender gives up."""

    def __init__(self) -> None:
        self.requests = 0
        self.open: Counter[str] = Counter()
        self.most_open = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        if line:
            path = line.split()[1].decode()
            self.requests += 1
            self.open[path] += 1
            self.most_open = max(self.most_open, self.open.total())
            try:
                while await reader.read(65536):
                    pass
            except ConnectionError:
                pass
            finally:
                self.open[path] -= 1
        writer.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()


async def endpoint(client: httpx.AsyncClient, url: str) -> None:
    response = await client.post(
        "/api/v2/webhooks/endpoints", json={"url": url, "events": ["document.ready"]}
    )
    response.raise_for_status()


async def until_ingested(client: httpx.AsyncClient, project_id: str, count: int) -> None:
    while True:
        response = await client.get(
            "/api/v2/vault/documents", params={"project_id": project_id, "limit": 100}
        )
        response.raise_for_status()
        statuses = [document["status"] for document in response.json()["data"]]
        if len(statuses) >= count and "processing" not in statuses:
            return
        await asyncio.sleep(0.5)


async def run_backend(deployed: Deployment, documents: int, limit: float) -> dict:
    hanging = Hanging()
    port = await hanging.start()
    receiver = Receiver()
    receiver.start()
    key_a, key_b = (each.key for each in await credentials(deployed, "tenant-a", "tenant-b"))
    try:
        async with contextlib.AsyncExitStack() as stack:
            base = await stack.enter_async_context(api_server(deployed, **SETTINGS))
            if deployed.is_postgres:
                await stack.enter_async_context(worker_process(deployed, 2, **SETTINGS))
            a = httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key_a}"})
            b = httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key_b}"})
            async with a, b:
                for n in range(ENDPOINTS):
                    await endpoint(a, f"http://127.0.0.1:{port}/a/{n}")
                project_a = await create_project(a, key_a)
                await upload_all(a, project_a, documents, 0.2)
                await until_ingested(a, project_a, documents)  # A's events all recorded
                await endpoint(b, f"http://127.0.0.1:{receiver.port}/b")
                await upload_all(b, await create_project(b, key_b), 1, 0)
                deadline = time.monotonic() + limit
                while not receiver.arrivals and time.monotonic() < deadline:  # noqa: ASYNC110  (another thread)
                    await asyncio.sleep(0.05)
    finally:
        hanging.close()
        receiver.stop()
    waited = None
    if receiver.arrivals:
        arrived, _, payload = receiver.arrivals[0]
        waited = arrived - datetime.fromisoformat(payload["timestamp"]).timestamp()
    return {
        "backend": deployed.backend,
        "waited": waited,
        "most_open": hanging.most_open,
        "requests": hanging.requests,
    }


def main() -> None:
    arguments = parser(__doc__, backends=["postgresql", "sqlite"])
    arguments.add_argument("--documents", type=int, default=40)
    arguments.add_argument("--limit", type=float, default=1200.0)
    options = arguments.parse_args()
    started = print_header(
        "| setup | A's documents | B's delivery waited | A's attempts in flight, most "
        "| A's attempts by then |"
    )
    for backend in options.backends:
        with deployment(backend, "fairness") as deployed:
            result = asyncio.run(run_backend(deployed, options.documents, options.limit))
        waited = result["waited"]
        cell = f"{waited * 1000:.0f} ms" if waited is not None else f"> {options.limit:g} s"
        print(f"| {backend} | {options.documents} | {cell} | {result['most_open']} | "
              f"{result['requests']} |", flush=True)  # fmt: skip
    print_footer(started)


if __name__ == "__main__":
    main()
