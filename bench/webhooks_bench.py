"""Webhooks (issue 30): how long from a document's ingestion ending to its `document.ready`
arriving at a receiver, on both setups, and whether every event arrives when worker
processes are killed and PostgreSQL's connections are cut (or PostgreSQL restarted).

    .venv/bin/python bench/webhooks_bench.py [--documents 40] [--backends postgresql sqlite]
        [--chaos] [--restart-postgres]

Latency is the receiver's clock at arrival less the event's `timestamp` (set when the job's
end is recorded, in the transaction that makes the document `ready`): the same machine's
clock at both ends. `--chaos` (PostgreSQL only) kills the worker with SIGKILL twice and
cuts every database connection once while documents are ingested, with the receiver down
for part of the run, then counts what arrived: every document's event, how many twice.
`--restart-postgres` restarts the local PostgreSQL server (root; other users of the
server see it) instead of cutting connections.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).parent))

from stack import (
    STRONGROOM,
    Deployment,
    api_server,
    credentials,
    deployment,
    environment_of,
    free_port,
    parser,
    percentile,
    print_footer,
    print_header,
)
from vault_bench import create_project

# One tenant here: its documents may use both of a worker's job slots (issue 28's share off).
SETTINGS = {
    "STRONGROOM_WEBHOOKS_ALLOW_PRIVATE_URLS": "true",
    "STRONGROOM_JOB_SLOTS_KEPT_FOR_OTHER_TENANTS": "0",
}
CHAOS_SETTINGS = SETTINGS | {
    "STRONGROOM_WEBHOOKS_FIRST_RETRY_SECONDS": "1",
    "STRONGROOM_WEBHOOKS_TIMEOUT_SECONDS": "3",
}


class Receiver:
    """Keeps each request's arrival time, `webhook-id` and body; can be stopped and started
    again on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
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


class Worker:
    """`strongroom worker` that can be killed with SIGKILL and started again."""

    def __init__(self, deployed: Deployment, extra: dict[str, str]) -> None:
        self.env = environment_of(deployed.settings, STRONGROOM_WORKER_CONCURRENCY="2", **extra)
        self.log_path = deployed.settings.data_dir / "worker.log"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                STRONGROOM, "worker", env=self.env, stdout=log, stderr=log
            )

    async def kill_and_restart(self) -> None:
        assert self.process is not None
        self.process.kill()
        await self.process.wait()
        await self.start()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


async def upload_all(client: httpx.AsyncClient, project_id: str, count: int, pause: float) -> None:
    for index in range(count):
        weeks = index + 10
        text = f"Contract {index}. The Contractor shall complete the Works within {weeks} weeks.\n"
        for _ in range(60):  # a client's retries while the database restarts (503)
            try:
                response = await client.post(
                    "/api/v2/vault/documents",
                    data={"project_id": project_id},
                    files={"file": (f"contract-{index}.txt", text.encode(), "text/plain")},
                )
            except httpx.TransportError:
                await asyncio.sleep(0.5)
                continue
            if response.status_code != 503:
                break
            await asyncio.sleep(0.5)
        response.raise_for_status()
        await asyncio.sleep(pause)


async def until_arrived(receiver: Receiver, count: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while len({webhook_id for _, webhook_id, _ in receiver.arrivals}) < count:
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)


async def run_backend(deployed: Deployment, documents: int, chaos: bool, restart: bool) -> dict:
    receiver = Receiver()
    receiver.start()
    key = (await credentials(deployed, "webhooks-bench"))[0].key
    extra = CHAOS_SETTINGS if chaos else SETTINGS
    async with api_server(deployed, **extra) as base:
        worker = Worker(deployed, extra) if deployed.is_postgres else None
        if worker is not None:
            await worker.start()
        try:
            headers = {"Authorization": f"Bearer {key}"}
            async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
                response = await client.post(
                    "/api/v2/webhooks/endpoints",
                    json={
                        "url": f"http://127.0.0.1:{receiver.port}/",
                        "events": ["document.ready", "document.failed"],
                    },
                )
                response.raise_for_status()
                project_id = await create_project(client, key)
                uploads = asyncio.create_task(
                    upload_all(client, project_id, documents, 0.5 if chaos else 0.2)
                )
                if chaos:
                    await chaos_during(deployed, receiver, worker, restart)
                await uploads
                await until_arrived(receiver, documents, 300)
        finally:
            if worker is not None:
                await worker.stop()
    receiver.stop()
    ids = [webhook_id for _, webhook_id, _ in receiver.arrivals]
    latencies = [
        arrived - datetime.fromisoformat(payload["timestamp"]).timestamp()
        for arrived, _, payload in receiver.arrivals
    ]
    return {
        "backend": deployed.backend,
        "documents": documents,
        "events": len(set(ids)),
        "duplicates": len(ids) - len(set(ids)),
        "p50": percentile(latencies, 0.5) if latencies else None,
        "p95": percentile(latencies, 0.95) if latencies else None,
        "max": max(latencies) if latencies else None,
    }


async def chaos_during(
    deployed: Deployment, receiver: Receiver, worker: Worker, restart: bool
) -> None:
    """While documents are uploaded: the receiver down for a while, the worker killed twice,
    the database's connections cut (or PostgreSQL restarted) once."""
    await asyncio.sleep(3)
    receiver.stop()
    await asyncio.sleep(2)
    await worker.kill_and_restart()
    await asyncio.sleep(3)
    if restart:
        await asyncio.to_thread(subprocess.run, ["service", "postgresql", "restart"], check=True)
    else:
        await asyncio.to_thread(cut_connections, deployed.admin_url)
    await asyncio.sleep(3)
    receiver.start()
    await asyncio.sleep(2)
    await worker.kill_and_restart()


def cut_connections(url: str) -> None:
    """What a PostgreSQL restart does to the processes: every connection they hold is cut."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def main() -> None:
    arguments = parser(__doc__, backends=["postgresql", "sqlite"])
    arguments.add_argument("--documents", type=int, default=40)
    arguments.add_argument("--chaos", action="store_true", help="PostgreSQL only")
    arguments.add_argument("--restart-postgres", action="store_true")
    options = arguments.parse_args()
    started = print_header("| setup | documents | events arrived | duplicates | p50 | p95 | max |")
    for backend in ["postgresql"] if options.chaos else options.backends:
        with deployment(backend, "hooks") as deployed:
            result = asyncio.run(
                run_backend(deployed, options.documents, options.chaos, options.restart_postgres)
            )
        cells = [f"{result[name] * 1000:.0f} ms" if result[name] is not None else "-"
                 for name in ("p50", "p95", "max")]  # fmt: skip
        print(f"| {backend} | {result['documents']} | {result['events']} | "
              f"{result['duplicates']} | {' | '.join(cells)} |", flush=True)  # fmt: skip
    print_footer(started)


if __name__ == "__main__":
    main()
