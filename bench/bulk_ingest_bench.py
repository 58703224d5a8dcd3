"""Bulk ingestion (issue 41): many small documents against the same text as a few documents,
in one run, on the embedded default and on PostgreSQL with one `strongroom worker`; another
tenant's small document while one tenant has hundreds queued; the parsing pool's memory at
rest.

Each row is measured through the real processes (`strongroom dev` on SQLite; `strongroom
serve` + `strongroom worker` on PostgreSQL, both with their default settings, embeddings
included), from the first upload's start to the last job's `finished_at` (the job rows'
own timestamps, same clock). The small documents are text files of one page of contract
prose each (ContractWriter, about `--chars` characters); the joined documents hold the same
pages, concatenated in order, so both sides parse, chunk, index and embed the same text.

    .venv/bin/python bench/bulk_ingest_bench.py                 # both setups, every row
    .venv/bin/python bench/bulk_ingest_bench.py --backend sqlite --small 30 --joined 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from corpus import ContractWriter
from stack import (
    Deployment,
    api_server,
    deployment,
    descends_from,
    issue_credential,
    print_footer,
    print_header,
    running_processes,
    worker_process,
)

from strongroom.runtime import Runtime

DEADLINE_SECONDS = 1800
UPLOADS_AT_ONCE = 8
# (setup, small documents, joined documents) by default: the goals of issue 41.
DEFAULT_ROWS = {"sqlite": (30, 1), "postgresql": (500, 10)}


def small_texts(count: int, chars: int, seed: int) -> list[str]:
    return ContractWriter(seed).pages(count, chars)


def joined(texts: list[str], parts: int) -> list[str]:
    """`texts` concatenated in order into `parts` documents of (nearly) equal count."""
    size = -(-len(texts) // parts)
    return ["\n\n".join(texts[i : i + size]) for i in range(0, len(texts), size)]


async def upload(client: httpx.AsyncClient, key: str, project_id: str, texts: list[str]) -> list:
    """Upload the texts (UPLOADS_AT_ONCE at a time); their ingestion job ids."""
    limit = asyncio.Semaphore(UPLOADS_AT_ONCE)
    headers = {"Authorization": f"Bearer {key}"}

    async def one(index: int, text: str) -> str:
        async with limit:
            response = await client.post(
                "/api/v2/vault/documents",
                headers=headers,
                data={"project_id": project_id, "name": f"Note {index:04d}.txt"},
                files={"file": (f"note-{index:04d}.txt", text.encode(), "text/plain")},
            )
        if response.status_code != 202:
            raise RuntimeError(f"upload {index}: {response.status_code} {response.text}")
        return response.json()["ingestion_job_id"]

    return list(await asyncio.gather(*(one(i, text) for i, text in enumerate(texts))))


async def finished_at(client: httpx.AsyncClient, key: str, job_ids: list[str]) -> datetime:
    """Wait until every job has ended (all must succeed); the last one's `finished_at`."""
    headers = {"Authorization": f"Bearer {key}"}
    pending = list(job_ids)
    last = None
    async with asyncio.timeout(DEADLINE_SECONDS):
        while pending:
            response = await client.get(
                f"/api/v2/vault/ingestion-jobs/{pending[0]}", headers=headers
            )
            response.raise_for_status()
            job = response.json()
            if job["status"] in {"pending", "running"}:
                await asyncio.sleep(0.1)  # polling is what a client does
                continue
            if job["status"] != "succeeded":
                raise RuntimeError(f"job {job['id']} {job['status']}: {job.get('error')}")
            stamp = datetime.fromisoformat(job["finished_at"])
            last = stamp if last is None else max(last, stamp)
            pending.pop(0)
    assert last is not None
    return last


async def project_of(client: httpx.AsyncClient, key: str, name: str) -> str:
    response = await client.post(
        "/api/v2/vault/projects",
        json={"name": name, "project_type": "commercial"},
        headers={"Authorization": f"Bearer {key}"},
    )
    response.raise_for_status()
    return response.json()["id"]


