"""Deletion (issue 42's goals), through the real processes: `strongroom dev` (the embedded
default) on SQLite; `strongroom serve --workers 2` and a `strongroom worker` on PostgreSQL.
Optionally with the blobs in S3 (`--s3`: a moto server in this process, as tests/storage).

- A document's DELETE: searches and questions sent right after the 204, spread over the API
  processes that held the document's passages in memory: how many still found it, and the
  seconds until none did; its passages and stored file left after the 204.
- A project of `--documents` documents: the 202's seconds, whether it and its documents were
  at once gone from every list and lookup, and the seconds until every row and file of it
  was removed.

    .venv/bin/python bench/deletion_bench.py
    .venv/bin/python bench/deletion_bench.py --backend postgresql --s3 --documents 200
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
from pydantic import SecretStr
from sqlalchemy import func
from sqlmodel import col, select

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from bulk_ingest_bench import credential_key, finished_at, project_of, small_texts, upload
from stack import Deployment, api_server, deployment, print_footer, print_header, worker_process

from strongroom.corpus.models import Document, DocumentChunk
from strongroom.runtime import Runtime
from strongroom.storage import create_blob_store

PROBES = 40  # searches and questions sent right after a DELETE
DEADLINE_SECONDS = 600


@contextlib.contextmanager
def s3_storage() -> Iterator[dict[str, str]]:
    """A moto S3 server and a bucket; the settings' environment that stores blobs there."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's log of every request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint, bucket = f"http://{host}:{port}", f"bench-{uuid.uuid4().hex[:8]}"
    boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",  # noqa: S106  moto's
    ).create_bucket(Bucket=bucket)  # fmt: skip
    try:
        yield {
            "STRONGROOM_STORAGE_URL": f"s3://{bucket}/blobs",
            "STRONGROOM_S3_ENDPOINT_URL": endpoint,
            "STRONGROOM_S3_ACCESS_KEY_ID": "testing",
            "STRONGROOM_S3_SECRET_ACCESS_KEY": "testing",
        }
    finally:
        server.stop()


class Store:
    """Counts in the deployment's database and blob store, as this process sees them."""

    def __init__(self, deployed: Deployment, storage: dict[str, str]) -> None:
        update: dict = {key.removeprefix("STRONGROOM_").lower(): v for key, v in storage.items()}
        if "s3_secret_access_key" in update:
            update["s3_secret_access_key"] = SecretStr(update["s3_secret_access_key"])
        self.settings = deployed.settings.model_copy(update=update)
        self.runtime = Runtime.create(self.settings)
        self.blobs = create_blob_store(self.settings)

    async def count(self, statement) -> int:
        async with self.runtime.sessions() as session:
            return (await session.exec(statement)).one()

    async def blob_keys(self) -> set[str]:
        return {key async for key, _ in self.blobs.listed()}

    async def close(self) -> None:
        await self.blobs.close()
        await self.runtime.close()


async def ready_documents(
    client: httpx.AsyncClient, key: str, project_id: str, texts: list[str]
) -> list[dict]:
    """Upload and wait for ingestion; the documents as then fetched."""
    job_ids = await upload(client, key, project_id, texts)
    await finished_at(client, key, job_ids)
    headers = {"Authorization": f"Bearer {key}"}
    listed, cursor = [], None
    while True:
        query = f"project_id={project_id}&page_size=100" + (f"&cursor={cursor}" if cursor else "")
        page = (await client.get(f"/api/v2/vault/documents?{query}", headers=headers)).json()
        listed += page["data"]
        if not (cursor := page.get("next_cursor")):
            return listed


async def finds(client: httpx.AsyncClient, key: str, word: str, document_id: str) -> list[bool]:
    """PROBES searches and questions at once, spread over the server's processes: whether
    each found the document."""
    headers = {"Authorization": f"Bearer {key}"}

    async def search() -> bool:
        response = await client.post("/api/v2/vault/search", json={"query": word}, headers=headers)
        response.raise_for_status()
        return any(hit["document_id"] == document_id for hit in response.json()["data"])

    async def ask() -> bool:
        response = await client.post(
            "/api/v2/chat", json={"query": f"What is the {word} figure?"}, headers=headers
        )
        response.raise_for_status()
        return any(c["document_id"] == document_id for c in response.json()["citations"])

    calls = [search() if n % 2 else ask() for n in range(PROBES)]
    return list(await asyncio.gather(*calls))


