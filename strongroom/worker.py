"""`strongroom worker`: runs jobs from procrastinate's PostgreSQL queue (D46).

Beside procrastinate's own worker loop it runs the worker's background tasks
(strongroom.background), among them the job sweep, every `worker_sweep_seconds`:
- jobs held by a worker that stopped sending heartbeats (killed, its node gone) go back to
  the queue, so a dead worker's job is retried, never left `running`;
- jobs still `pending` long after they were accepted, with nothing queued for them (the API
  process stopped between its commit and the defer), are queued again.

On SIGTERM it takes no new job and gives the running ones `job_shutdown_grace_seconds`;
then it cancels them (their child processes killed) and queues them again, so it stops
within its grace period whatever it was parsing.

With `STRONGROOM_WORKER_METRICS_PORT` set it serves its Prometheus `/metrics` (jobs finished and
retried, pages ingested) on that port, from a daemon thread: one process, so prometheus-client's
ordinary in-memory mode. `strongroom worker` drops `PROMETHEUS_MULTIPROC_DIR` from its
environment before anything imports prometheus-client (`strongroom serve` sets it for its
Hypercorn workers; inherited here it would only write files nothing sums, or stop the worker
at start when that directory is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import uuid
from datetime import timedelta

import procrastinate
from prometheus_client import start_http_server
from sqlmodel import col, select

from strongroom.background import Process
from strongroom.db.types import utcnow
from strongroom.embeddings import warm
from strongroom.job_kinds import register_job_kinds
from strongroom.jobs.fairness import DEFER_SECONDS, JobDeferred
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.jobs.queue import RUN_JOB_TASK, ProcrastinateQueue
from strongroom.jobs.runner import RetryJob, run_job, stop_resumable_jobs
from strongroom.jobs.turns import turn_of
from strongroom.metrics import JOBS_FINISHED, JOBS_RETRIED, WEBHOOK_DELIVERIES
from strongroom.runtime import Runtime
from strongroom.settings import Settings

log = logging.getLogger("strongroom.worker")


async def run_worker(settings: Settings) -> None:
    if settings.worker_metrics_port:
        serve_metrics(settings.worker_metrics_port)
    register_job_kinds()
    runtime = Runtime.create(settings)
    runtime.work.warm()  # parsers imported before the first job comes
    warm(runtime.embeddings)  # the model loaded before the first document's vectors (issue 50)
    queue = runtime.jobs  # one procrastinate app: the job sweep's, jobs' enqueues' and the worker's
    assert isinstance(queue, ProcrastinateQueue), "a worker's jobs are procrastinate's"
    app = queue.app

    # procrastinate retries on RetryJob; run_job fails the job itself after
    # job_max_attempts, so procrastinate's own limit only has to be higher.
    @app.task(
        name=RUN_JOB_TASK,
        retry=procrastinate.RetryStrategy(
            max_attempts=settings.job_max_attempts + 2,
            wait=1,
            retry_exceptions={RetryJob},
        ),
    )
    async def run(job_id: str) -> None:
        try:
            await run_job(runtime, uuid.UUID(job_id))
        except JobDeferred as deferred:
            # Its tenant holds its share of this worker's slots: the slot goes to another
            # tenant's job, this one is queued again in its tenant's turn
            # (strongroom/jobs/fairness.py).
            await queue.enqueue(uuid.UUID(job_id), DEFER_SECONDS, priority=deferred.priority)
        except asyncio.CancelledError:
            # Stopped past the shutdown grace period (its bounded child killed with it):
            # queued again for another worker rather than left `running`.
            await asyncio.shield(queue.enqueue(uuid.UUID(job_id)))
            raise

    try:
        await queue.open()
        # The job sweep, webhook delivery, routine fires, blob sweep, tenant erasure and
        # idempotency expiry (strongroom.background.TASKS).
        runtime.background.start_for(Process.WORKER)
        working = asyncio.create_task(
            app.run_worker_async(
                name=f"strongroom-{socket.gethostname()}",
                concurrency=settings.worker_concurrency,
                update_heartbeat_interval=settings.worker_heartbeat_seconds,
                stalled_worker_timeout=settings.worker_stalled_seconds,
                delete_jobs="successful",
                install_signal_handlers=False,  # stop_on_signals's
                # On SIGTERM: no new job; the running ones have this long, then are cancelled
                # (issue 28: a worker parsing a hostile PDF did not stop within 40 s).
                shutdown_graceful_timeout=settings.job_shutdown_grace_seconds,
            )
        )
        stop_on_signals(working)
        with contextlib.suppress(asyncio.CancelledError):
            await working
    finally:
        await runtime.close()  # the background tasks first, then the queue's connections


def stop_on_signals(working: asyncio.Task) -> None:
    """On SIGTERM or SIGINT, what procrastinate's own handlers did (cancelling its worker is
    its graceful stop: no new job, the running ones given the grace), and first: the resumable
    jobs (a document's vectors, issue 50) are stopped at once and queued again, so that a
    worker embedding a large document stops at once rather than at the end of its grace."""
    loop = asyncio.get_running_loop()

    def stop() -> None:
        stopped = stop_resumable_jobs()
        log.info("stopping", extra={"resumable_jobs_stopped": stopped})
        working.cancel()

    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, stop)


def serve_metrics(port: int) -> None:
    """/metrics on `port` (every interface, as the operator's) from a daemon thread; fails at
    once if the port is taken. Every series the worker counts is exported from the start at 0,
    so that `increase()` sees the first job that ends or is retried."""
    for kind in JobKind:
        for status in (JobStatus.SUCCEEDED, JobStatus.FAILED):
            JOBS_FINISHED.labels(kind.value, status.value)
    for reason in ("stalled", "lost"):
        JOBS_RETRIED.labels(reason)
    for outcome in ("delivered", "retrying", "failed"):
        WEBHOOK_DELIVERIES.labels(outcome)
    start_http_server(port)
    log.info("serving /metrics", extra={"port": port})


async def sweep(runtime: Runtime) -> None:
    """The `job_sweep` background task's round (strongroom.background), through the
    runtime's procrastinate queue (the one whose app runs the worker's jobs)."""
    queue = runtime.jobs
    assert isinstance(queue, ProcrastinateQueue), "a worker's jobs are procrastinate's"
    settings = runtime.settings
    for stalled in await queue.retry_stalled(settings.worker_stalled_seconds):
        JOBS_RETRIED.labels("stalled").inc()
        log.warning("retrying the job of a stalled worker", extra={"queue_job": stalled})
    cutoff = utcnow() - timedelta(seconds=settings.worker_stalled_seconds)
    statement = select(Job.id).where(
        col(Job.status) == JobStatus.PENDING.value, col(Job.updated_at) < cutoff
    )
    async with runtime.sessions() as session:
        lost = list((await session.exec(statement)).all())
        turns = [await turn_of(session, job_id) for job_id in lost]
    for job_id, priority in zip(lost, turns, strict=True):
        if await queue.enqueue(job_id, priority=priority):  # in its tenant's turn
            JOBS_RETRIED.labels("lost").inc()
