"""The Alembic migrations build exactly the tables the models declare, on both backends; and
migration 0013 (pgvector, issue 16) up and down with and without the extension."""

from __future__ import annotations

import numpy as np
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from strongroom.db.migrate import alembic_config, upgrade
from strongroom.retrieval import vector_pgvector
from strongroom.retrieval.vectors import VectorStore, to_bytes
from strongroom.runtime import Runtime
from strongroom.tables import include_object, metadata
from tests.conftest import make_settings, own_postgres_database
from tests.vault.vectors import DIMENSIONS, MODEL, Tenancy, random_unit


async def test_migrated_schema_matches_models(runtime, backend):
    def diff(connection):
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_object": include_object}
        )
        return compare_metadata(context, metadata)

    async with runtime.engine.connect() as connection:
        differences = await connection.run_sync(diff)
    assert differences == [], f"{backend}: models and migrations differ: {differences}"


async def test_migrations_are_at_head(runtime):
    def current(connection):
        return MigrationContext.configure(connection).get_current_revision()

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    async with runtime.engine.connect() as connection:
        assert await connection.run_sync(current) == head


async def _downgrade(engine, revision: str) -> None:
    def run(sync_connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = sync_connection
        command.downgrade(config, revision)

    async with engine.begin() as connection:
        await connection.run_sync(run)


async def _vector_column(engine) -> list[str]:
    async with engine.connect() as connection:
        found = await connection.execute(
            text(
                "SELECT data_type FROM information_schema.columns WHERE table_schema = "
                "current_schema() AND table_name = 'document_chunks' "
                "AND column_name = 'embedding_vector'"
            )
        )
        return [row[0] for row in found]


async def _chunks(engine, document_id) -> list:
    async with engine.connect() as connection:
        found = await connection.execute(
            text(
                "SELECT embedding, embedding_model FROM document_chunks "
                "WHERE document_id = :id ORDER BY ordinal"
            ),
            {"id": document_id},
        )
        return found.all()


async def test_migration_0013_moves_vectors_into_pgvector_and_back(pgvector_admin_url, tmp_path):
    async with own_postgres_database(pgvector_admin_url) as url:
        runtime = Runtime.create(make_settings(url, tmp_path))
        try:
            # Vectors as bytes, as a database before 0013 holds them: written through the
            # models (which are at head), then taken down to 0012 (0013's downgrade leaves
            # rows with bytes as they are) and up again.
            await upgrade(runtime.engine)
            vectors = random_unit(3, 21)
            tenancy = await Tenancy.create(runtime)
            _, document_id = await tenancy.document(vectors, store=VectorStore(pgvector=False))
            await _downgrade(runtime.engine, "0012")
            assert await _vector_column(runtime.engine) == []
            await upgrade(runtime.engine)
            assert await _vector_column(runtime.engine) == ["USER-DEFINED"]
            async with runtime.engine.connect() as connection:
                moved = await connection.execute(
                    text(
                        "SELECT embedding IS NULL, embedding_vector::text FROM document_chunks "
                        "WHERE document_id = :id ORDER BY ordinal"
                    ),
                    {"id": document_id},
                )
                rows = moved.all()
                index = await connection.execute(
                    text("SELECT to_regclass(:name)"),
                    {"name": vector_pgvector.index_name(MODEL, DIMENSIONS)},
                )
                assert index.scalar_one() is not None  # built for the model found
            assert all(emptied for emptied, _ in rows)  # one copy: the vector's
            stored = np.array([np.array(v[1:-1].split(","), dtype=np.float32) for _, v in rows])
            assert np.array_equal(stored, vectors)

            await _downgrade(runtime.engine, "0012")
            assert await _vector_column(runtime.engine) == []
            back = await _chunks(runtime.engine, document_id)
            assert [blob for blob, _ in back] == [to_bytes(vector) for vector in vectors]
            assert {model for _, model in back} == {MODEL}
            await upgrade(runtime.engine)
            assert await _vector_column(runtime.engine) == ["USER-DEFINED"]
        finally:
            await runtime.close()


async def test_without_pgvector_migration_0013_changes_nothing_up_or_down(tmp_path):
    async with own_postgres_database() as url:  # the local PostgreSQL: no pgvector
        runtime = Runtime.create(make_settings(url, tmp_path))
        try:
            await upgrade(runtime.engine)
            assert await _vector_column(runtime.engine) == []
            vectors = random_unit(2, 22)
            tenancy = await Tenancy.create(runtime)
            _, document_id = await tenancy.document(vectors)  # as the database's store does
            assert [blob for blob, _ in await _chunks(runtime.engine, document_id)] == [
                to_bytes(vector) for vector in vectors
            ]
            await _downgrade(runtime.engine, "0012")
            await upgrade(runtime.engine)
            assert await _vector_column(runtime.engine) == []
            assert [blob for blob, _ in await _chunks(runtime.engine, document_id)] == [
                to_bytes(vector) for vector in vectors
            ]
            assert await vector_pgvector.describe(runtime.engine) == (
                "none (no pgvector extension: vectors ranked in process)"
            )
        finally:
            await runtime.close()
