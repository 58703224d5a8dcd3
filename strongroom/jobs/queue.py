"""Where job ids wait for a worker (D46).

- `ProcrastinateQueue`: procrastinate's queue in the PostgreSQL database, run by
  `strongroom worker` processes (`strongroom.worker`). Durable: jobs outlive every
  process, and a worker's sweep retries the jobs of workers that died.
- `InProcessQueue`: the embedded default runs jobs inside its one process; on start it picks
  up the jobs a previous run left unfinished.

Either way the job row (strongroom.jobs.models) holds the state; the queue carries only ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Protocol

from strongroom.jobs.fairness import DEFER_SECONDS, JobDeferred
from strongroom.jobs.runner import RetryJob, stop_resumable_jobs
from strongroom.lazy import LazyModule
from strongroom.settings import Settings

# procrastinate (with psycopg_pool and croniter) loads with the PostgreSQL queue, when it is
# made; the embedded default's in-process queue never imports it (issue 29).
procrastinate = LazyModule("procrastinate")
procrastinate_exceptions = LazyModule("procrastinate.exceptions")

log = logging.getLogger("strongroom.jobs")

RUN_JOB_TASK = "strongroom.run_job"
ENQUEUE_TIMEOUT_SECONDS = 5
RunJob = Callable[[uuid.UUID], Awaitable[None]]


class JobQueue(Protocol):
    async def enqueue(
        self, job_id: uuid.UUID, delay_seconds: float = 0.0, priority: int = 0
    ) -> bool: ...

    async def start(self, run: RunJob, unfinished: list[uuid.UUID]) -> None:
        """Begin running jobs in this process, starting with `unfinished` (in-process only)."""

    async def close(self) -> None: ...


def queue_pool_size(settings: Settings) -> int:
    """Connections one job queue's pool may hold (STRONGROOM_DATABASE_QUEUE_POOL_SIZE)."""
    if settings.database_queue_pool_size is not None:
        return settings.database_queue_pool_size
    return max(2, settings.worker_concurrency + 1)


def procrastinate_app(settings: Settings) -> procrastinate.App:
    connector = procrastinate.PsycopgConnector(  # the keywords go to psycopg's pool
        conninfo=settings.postgres_conninfo,
        min_size=1,
        max_size=queue_pool_size(settings),
    )
    return procrastinate.App(connector=connector)


class ProcrastinateQueue:
    """Defers jobs to procrastinate; the API process only ever defers."""

    def __init__(self, settings: Settings) -> None:
        self.app = procrastinate_app(settings)
        self._opened = False
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        """Open the app's connections (once; enqueues open it on first use)."""
        async with self._lock:
            if not self._opened:
                await self.app.open_async()
                self._opened = True

    async def enqueue(
        self, job_id: uuid.UUID, delay_seconds: float = 0.0, priority: int = 0
    ) -> bool:
        """Queue the job (to start no sooner than `delay_seconds` from now, before the jobs
        of lower `priority`: procrastinate fetches by priority, then by age); False when it
        is already waiting in the queue. Gives up after ENQUEUE_TIMEOUT_SECONDS
        (TimeoutError): the job stays `pending` and a worker's sweep queues it later, so a
        slow database never holds a response for long."""
        async with asyncio.timeout(ENQUEUE_TIMEOUT_SECONDS):
            await self.open()
            schedule = {"schedule_in": {"seconds": delay_seconds}} if delay_seconds else {}
            task = self.app.configure_task(
                RUN_JOB_TASK, queueing_lock=str(job_id), priority=priority, **schedule
            )
            try:
                await task.defer_async(job_id=str(job_id))
            except procrastinate_exceptions.AlreadyEnqueued:
                return False
        return True

    async def retry_stalled(self, seconds_since_heartbeat: float) -> list[int]:
        """Queue again the jobs held by workers whose last heartbeat is older than
        `seconds_since_heartbeat` (killed, their node gone); their procrastinate ids."""
        await self.open()
        manager = self.app.job_manager
        stalled = await manager.get_stalled_jobs(
            task_name=RUN_JOB_TASK, seconds_since_heartbeat=seconds_since_heartbeat
        )
        for job in stalled:
            await manager.retry_job(job)
        return [job.id for job in stalled if job.id is not None]

    async def start(self, run: RunJob, unfinished: list[uuid.UUID]) -> None:
        return None  # `strongroom worker` runs the jobs

    async def close(self) -> None:
        if self._opened:
            await self.app.close_async()
            self._opened = False


