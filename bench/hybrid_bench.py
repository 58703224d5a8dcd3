"""Hybrid search latency (issue 16): `search_chunks` by words only and hybrid, on PostgreSQL
and on the embedded SQLite, with one tenant's N passages. Prints a table for
bench/RESULTS.md.

The passages are vault_bench's (construction-contract prose inserted with SQL, indexed as
ingestion would index them), each stored with a random unit vector of 384 dimensions under
the model name `bench:random-384`, and each query's vector is random too: the database
read, the numpy scoring and the fusion cost the same whatever the vectors mean, and the
embedding call is measured separately (the `minilm` question embedding: about 10 ms,
bench/RESULTS.md), as the issue asks. Queries alternate lexical / hybrid, a quarter of them
narrowed to one project, in a session that commits, as the request path does.

Three searches in turn (the order rotating): by words only; hybrid with the vectors read
from the database on every query (at most `--max-vectors`, past which only the lexical pool
is scored by meaning); hybrid with the vectors held in the process
(strongroom.vault.vector_memory, bound `--memory-mb`, the service's default 256; 0 leaves
this one out). The first search with held vectors starts loading them (in the background
past 2,000 passages, reading from the database meanwhile): its time and the time until they
are held are printed apart, the bench waits for the load, and both are among the ten
warm-up queries.

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
from strongroom.vault.vector_memory import VectorMemory

MODEL = "bench:random-384"


class RandomVectors:
    """A provider whose vectors are random unit vectors, at no cost (see the docstring)."""

    model = MODEL

    def __init__(self, seed: int) -> None:
        self.random = np.random.default_rng(seed)

    def vectors(self, count: int) -> np.ndarray:
        vectors = self.random.standard_normal((count, 384)).astype(np.float32)
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
                    {"chunk_id": chunk_id, "embedding": to_bytes(v), "embedding_model": MODEL}
                    for chunk_id, v in zip(batch, vectors, strict=True)
                ],
            )
            await session.commit()
    return time.perf_counter() - started


async def run(deployed, chunks: int, queries: int, max_vectors: int, memory_mb: int) -> list[str]:
    backend = deployed.backend
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await issue_credential(runtime, "hybrid")
        started = time.perf_counter()
        project_ids = await seed_chunks(runtime, credential, chunks, 10, 21)
        seeded = time.perf_counter() - started
        provider = RandomVectors(5)
        stored = await store_vectors(runtime, provider)
        deployed.analyze()
        memory = VectorMemory(memory_mb * 2**20, runtime.sessions) if memory_mb else None
        semantics = {
            "lexical": None,
            f"hybrid, vectors read (max {max_vectors:,})": Semantic(
                provider, max_vectors=max_vectors
            ),
        }
        if memory is not None:
            semantics[f"hybrid, vectors held ({memory_mb} MiB)"] = Semantic(
                provider, max_vectors=max_vectors, memory=memory
            )
        first_held = loaded = 0.0
        texts = ContractWriter(31).queries(queries + 10)
        timings: dict[str, list[float]] = {mode: [] for mode in semantics}
        principal = credential.principal()
        modes = list(semantics)
        for number, query in enumerate(texts):
            filters = Filters(project_ids=[project_ids[number % 10]] if number % 4 == 3 else None)
            shift = number % len(modes)  # the order rotates: drift hits every mode alike
            for mode in modes[shift:] + modes[:shift]:
                async with runtime.sessions() as session:
                    await session.connection()
                    start = time.perf_counter()
                    await search_chunks(
                        session, principal, query, k=10, filters=filters,
                        semantic=semantics[mode],
                    )  # fmt: skip
                    elapsed = time.perf_counter() - start
                    await session.commit()
                if "held" in mode and not first_held:
                    first_held = elapsed
                    await memory.settled()  # a large partition loads in the background
                    loaded = time.perf_counter() - start
                if number >= 10:  # the first ten warm up
                    timings[mode].append(elapsed)
    finally:
        await runtime.close()
    rows = [
        f"| {backend} | {chunks:,} | {mode} | "
        f"{percentile(values, 0.5) * 1e3:.1f} | {percentile(values, 0.95) * 1e3:.1f} | "
        f"{len(values)} |"
        for mode, values in timings.items()
    ]
    print(
        f"{backend} {chunks}: seeded in {seeded:.1f} s, vectors stored in {stored:.1f} s "
        f"({chunks / stored:.0f}/s); first search with held vectors {first_held * 1e3:.0f} ms, "
        f"vectors held {loaded:.1f} s after it began",
        file=sys.stderr,
        flush=True,
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--max-vectors", type=int, default=20_000)
    parser.add_argument("--memory-mb", type=int, default=256, help="0: read vectors per query")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    backends = ("postgresql", "sqlite") if args.backend == "both" else (args.backend,)
    print("| database | passages | search | p50 ms | p95 ms | queries |")
    print("|---|---|---|---|---|---|")
    for backend in backends:
        with deployment(backend, f"hybrid{args.chunks // 1000}k") as deployed:
            rows = asyncio.run(
                run(deployed, args.chunks, args.queries, args.max_vectors, args.memory_mb)
            )
        for row in rows:
            print(row, flush=True)


if __name__ == "__main__":
    main()
