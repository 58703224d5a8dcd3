"""Moving one job through D46's states: pending -> running -> succeeded | failed.

The queue delivers job ids at least once; `run_job` makes that safe: a finished job is never
run again, a claim counts the attempt, and a job that keeps dying (its worker killed each
time) is failed after `job_max_attempts` instead of being retried for ever. A job still
running after `job_timeout_seconds` is failed with `job_timeout`: its heartbeat would
otherwise keep it `running` for ever. Work it had handed to a thread cannot be stopped from
here and runs on to its end, its result dropped; work handed to a child process
(strongroom/jobs/bounded.py) is killed with its job, and a job whose child passed its memory
or CPU limit is failed with `job_resource_limit`, not retried. A job whose tenant holds its
share of this process's slots is not started (strongroom/jobs/fairness.py).

A job whose row is deleted while it runs is cancelled (issue 42: its document was deleted):
its bounded work is stopped within `CANCEL_CHECK_SECONDS`, and its end changes nothing (no
hook runs for a job that is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import update
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.db.types import utcnow
from strongroom.jobs.bounded import ResourceLimitExceeded, WorkInterrupted, interruptible
from strongroom.jobs.fairness import DEFER_SECONDS, JobDeferred, TenantSlots, tenant_share
from strongroom.jobs.models import Job, JobStatus
from strongroom.jobs.turns import BACKGROUND_KINDS, turn_of
from strongroom.metrics import JOBS_FINISHED
from strongroom.settings import Settings

log = logging.getLogger("strongroom.jobs")


class JobFailed(Exception):
    """The work cannot succeed (a corrupt file, say): fail the job with this problem, no retry."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


class RetryJob(Exception):
    """The attempt failed for a reason that may pass (the queue runs the job again)."""


class JobParts(Protocol):
    """What the runner itself uses of its process. A running process passes all of
    strongroom.services.Services, which each kind's work reads as `context.services`."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]


P = TypeVar("P", bound=JobParts)


@dataclass
class JobContext(Generic[P]):
    services: P
    job: Job

    async def progress(self, fraction: float) -> None:
        await _update(self.services, self.job.id, progress=max(0.0, min(1.0, fraction)))


JobWork = Callable[[JobContext[Any]], Awaitable[None]]
_WORK: dict[str, JobWork] = {}


# Kinds whose work runs other jobs inside it (run_now): they never borrow a slot kept for
# other tenants, since giving it back would stop the job running inside, and that job, left
# `pending` and unqueued meanwhile, could be taken by the queue as well as by its caller.
_RUN_JOBS_INSIDE: set[str] = set()
# Kinds whose work commits as it goes and takes up where it stopped (a document's vectors, in
# pieces): stopping the process interrupts them at once rather than after the shutdown grace.
_RESUMABLE: set[str] = set()


def job_kind(
    kind: str, *, runs_jobs_inside: bool = False, resumable: bool = False
) -> Callable[[JobWork], JobWork]:
    """Register the work of one kind of job (`runs_jobs_inside`: it calls run_now;
    `resumable`: it commits in pieces and resumes after the last one, so a shutdown stops it
    at once and queues it again)."""

    def register(work: JobWork) -> JobWork:
        _WORK[kind] = work
        if runs_jobs_inside:
            _RUN_JOBS_INSIDE.add(kind)
        if resumable:
            _RESUMABLE.add(kind)
        return work

    return register


_SLOTS = TenantSlots()  # of this process


async def run_job(parts: JobParts, job_id: uuid.UUID) -> None:
    """Run the job once; raises RetryJob when the queue should run it again, JobDeferred
    (before claiming it) when its tenant holds its share of this process's slots."""
    found = await _tenant_of(parts, job_id)
    if found is None:
        return  # finished already, or unknown
    tenant_id, kind = found
    settings = parts.settings
    share = tenant_share(settings.worker_concurrency, settings.job_slots_kept_for_other_tenants)
    borrowed = False
    if not _SLOTS.take(tenant_id, share):
        # Past its share, a tenant alone may borrow the slots kept for others (issue 41: one
        # tenant's folder of documents is not parsed one at a time on an idle worker).
        if (
            kind in _RUN_JOBS_INSIDE
            or await _others_waiting(parts, tenant_id)
            or not _SLOTS.take(tenant_id, settings.worker_concurrency)
        ):
            raise JobDeferred(job_id, await _turn(parts, job_id))
        borrowed = True
    try:
        await _run_claimed(parts, job_id, borrowing_for=tenant_id if borrowed else None)
    finally:
        _SLOTS.give_back(tenant_id)


