"""Search by meaning inside PostgreSQL with pgvector and HNSW (issue 16), on a real
PostgreSQL 16 with pgvector 0.8.5 started for this test process (`pgvector_admin_url`,
tests/pgvector_server.py): the local PostgreSQL has no pgvector, and the rest of the suite
shows the service without it.

Passages are inserted with SQL and given random unit vectors of a provider that returns a
chosen question vector (no model needed: what is tested is where and how the database ranks
stored vectors; the real MiniLM runs in test_hybrid_search.py).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import event, text

from strongroom.corpus.models import Document
from strongroom.jobs.models import Job, JobKind
from strongroom.retrieval import vector_pgvector, vectors
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.semantic import POOL
from strongroom.runtime import Runtime
from strongroom.tables import include_object, metadata
from strongroom.vault import reembedding
from tests.conftest import REDIS_URL, make_settings, migrated, own_postgres_database
from tests.vault.vectors import (
    DIMENSIONS,
    MODEL,
    ChosenQuestion,
    Tenancy,
    ingest_here,
    random_unit,
    unit,
)


@pytest.fixture(scope="module")
async def runtime(pgvector_admin_url, redis_prefix, tmp_path_factory) -> AsyncIterator[Runtime]:
    """A runtime on a fresh, migrated database of the pgvector server."""
    async with own_postgres_database(pgvector_admin_url) as url:
        settings = await migrated(
            make_settings(
                url,
                tmp_path_factory.mktemp("data-pgvector"),
                redis_url=REDIS_URL,
                redis_prefix=redis_prefix,
            )
        )
        runtime = Runtime.create(settings)
        yield runtime
        await runtime.close()


# The HNSW index's ordered scan is the planner's only plan that needs no sort: on tables this
# small it would otherwise scan and sort, which is exact and proves nothing about the index.
USE_THE_INDEX = "SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off"


@contextlib.contextmanager
def vector_statements(runtime: Runtime) -> Iterator[list[tuple[str, dict]]]:
    """The statements (and parameters) ordering by vector distance that run meanwhile."""
    statements: list[tuple[str, dict]] = []

    def capture(_connection, _cursor, statement, parameters, _context, _many):
        if "<=>" in statement:
            statements.append((statement, parameters))

    event.listen(runtime.engine.sync_engine, "before_cursor_execute", capture)
    try:
        yield statements
    finally:
        event.remove(runtime.engine.sync_engine, "before_cursor_execute", capture)


async def test_migration_0013_creates_the_vector_column_where_pgvector_is(runtime):
    async with runtime.engine.connect() as connection:
        assert await vector_pgvector.enabled(connection)
        extension = await connection.execute(
            text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        )
        assert extension.scalar_one() == "0.8.5"


async def stored_columns(runtime, document_id) -> list:
    """(embedding bytes, pgvector column as text, model) of the document's passages, in
    order."""
    async with runtime.engine.connect() as connection:
        statement = text(
            "SELECT embedding, embedding_vector::text, embedding_model FROM "
            "document_chunks WHERE document_id = :id ORDER BY ordinal"
        )
        return (await connection.execute(statement, {"id": document_id})).all()


async def test_vectors_are_stored_once_in_pgvector_with_the_models_hnsw_index(runtime):
    tenancy = await Tenancy.create(runtime)
    vectors = random_unit(3, 1)
    _, document_id = await tenancy.document(vectors)
    rows = await stored_columns(runtime, document_id)
    async with runtime.engine.connect() as connection:
        index = await connection.execute(
            text("SELECT indexdef FROM pg_indexes WHERE indexname = :name"),
            {"name": vector_pgvector.index_name(MODEL, DIMENSIONS)},
        )
        definition = index.scalar_one()
    assert [row.embedding for row in rows] == [None, None, None]  # one copy: the vector's
    stored = np.array([np.array(row[1][1:-1].split(","), dtype=np.float32) for row in rows])
    assert np.array_equal(stored, vectors)  # exactly the float32 values written
    assert {row.embedding_model for row in rows} == {MODEL}
    assert "hnsw" in definition and f"vector({DIMENSIONS})" in definition
    assert f"embedding_model)::text = '{MODEL}'" in definition


async def test_reembed_writes_pgvector_and_leaves_no_bytes(runtime, monkeypatch):
    tenancy = await Tenancy.create(runtime)
    _, document_id = await tenancy.document(random_unit(2, 2))
    async with runtime.engine.begin() as connection:
        await connection.execute(
            text(
                "UPDATE document_chunks SET embedding_model = 'old:model', "
                "embedding_vector = NULL WHERE document_id = :id"
            ),
            {"id": document_id},
        )
    provider = ChosenQuestion()
    monkeypatch.setattr(runtime, "embeddings", provider)
    assert await reembedding.reembed(runtime, document_id) == 2
    rows = await stored_columns(runtime, document_id)
    assert all(row[0] is None and row[1] is not None and row[2] == MODEL for row in rows)


async def test_pgvector_ranks_a_small_set_exactly_as_numpy_does(runtime):
    tenancy = await Tenancy.create(runtime)
    await tenancy.document(random_unit(120, 3))
    await tenancy.document(random_unit(80, 4))
    provider = ChosenQuestion()
    exact = tenancy.exact(provider.question)
    assert await tenancy.nearest(provider) == exact  # all 200, in numpy's order
    assert await tenancy.nearest(provider, settings=USE_THE_INDEX) == exact


async def test_the_hnsw_index_serves_the_vector_search_with_its_filters_inside(runtime):
    tenancy = await Tenancy.create(runtime)
    project_id, _ = await tenancy.document(random_unit(50, 5))
    with vector_statements(runtime) as statements:
        await tenancy.nearest(ChosenQuestion(), Filters(project_ids=[project_id]))
    statement, parameters = statements[0]
    async with runtime.engine.begin() as connection:
        for setting in USE_THE_INDEX.split(";"):
            await connection.exec_driver_sql(setting)
        plan = "\n".join(
            row[0] for row in await connection.exec_driver_sql("EXPLAIN " + statement, parameters)
        )
    assert f"Index Scan using {vector_pgvector.index_name(MODEL, DIMENSIONS)}" in plan
    assert "Limit" in plan.splitlines()[0]
    # The tenant, environment, project and `ready` conditions are in the statement that
    # the index scan feeds, under its LIMIT: never applied to its result afterwards.
    for condition in ("tenant_id", "environment", "project_id", "status"):
        assert condition in statement.split("ORDER BY")[0]


async def test_a_small_tenant_among_a_large_one_gets_a_full_page_of_its_own(runtime):
    provider = ChosenQuestion()
    large, small = await Tenancy.create(runtime), await Tenancy.create(runtime)
    # The large tenant's passages are the question's nearest: an index scan meets them first.
    near = unit(provider.question + 0.3 * random_unit(1500, 6))
    await large.document(near[:750])
    await large.document(near[750:])
    await small.document(random_unit(POOL + 40, 7))
    for settings in ("", USE_THE_INDEX):
        with vector_statements(runtime) as statements:
            found = await small.nearest(provider, settings=settings)
        assert len(statements) == 1  # one search filled the page: no exact second pass
        assert len(found) == POOL
        assert set(found) <= set(small.vectors)  # never the other tenant's
        assert found[:10] == small.exact(provider.question)[:10]


async def test_when_the_index_scan_stops_short_the_scope_is_ranked_exactly(runtime, monkeypatch):
    provider = ChosenQuestion()
    large, small = await Tenancy.create(runtime), await Tenancy.create(runtime)
    await large.document(unit(provider.question + 0.3 * random_unit(1200, 8)))
    await small.document(random_unit(POOL + 10, 9))
    monkeypatch.setattr(vector_pgvector, "MAX_SCAN_TUPLES", 200)  # fewer than the large one's
    found = await small.nearest(provider, settings=USE_THE_INDEX)
    assert found == small.exact(provider.question)[:POOL]


async def test_project_and_document_filters_apply_inside_the_vector_search(runtime):
    provider = ChosenQuestion()
    tenancy = await Tenancy.create(runtime)
    first, first_document = await tenancy.document(
        unit(provider.question + 0.2 * random_unit(400, 10))
    )
    second, _ = await tenancy.document(random_unit(30, 11))
    _, other_document = await tenancy.document(random_unit(20, 12), project_id=second)
    for settings in ("", USE_THE_INDEX):
        in_second = await tenancy.nearest(provider, Filters(project_ids=[second]), settings)
        assert in_second == tenancy.exact(
            provider.question, {c for c, p in tenancy.project_of.items() if p == second}
        )  # all 50 of the project, none of the first's nearer 400
        only = await tenancy.nearest(provider, Filters(document_ids=[other_document]), settings)
        assert only == tenancy.exact(
            provider.question, {c for c, d in tenancy.document_of.items() if d == other_document}
        )
        neither = Filters(project_ids=[first], document_ids=[other_document])
        assert await tenancy.nearest(provider, neither, settings) == []
    assert first_document != other_document


async def test_readiness_says_the_vector_search_is_pgvector_hnsw(runtime, monkeypatch):
    monkeypatch.setattr(runtime, "embeddings", ChosenQuestion())
    vectors._readiness.clear()
    details = await vectors.search_readiness(runtime.embeddings, runtime.read_engine)
    vectors._readiness.clear()
    assert details["search"] == "hybrid" and details["vector_index"] == "pgvector-hnsw"


@pytest.mark.filterwarnings("ignore:Did not recognize type 'vector'")  # SQLAlchemy's
async def test_the_pgvector_schema_is_the_models_but_its_own_column_and_indexes(runtime):
    await Tenancy.create(runtime)  # an index of the test model may exist: left out too

    def diff(connection):
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_object": include_object}
        )
        return compare_metadata(context, metadata)

    async with runtime.engine.connect() as connection:
        assert await connection.run_sync(diff) == []


async def test_the_ingestion_job_stores_passage_vectors_in_pgvector(runtime, monkeypatch, tmp_path):
    tenancy = await Tenancy.create(runtime)
    project_id, _ = await tenancy.document(random_unit(1, 13))
    source = tmp_path / "conditions.txt"
    source.write_text("Workers must wear hard hats at all times on site.")
    key = f"test/{uuid.uuid4()}"
    await runtime.blobs.put_file(key, source)
    async with runtime.sessions() as session:
        document = Document(
            tenant_id=tenancy.tenant.id, environment="test", project_id=project_id,
            owner_id=tenancy.user_id, name="conditions.txt", document_type="text",
            content_type="text/plain", size_bytes=50, sha256="0" * 64, blob_key=key,
            ingestion_job_id=uuid.uuid4(),
        )  # fmt: skip
        session.add(document)
        await session.flush()
        job = Job(
            id=document.ingestion_job_id, tenant_id=tenancy.tenant.id, environment="test",
            kind=JobKind.INGESTION.value, subject_id=document.id,
        )  # fmt: skip
        session.add(job)
        await session.commit()
    provider = ChosenQuestion()
    monkeypatch.setattr(runtime, "embeddings", provider)
    await ingest_here(runtime, job)
    async with runtime.engine.connect() as connection:
        [row] = (
            await connection.execute(
                text(
                    "SELECT embedding, embedding_vector::text, embedding_model FROM "
                    "document_chunks WHERE document_id = :id"
                ),
                {"id": document.id},
            )
        ).all()
    assert row[0] is None and row[2] == MODEL
    assert np.array_equal(np.array(row[1][1:-1].split(","), dtype=np.float32), provider.question)


async def test_a_vector_of_other_dimensions_under_the_model_is_left_out_not_an_error(runtime):
    provider = ChosenQuestion()
    tenancy = await Tenancy.create(runtime)
    project_id, _ = await tenancy.document(random_unit(5, 14))
    odd = unit(np.random.default_rng(15).standard_normal((1, DIMENSIONS // 2)))
    await tenancy.document(odd, project_id=project_id)  # its cast to vector(32) would fail
    wanted = {c for c, v in tenancy.vectors.items() if len(v) == DIMENSIONS}
    for settings in ("", USE_THE_INDEX):
        assert await tenancy.nearest(provider, settings=settings) == tenancy.exact(
            provider.question, wanted
        )


async def test_the_planner_knows_how_many_vectors_have_the_models_dimensions(runtime):
    # Without statistics of vector_dims (migration 0013) it guesses 0.5% of the rows, and
    # plans to sort all the index scan returns instead of stopping at the LIMIT.
    tenancy = await Tenancy.create(runtime)
    await tenancy.document(random_unit(400, 16))
    async with runtime.engine.connect() as connection:
        await connection.exec_driver_sql("ANALYZE document_chunks")
        of_dimensions = "FROM document_chunks WHERE vector_dims(embedding_vector) = %(d)s"
        count = await connection.exec_driver_sql(
            "SELECT count(*) " + of_dimensions, {"d": DIMENSIONS}
        )
        plan = await connection.exec_driver_sql(
            "EXPLAIN SELECT 1 " + of_dimensions, {"d": DIMENSIONS}
        )
        estimated = int(re.search(r"rows=(\d+)", plan.first()[0]).group(1))
    assert estimated >= count.scalar_one() * 0.8