async def ready_seconds(client: httpx.AsyncClient, key: str, texts: list[str], label: str) -> float:
    """Seconds from the first upload's start to the last of its documents' ingestion end."""
    project_id = await project_of(client, key, label)
    started = datetime.now(UTC)
    job_ids = await upload(client, key, project_id, texts)
    return (await finished_at(client, key, job_ids) - started).total_seconds()


def pool_rss_mib() -> tuple[int, float]:
    """The parsing children (`strongroom.jobs.child`) of the processes this benchmark
    started: how many and their resident memory together, MiB."""
    processes = running_processes()
    mine = [
        process
        for process, running in processes.items()
        if b"strongroom.jobs.child" in running.command
        and descends_from(processes, process, os.getpid())
    ]
    return len(mine), sum(processes[process].resident_kib for process in mine) / 1024


async def credential_key(deployed: Deployment, name: str) -> str:
    runtime = Runtime.create(deployed.settings)
    try:
        return (await issue_credential(runtime, name)).key
    finally:
        await runtime.close()


async def setup_rows(
    deployed: Deployment, small: int, parts: int, args: argparse.Namespace
) -> list[str]:
    rows, backend = [], deployed.backend
    key_a = await credential_key(deployed, "bulk-a")
    key_b = await credential_key(deployed, "bulk-b")
    async with (
        api_server(deployed) as base,
        httpx.AsyncClient(base_url=base, timeout=120) as client,
    ):
        worker = worker_process(deployed, 2) if deployed.is_postgres else contextlib.nullcontext()
        async with worker:
            texts = small_texts(small, args.chars, seed=41)
            # A warm-up document, so that neither side pays the first model load.
            await ready_seconds(client, key_a, small_texts(1, 200, seed=1), "warm-up")
            await asyncio.sleep(2)
            count, rss = pool_rss_mib()
            rows.append(f"| {backend} | parsing children at rest | {count} | {rss:.0f} MiB |")
            if not args.fairness_only:
                one = await ready_seconds(client, key_a, joined(texts, parts), "joined")
                many = await ready_seconds(client, key_a, texts, "small")
                rows.append(
                    f"| {backend} | {small} small documents / the same text as {parts} "
                    f"| {many:.1f} s / {one:.1f} s | {many / one:.1f}x |"
                )
            rows.append(await fairness_row(client, key_a, key_b, args, backend))
    return rows


async def fairness_row(
    client: httpx.AsyncClient, key_a: str, key_b: str, args: argparse.Namespace, backend: str
) -> str:
    """Tenant A uploads `--queued` small documents; when they are all accepted, tenant B
    uploads one: seconds until B's is ready, and how many of A's were still unfinished."""
    project_a = await project_of(client, key_a, "queued")
    project_b = await project_of(client, key_b, "other tenant")
    a_jobs = await upload(client, key_a, project_a, small_texts(args.queued, args.chars, 7))
    started = datetime.now(UTC)
    b_jobs = await upload(client, key_b, project_b, small_texts(1, args.chars, 8))
    b_seconds = (await finished_at(client, key_b, b_jobs) - started).total_seconds()
    await finished_at(client, key_a, a_jobs)
    return (
        f"| {backend} | another tenant's document, {args.queued} of one tenant's "
        f"queued before it | {b_seconds:.1f} s | |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], action="append")
    parser.add_argument("--small", type=int, help="small documents (default by setup)")
    parser.add_argument("--joined", type=int, help="documents of the same text")
    parser.add_argument("--chars", type=int, default=1500, help="characters of a small one")
    parser.add_argument("--queued", type=int, default=200, help="one tenant's queued documents")
    parser.add_argument("--fairness-only", action="store_true", help="the other tenant's row")
    args = parser.parse_args()
    started = print_header("| setup | what | seconds | ratio or memory |")
    for backend in args.backend or ["sqlite", "postgresql"]:
        small, parts = DEFAULT_ROWS[backend]
        with deployment(backend, "bulk") as deployed:
            rows = asyncio.run(
                setup_rows(deployed, args.small or small, args.joined or parts, args)
            )
        print("\n".join(rows), flush=True)
    print_footer(started)


if __name__ == "__main__":
    main()