CANCEL_CHECK_SECONDS = DEFER_SECONDS


class _Stop(Enum):
    """Why a running job's bounded work was stopped."""

    GIVE_BACK = "give_back"  # its borrowed slot is wanted by another tenant's job
    CANCELLED = "cancelled"  # its row was deleted
    SHUTDOWN = "shutdown"  # the process is stopping and the job resumes later (_RESUMABLE)


@dataclass(eq=False)  # hashed by identity: kept in _RESUMABLE_WATCHES
class _Watch:
    interrupt: asyncio.Event = field(default_factory=asyncio.Event)
    reason: _Stop | None = None

    def stop(self, reason: _Stop) -> None:
        self.reason = reason
        self.interrupt.set()


# The watches of this process's running resumable jobs (stop_resumable_jobs).
_RESUMABLE_WATCHES: set[_Watch] = set()


def stop_resumable_jobs() -> int:
    """Interrupt every resumable job running in this process (a process given SIGTERM): each
    goes back to `pending`, its attempt not counted, with what it committed kept, so the
    process stops within its grace whatever the size of the document being embedded. Returns
    how many were stopped."""
    watches = [watch for watch in _RESUMABLE_WATCHES if not watch.interrupt.is_set()]
    for watch in watches:
        watch.stop(_Stop.SHUTDOWN)
    return len(watches)


async def _watch(
    parts: JobParts, job_id: uuid.UUID, borrowing_for: uuid.UUID | None, watch: _Watch
) -> None:
    """Stop the job's bounded work once its row is gone (cancelled), or, when it runs in a
    slot borrowed by its tenant (`borrowing_for`), once another tenant's job waits (issue 41:
    the slot is given back and the job queued again, its attempt not counted). The job
    spends its long seconds in bounded work with no transaction open, so that is where it
    stops; a short job ends before anyone looks."""
    while True:
        await asyncio.sleep(CANCEL_CHECK_SECONDS)
        try:
            if not await _exists(parts, job_id):
                watch.stop(_Stop.CANCELLED)
                return
            if borrowing_for is not None and await _others_waiting(parts, borrowing_for):
                watch.stop(_Stop.GIVE_BACK)
                return
        except Exception:
            log.warning("could not check on a running job", exc_info=True)


async def _exists(parts: JobParts, job_id: uuid.UUID) -> bool:
    async with parts.sessions() as session:
        return (await session.exec(select(Job.id).where(col(Job.id) == job_id))).first() is not None


async def _tenant_of(parts: JobParts, job_id: uuid.UUID) -> tuple[uuid.UUID, str] | None:
    """The tenant and kind of the job, if it is still to run."""
    statement = select(Job.tenant_id, Job.kind).where(
        col(Job.id) == job_id,
        col(Job.status).in_([JobStatus.PENDING.value, JobStatus.RUNNING.value]),
    )
    async with parts.sessions() as session:
        return (await session.exec(statement)).first()


async def _turn(parts: JobParts, job_id: uuid.UUID) -> int:
    async with parts.sessions() as session:
        return await turn_of(session, job_id)


async def _others_waiting(parts: JobParts, tenant_id: uuid.UUID) -> bool:
    """Whether a job of another tenant is waiting to run (anywhere: the queue is shared)."""
    statement = (
        select(Job.id)
        .where(col(Job.status) == JobStatus.PENDING.value, col(Job.tenant_id) != tenant_id)
        .limit(1)
    )
    async with parts.sessions() as session:
        return (await session.exec(statement)).first() is not None


