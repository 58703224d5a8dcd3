"""Run Alembic migrations on an async engine (the "connection sharing" recipe).

One entry point for the CLI, the embedded default and the tests: the upgrade runs inside the
caller's event loop on a connection of the given engine, never on a blocking driver.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Upgrade the database behind `engine` to `revision`."""

    def run(sync_connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = sync_connection
        command.upgrade(config, revision)

    async with engine.begin() as connection:
        await connection.run_sync(run)
