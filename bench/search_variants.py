"""Sizes the fixes for search latency proposed in bench/RESULTS.md: the benchmark's
passages and queries (bench/vault_bench.py), each query's SQL run as strongroom's
search_chunks sends it and as rewritten, with the bare driver. strongroom/vault/search.py is
not touched; the rewrites live here as SQL text, so they describe the search.py of the
commit measured, and need updating when its statement changes.

PostgreSQL (every variant as a prepared statement, committed, as the server's connections
run it; from the 6th run PostgreSQL may switch to a generic plan):
- current: search_chunks' statement;
- tsquery once: the same, with `websearch_to_tsquery(...)` as a scalar subquery, which
  PostgreSQL evaluates once (an InitPlan) instead of once per matching row in a generic plan;
- + all words first: the passages with every word ranked first; the any-word query only
  when they are fewer than k (a second statement).
SQLite:
- current: search_chunks' statement;
- rowid join: the FTS table joined to document_chunks on rowid (which the insert trigger
  keeps equal) instead of on its UNINDEXED chunk_id column;
- + all words first: as on PostgreSQL.

    .venv/bin/python bench/search_variants.py [--backends postgresql sqlite] [--queries 400]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import time
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from corpus import ContractWriter
from stack import Deployment, deployment, issue_credential
from vault_bench import (
    Query,
    StatementRecorder,
    count_matches,
    ms,
    percentile,
    record_statement,
    seed_chunks,
)

from strongroom.runtime import Runtime
from strongroom.vault.search import query_words

K = 10
HEADLINE = "StartSel=\x02, StopSel=\x03, MaxWords=35, MinWords=12, MaxFragments=2"
PG_SQL = """
SELECT c.id, c.document_id, c.tenant_id, c.environment, c.project_id, c.ordinal,
       c.page_number, c.content, d.name,
       ts_headline('english'::regconfig, c.content,
                   (SELECT websearch_to_tsquery('english'::regconfig, %(q)s)), %(headline)s),
       best.score
FROM (
  SELECT c1.id,
         ts_rank_cd(c1.search_vector,
                    (SELECT websearch_to_tsquery('english'::regconfig, %(q)s)), 32) AS score
  FROM document_chunks c1 JOIN documents d1 ON d1.id = c1.document_id
  WHERE c1.search_vector @@ (SELECT websearch_to_tsquery('english'::regconfig, %(q)s))
    AND c1.tenant_id = %(tenant)s AND c1.environment = %(environment)s
    AND d1.status = 'ready' {projects}
  ORDER BY score DESC, c1.id LIMIT %(k)s
) best JOIN document_chunks c ON c.id = best.id JOIN documents d ON d.id = c.document_id
ORDER BY best.score DESC, c.id
"""
SQLITE_SQL = """
SELECT c.id, c.document_id, c.tenant_id, c.environment, c.project_id, c.ordinal,
       c.page_number, c.content, d.name,
       snippet(document_chunks_fts, 0, char(2), char(3), '…', 24),
       bm25(document_chunks_fts)
FROM document_chunks_fts
  JOIN document_chunks c ON c.rowid = document_chunks_fts.rowid
  JOIN documents d ON d.id = c.document_id
WHERE document_chunks_fts MATCH :match AND c.tenant_id = :tenant
  AND c.environment = :environment AND d.status = 'ready' {projects}
ORDER BY bm25(document_chunks_fts), c.id LIMIT :k
"""


def run_pg(connection, query: Query, tenant: uuid.UUID, text: str) -> tuple[list, float]:
    projects = "AND c1.project_id = ANY(%(projects)s)" if query.project_ids else ""
    parameters = {
        "q": text,
        "headline": HEADLINE,
        "tenant": tenant,
        "environment": "test",
        "k": K,
        "projects": query.project_ids,
    }
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(PG_SQL.format(projects=projects), parameters, prepare=True)
        rows = cursor.fetchall()
    elapsed = time.perf_counter() - start
    connection.commit()
    return rows, elapsed


def run_sqlite(connection, query: Query, tenant: uuid.UUID, match: str) -> tuple[list, float]:
    parameters = {"match": match, "tenant": tenant.hex, "environment": "test", "k": K}
    projects = ""
    if query.project_ids:
        names = [f":p{i}" for i in range(len(query.project_ids))]
        projects = f"AND c.project_id IN ({', '.join(names)})"
        parameters |= {name[1:]: p.hex for name, p in zip(names, query.project_ids, strict=True)}
    start = time.perf_counter()
    rows = connection.execute(SQLITE_SQL.format(projects=projects), parameters).fetchall()
    return rows, time.perf_counter() - start


def run_current(deployed: Deployment, connection, query: Query) -> tuple[list, float]:
    """search_chunks' own statement (PostgreSQL: prepared and committed, as the server)."""
    sql, parameters = query.statement
    start = time.perf_counter()
    if deployed.is_postgres:
        with connection.cursor() as cursor:
            cursor.execute(sql, parameters, prepare=True)
            rows = cursor.fetchall()
        elapsed = time.perf_counter() - start
        connection.commit()
    else:
        rows = connection.execute(sql, parameters).fetchall()
        elapsed = time.perf_counter() - start
    return [row[0] for row in rows], elapsed


