"""Hybrid search latency (issue 16): `search_chunks` by words only and hybrid, on PostgreSQL
and on the embedded SQLite, with one tenant's N passages. Prints a table for
bench/RESULTS.md.

The passages are vault_bench's (construction-contract prose inserted with SQL, indexed as
ingestion would index them), each stored with a random unit vector of `--dimensions` (384,
as `minilm`; 256 as `wordllama`) under the model name `bench:random-<dimensions>`, and each
query's vector is random too: the database
read, the numpy scoring and the fusion cost the same whatever the vectors mean, and the
embedding call is measured separately (the `minilm` question embedding: about 10 ms,
bench/RESULTS.md), as the issue asks. Queries alternate lexical / hybrid, a quarter of them
narrowed to one project, in a session that commits, as the request path does.

    .venv/bin/python bench/hybrid_bench.py --chunks 10000 --backend both
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import numpy as np
from sqlalchemy import bindparam, select, update

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from corpus import ContractWriter
from stack import deployment, issue_credential
from vault_bench import percentile, seed_chunks

from strongroom.runtime import Runtime
from strongroom.vault.embedding import to_bytes
from strongroom.vault.models import DocumentChunk
from strongroom.vault.search import Filters, search_chunks
from strongroom.vault.semantic import Semantic


class RandomVectors:
    """A provider whose vectors are random unit vectors, at no cost (see the docstring)."""

    def __init__(self, seed: int, dimensions: int = 384) -> None:
        self.random = np.random.default_rng(seed)
        self.dimensions = dimensions
        self.model = f"bench:random-{dimensions}"

    def vectors(self, count: int) -> np.ndarray:
        vectors = self.random.standard_normal((count, self.dimensions)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    async def embed(self, texts) -> np.ndarray:
        return self.vectors(len(texts))


async def store_vectors(runtime: Runtime, provider: RandomVectors) -> float:
    table = DocumentChunk.__table__
    started = time.perf_counter()
    async with runtime.sessions() as session:
        ids = (await session.exec(select(table.c.id))).scalars().all()
    for start in range(0, len(ids), 1000):
        batch = ids[start : start + 1000]
        vectors = provider.vectors(len(batch))
        async with runtime.sessions() as session:
            connection = await session.connection()
            await connection.execute(
                update(table).where(table.c.id == bindparam("chunk_id")),
                [
                    {
                        "chunk_id": chunk_id,
                        "embedding": to_bytes(v),
                        "embedding_model": provider.model,
                    }
                    for chunk_id, v in zip(batch, vectors, strict=True)
                ],
            )
            await session.commit()
    return time.perf_counter() - started


async def run(deployed, chunks: int, queries: int, max_vectors: int, dimensions: int) -> list[str]:
    backend = deployed.backend
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await issue_credential(runtime, "hybrid")
        started = time.perf_counter()
        project_ids = await seed_chunks(runtime, credential, chunks, 10, 21)
        seeded = time.perf_counter() - started
        provider = RandomVectors(5, dimensions)
        stored = await store_vectors(runtime, provider)
        deployed.analyze()
        semantic = Semantic(provider, max_vectors=max_vectors)
        texts = ContractWriter(31).queries(queries + 10)
        timings: dict[str, list[float]] = {"lexical": [], "hybrid": []}
        principal = credential.principal()
        for number, query in enumerate(texts):
            filters = Filters(project_ids=[project_ids[number % 10]] if number % 4 == 3 else None)
            order = ("lexical", "hybrid") if number % 2 else ("hybrid", "lexical")
            for mode in order:
                async with runtime.sessions() as session:
                    await session.connection()
                    start = time.perf_counter()
                    await search_chunks(
                        session, principal, query, k=10, filters=filters,
                        semantic=semantic if mode == "hybrid" else None,
                    )  # fmt: skip
                    elapsed = time.perf_counter() - start
                    await session.commit()
                if number >= 10:  # the first ten warm up
                    timings[mode].append(elapsed)
    finally:
        await runtime.close()
    rows = []
    for mode, values in timings.items():
        rows.append(
            f"| {backend} | {chunks:,} | {dimensions} | {mode} | {max_vectors:,} | "
            f"{percentile(values, 0.5) * 1e3:.1f} | {percentile(values, 0.95) * 1e3:.1f} | "
            f"{len(values)} |"
        )
    print(
        f"{backend} {chunks}: seeded in {seeded:.1f} s, vectors stored in {stored:.1f} s "
        f"({chunks / stored:.0f}/s)",
        file=sys.stderr,
        flush=True,
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--max-vectors", type=int, default=20_000)
    parser.add_argument(
        "--dimensions", type=int, nargs="+", default=[384], help="one run per vector length"
    )
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    backends = ("postgresql", "sqlite") if args.backend == "both" else (args.backend,)
    print("| database | passages | dimensions | search | max vectors | p50 ms | p95 ms | queries |")
    print("|---|---|---|---|---|---|---|---|")
    for dimensions in args.dimensions:
        for backend in backends:
            with deployment(backend, f"hybrid{args.chunks // 1000}k") as deployed:
                rows = asyncio.run(
                    run(deployed, args.chunks, args.queries, args.max_vectors, dimensions)
                )
            for row in rows:
                print(row, flush=True)


if __name__ == "__main__":
    main()
