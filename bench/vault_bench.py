"""Vault benchmark (issue 7): ingestion throughput and search latency, on PostgreSQL and on
the embedded SQLite, through the real processes. Prints the tables for bench/RESULTS.md.

Ingestion: text PDFs (and DOCX) of construction-contract prose, uploaded through the API
(POST /api/v2/vault/documents), followed through GET /api/v2/vault/ingestion-jobs/{id}.
- PostgreSQL: `strongroom serve` (+ Redis) accepts all the uploads first; then one
  `strongroom worker` process is started and drains the queue (procrastinate).
- SQLite: `strongroom dev`, the embedded default; its in-process runners start on each job
  as soon as it is accepted (they cannot be held back), so the first jobs overlap the uploads.
Pages per second = pages of all documents / (last job's finished_at - first job's
started_at), timestamps the job rows carry. "Extraction alone" is pypdf/python-docx plus the
chunker on the same files in this process, with no queue and no database.

Search: 10,000+ passages inserted with SQL for one tenant (the triggers and generated column
index them as ingestion would; then VACUUM ANALYZE, as autovacuum would have done), then a few
hundred varied queries (1-6 words, common and rare words, questions with stop words, a few
that match nothing), each timed in turn, the order rotating, so drift on a noisy machine hits
all alike:
- HTTP: POST /api/v2/vault/search end to end on the real server (one connection, serially),
  and the app's own duration of that request (its JSON log, matched by X-Request-Id);
- search_chunks: strongroom.retrieval.search.search_chunks in this process (SQLAlchemy, the
  driver and the database; connection checked out before the clock starts, committed after,
  as the request path does);
- SQL: the statement search_chunks sent, replayed with the bare driver (psycopg / sqlite3);
  on PostgreSQL both planned afresh with the values (custom plan) and as a prepared
  statement, which is how psycopg ends up running it on the server's connections.

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
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import psycopg
from sqlalchemy import event, insert, text

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from corpus import ContractWriter, make_docx, make_pdf
from stack import (
    ADMIN_URL,
    Credential,
    Deployment,
    api_server,
    auth,
    create_project,
    credentials,
    deployment,
    issue_credential,
    latencies,
    machine,
    ms,
    parser,
    percentile,
    row,
    server_log,
    table_head,
    upload,
    worker_process,
)

from strongroom.auth.principal import Principal
from strongroom.corpus.models import Document, DocumentChunk, DocumentType
from strongroom.ingest.chunking import chunk_pages
from strongroom.ingest.extract import extract_pages
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import search_chunks
from strongroom.runtime import Runtime
from strongroom.text import analysis
from strongroom.text.analysis import index_text
from strongroom.vault.models import Project

MIME = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
JOB_DEADLINE_SECONDS = 600


# --- ingestion ----------------------------------------------------------------------------


@dataclass
class IngestResult:
    backend: str
    kind: str
    concurrency: int
    documents: int
    pages: int
    window: float  # first started_at to last finished_at
    job_seconds: list[float]
    busy_share: float  # union of the jobs' running intervals / window
    upload_seconds: float
    failed: int


def make_documents(kind: str, count: int, pages: int, chars: int, seed: int) -> list[bytes]:
    writer = ContractWriter(seed)
    maker = make_pdf if kind == "pdf" else make_docx
    return [maker(writer.pages(pages, chars)) for _ in range(count)]


def extraction_alone(kind: str, files: list[bytes]) -> tuple[int, float]:
    """Pages and seconds to extract and chunk `files` in this process, one after the other."""
    document_type = DocumentType.PDF if kind == "pdf" else DocumentType.DOCX
    pages = 0
    with tempfile.TemporaryDirectory() as directory:
        paths = []
        for index, content in enumerate(files):
            path = Path(directory) / f"{index}.{kind}"
            path.write_bytes(content)
            paths.append(path)
        start = time.perf_counter()
        for path in paths:
            extracted = extract_pages(path, document_type)
            chunk_pages(extracted)
            pages += len(extracted)
        return pages, time.perf_counter() - start


async def upload_all(
    client: httpx.AsyncClient, key: str, project_id: str, kind: str, files: list[bytes]
) -> list[dict]:
    """Upload the files, four at a time; the documents as the API answered (202)."""
    limit = asyncio.Semaphore(4)

    async def one(index: int, content: bytes) -> dict:
        async with limit:
            name = f"contract-{index:03d}.{kind}"
            return await upload(client, key, project_id, name, content, MIME[kind])

    return await asyncio.gather(*(one(i, content) for i, content in enumerate(files)))


async def wait_for_jobs(client: httpx.AsyncClient, key: str, job_ids: list[str]) -> list[dict]:
    """Poll GET /ingestion-jobs/{id} (the oldest unfinished one, every 0.2 s) until every
    job has ended; returns them all as then fetched."""

    async def get(job_id: str) -> dict:
        response = await client.get(f"/api/v2/vault/ingestion-jobs/{job_id}", headers=auth(key))
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
    deployed: Deployment, kind: str, concurrency: int, files: list[bytes]
) -> IngestResult:
    (credential,) = await credentials(deployed, f"ingest-{kind}-c{concurrency}")
    key = credential.key
    extra = {"STRONGROOM_WORKER_CONCURRENCY": str(concurrency)}
    async with (
        api_server(deployed, **extra) as base,
        httpx.AsyncClient(base_url=base, timeout=120) as client,
    ):
        project_id = await create_project(client, key)
        started = time.perf_counter()
        documents = await upload_all(client, key, project_id, kind, files)
        upload_seconds = time.perf_counter() - started
        job_ids = [document["ingestion_job_id"] for document in documents]
        if deployed.is_postgres:
            async with worker_process(deployed, concurrency):
                jobs = await wait_for_jobs(client, key, job_ids)
        else:
            jobs = await wait_for_jobs(client, key, job_ids)
        pages = 0
        for document in documents:
            response = await client.get(
                f"/api/v2/vault/documents/{document['id']}", headers=auth(key)
            )
            response.raise_for_status()
            pages += response.json()["page_count"] or 0
    stamps = [
        (datetime.fromisoformat(job["started_at"]), datetime.fromisoformat(job["finished_at"]))
        for job in jobs
    ]
    first = min(start for start, _ in stamps)
    intervals = [((s - first).total_seconds(), (f - first).total_seconds()) for s, f in stamps]
    window = max(finish for _, finish in intervals)
    return IngestResult(
        backend=deployed.backend,
        kind=kind,
        concurrency=concurrency,
        documents=len(files),
        pages=pages,
        window=window,
        job_seconds=[finish - start for start, finish in intervals],
        busy_share=busy_share(intervals, window),
        upload_seconds=upload_seconds,
        failed=sum(job["status"] != "succeeded" for job in jobs),
    )


def ingestion(args: argparse.Namespace) -> list[str]:
    lines: list[str] = []
    corpora = {
        "pdf": make_documents("pdf", args.documents, args.pages, args.page_chars, seed=11),
    }
    if args.docx:
        corpora["docx"] = make_documents("docx", args.documents, args.pages, args.page_chars, 12)
    alone = {kind: extraction_alone(kind, files) for kind, files in corpora.items()}
    results: list[IngestResult] = []
    for backend in args.backends:
        with deployment(backend, "ingest") as deployed:
            for kind, files in corpora.items():
                for concurrency in args.concurrency:
                    if kind != "pdf" and concurrency != args.concurrency[0]:
                        continue
                    result = asyncio.run(ingest_run(deployed, kind, concurrency, files))
                    results.append(result)
                    print(
                        f"# ingest {backend} {kind} c={concurrency}: {result.pages} pages in "
                        f"{result.window:.2f} s = {result.pages / result.window:.1f} pages/s",
                        file=sys.stderr,
                        flush=True,
                    )
    size = statistics.mean(len(content) for content in corpora["pdf"]) / 1024
    lines.append(
        f"Documents: {args.documents} per run, {args.pages} pages of about {args.page_chars} "
        f"characters each (PDF about {size:.0f} KiB); one fresh tenant per run.\n"
    )
    lines += table_head(
        "| Backend | Runner | Type | Concurrency | Pages | Window (s) | Pages/s | "
        "Job p50 (s) | Busy share | Failed |"
    )
    for r in results:
        runner = "1 `strongroom worker`" if r.backend == "postgresql" else "`strongroom dev`"
        lines.append(row(r.backend, runner, r.kind, r.concurrency, r.pages, f"{r.window:.2f}",
                         f"{r.pages / r.window:.1f}", f"{statistics.median(r.job_seconds):.2f}",
                         f"{r.busy_share:.2f}", r.failed))  # fmt: skip
    for kind, (pages, seconds) in alone.items():
        lines.append(row("(this process)", "extraction + chunking alone", kind, 1, pages,
                         f"{seconds:.2f}", f"{pages / seconds:.1f}", "", "", ""))  # fmt: skip
    return lines


# --- search -------------------------------------------------------------------------------


@dataclass
class Query:
    text: str
    project_ids: list[uuid.UUID] | None
    matches: int = 0
    hits: int = 0
    http: float = 0.0
    server: float = 0.0  # the app's own duration_ms of the request, from its log
    function: float = 0.0
    function_hits: int = 0
    sql: float = 0.0  # the bare driver; on PostgreSQL a custom plan
    sql_prepared: float = 0.0  # PostgreSQL: the bare driver, a prepared statement
    statement: tuple[str, object] | None = field(default=None, repr=False)


async def seed_chunks(
    runtime: Runtime, credential: Credential, chunks: int, projects: int, seed: int
) -> list[uuid.UUID]:
    """`chunks` passages in documents of 60 (20 pages of 3) over `projects` projects, inserted
    with SQL in batches of 1,000; returns the project ids."""
    writer = ContractWriter(seed)
    per_document = 60
    project_ids: list[uuid.UUID] = []
    async with runtime.sessions() as session:
        for index in range(projects):
            project = Project(
                tenant_id=credential.tenant_id,
                environment="test",
                owner_id=credential.user_id,
                name=f"Project {index}",
                project_type="commercial",
            )
            session.add(project)
            project_ids.append(project.id)
        await session.commit()
    documents = [
        Document(
            tenant_id=credential.tenant_id,
            environment="test",
            project_id=project_ids[number % projects],
            owner_id=credential.user_id,
            name=f"Contract {number:04d}.pdf",
            document_type="pdf",
            content_type="application/pdf",
            size_bytes=100_000,
            sha256="0" * 64,
            page_count=per_document // 3,
            passage_count=min(per_document, chunks - number * per_document),
            status="ready",
            blob_key=f"bench/{number}",
            ingestion_job_id=uuid.uuid4(),
        )
        for number in range((chunks + per_document - 1) // per_document)
    ]
    async with runtime.sessions() as session:
        session.add_all(documents)
        await session.commit()
    rows = [
        {
            "id": uuid.uuid4(),
            "document_id": document.id,
            "tenant_id": credential.tenant_id,
            "environment": "test",
            "project_id": document.project_id,
            "ordinal": ordinal,
            "page_number": ordinal // 3 + 1,
            "content": content,
            "index_terms": index_text(content),
        }
        for number, document in enumerate(documents)
        for ordinal in range(min(per_document, chunks - number * per_document))
        for content in (writer.passage(),)
    ]
    async with runtime.engine.begin() as connection:
        for start in range(0, len(rows), 1000):
            await connection.execute(insert(DocumentChunk), rows[start : start + 1000])
    return project_ids


async def count_matches(runtime: Runtime, credential: Credential, query: Query) -> int:
    """How many of the tenant's passages the query's terms match (any of them)."""
    words = analysis.query(query.text).terms
    if not words:
        return 0
    async with runtime.engine.connect() as connection:
        if runtime.engine.dialect.name == "postgresql":
            statement = text(
                "SELECT count(*) FROM document_chunks WHERE tenant_id = :tenant AND "
                "search_vector @@ to_tsquery('simple', :q)"
            )
            params = {"tenant": credential.tenant_id, "q": " | ".join(words)}
        else:
            statement = text(
                "SELECT count(*) FROM document_chunks_fts JOIN document_chunks "
                "ON document_chunks.id = document_chunks_fts.chunk_id "
                "WHERE document_chunks_fts MATCH :q AND document_chunks.tenant_id = :tenant"
            )
            params = {
                "tenant": credential.tenant_id.hex,
                "q": " OR ".join(f'"{word}"' for word in words),
            }
        return (await connection.execute(statement, params)).scalar_one()


class Statements:
    """The statements this process's engine sent to the driver since `reset`: how many, and
    the first (and its parameters). search_chunks's first is the candidate pool's, which does
    the searching (the second only fetches the k rows by id)."""

    def __init__(self, runtime: Runtime) -> None:
        self.reset()
        event.listen(runtime.engine.sync_engine, "before_cursor_execute", self._record)

    def reset(self) -> None:
        self.count, self.first = 0, None

    def _record(self, conn, cursor, statement, parameters, context, executemany) -> None:
        self.count += 1
        if self.first is None:
            self.first = (statement, parameters)


def replay(
    deployed: Deployment, connection, statement: tuple[str, object], prepared: bool
) -> float:
    """Seconds to run `statement` and fetch its rows with the bare driver. PostgreSQL:
    `prepared` False plans it afresh with the values (a custom plan) and rolls back, which
    also keeps psycopg from preparing it; True runs it as a prepared statement and commits,
    as the request path's connections end up doing (see `time_function`)."""
    sql, parameters = statement
    start = time.perf_counter()
    if deployed.is_postgres:
        with connection.cursor() as cursor:
            cursor.execute(sql, parameters, prepare=prepared)
            cursor.fetchall()
        elapsed = time.perf_counter() - start
        connection.commit() if prepared else connection.rollback()
        return elapsed
    connection.execute(sql, parameters).fetchall()
    return time.perf_counter() - start


