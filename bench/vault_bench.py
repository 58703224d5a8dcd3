"""Vault benchmark (issue 7): ingestion throughput and search latency, on PostgreSQL and on
the embedded SQLite, through the real processes. Prints the tables for bench/RESULTS.md.

Ingestion: text PDFs of contract prose (bench/corpus.py) uploaded through the API and
followed through GET /api/v2/vault/ingestion-jobs/{id}; on PostgreSQL `strongroom serve`
accepts them all, then one `strongroom worker` drains the queue; on SQLite `strongroom dev`
runs each job as it is accepted. Pages/s = pages / (last finished_at - first started_at).

Search: 12,000 passages inserted with SQL for one tenant (then VACUUM ANALYZE), then a few
hundred varied queries (bench/corpus.py's `queries`), each POST /api/v2/vault/search timed at
the client, one connection, serially, beside the app's own duration of the request (its JSON
log, matched by X-Request-Id).

    make bench-vault    # or: .venv/bin/python bench/vault_bench.py --help
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
import psycopg
from sqlalchemy import insert, text

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

import stack
from corpus import ContractWriter, make_pdf

from strongroom.corpus.models import Document, DocumentChunk
from strongroom.runtime import Runtime
from strongroom.text.analysis import index_text
from strongroom.vault.models import Project

JOB_DEADLINE_SECONDS = 600


# --- ingestion ----------------------------------------------------------------------------
@dataclass
class IngestResult:
    backend: str
    concurrency: int
    pages: int
    window: float  # first started_at to last finished_at
    job_seconds: list[float]
    busy_share: float  # union of the jobs' running intervals / window
    failed: int


async def upload_all(
    client: httpx.AsyncClient, key: str, project_id: str, files: list[bytes]
) -> list[dict]:
    """Upload the files, four at a time; the documents as the API answered (202)."""
    limit = asyncio.Semaphore(4)

    async def one(index: int, content: bytes) -> dict:
        async with limit:
            name = f"contract-{index:03d}.pdf"
            return await stack.upload(client, key, project_id, name, content, "application/pdf")

    return await asyncio.gather(*(one(i, content) for i, content in enumerate(files)))


async def wait_for_jobs(client: httpx.AsyncClient, key: str, job_ids: list[str]) -> list[dict]:
    """Poll GET /ingestion-jobs/{id} (the oldest unfinished one, every 0.2 s) until every
    job has ended; returns them all as then fetched."""

    async def get(job_id: str) -> dict:
        response = await client.get(
            f"/api/v2/vault/ingestion-jobs/{job_id}", headers=stack.auth(key)
        )
        response.raise_for_status()
        return response.json()

    async with asyncio.timeout(JOB_DEADLINE_SECONDS):
        for job_id in job_ids:
            while (await get(job_id))["status"] not in {"succeeded", "failed"}:  # noqa: ASYNC110
                await asyncio.sleep(0.2)  # polling the API is what a client does
        jobs = [await get(job_id) for job_id in job_ids]
        # Jobs can finish out of order; make sure the earlier ones have ended too.
        while any(job["status"] not in {"succeeded", "failed"} for job in jobs):
            await asyncio.sleep(0.2)
            jobs = [await get(job_id) for job_id in job_ids]
    return jobs


def busy_share(intervals: list[tuple[float, float]], window: float) -> float:
    covered, end = 0.0, float("-inf")
    for start, finish in sorted(intervals):
        if finish <= end:
            continue
        covered += finish - max(start, end)
        end = finish
    return covered / window if window else 0.0


async def ingest_run(
    deployed: stack.Deployment, concurrency: int, files: list[bytes]
) -> IngestResult:
    (credential,) = await stack.credentials(deployed, f"ingest-c{concurrency}")
    key = credential.key
    extra = {"STRONGROOM_WORKER_CONCURRENCY": str(concurrency)}
    async with (
        stack.api_server(deployed, **extra) as base,
        httpx.AsyncClient(base_url=base, timeout=120) as client,
    ):
        project_id = await stack.create_project(client, key)
        documents = await upload_all(client, key, project_id, files)
        job_ids = [document["ingestion_job_id"] for document in documents]
        worker = stack.worker_process(deployed, concurrency) if deployed.is_postgres else None
        async with worker or contextlib.nullcontext():
            jobs = await wait_for_jobs(client, key, job_ids)
        pages = 0
        for document in documents:
            pages += (await stack.document(client, key, document["id"]))["page_count"] or 0
    stamps = [
        (datetime.fromisoformat(job["started_at"]), datetime.fromisoformat(job["finished_at"]))
        for job in jobs
    ]
    first = min(start for start, _ in stamps)
    intervals = [((s - first).total_seconds(), (f - first).total_seconds()) for s, f in stamps]
    window = max(finish for _, finish in intervals)
    return IngestResult(deployed.backend, concurrency, pages, window,
                        [finish - start for start, finish in intervals],
                        busy_share(intervals, window),
                        sum(job["status"] != "succeeded" for job in jobs))  # fmt: skip


def ingestion(args: argparse.Namespace) -> list[str]:
    writer = ContractWriter(11)
    files = [make_pdf(writer.pages(args.pages, args.page_chars)) for _ in range(args.documents)]
    results: list[IngestResult] = []
    for backend in args.backends:
        with stack.deployment(backend, "ingest") as deployed:
            for concurrency in args.concurrency:
                result = asyncio.run(ingest_run(deployed, concurrency, files))
                results.append(result)
                print(f"# ingest {backend} c={concurrency}: {result.pages} pages in "
                      f"{result.window:.2f} s = {result.pages / result.window:.1f} pages/s",
                      file=sys.stderr, flush=True)  # fmt: skip
    size = statistics.mean(len(content) for content in files) / 1024
    lines = [
        f"Documents: {args.documents} per run, {args.pages} pages of about {args.page_chars} "
        f"characters each (PDF about {size:.0f} KiB); one fresh tenant per run.\n",
        *stack.table_head("| Backend | Runner | Concurrency | Pages | Window (s) | Pages/s | "
                          "Job p50 (s) | Busy share | Failed |"),
    ]  # fmt: skip
    for r in results:
        runner = "1 `strongroom worker`" if r.backend == "postgresql" else "`strongroom dev`"
        job = statistics.median(r.job_seconds)
        lines.append(stack.row(r.backend, runner, r.concurrency, r.pages, f"{r.window:.2f}",
                               f"{r.pages / r.window:.1f}", f"{job:.2f}", f"{r.busy_share:.2f}",
                               r.failed))  # fmt: skip
    return lines


# --- search -------------------------------------------------------------------------------
@dataclass
class Query:
    text: str
    project_ids: list[uuid.UUID] | None
    http: float = 0.0
    server: float = 0.0  # the app's own duration_ms of the request, from its log


async def seed_chunks(
    runtime: Runtime, credential: stack.Credential, chunks: int, projects: int, seed: int
) -> list[uuid.UUID]:
    """`chunks` passages in documents of 60 (20 pages of 3) over `projects` projects, inserted
    with SQL in batches of 1,000; returns the project ids."""
    writer = ContractWriter(seed)
    per_document = 60
    project_ids: list[uuid.UUID] = []
    async with runtime.sessions() as session:
        for index in range(projects):
            project = Project(tenant_id=credential.tenant_id, environment="test",
                              owner_id=credential.user_id, name=f"Project {index}",
                              project_type="commercial")  # fmt: skip
            session.add(project)
            project_ids.append(project.id)
        await session.commit()
    documents = [
        Document(tenant_id=credential.tenant_id, environment="test",
                 project_id=project_ids[number % projects], owner_id=credential.user_id,
                 name=f"Contract {number:04d}.pdf", document_type="pdf",
                 content_type="application/pdf", size_bytes=100_000, sha256="0" * 64,
                 page_count=per_document // 3, status="ready", blob_key=f"bench/{number}",
                 passage_count=min(per_document, chunks - number * per_document),
                 ingestion_job_id=uuid.uuid4())
        for number in range((chunks + per_document - 1) // per_document)
    ]  # fmt: skip
    async with runtime.sessions() as session:
        session.add_all(documents)
        await session.commit()
    rows = [
        {"id": uuid.uuid4(), "document_id": document.id, "tenant_id": credential.tenant_id,
         "environment": "test", "project_id": document.project_id, "ordinal": ordinal,
         "page_number": ordinal // 3 + 1, "content": content, "index_terms": index_text(content)}
        for number, document in enumerate(documents)
        for ordinal in range(min(per_document, chunks - number * per_document))
        for content in (writer.passage(),)
    ]  # fmt: skip
    async with runtime.engine.begin() as connection:
        for start in range(0, len(rows), 1000):
            await connection.execute(insert(DocumentChunk), rows[start : start + 1000])
    return project_ids


async def search_run(deployed: stack.Deployment, args: argparse.Namespace) -> list[str]:
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await stack.issue_credential(runtime, "search")
        project_ids = await seed_chunks(runtime, credential, args.chunks, args.projects, 21)
        if args.other_chunks:
            other = await stack.issue_credential(runtime, "other-tenant")
            await seed_chunks(runtime, other, args.other_chunks, args.projects, 22)
        deployed.analyze()
        async with runtime.engine.connect() as connection:
            count = text("SELECT count(*) FROM document_chunks")
            total = (await connection.execute(count)).scalar_one()
    finally:
        await runtime.close()
    queries = [
        Query(query, [project_ids[i % len(project_ids)]] if i % 4 == 3 else None)
        for i, query in enumerate(ContractWriter(31).queries(args.queries + args.warmup))
    ]
    async with (
        stack.api_server(deployed, STRONGROOM_LOG_LEVEL="INFO") as base,
        httpx.AsyncClient(base_url=base, timeout=30, headers=stack.auth(credential.key)) as client,
    ):
        for number, query in enumerate(queries):
            await time_http(client, query, number)
    durations = request_durations(stack.server_log(deployed))
    for number, query in enumerate(queries):
        query.server = durations[f"bench-{number}"]
    queries = queries[args.warmup :]
    other = f", {args.other_chunks:,} of another tenant" if args.other_chunks else ""
    lines = [
        f"**{deployed.backend}**: {total:,} passages in the table ({args.chunks:,} of the "
        f"searching tenant's in {args.projects} projects{other}), {len(queries)} queries after "
        f"{args.warmup} warm-up, k=10, one in four filtered to one project.\n",
        *stack.table_head("| Layer | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) |"),
        *(stack.row(label, *stack.latencies([value(q) for q in queries])) for label, value in (
            ("HTTP POST /api/v2/vault/search, end to end at the client", lambda q: q.http),
            ("the app's request (its log's duration_ms)", lambda q: q.server),
            ("per query: HTTP minus the app (Hypercorn, HTTP, client)",
             lambda q: q.http - q.server),
        )),
    ]  # fmt: skip
    slow = sorted(queries, key=lambda q: q.http, reverse=True)[:5]
    lines += ["", "Slowest: " + "; ".join(f"{q.text!r} ({stack.ms(q.http)} ms)" for q in slow)]
    return lines


async def time_http(client: httpx.AsyncClient, query: Query, number: int) -> None:
    body: dict = {"query": query.text}
    if query.project_ids:
        body["project_ids"] = [str(project) for project in query.project_ids]
    start = time.perf_counter()
    response = await client.post(
        "/api/v2/vault/search", json=body, headers={"X-Request-Id": f"bench-{number}"}
    )
    query.http = time.perf_counter() - start
    if response.status_code != 200:
        raise RuntimeError(f"{query.text!r}: {response.status_code} {response.text}")


def request_durations(log: Path) -> dict[str, float]:
    """The app's own duration of each request (seconds) by the client's X-Request-Id, from
    the server's JSON log lines."""
    durations = {}
    for line in log.read_text().splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("message") == "request" and entry.get("client_request_id"):
                durations[entry["client_request_id"]] = entry["duration_ms"] / 1000
    return durations


