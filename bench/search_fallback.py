"""Where search's time goes since bf9ff2c (every word first, any-word fill only when fewer
than k passages hold every word), and what would cut the rest. The vault benchmark's
passages and queries (bench/vault_bench.py, bench/corpus.py); strongroom/ is not touched.

bench/vault_bench.py replays only the last statement search_chunks sends, so for a query that
takes the any-word fill its "SQL" row counts the fill alone. Here every statement is replayed
with the bare driver (PostgreSQL: prepared and committed, as the server's connections run
them), and the fill is taken apart:

PostgreSQL, the fill's inner ranked query (the outer one only adds headlines to k rows):
- as sent: `ts_rank` of every passage holding any word, top k;
- no rank, vectors read: `length(search_vector)` instead of the rank (fetches each matching
  passage's tsvector, from TOAST where it is stored out of line; ranks nothing);
- no rank: a constant instead of the rank (the scan, the join and the sort alone);
- without common words: passages must hold a word that is in at most half (--common) of the
  tenant's passages (ranked as sent, with every word); the common words still rank;
- then again with the tsvectors kept in their rows (`SET STORAGE MAIN`): by default a
  vector that does not fit the row beside its passage's text is stored out of line, in TOAST,
  and fetched from there for every ranking.
SQLite: as sent; without the `chunk_id` check in the join (bf9ff2c checks it in WHERE, for
every match); without common words; both.

    .venv/bin/python bench/search_fallback.py [--backends postgresql sqlite] [--k 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import psycopg.sql
from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from corpus import ContractWriter
from stack import Deployment, deployment, issue_credential
from vault_bench import ms, percentile, revision, seed_chunks

from strongroom.runtime import Runtime
from strongroom.vault.search import Filters, query_words, search_chunks


@dataclass
class Query:
    text: str
    project_ids: list[uuid.UUID] | None
    statements: list[tuple[str, object]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # each statement as sent
    variants: dict[str, float] = field(default_factory=dict)  # the fill, taken apart
    same_top: bool = True  # "without common words" returned the fill's passages
    # passages returned as sent that hold a word that is not common, of how many returned as
    # sent; passages returned without common words (all of which hold one)
    holding: tuple[int, int, int] = (0, 0, 0)


def percentiles(values: list[float]) -> str:
    if not values:
        return "| - | - | - | - |"
    return (
        f"| {ms(percentile(values, 0.5))} | {ms(percentile(values, 0.95))} | "
        f"{ms(percentile(values, 0.99))} | {ms(max(values))} |"
    )


# --- PostgreSQL ---------------------------------------------------------------------------

_PG_INNER = re.compile(r"\(SELECT document_chunks\.id AS id, .*? AS anon_1", re.S)
_PG_MATCH = "@@ (SELECT websearch_to_tsquery('english'::regconfig, %(websearch_to_tsquery_2)s"


def pg_inner(sql: str, score: str | None = None, match: bool = False) -> str:
    """The fill's inner ranked query alone, its rank replaced by `score`, and (`match`) its
    `@@` on %(bench_match)s instead of the words it ranks with."""
    inner = _PG_INNER.search(sql).group()[1 : -len(") AS anon_1")]
    if score is not None:
        inner = re.sub(r"ts_rank\(.*?::INTEGER\) AS score", f"{score} AS score", inner, flags=re.S)
    if match:
        assert _PG_MATCH in inner, inner
        inner = inner.replace(
            _PG_MATCH, "@@ (SELECT websearch_to_tsquery('english'::regconfig, %(bench_match)s"
        )
    return inner


def run_pg(connection, sql: str, parameters) -> tuple[list, float]:
    parameters = {k: v for k, v in parameters.items() if f"%({k})s" in sql}
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters, prepare=True)
        rows = cursor.fetchall()
    elapsed = time.perf_counter() - start
    connection.commit()
    return rows, elapsed


def pg_variants(connection, query: Query, rare: list[str], suffix: str = "") -> None:
    sql, parameters = query.statements[-1]
    runs = {
        f"as sent{suffix}": (pg_inner(sql), parameters),
        f"no rank, vectors read{suffix}": (
            pg_inner(sql, "length(document_chunks.search_vector)"),
            parameters,
        ),
        f"no rank{suffix}": (pg_inner(sql, "0"), parameters),
    }
    if rare and not suffix:
        runs["without common words"] = (
            pg_inner(sql, match=True),
            parameters | {"bench_match": " or ".join(rare)},
        )
    results = {}
    for name, (text, values) in runs.items():
        results[name], query.variants[name] = run_pg(connection, text, values)
    if rare:
        compare(query, results, rare, lambda ids: pg_holding(connection, ids, rare))


def pg_holding(connection, ids: list, rare: list[str]) -> int:
    """How many of the passages `ids` hold one of the words `rare`."""
    count = connection.execute(
        "SELECT count(*) FROM document_chunks WHERE id = ANY(%s) AND "
        "search_vector @@ websearch_to_tsquery('english', %s)",
        (ids, " or ".join(rare)),
    ).fetchone()[0]
    connection.rollback()
    return count


def compare(query: Query, results: dict, rare: list[str], holding) -> None:
    """Same passages as sent? And how many of each list hold a word that is not common."""
    sent = [row[0] for row in results["as sent"]]
    fewer = [row[0] for row in results["without common words"]]
    query.same_top = sent == fewer
    query.holding = (holding(sent), len(sent), len(fewer))


def explain(connection, statement: tuple[str, object]) -> str:
    sql, parameters = statement
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, parameters)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    connection.rollback()
    return plan


def storage_facts(connection) -> str:
    row = connection.execute(
        "SELECT avg(pg_column_size(search_vector)), avg(pg_column_size(content)), "
        "avg(octet_length(content)), pg_size_pretty(pg_relation_size('document_chunks')), "
        "pg_size_pretty(pg_relation_size((SELECT reltoastrelid FROM pg_class "
        "WHERE relname = 'document_chunks'))), count(*) FROM document_chunks"
    ).fetchone()
    toast = connection.execute(
        "SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'document_chunks'"
    ).fetchone()[0]
    external = connection.execute(
        psycopg.sql.SQL("SELECT count(DISTINCT chunk_id) FROM {}").format(
            psycopg.sql.Identifier(*toast.split("."))
        )
    ).fetchone()[0]
    connection.rollback()
    return (
        f"search_vector {row[0]:.0f} bytes on average, content {row[1]:.0f} bytes stored "
        f"({row[2]:.0f} raw); {external:,} values stored out of line for {row[5]:,} rows; "
        f"heap {row[3]}, TOAST {row[4]}"
    )


def pg_vectors_inline(url: str) -> None:
    """Keep each passage's tsvector in its row (STORAGE MAIN: TOAST moves `content` out of
    line first, and the vector only if the row still does not fit a page), and rewrite the
    rows so that they are stored that way (an UPDATE regenerates the generated column), then
    VACUUM FULL, again until the heap is back to its size (an old snapshot elsewhere can keep
    the dead rows for a moment)."""
    size = "SELECT pg_relation_size('document_chunks')"
    with psycopg.connect(url, autocommit=True) as connection:
        before = connection.execute(size).fetchone()[0]
        connection.execute(
            "ALTER TABLE document_chunks ALTER COLUMN search_vector SET STORAGE MAIN"
        )
        connection.execute("UPDATE document_chunks SET content = content")
        for _ in range(10):
            connection.execute("VACUUM FULL ANALYZE document_chunks")
            if connection.execute(size).fetchone()[0] < 1.2 * before:
                return
            time.sleep(2)
        print("# the rewritten table kept its dead rows", file=sys.stderr)


# --- SQLite -------------------------------------------------------------------------------

_CHECK = " AND document_chunks.id = document_chunks_fts.chunk_id"


def run_sqlite(connection, sql: str, parameters) -> tuple[list, float]:
    start = time.perf_counter()
    rows = connection.execute(sql, parameters).fetchall()
    return rows, time.perf_counter() - start


def sqlite_variants(connection, query: Query, rare: list[str]) -> None:
    sql, parameters = query.statements[-1]
    assert _CHECK in sql, sql
    match = parameters.index(next(p for p in parameters if isinstance(p, str) and " OR " in p))
    fewer = list(parameters)
    fewer[match] = " OR ".join(f'"{word}"' for word in rare)
    runs = {
        "as sent": (sql, parameters),
        "no chunk_id check": (sql.replace(_CHECK, ""), parameters),
    }
    if rare:
        runs["without common words"] = (sql, tuple(fewer))
        runs["both"] = (sql.replace(_CHECK, ""), tuple(fewer))
    results = {}
    for name, (text, values) in runs.items():
        results[name], query.variants[name] = run_sqlite(connection, text, values)
    if rare:
        compare(query, results, rare, lambda ids: sqlite_holding(connection, ids, rare))


def sqlite_holding(connection, ids: list, rare: list[str]) -> int:
    match = " OR ".join(f'"{word}"' for word in rare)
    return connection.execute(
        "SELECT count(*) FROM document_chunks_fts WHERE document_chunks_fts MATCH ? "
        "AND chunk_id IN (SELECT value FROM json_each(?))",
        (match, json.dumps(ids)),
    ).fetchone()[0]


# --- both ---------------------------------------------------------------------------------


async def prepare(deployed: Deployment, args: argparse.Namespace):
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await issue_credential(runtime, "fallback")
        project_ids = await seed_chunks(runtime, credential, args.chunks, args.projects, 21)
        deployed.analyze()
        queries = [
            Query(text, [project_ids[i % len(project_ids)]] if i % 4 == 3 else None)
            for i, text in enumerate(ContractWriter(31).queries(args.queries + args.warmup))
        ]
        principal = credential.principal()
        sent: list[tuple[str, object]] = []
        event.listen(
            runtime.engine.sync_engine,
            "before_cursor_execute",
            lambda conn, cursor, sql, parameters, context, many: sent.append((sql, parameters)),
        )
        for query in queries:
            sent.clear()
            async with runtime.sessions() as session:
                await search_chunks(
                    session,
                    principal,
                    query.text,
                    k=args.k,
                    filters=Filters(project_ids=query.project_ids),
                )
            query.statements = list(sent)
    finally:
        await runtime.close()
    return credential, queries


def frequencies(deployed: Deployment, connection, tenant: uuid.UUID, words: set[str]) -> dict:
    """Share of the tenant's passages holding each word."""
    out = {}
    if deployed.is_postgres:
        total = connection.execute(
            "SELECT count(*) FROM document_chunks WHERE tenant_id = %s", (tenant,)
        ).fetchone()[0]
        for word in words:
            out[word] = (
                connection.execute(
                    "SELECT count(*) FROM document_chunks WHERE tenant_id = %s AND "
                    "search_vector @@ websearch_to_tsquery('english', %s)",
                    (tenant, word),
                ).fetchone()[0]
                / total
            )
        connection.rollback()
    else:
        total = connection.execute(
            "SELECT count(*) FROM document_chunks WHERE tenant_id = ?", (tenant.hex,)
        ).fetchone()[0]
        for word in words:
            out[word] = (
                connection.execute(
                    "SELECT count(*) FROM document_chunks_fts WHERE document_chunks_fts MATCH ?",
                    (f'"{word}"',),
                ).fetchone()[0]
                / total
            )
    return out


