"""Alembic environment: migrations always run on a connection handed over by
`strongroom.db.migrate.upgrade` (or by `alembic` itself through the URL in alembic.ini)."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.ext.asyncio import create_async_engine

from strongroom.settings import Settings
from strongroom.tables import include_object, metadata


def run_on(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_standalone() -> None:
    engine = create_async_engine(Settings().resolved_database_url)
    async with engine.begin() as connection:
        await connection.run_sync(run_on)
    await engine.dispose()


shared = context.config.attributes.get("connection")
if shared is not None:
    run_on(shared)
else:  # `alembic revision --autogenerate` from a shell
    asyncio.run(run_standalone())