async def search_run(deployed: Deployment, args: argparse.Namespace) -> list[str]:
    runtime = Runtime.create(deployed.settings)
    notes: dict = {}
    try:
        credential = await issue_credential(runtime, "search")
        started = time.perf_counter()
        project_ids = await seed_chunks(runtime, credential, args.chunks, args.projects, 21)
        if args.other_chunks:
            other = await issue_credential(runtime, "other-tenant")
            await seed_chunks(runtime, other, args.other_chunks, args.projects, 22)
        notes["seed_seconds"] = time.perf_counter() - started
        deployed.analyze()
        async with runtime.engine.connect() as connection:
            total = (
                await connection.execute(text("SELECT count(*) FROM document_chunks"))
            ).scalar_one()
        notes["total_chunks"] = total
        writer = ContractWriter(31)
        queries = [
            Query(
                text=query,
                project_ids=[project_ids[i % len(project_ids)]] if i % 4 == 3 else None,
            )
            for i, query in enumerate(writer.queries(args.queries + args.warmup))
        ]
        for query in queries:
            query.matches = await count_matches(runtime, credential, query)
        principal = credential.principal()
        recorder = Statements(runtime)
        for query in queries:
            await record_statement(runtime, principal, recorder, query)
        if deployed.is_postgres:
            raw = [psycopg.connect(deployed.admin_url), psycopg.connect(deployed.admin_url)]
        else:
            raw = [sqlite3.connect(deployed.settings.resolved_database_url.split("///", 1)[1])]
        headers = {"Authorization": f"Bearer {credential.key}"}
        async with (
            api_server(deployed, STRONGROOM_LOG_LEVEL="INFO") as base,
            httpx.AsyncClient(base_url=base, timeout=30) as client,
        ):
            for number, query in enumerate(queries):
                # The three ways in turn, first one then another first, so that neither
                # always finds the pages warm in the CPU's caches.
                steps = [
                    lambda q=query, n=number: time_http(client, headers, q, n),
                    lambda q=query: time_function(runtime, principal, q),
                    lambda q=query: time_sql(deployed, raw, q),
                ]
                shift = number % 3
                for step in steps[shift:] + steps[:shift]:
                    await step()
                if query.function_hits != query.hits:
                    raise RuntimeError(f"{query.text!r}: {query.function_hits} hits in process, "
                                       f"{query.hits} by HTTP")  # fmt: skip
        durations = request_durations(server_log(deployed))
        for number, query in enumerate(queries):
            query.server = durations[f"bench-{number}"]
        measured = queries[args.warmup :]
        for connection in raw:
            connection.close()
    finally:
        await runtime.close()
    return report_search(deployed, args, measured, notes)