class InProcessQueue:
    """An asyncio queue and `concurrency` consumers in the serving process.

    Closing stops resumable jobs at once (a document's vectors, committed a piece at a time:
    they go back to `pending` and resume at the next start) and lets the other jobs in
    progress finish (for up to `shutdown_grace_seconds`) before it cancels them: a job
    cancelled in the middle of a write can leave its SQLite transaction open on a connection
    nobody returns, holding the database's one write lock. A job cancelled after the grace
    period stays `running` and is picked up at the next start."""

    RETRY_DELAY_SECONDS = 1.0

    def __init__(self, concurrency: int, shutdown_grace_seconds: float = 10.0) -> None:
        self.concurrency = concurrency
        self.shutdown_grace_seconds = shutdown_grace_seconds
        # (-priority, arrival, job id): the highest priority first, then the oldest.
        self._queue: asyncio.PriorityQueue[tuple[int, int, uuid.UUID]] = asyncio.PriorityQueue()
        self._arrivals = itertools.count()
        self._consumers: list[asyncio.Task] = []
        self._busy: set[asyncio.Task] = set()
        self._closing = False
        self._deferred = 0  # jobs put back for later (their tenant held its share)
        self._run: RunJob | None = None

    async def enqueue(
        self, job_id: uuid.UUID, delay_seconds: float = 0.0, priority: int = 0
    ) -> bool:
        if delay_seconds:
            self._deferred += 1
            later = asyncio.get_running_loop().call_later
            later(delay_seconds, self._put_deferred, job_id, priority)
        else:
            self._put(job_id, priority)
        return True

    def _put(self, job_id: uuid.UUID, priority: int) -> None:
        self._queue.put_nowait((-priority, next(self._arrivals), job_id))

    def _put_deferred(self, job_id: uuid.UUID, priority: int) -> None:
        self._deferred -= 1
        if not self._closing:
            self._put(job_id, priority)

    async def start(self, run: RunJob, unfinished: list[uuid.UUID]) -> None:
        self._run = run
        for job_id in unfinished:
            self._put(job_id, 0)
        self._consumers = [asyncio.create_task(self._consume()) for _ in range(self.concurrency)]

    async def idle(self) -> None:
        """Wait until every enqueued job has ended (tests, shutdown)."""
        await self._queue.join()
        while self._deferred:
            await asyncio.sleep(0.05)
            await self._queue.join()

    async def _consume(self) -> None:
        assert self._run is not None
        me = asyncio.current_task()
        assert me is not None
        while not self._closing:
            _, _, job_id = await self._queue.get()
            self._busy.add(me)
            try:
                await self._run_until_done(job_id)
            except Exception:
                log.exception("job runner failed", extra={"job_id": str(job_id)})
            finally:
                self._busy.discard(me)
                self._queue.task_done()

    async def _run_until_done(self, job_id: uuid.UUID) -> None:
        assert self._run is not None
        while True:
            try:
                await self._run(job_id)
                return
            except JobDeferred as deferred:  # its slot to another tenant's job
                await self.enqueue(job_id, DEFER_SECONDS, priority=deferred.priority)
                return
            except RetryJob:
                if self._closing:
                    return  # still `running` in the database: resumed at the next start
                await asyncio.sleep(self.RETRY_DELAY_SECONDS)
                if self._closing:
                    return

    async def close(self) -> None:
        self._closing = True
        stop_resumable_jobs()  # a document's vectors: stopped now, resumed at the next start
        busy = set(self._busy)
        for task in self._consumers:
            if task not in busy:
                task.cancel()  # waiting for a job: nothing to lose
        if busy:
            _, unfinished = await asyncio.wait(busy, timeout=self.shutdown_grace_seconds)
            if unfinished:
                log.warning(
                    "cancelling jobs still running after the shutdown grace period",
                    extra={"jobs": len(unfinished)},
                )
            for task in unfinished:
                task.cancel()
        for task in self._consumers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._consumers.clear()


def create_job_queue(settings: Settings) -> JobQueue:
    if settings.is_embedded:
        return InProcessQueue(settings.worker_concurrency, settings.job_shutdown_grace_seconds)
    return ProcrastinateQueue(settings)