def search(args: argparse.Namespace) -> list[str]:
    lines: list[str] = []
    for backend in args.backends:
        with stack.deployment(backend, "search") as deployed:
            lines += [*asyncio.run(search_run(deployed, args)), ""]
        print(f"# search {backend}: done", file=sys.stderr, flush=True)
    return lines


# --- main ---------------------------------------------------------------------------------
def main() -> None:
    arguments = stack.parser(__doc__, backends=["postgresql", "sqlite"])
    arguments.add_argument("--only", choices=["ingest", "search"], default=None)
    arguments.add_argument("--documents", type=int, default=60, help="per ingestion run")
    arguments.add_argument("--pages", type=int, default=20, help="per document")
    arguments.add_argument("--page-chars", type=int, default=2500)
    arguments.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 2], help="worker concurrency, per run"
    )
    arguments.add_argument("--chunks", type=int, default=12_000, help="the searching tenant's")
    arguments.add_argument("--other-chunks", type=int, default=0, help="another tenant's")
    arguments.add_argument("--projects", type=int, default=8)
    arguments.add_argument("--queries", type=int, default=400)
    arguments.add_argument("--warmup", type=int, default=20)
    args = arguments.parse_args()
    out = [versions()]
    if args.only in (None, "ingest"):
        out += ["### Ingestion\n", *ingestion(args), ""]
    if args.only in (None, "search"):
        out += ["### Search\n", *search(args)]
    print("\n".join(out))


def versions() -> str:
    """The machine line with the databases' versions."""
    version = "PostgreSQL (unreachable)"
    with contextlib.suppress(Exception), psycopg.connect(stack.ADMIN_URL) as connection:
        version = "PostgreSQL " + connection.execute("SHOW server_version").fetchone()[0]
    return f"{stack.machine()}; SQLite {sqlite3.sqlite_version}, {version}\n"


if __name__ == "__main__":
    main()