async def time_http(client: httpx.AsyncClient, headers: dict, query: Query, number: int) -> None:
    body: dict = {"query": query.text}
    if query.project_ids:
        body["project_ids"] = [str(project) for project in query.project_ids]
    headers = headers | {"X-Request-Id": f"bench-{number}"}
    start = time.perf_counter()
    response = await client.post("/api/v2/vault/search", json=body, headers=headers)
    query.http = time.perf_counter() - start
    if response.status_code != 200:
        raise RuntimeError(f"{query.text!r}: {response.status_code} {response.text}")
    query.hits = len(response.json()["data"])


async def time_function(runtime: Runtime, principal: Principal, query: Query) -> None:
    """search_chunks in a session of its own that then commits, as the request path's does
    (it bills the call), with the process's held terms as the server has them. That matters
    on PostgreSQL: psycopg forgets its prepared statements on a rollback, and keeps them after
    a commit, so only committed sessions go on to run the search as a prepared statement
    (from the 6th run on a connection), and PostgreSQL then to its generic plan (from the 6th
    run of that)."""
    filters = Filters(project_ids=query.project_ids)
    async with runtime.sessions() as session:
        await session.connection()
        start = time.perf_counter()
        hits = await search_chunks(
            session, principal, query.text, k=10, filters=filters, terms=runtime.terms
        )
        query.function = time.perf_counter() - start
        query.function_hits = len(hits)
        await session.commit()


