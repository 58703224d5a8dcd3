"""The PostgreSQL job queue (strongroom/jobs/queue.py) on the real database: procrastinate
is imported when the queue is made (issue 29), and a job already waiting is not queued twice
(its queueing lock: `enqueue` answers False)."""

from __future__ import annotations

import uuid

from strongroom.jobs.queue import ProcrastinateQueue

# Queued this far ahead, a job waits for the test alone: a worker of the suite running on the
# same database (tests/vault's) took one queued for now at once, its lock gone with it (CI).
LATER = 3600


async def test_a_job_already_waiting_is_not_queued_twice(postgres_settings) -> None:
    queue = ProcrastinateQueue(postgres_settings)
    job_id = uuid.uuid4()
    try:
        assert await queue.enqueue(job_id, LATER) is True
        assert await queue.enqueue(job_id) is False
    finally:
        # No job row stands behind it: taken out before any worker could take it.
        await queue.app.connector.execute_query_async(
            "DELETE FROM procrastinate_jobs WHERE queueing_lock = %(lock)s", lock=str(job_id)
        )
        await queue.close()


async def test_a_job_is_queued_with_its_priority(postgres_settings) -> None:
    """Issue 41: a tenant's next job goes before another tenant's backlog (`in_turn`):
    procrastinate fetches the highest priority first."""
    queue = ProcrastinateQueue(postgres_settings)
    job_id = uuid.uuid4()
    try:
        assert await queue.enqueue(job_id, LATER, priority=-7) is True
        rows = await queue.app.connector.execute_query_all_async(
            "SELECT priority FROM procrastinate_jobs WHERE queueing_lock = %(lock)s",
            lock=str(job_id),
        )
        assert [row["priority"] for row in rows] == [-7]
    finally:
        await queue.app.connector.execute_query_async(
            "DELETE FROM procrastinate_jobs WHERE queueing_lock = %(lock)s", lock=str(job_id)
        )
        await queue.close()
