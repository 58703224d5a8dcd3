"""Webhooks (issues 30, 44): how long from a document's ingestion ending to its
`document.ready` arriving at a receiver, on both setups; and another tenant's delivery while
one tenant's endpoints hang.

    .venv/bin/python bench/webhooks_bench.py [--documents 40] [--backends postgresql sqlite]
        [--fairness [--limit 1200]]

Latency: the receiver's clock at arrival less the event's `timestamp` (set in the transaction
that makes the document `ready`). `--fairness`: tenant A registers 20 endpoints that never
answer and uploads `--documents` texts 0.2 s apart, each event going to all 20 for the 10 s
timeout; once A's documents are ingested, tenant B (one endpoint answering 204) uploads one:
B's wait to its arrival, and A's attempts in flight at most and in all by then. `--limit`:
give up on B after this many seconds. `--chaos` (worker kills, connections cut) is retired:
bench/RESULTS.md, "Retired scripts".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
import time
from collections import Counter
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))

import stack

# One tenant here: its documents may use both of a worker's job slots (issue 28's share off).
SETTINGS = {
    "STRONGROOM_WEBHOOKS_ALLOW_PRIVATE_URLS": "true",
    "STRONGROOM_JOB_SLOTS_KEPT_FOR_OTHER_TENANTS": "0",
}
# Two tenants: the default share of job slots, as in production.
FAIRNESS_SETTINGS = {"STRONGROOM_WEBHOOKS_ALLOW_PRIVATE_URLS": "true"}
HANGING_ENDPOINTS = 20


class Receiver:
    """Keeps each request's arrival time, `webhook-id` and body; can be stopped and started
    again on the same port."""

    def __init__(self) -> None:
        self.port = stack.free_port()
        self.arrivals: list[tuple[float, str, dict]] = []
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        arrivals = self.arrivals

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                arrivals.append((time.time(), self.headers["webhook-id"], json.loads(body)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def waits(self) -> list[float]:
        """Each arrival's seconds after its event's `timestamp`."""
        return [
            arrived - datetime.fromisoformat(payload["timestamp"]).timestamp()
            for arrived, _, payload in self.arrivals
        ]


class Hanging:
    """Endpoints that never answer: each request stays open until the sender gives up."""

    def __init__(self) -> None:
        self.requests, self.most_open = 0, 0
        self.open: Counter[str] = Counter()
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if line := await reader.readline():
            path = line.split()[1].decode()
            self.requests += 1
            self.open[path] += 1
            self.most_open = max(self.most_open, self.open.total())
            with contextlib.suppress(ConnectionError):
                while await reader.read(65536):
                    pass
            self.open[path] -= 1
        writer.close()


async def endpoint(client: httpx.AsyncClient, url: str) -> None:
    response = await client.post(
        "/api/v2/webhooks/endpoints",
        json={"url": url, "events": ["document.ready", "document.failed"]},
    )
    response.raise_for_status()


async def upload_all(client: httpx.AsyncClient, project_id: str, count: int, pause: float) -> None:
    for index in range(count):
        weeks = index + 10
        text = f"Contract {index}. The Contractor shall complete the Works within {weeks} weeks.\n"
        response = await client.post(
            "/api/v2/vault/documents",
            data={"project_id": project_id},
            files={"file": (f"contract-{index}.txt", text.encode(), "text/plain")},
        )
        response.raise_for_status()
        await asyncio.sleep(pause)


async def until_arrived(receiver: Receiver, count: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while len({webhook_id for _, webhook_id, _ in receiver.arrivals}) < count:
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)


def client(base: str, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)


async def delivery(deployed: stack.Deployment, documents: int) -> list:
    """Latency from the job's end to the event's arrival: the table's cells."""
    receiver = Receiver()
    receiver.start()
    key = (await stack.credentials(deployed, "webhooks-bench"))[0].key
    async with contextlib.AsyncExitStack() as exits:
        base = await exits.enter_async_context(stack.api_server(deployed, **SETTINGS))
        if deployed.is_postgres:
            await exits.enter_async_context(stack.worker_process(deployed, 2, **SETTINGS))
        async with client(base, key) as api:
            await endpoint(api, f"http://127.0.0.1:{receiver.port}/")
            await upload_all(api, await stack.create_project(api, key), documents, 0.2)
            await until_arrived(receiver, documents, 300)
    receiver.stop()
    ids = [webhook_id for _, webhook_id, _ in receiver.arrivals]
    return [documents, len(set(ids)), len(ids) - len(set(ids)), *stack.latencies(receiver.waits())]


async def fairness(deployed: stack.Deployment, documents: int, limit: float) -> list:
    """B's delivery behind A's hanging endpoints: the table's cells."""
    hanging, receiver = Hanging(), Receiver()
    port = await hanging.start()
    receiver.start()
    key_a, key_b = (each.key for each in await stack.credentials(deployed, "tenant-a", "tenant-b"))
    try:
        async with contextlib.AsyncExitStack() as exits:
            base = await exits.enter_async_context(stack.api_server(deployed, **FAIRNESS_SETTINGS))
            if deployed.is_postgres:
                await exits.enter_async_context(
                    stack.worker_process(deployed, 2, **FAIRNESS_SETTINGS)
                )
            async with client(base, key_a) as a, client(base, key_b) as b:
                for n in range(HANGING_ENDPOINTS):
                    await endpoint(a, f"http://127.0.0.1:{port}/a/{n}")
                project_a = await stack.create_project(a, key_a)
                await upload_all(a, project_a, documents, 0.2)
                await until_ingested(a, project_a, documents)  # A's events all recorded
                await endpoint(b, f"http://127.0.0.1:{receiver.port}/b")
                await upload_all(b, await stack.create_project(b, key_b), 1, 0)
                await until_arrived(receiver, 1, limit)
    finally:
        hanging._server.close()
        receiver.stop()
    waited = f"{receiver.waits()[0] * 1000:.0f} ms" if receiver.arrivals else f"> {limit:g} s"
    return [documents, waited, hanging.most_open, hanging.requests]


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


def main() -> None:
    arguments = stack.parser(__doc__, backends=["postgresql", "sqlite"])
    arguments.add_argument("--documents", type=int, default=40)
    arguments.add_argument("--fairness", action="store_true", help="A's endpoints hang")
    arguments.add_argument("--limit", type=float, default=1200.0, help="--fairness: B's bound")
    options = arguments.parse_args()
    if options.fairness:
        started = stack.print_header(
            "| setup | A's documents | B's delivery waited | A's attempts in flight, most "
            "| A's attempts by then |"
        )
    else:
        started = stack.print_header(
            "| setup | documents | events arrived | duplicates | p50 (ms) | p95 (ms) | p99 (ms) "
            "| max (ms) |"
        )
    for backend in options.backends:
        with stack.deployment(backend, "hooks") as deployed:
            if options.fairness:
                cells = asyncio.run(fairness(deployed, options.documents, options.limit))
            else:
                cells = asyncio.run(delivery(deployed, options.documents))
        print(stack.row(backend, *cells), flush=True)
    stack.print_footer(started)


if __name__ == "__main__":
    main()