async def document_rows(client: httpx.AsyncClient, key: str, store: Store, label: str) -> list[str]:
    """One document of five holds the word; it is deleted."""
    word = f"zq{uuid.uuid4().hex[:8]}"
    project_id = await project_of(client, key, "deletion")
    texts = [f"The {word} figure is five per cent. " + small_texts(1, 600, seed=0)[0]]
    texts += small_texts(4, 600, seed=1)
    documents = await ready_documents(client, key, project_id, texts)
    [target] = [document for document in documents if document["name"] == "Note 0000.txt"]
    before = await finds(client, key, word, target["id"])  # the processes now hold it
    blobs_before = await store.blob_keys()
    started = time.perf_counter()
    response = await client.delete(
        f"/api/v2/vault/documents/{target['id']}", headers={"Authorization": f"Bearer {key}"}
    )
    answered = time.perf_counter() - started
    assert response.status_code == 204, response.text
    after = time.perf_counter()
    found = await finds(client, key, word, target["id"])
    stale_seconds = 0.0 if not any(found) else time.perf_counter() - after
    passages = await store.count(
        select(func.count()).where(col(DocumentChunk.document_id) == uuid.UUID(target["id"]))
    )
    blobs_gone = len(blobs_before - await store.blob_keys())
    return [
        f"| {label} | searches and questions that found it before the DELETE "
        f"| {sum(before)} of {len(before)} | the control |",
        f"| {label} | document DELETE: 204 in | {answered * 1000:.0f} ms | |",
        f"| {label} | searches and questions right after the 204 that still found it "
        f"| {sum(found)} of {len(found)} | stale for {stale_seconds:.2f} s |",
        f"| {label} | its passages / stored files left after the 204 "
        f"| {passages} / {1 - blobs_gone} | |",
    ]


async def project_rows(
    client: httpx.AsyncClient, key: str, store: Store, count: int, label: str
) -> list[str]:
    headers = {"Authorization": f"Bearer {key}"}
    project_id = await project_of(client, key, "doomed")
    documents = await ready_documents(client, key, project_id, small_texts(count, 800, seed=42))
    ids = [uuid.UUID(document["id"]) for document in documents]
    started = time.perf_counter()
    response = await client.delete(f"/api/v2/vault/projects/{project_id}", headers=headers)
    answered = time.perf_counter() - started
    assert response.status_code == 202, response.text
    gone = (await client.get(f"/api/v2/vault/projects/{project_id}", headers=headers)).status_code
    listed = (await client.get("/api/v2/vault/documents?page_size=100", headers=headers)).json()
    shown = sum(1 for item in listed["data"] if uuid.UUID(item["id"]) in ids)
    keys = {f"{document['id']}" for document in documents}
    async with asyncio.timeout(DEADLINE_SECONDS):
        while True:
            rows = await store.count(select(func.count()).where(col(Document.id).in_(ids)))
            passages = await store.count(
                select(func.count()).where(col(DocumentChunk.document_id).in_(ids))
            )
            files = sum(1 for key in await store.blob_keys() if key.rsplit("/", 1)[-1] in keys)
            if rows == passages == files == 0:
                break
            await asyncio.sleep(0.2)
    removed = time.perf_counter() - started
    return [
        f"| {label} | project of {count} documents: DELETE 202 in | {answered * 1000:.0f} ms "
        f"| then GET {gone}, {shown} of its documents listed |",
        f"| {label} | project of {count} documents: every row and file removed "
        f"| {removed:.1f} s | |",
    ]


async def setup_rows(deployed: Deployment, args: argparse.Namespace, storage: dict) -> list[str]:
    key = await credential_key(deployed, "deletion")
    store = Store(deployed, storage)
    label = deployed.backend + (", 2 API workers + worker" if deployed.is_postgres else "")
    label += ", S3" if storage else ", directory"
    try:
        workers = 2 if deployed.is_postgres else 1
        async with (
            api_server(deployed, workers, **storage) as base,
            httpx.AsyncClient(base_url=base, timeout=120) as client,
        ):
            worker = (
                worker_process(deployed, 2, **storage)
                if deployed.is_postgres
                else contextlib.nullcontext()
            )
            async with worker:
                rows = await document_rows(client, key, store, label)
                rows += await project_rows(client, key, store, args.documents, label)
    finally:
        await store.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], action="append")
    parser.add_argument("--documents", type=int, default=200, help="documents of the project")
    parser.add_argument("--s3", action="store_true", help="blobs in a moto S3 server")
    args = parser.parse_args()
    started = print_header("| setup | what | measured | note |")
    for backend in args.backend or ["sqlite", "postgresql"]:
        with deployment(backend, "deletion") as deployed:
            storage_context = s3_storage() if args.s3 else contextlib.nullcontext({})
            with storage_context as storage:
                rows = asyncio.run(setup_rows(deployed, args, storage))
        print("\n".join(rows), flush=True)
    print_footer(started)


if __name__ == "__main__":
    main()