def measure(deployed: Deployment, args: argparse.Namespace) -> list[str]:
    credential, queries = asyncio.run(prepare(deployed, args))
    if deployed.is_postgres:
        connection = psycopg.connect(deployed.admin_url)
    else:
        connection = sqlite3.connect(deployed.settings.resolved_database_url.split("///", 1)[1])
    words = {word for q in queries for word in query_words(q.text)}
    share = frequencies(deployed, connection, credential.tenant_id, words)
    common = sorted(word for word, value in share.items() if value > args.common)
    notes = []
    if deployed.is_postgres:
        notes.append("Storage: " + storage_facts(connection))

    def rare_words(query: Query) -> list[str]:
        return [w for w in query_words(query.text) if share[w] <= args.common]

    variants = pg_variants if deployed.is_postgres else sqlite_variants
    run = run_pg if deployed.is_postgres else run_sqlite
    for number, query in enumerate(queries):
        for statement in query.statements:
            query.times.append(run(connection, *statement)[1])
        if len(query.statements) == 2:
            rare = rare_words(query)
            variants(connection, query, rare if len(rare) < len(query_words(query.text)) else [])
        if number % 50 == 0:
            print(f"# {deployed.backend}: {number} queries", file=sys.stderr, flush=True)
    measured = [q for q in queries[args.warmup :] if q.statements]
    fills = [q for q in measured if len(q.statements) == 2]
    slowest = max(fills or measured, key=lambda q: sum(q.times))
    plans = []
    if deployed.is_postgres:
        plans = [
            f"-- {slowest.text!r}, statement {i + 1} of {len(slowest.statements)} "
            f"({ms(t)} ms as a prepared statement), custom plan:\n" + explain(connection, statement)
            for i, (statement, t) in enumerate(zip(slowest.statements, slowest.times, strict=True))
        ]
        connection.close()
        pg_vectors_inline(deployed.admin_url)
        connection = psycopg.connect(deployed.admin_url)
        notes.append("after SET STORAGE MAIN: " + storage_facts(connection))
        for query in queries:
            if len(query.statements) == 2:
                pg_variants(connection, query, [], suffix=", vectors inline")
    connection.close()

    lines = [
        f"**{deployed.backend}**, {args.chunks:,} passages, {len(measured)} queries with words "
        f"(after {args.warmup} warm-up), k={args.k}; {len(fills)} of them take the any-word "
        f"fill. Common words (in more than {args.common:.0%} of the passages): "
        f"{', '.join(common) or 'none'}. " + "; ".join(notes) + ".\n",
        "| SQL as search_chunks sends it, bare driver | Queries | p50 (ms) | p95 (ms) | "
        "p99 (ms) | max (ms) |",
        "|---|---|---|---|---|---|",
        f"| per query, all its statements | {len(measured)} "
        + percentiles([sum(q.times) for q in measured]),
        f"| the every-word statement | {len(measured)} "
        + percentiles([q.times[0] for q in measured]),
        f"| queries without the fill: their one statement | {len(measured) - len(fills)} "
        + percentiles([q.times[0] for q in measured if len(q.statements) == 1]),
        f"| queries with the fill: both statements | {len(fills)} "
        + percentiles([sum(q.times) for q in fills]),
        f"| queries with the fill: the fill alone | {len(fills)} "
        + percentiles([q.times[1] for q in fills]),
        "",
        "The fill taken apart (the queries that take it; "
        + ("its inner ranked query, prepared" if deployed.is_postgres else "the whole statement")
        + "):\n",
        "| Variant | Queries | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) | "
        "Those with common and other words | p50 (ms) | p95 (ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    with_rare = [q for q in fills if "without common words" in q.variants]
    names = list(dict.fromkeys(name for q in fills for name in q.variants))
    for name in names:
        values = [q.variants[name] for q in fills if name in q.variants]
        subset = [q.variants[name] for q in with_rare if name in q.variants]
        lines.append(
            f"| {name} | {len(values)} " + percentiles(values)
            + (f" {len(subset)} | {ms(percentile(subset, 0.5))} | {ms(percentile(subset, 0.95))} |"
               if subset else " 0 | - | - |")
        )  # fmt: skip
    lines.append(
        f'\n"Without common words" applies to {len(with_rare)} of the {len(fills)} fills (the '
        f"others have no common word, or only common words); it returned the same passages "
        f"in the same order for {sum(q.same_top for q in with_rare)} of them. As sent, "
        f"{sum(q.holding[0] for q in with_rare):,} of the {sum(q.holding[1] for q in with_rare):,} "
        f"passages they return hold a word that is not common (the others only common words); "
        f"without common words they return {sum(q.holding[2] for q in with_rare):,} passages, "
        f"all holding one."
    )
    if plans:
        lines += ["", "```", *plans, "```"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backends", nargs="+", choices=["postgresql", "sqlite"], default=["postgresql", "sqlite"]
    )
    parser.add_argument("--chunks", type=int, default=12_000)
    parser.add_argument("--projects", type=int, default=8)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--k", type=int, default=10, help="10: vault search; 15: chat's default")
    parser.add_argument(
        "--common", type=float, default=0.5, help="a word in more than this share is common"
    )
    args = parser.parse_args()
    out = [f"{time.strftime('%a %b %d %H:%M:%S UTC %Y', time.gmtime())}; {revision()}\n"]
    for backend in args.backends:
        with deployment(backend, "fallback") as deployed:
            out += [*measure(deployed, args), ""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