async def record_statement(
    runtime: Runtime, principal: Principal, recorder: Statements, query: Query
) -> None:
    """Run search_chunks once for `query` and keep the SQL it sends (None: it sends none)."""
    recorder.reset()
    async with runtime.sessions() as session:
        await search_chunks(
            session, principal, query.text, k=10, filters=Filters(project_ids=query.project_ids)
        )
    query.statement = recorder.first


async def time_sql(deployed: Deployment, connections: list, query: Query) -> None:
    if query.statement is None:
        return
    query.sql = replay(deployed, connections[0], query.statement, prepared=False)
    if deployed.is_postgres:
        query.sql_prepared = replay(deployed, connections[1], query.statement, prepared=True)


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


def sql_label(deployed: Deployment) -> str:
    if deployed.is_postgres:
        return "its SQL, bare driver (psycopg), planned with the values (custom plan)"
    return "its SQL, bare driver (sqlite3)"


BUCKETS = [(0, 0), (1, 99), (100, 999), (1000, 4999), (5000, 10**9)]


def report_search(
    deployed: Deployment, args: argparse.Namespace, queries: list[Query], notes: dict
) -> list[str]:
    lines = [
        f"**{deployed.backend}**: {notes['total_chunks']:,} passages in the table "
        f"({args.chunks:,} of the searching tenant's in {args.projects} projects"
        + (f", {args.other_chunks:,} of another tenant" if args.other_chunks else "")
        + f"), {len(queries)} queries after {args.warmup} warm-up, k=10, one in four filtered "
        f"to one project. Matching passages per query: median "
        f"{statistics.median(q.matches for q in queries):,.0f}, p90 "
        f"{percentile([q.matches for q in queries], 0.9):,}, max "
        f"{max(q.matches for q in queries):,}.\n",
        *table_head("| Layer | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) |"),
    ]
    layers = (
        ("HTTP POST /api/v2/vault/search, end to end at the client", [q.http for q in queries]),
        ("the app's request (its log's duration_ms)", [q.server for q in queries]),
        ("search_chunks (SQLAlchemy + driver + database)", [q.function for q in queries]),
        (sql_label(deployed), [q.sql for q in queries]),
        *(
            [("its SQL, bare driver, as a prepared statement (as the server runs it)",
              [q.sql_prepared for q in queries])]
            if deployed.is_postgres else []
        ),
        ("per query: HTTP minus the app (Hypercorn, HTTP, client)",
         [q.http - q.server for q in queries]),
        ("per query: the app minus search_chunks (request path, JSON)",
         [q.server - q.function for q in queries]),
    )  # fmt: skip
    lines += [row(label, *latencies(values)) for label, values in layers]
    lines += [
        "",
        "By how many passages the query matches (HTTP and SQL):\n",
        *table_head("| Matching passages | Queries | HTTP p50 | HTTP p95 | SQL p50 | SQL p95 |"),
    ]
    for low, high in BUCKETS:
        group = [q for q in queries if low <= q.matches <= high]
        if not group:
            continue
        label = (
            f"{low:,}" if low == high else f"{low:,}-{high:,}" if high < 10**9 else f">= {low:,}"
        )
        http = latencies([q.http for q in group], (0.5, 0.95))[:2]
        sql = latencies([q.sql for q in group], (0.5, 0.95))[:2]
        lines.append(row(label, len(group), *http, *sql))
    slow = sorted(queries, key=lambda q: q.http, reverse=True)[:5]
    lines += ["", "Slowest by HTTP: " + "; ".join(
        f"{q.text!r} ({q.matches:,} matches, {ms(q.http)} ms)" for q in slow
    )]  # fmt: skip
    return lines


def search(args: argparse.Namespace) -> list[str]:
    lines: list[str] = []
    for backend in args.backends:
        with deployment(backend, "search") as deployed:
            lines += [*asyncio.run(search_run(deployed, args)), ""]
        print(f"# search {backend}: done", file=sys.stderr, flush=True)
    return lines


# --- main ---------------------------------------------------------------------------------


def main() -> None:
    arguments = parser(__doc__, backends=["postgresql", "sqlite"])
    arguments.add_argument("--only", choices=["ingest", "search"], default=None)
    arguments.add_argument("--documents", type=int, default=60, help="per ingestion run")
    arguments.add_argument("--pages", type=int, default=20, help="per document")
    arguments.add_argument("--page-chars", type=int, default=2500)
    arguments.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 2], help="worker concurrency, per run"
    )
    arguments.add_argument("--no-docx", dest="docx", action="store_false")
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
    with contextlib.suppress(Exception), psycopg.connect(ADMIN_URL) as connection:
        version = "PostgreSQL " + connection.execute("SHOW server_version").fetchone()[0]
    return f"{machine()}; SQLite {sqlite3.sqlite_version}, {version}\n"


if __name__ == "__main__":
    main()
