"""The SQL database and the connections each process keeps to it."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from strongroom.settings.base import shown_default


class DatabaseSettings(BaseModel):
    """The SQL database and the connections each process keeps to it."""

    database_url: str | None = Field(
        default=None,
        json_schema_extra=shown_default("SQLite file `<data_dir>/strongroom.db`"),
        description=(
            "SQLAlchemy URL. `postgresql://user@host/db` is accepted and run on psycopg 3 (async);"
            " `sqlite+aiosqlite:///path` for SQLite."
        ),
    )
    database_pool_size: int = Field(
        default=20,
        ge=1,
        description=(
            "Connections per process, kept open once opened (no overflow: a request waits for one "
            "when all are in use)."
        ),
    )
    database_read_pool_size: int = Field(
        default=10,
        ge=1,
        description=(
            "PostgreSQL connections per process beside the pool above, for the list reads of hot "
            "paths, the debits of live reads and the last statements of writes that opened no "
            "transaction (a project's create with its Idempotency-Key record and debit), which run"
            " on psycopg itself (issue 29, `db/reads.py`, `db/together.py`, `billing/credits.py`);"
            " opened when first needed, kept once opened."
        ),
    )
    database_queue_pool_size: int | None = Field(
        default=None,
        ge=1,
        json_schema_extra=shown_default("`STRONGROOM_WORKER_CONCURRENCY` + 1, at least 2"),
        description=(
            "PostgreSQL connections the job queue's pool (procrastinate's psycopg pool) of a "
            "process may hold; `strongroom worker` has two such pools (its own and the one it "
            "queues jobs through) and one more connection listening for new jobs, so its total is "
            "the two pools above, twice this, and 1. The Helm chart sets all three pools in every "
            'pod (docs/deploy.md, "Database connections", issue 52).'
        ),
    )

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str | None) -> str | None:
        """Accept plain `postgresql://` URLs and pin the async psycopg 3 driver."""
        if value and value.startswith(("postgresql://", "postgres://")):
            return "postgresql+psycopg://" + value.split("://", 1)[1]
        return value