async def _run_claimed(
    parts: JobParts, job_id: uuid.UUID, *, borrowing_for: uuid.UUID | None
) -> None:
    job = await _claim(parts, job_id)
    if job is None:
        return  # finished already, or unknown: at-least-once delivery makes this normal
    max_attempts = parts.settings.job_max_attempts
    if job.attempts > max_attempts:
        await finish(parts, job, problem=_problem("job_abandoned", _ABANDONED))
        return
    work = _WORK.get(job.kind)
    if work is None:
        await finish(parts, job, problem=_problem("internal_error", f"No work for {job.kind}."))
        return
    watch = _Watch()
    watching = asyncio.create_task(_watch(parts, job.id, borrowing_for, watch))
    if job.kind in _RESUMABLE:
        _RESUMABLE_WATCHES.add(watch)
    try:
        with interruptible(watch.interrupt):
            await _attempt(parts, job, work, max_attempts)
    except WorkInterrupted:
        if watch.reason is _Stop.CANCELLED:
            log.info("job cancelled", extra={"job_id": str(job.id), "kind": job.kind})
            JOBS_FINISHED.labels(job.kind, "cancelled").inc()
            return
        # Its borrowed slot given back, or the job that runs it (run_now) stopped: to run
        # again later, this attempt not counted.
        await _update(parts, job.id, status=JobStatus.PENDING.value, attempts=job.attempts - 1)
        if watch.reason is None:
            raise  # the enclosing job's interrupt: its caller decides what comes next
        raise JobDeferred(job.id, await _turn(parts, job.id)) from None
    finally:
        _RESUMABLE_WATCHES.discard(watch)
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching


async def _attempt(parts: JobParts, job: Job, work: JobWork, max_attempts: int) -> None:
    """Run the job's work once within its deadline and end the job as it went; raises
    RetryJob for another attempt, WorkInterrupted when its bounded work was stopped."""
    seconds = parts.settings.job_timeout_seconds
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            await work(JobContext(parts, job))
    except JobFailed as failure:
        await finish(parts, job, problem=_problem(failure.code, failure.detail))
    except WorkInterrupted:
        raise
    except ResourceLimitExceeded as exceeded:
        # Not retried: the same work would pass the same limit again.
        log.warning("job over its resource limit", extra={"job_id": str(job.id)})
        await finish(parts, job, problem=_problem("job_resource_limit", str(exceeded)))
    except Exception as error:
        if deadline.expired():
            # Not retried: what hung once (a hostile file, say) would hang again.
            log.error("job timed out", extra={"job_id": str(job.id), "kind": job.kind})
            detail = f"The job did not finish within {seconds:g} seconds."
            await finish(parts, job, problem=_problem("job_timeout", detail))
            return
        log.exception("job attempt failed", extra={"job_id": str(job.id), "kind": job.kind})
        if job.attempts >= max_attempts:
            detail = f"The job failed {job.attempts} times ({type(error).__name__})."
            # An error may say what it is to the caller (an answer engine's upstream failed:
            # `upstream_error`, retry later); any other is ours.
            code = getattr(error, "problem_code", "internal_error")
            await finish(parts, job, problem=_problem(code, detail))
            return
        raise RetryJob(str(job.id)) from error
    else:
        await finish(parts, job, problem=None)


async def run_now(parts: JobParts, job_id: uuid.UUID) -> None:
    """Run a job in the caller's task, outside the queue and the tenant slots, until it has
    ended: what a job that started it and waits for its result does (a routine run's step,
    issue 43), holding the caller's slot rather than waiting for another. Its attempts, time
    limit, hooks and events are the same as from the queue; a retryable failure is tried
    again at once, up to `job_max_attempts`. A job already finished is left as it is.
    When the caller's job is stopped (cancelled, or giving its slot back), so is this job's
    bounded work: it is left `pending`, that attempt not counted, and WorkInterrupted
    raised to the caller."""
    while True:
        try:
            await _run_claimed(parts, job_id, borrowing_for=None)
            return
        except RetryJob:
            continue


_ABANDONED = "The job's worker stopped in the middle of it too many times."


