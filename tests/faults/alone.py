"""What the tests of a worker being stopped share: a deployment of the test's own, so that no
other test's worker takes its job, and a look at what procrastinate holds for a job."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import text

from strongroom.runtime import Runtime
from tests.conftest import REDIS_URL, make_settings, migrated, own_postgres_database


@asynccontextmanager
async def runtime_of_its_own(tmp_path: Path, redis_prefix: str) -> AsyncIterator[Runtime]:
    """A runtime on a migrated PostgreSQL database of the test's own and the suite's Redis,
    closed and dropped afterwards; a WorkerProcess of `runtime.settings` works on it alone."""
    async with own_postgres_database() as url:
        settings = await migrated(
            make_settings(url, tmp_path, redis_url=REDIS_URL, redis_prefix=redis_prefix)
        )
        runtime = Runtime.create(settings)
        try:
            yield runtime
        finally:
            await runtime.close()


async def queued_again(runtime: Runtime, job_id: uuid.UUID) -> int:
    """How many procrastinate jobs wait (`todo`) to run the job `job_id`."""
    async with runtime.engine.connect() as connection:
        return await connection.scalar(
            text(
                "SELECT count(*) FROM procrastinate_jobs"
                " WHERE args->>'job_id' = :job AND status = 'todo'"
            ),
            {"job": str(job_id)},
        )
