"""The Alembic migrations build exactly the tables the models declare, on both backends."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from strongroom.db.metadata import include_object, metadata
from strongroom.db.migrate import alembic_config


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