def _problem(code: str, detail: str) -> dict[str, Any]:
    from strongroom.problems import CATALOGUE

    status, title = CATALOGUE.get(code, (500, "Job failed"))
    return {"code": code, "title": title, "status": status, "detail": detail}


async def unfinished_jobs(parts: JobParts) -> list[uuid.UUID]:
    """Jobs a previous run of the embedded default accepted but did not finish, oldest first,
    background kinds (documents' vectors) after the others, as turns would queue them."""
    statement = (
        select(Job.id)
        .where(col(Job.status).in_([JobStatus.PENDING.value, JobStatus.RUNNING.value]))
        .order_by(col(Job.kind).in_(BACKGROUND_KINDS), col(Job.created_at))
    )
    async with parts.sessions() as session:
        return list((await session.exec(statement)).all())


async def _claim(parts: JobParts, job_id: uuid.UUID) -> Job | None:
    now = utcnow()
    statement = (
        update(Job)
        .where(
            col(Job.id) == job_id,
            col(Job.status).in_([JobStatus.PENDING.value, JobStatus.RUNNING.value]),
        )
        .values(
            status=JobStatus.RUNNING.value,
            attempts=col(Job.attempts) + 1,
            started_at=now,
            updated_at=now,
            progress=0.0,
        )
        .returning(Job)
    )
    async with parts.sessions() as session:
        job = (await session.exec(statement)).scalars().first()  # type: ignore[call-overload]
        await session.commit()
    return job


async def finish(parts: JobParts, job: Job, *, problem: dict[str, Any] | None) -> None:
    """End the job, and in the same transaction whatever its kind's `on_finished` hook
    changes (its document's status, say), then what its `after_finished` hooks record of the
    ending (a webhook event in the outbox): a client never sees one without the other, and
    an event is never lost nor sent for a change that was rolled back."""
    status = JobStatus.FAILED if problem else JobStatus.SUCCEEDED
    values: dict[str, Any] = {"status": status.value, "error": problem, "finished_at": utcnow()}
    if problem is None:
        values["progress"] = 1.0
    async with parts.sessions() as session:
        if not await _write(session, job.id, values):
            return  # cancelled: its row was deleted (with its document, say)
        hook = _FINISHED.get(job.kind)
        if hook is not None:
            await hook(session, job, problem)
        for report in _REPORTED.get(job.kind, ()):
            await report(parts, session, job, problem)
        await session.commit()
    JOBS_FINISHED.labels(job.kind, status.value).inc()


JobFinished = Callable[[AsyncSession, Job, dict[str, Any] | None], Awaitable[None]]
_FINISHED: dict[str, JobFinished] = {}


def on_finished(kind: str) -> Callable[[JobFinished], JobFinished]:
    """Register what else changes when a job of `kind` ends, in the job's transaction."""

    def register(hook: JobFinished) -> JobFinished:
        _FINISHED[kind] = hook
        return hook

    return register


JobReported = Callable[[Any, AsyncSession, Job, dict[str, Any] | None], Awaitable[None]]
_REPORTED: dict[str, list[JobReported]] = {}


def after_finished(kind: str) -> Callable[[JobReported], JobReported]:
    """Register what records that a job of `kind` ended, in the job's transaction after its
    `on_finished` hook: it sees the state the ending left (the document `ready`, say). It
    gets the process's parts first (all of strongroom.services.Services in a process)."""

    def register(hook: JobReported) -> JobReported:
        _REPORTED.setdefault(kind, []).append(hook)
        return hook

    return register


async def _update(parts: JobParts, job_id: uuid.UUID, **values: Any) -> None:
    async with parts.sessions() as session:
        await _write(session, job_id, values)
        await session.commit()


async def _write(session: AsyncSession, job_id: uuid.UUID, values: dict[str, Any]) -> bool:
    """Whether the job's row was there to change."""
    statement = update(Job).where(col(Job.id) == job_id)
    result = await session.exec(statement.values(**values, updated_at=utcnow()))  # type: ignore[call-overload]
    return result.rowcount > 0
