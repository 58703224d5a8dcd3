"""Ingestion throughput with embeddings (issue 16): passages per second through the ingestion
job with the `minilm` provider, against the same documents ingested by words only (`none`).

The embedded default (`strongroom dev` on SQLite, its in-process job runners, two at a time
by default) ingests vault_bench's text PDFs, uploaded through the API; passages per second =
passages stored / (last job's finished_at - first job's started_at), the timestamps the job
rows carry. With `minilm` (the default provider since issue 40), every passage and its
sentences are embedded in the job (int8 in onnxruntime), so the ratio of the two rows is
meaning's cost at ingestion (issue 40's goal: within 3x of ingestion by words).

    .venv/bin/python bench/ingest_embeddings_bench.py --documents 4
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime
from pathlib import Path

import httpx
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from stack import api_server, deployment, issue_credential
from vault_bench import create_project, make_documents, upload_all, wait_for_jobs

from strongroom.corpus.models import DocumentChunk
from strongroom.runtime import Runtime


async def passages_stored(runtime: Runtime) -> tuple[int, int]:
    """(passages, passages with a vector) in the database."""
    table = DocumentChunk.__table__
    async with runtime.sessions() as session:
        total, embedded = (
            await session.exec(
                select(func.count(), func.count(table.c.embedding_model))  # type: ignore[call-overload]
            )
        ).one()
    return total, embedded


async def run(deployed, provider: str, files: list[bytes]) -> str:
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await issue_credential(runtime, f"ingest-{provider}")
    finally:
        await runtime.close()
    async with (
        api_server(deployed, STRONGROOM_EMBEDDINGS_PROVIDER=provider) as base,
        httpx.AsyncClient(base_url=base, timeout=600) as client,
    ):
        project_id = await create_project(client, credential.key)
        documents = await upload_all(client, credential.key, project_id, "pdf", files)
        jobs = await wait_for_jobs(
            client, credential.key, [document["ingestion_job_id"] for document in documents]
        )
    runtime = Runtime.create(deployed.settings)
    try:
        total, embedded = await passages_stored(runtime)
    finally:
        await runtime.close()
    started = min(datetime.fromisoformat(job["started_at"]) for job in jobs)
    finished = max(datetime.fromisoformat(job["finished_at"]) for job in jobs)
    window = (finished - started).total_seconds()
    failed = sum(job["status"] != "succeeded" for job in jobs)
    return (
        f"| {provider} | {len(files)} | {total:,} | {embedded:,} | {window:.1f} | "
        f"{total / window:.1f} | {failed} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=4)
    parser.add_argument("--pages", type=int, default=20, help="per document")
    parser.add_argument("--providers", nargs="+", default=["none", "minilm"])
    args = parser.parse_args()
    files = make_documents("pdf", args.documents, args.pages, 2500, seed=11)
    print("| provider | documents | passages | with vectors | seconds | passages/s | failed |")
    print("|---|---|---|---|---|---|---|")
    for provider in args.providers:
        with deployment("sqlite", f"ingest-{provider}") as deployed:
            print(asyncio.run(run(deployed, provider, files)), flush=True)


if __name__ == "__main__":
    main()