def variants(deployed: Deployment, connection, query: Query, tenant: uuid.UUID) -> dict:
    """{variant: (ids, seconds)} for one query."""
    words = query_words(query.text)
    if not words:
        return {}
    if deployed.is_postgres:
        run, any_word, all_words = run_pg, " or ".join(words), " ".join(words)
        fixed = "tsquery once"
    else:
        run = run_sqlite
        any_word = " OR ".join(f'"{word}"' for word in words)
        all_words = " AND ".join(f'"{word}"' for word in words)
        fixed = "rowid join"
    out = {"current": run_current(deployed, connection, query)}
    rows, seconds = run(connection, query, tenant, any_word)
    out[fixed] = ([row[0] for row in rows], seconds)
    rows, seconds = run(connection, query, tenant, all_words)
    ids = [row[0] for row in rows]
    if len(ids) < K:
        more, extra = run(connection, query, tenant, any_word)
        ids += [row[0] for row in more if row[0] not in ids][: K - len(ids)]
        seconds += extra
    out[f"{fixed} + all words first"] = (ids, seconds, len(rows) < K)
    return out


async def measure(deployed: Deployment, args: argparse.Namespace) -> list[str]:
    runtime = Runtime.create(deployed.settings)
    try:
        credential = await issue_credential(runtime, "variants")
        project_ids = await seed_chunks(runtime, credential, args.chunks, args.projects, 21)
        deployed.analyze()
        queries = [
            Query(query, [project_ids[i % len(project_ids)]] if i % 4 == 3 else None)
            for i, query in enumerate(ContractWriter(31).queries(args.queries + args.warmup))
        ]
        principal = credential.principal()
        recorder = StatementRecorder(runtime)
        for query in queries:
            query.matches = await count_matches(runtime, credential, query)
            await record_statement(runtime, principal, recorder, query)
    finally:
        await runtime.close()
    if deployed.is_postgres:
        connection = psycopg.connect(deployed.admin_url)
    else:
        connection = sqlite3.connect(deployed.settings.resolved_database_url.split("///", 1)[1])
    results = [variants(deployed, connection, q, credential.tenant_id) for q in queries]
    connection.close()
    measured = [(q, r) for q, r in list(zip(queries, results, strict=True))[args.warmup :] if r]
    names = list(measured[0][1])
    lines = [
        f"**{deployed.backend}**, {len(measured)} queries with words (after {args.warmup} "
        f"warm-up), SQL with the bare driver:\n",
        "| Variant | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) | p95, >= 5,000 matches | "
        "same top 10 as current |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        values = [r[name][1] for _, r in measured]
        heavy = [r[name][1] for q, r in measured if q.matches >= 5000]
        same = sum(r[name][0] == r["current"][0] for _, r in measured)
        lines.append(
            f"| {name} | {ms(percentile(values, 0.5))} | {ms(percentile(values, 0.95))} | "
            f"{ms(percentile(values, 0.99))} | {ms(max(values))} | "
            f"{ms(percentile(heavy, 0.95)) if heavy else '-'} | {same} of {len(measured)} |"
        )
    fallbacks = sum(r[names[2]][2] for _, r in measured)
    lines.append(
        f"\nAll words first ran the any-word query as well for {fallbacks} of {len(measured)} "
        f"queries (fewer than {K} passages had every word)."
    )
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
    args = parser.parse_args()
    out: list[str] = []
    for backend in args.backends:
        with deployment(backend, "variants") as deployed:
            out += [*asyncio.run(measure(deployed, args)), ""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
