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

A job is run by one holder at a time (issue 52, item 5). A claim is a conditional update: a
`pending` job, or a `running` one whose holder is known dead, becomes `running` with its
attempt counted, and that attempt number is the claim's token. A holder renews its claim
(the row's `updated_at`) every `worker_heartbeat_seconds`; a `running` job not renewed for
`lease_seconds` (the stall timeout less one heartbeat, so that it has run out by the time
procrastinate hands a stalled worker's job to another) is taken for dead. The embedded
default is one process: there a `running` job not held by this process is a dead run's. A
holder that ends an attempt without ending the job (RetryJob, a cancellation) releases its
claim. Every write of a holder (progress, the end, the hooks' changes, putting the job back)
is fenced by its attempt: `WHERE id = ? AND attempts = ? AND status = 'running'`, so a holder
whose claim was taken (it was silent past its lease) changes nothing, and its bounded work
is stopped. A kind's work that writes its side effects in transactions of its own (a
routine's step: the call's answer and the step's result id) fences them with `hold_claim`:
the job's row renewed and locked in that transaction, or ClaimLost and nothing committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import and_, or_, update
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.db.types import utcnow
from strongroom.jobs.bounded import (
    ResourceLimitExceeded,
    WorkInterrupted,
    interruptible,
    until_interrupted,
)
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


class ClaimLost(Exception):
    """The attempt no longer holds its job (another runner claimed it, or the job ended or was
    deleted): what it was writing is rolled back, and the attempt ends writing nothing more."""


class _Queue(Protocol):
    async def enqueue(
        self, job_id: uuid.UUID, delay_seconds: float = 0.0, priority: int = 0
    ) -> bool: ...


class JobParts(Protocol):
    """What the runner itself uses of its process. A running process passes all of
    strongroom.services.Services, which each kind's work reads as `context.services`."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    jobs: _Queue


P = TypeVar("P", bound=JobParts)


@dataclass
class JobContext(Generic[P]):
    services: P
    job: Job

    async def progress(self, fraction: float) -> None:
        """Record how far the job is, if this attempt still holds it (else nothing, logged)."""
        fraction = max(0.0, min(1.0, fraction))
        await _update(self.services, self.job, progress=fraction)


JobWork = Callable[[JobContext[Any]], Awaitable[None]]
# What else changes when a job of a kind ends, in the job's transaction (its document's status).
JobFinished = Callable[[AsyncSession, Job, dict[str, Any] | None], Awaitable[None]]
# What records that a job ended, in its transaction after its `finished` hook: it sees the
# state the ending left (the document `ready`, say). It gets the process's parts first.
JobReported = Callable[[Any, AsyncSession, Job, dict[str, Any] | None], Awaitable[None]]


@dataclass(frozen=True)
class KindOfJob:
    """What one kind of job does, declared by the composition root (strongroom/job_kinds.py)
    and registered by the processes that run jobs: no module registers itself by being
    imported (issue 54)."""

    name: str
    work: JobWork
    finished: JobFinished | None = None
    reported: tuple[JobReported, ...] = ()
    # Its work runs other jobs inside it (run_now): it never borrows a slot kept for other
    # tenants, since giving it back would stop the job running inside, and that job, left
    # `pending` and unqueued meanwhile, could be taken by the queue as well as by its caller.
    runs_jobs_inside: bool = False
    # Its work commits as it goes and takes up where it stopped (a document's vectors, in
    # pieces): stopping the process interrupts it at once rather than after the shutdown grace.
    resumable: bool = False


_KINDS: dict[str, KindOfJob] = {}


def register(*kinds: KindOfJob) -> None:
    """Make `kinds` known to this process's runner (again: the same declaration replaces)."""
    for kind in kinds:
        _KINDS[kind.name] = kind


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
            (kind in _KINDS and _KINDS[kind].runs_jobs_inside)
            or await _others_waiting(parts, tenant_id)
            or not _SLOTS.take(tenant_id, settings.worker_concurrency)
        ):
            raise JobDeferred(job_id, await _turn(parts, job_id))
        borrowed = True
    try:
        claimed = await _run_claimed(parts, job_id, borrowing_for=tenant_id if borrowed else None)
    finally:
        _SLOTS.give_back(tenant_id)
    if not claimed:
        await _look_again_later(parts, job_id)


async def _look_again_later(parts: JobParts, job_id: uuid.UUID) -> None:
    """A delivery that found the job held by a runner of another process comes back when
    that runner's claim would run out unless renewed: should the runner have died without
    its own delivery being sent again (procrastinate retries a stalled worker's job by that
    worker's heartbeat, which a blocked event loop may have stopped before the claim's
    last renewal), this one claims the job then. A live runner renews its claim, and this
    delivery looks again a lease later, until the job has ended."""
    if parts.settings.is_embedded or job_id in _HELD:
        return  # the runner is this process, alive: its own delivery sees the job through
    statement = select(Job.updated_at).where(
        col(Job.id) == job_id, col(Job.status) == JobStatus.RUNNING.value
    )
    async with parts.sessions() as session:
        renewed = (await session.exec(statement)).first()
        if renewed is None:
            return  # ended, or gone
        priority = await turn_of(session, job_id)
    runs_out = renewed + timedelta(seconds=lease_seconds(parts.settings))
    delay = max((runs_out - utcnow()).total_seconds(), 0.0) + CANCEL_CHECK_SECONDS
    await parts.jobs.enqueue(job_id, delay, priority=priority)


CANCEL_CHECK_SECONDS = DEFER_SECONDS


class _Stop(Enum):
    """Why a running job's bounded work was stopped."""

    GIVE_BACK = "give_back"  # its borrowed slot is wanted by another tenant's job
    CANCELLED = "cancelled"  # its row was deleted
    LOST = "lost"  # its claim was taken by another runner (this one was silent past its lease)
    SHUTDOWN = "shutdown"  # the process is stopping and the job resumes later (`resumable`)


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


async def _watch(parts: JobParts, job: Job, borrowing_for: uuid.UUID | None, watch: _Watch) -> None:
    """Renew the job's claim every heartbeat, and stop its bounded work once its row is gone
    (cancelled), once its claim was taken by another runner (lost), or, when it runs in a
    slot borrowed by its tenant (`borrowing_for`), once another tenant's job waits (issue 41:
    the slot is given back and the job queued again, its attempt not counted). The job
    spends its long seconds in bounded work with no transaction open, so that is where it
    stops; a short job ends before anyone looks."""
    settings = parts.settings
    renew_every = None if settings.is_embedded else renewal_seconds(settings)
    renewed = time.monotonic()
    while True:
        await asyncio.sleep(min(CANCEL_CHECK_SECONDS, renew_every or CANCEL_CHECK_SECONDS))
        try:
            renew = renew_every is not None and time.monotonic() - renewed >= renew_every
            if renew:
                renewed = time.monotonic()
            held = await _holding(parts, job, renew=renew)
            if held is not _Held.YES:
                watch.stop(_Stop.CANCELLED if held is _Held.GONE else _Stop.LOST)
                return
            if borrowing_for is not None and await _others_waiting(parts, borrowing_for):
                watch.stop(_Stop.GIVE_BACK)
                return
        except Exception:
            log.warning("could not check on a running job", exc_info=True)


class _Held(Enum):
    YES = "yes"  # this attempt still holds the job
    GONE = "gone"  # the job's row was deleted
    LOST = "lost"  # another attempt holds it, or it has ended


async def _holds(session: AsyncSession, job: Job) -> bool:
    """Whether `job`'s attempt still holds its row: read, not locked (the fenced write that
    follows decides)."""
    found = await session.exec(select(Job.id).where(_fenced(job)))
    return found.first() is not None


def _fenced(job: Job):
    """The job's row while `job`'s attempt holds it."""
    return and_(
        col(Job.id) == job.id,
        col(Job.attempts) == job.attempts,
        col(Job.status) == JobStatus.RUNNING.value,
    )


async def hold_claim(session: AsyncSession, job: Job) -> None:
    """Fence the session's transaction by `job`'s attempt: the job's row renewed and locked
    until the transaction ends, if the attempt still holds it; raises ClaimLost otherwise.
    What the transaction writes beside the job's row then commits only while the attempt
    holds the job, and another runner's claim waits for it and finds the claim renewed. Take
    it after the rows of the job's subject, the order the job's end takes them in."""
    statement = update(Job).where(_fenced(job)).values(updated_at=utcnow())
    held = await session.exec(statement)  # type: ignore[call-overload]
    if held.rowcount == 0:
        raise ClaimLost(f"job {job.id}: attempt {job.attempts} no longer holds it")


async def _holding(parts: JobParts, job: Job, *, renew: bool = False) -> _Held:
    """Whether `job`'s attempt still holds the job, renewing its claim with `renew`."""
    async with parts.sessions() as session:
        if renew:
            renewed = await session.exec(  # type: ignore[call-overload]
                update(Job).where(_fenced(job)).values(updated_at=utcnow())
            )
            await session.commit()
            if renewed.rowcount > 0:
                return _Held.YES
        statement = select(Job.attempts, Job.status).where(col(Job.id) == job.id)
        found = (await session.exec(statement)).first()
    if found is None:
        return _Held.GONE
    if found == (job.attempts, JobStatus.RUNNING.value):
        return _Held.YES
    return _Held.LOST


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
) -> bool:
    """Claim the job and run one attempt; False when it could not be claimed."""
    job = await _claim(parts, job_id)
    if job is None:
        # Finished already, unknown, or held by a live runner: at-least-once delivery makes
        # this normal. A holder that dies leaves its claim to run out, and the job is
        # delivered again (a stalled worker's by procrastinate, the embedded default's at
        # its next start; a step's by its routine's retry).
        return False
    try:
        await _run_attempt(parts, job, borrowing_for)
    except (RetryJob, asyncio.CancelledError):
        # The attempt ended, the job did not: another delivery may claim it at once (a
        # retry, or the worker stopped past its grace that queues it again).
        await asyncio.shield(_release(parts, job))
        raise
    finally:
        _HELD.discard(job.id)
    return True


async def _run_attempt(parts: JobParts, job: Job, borrowing_for: uuid.UUID | None) -> None:
    max_attempts = parts.settings.job_max_attempts
    if job.attempts > max_attempts:
        await finish(parts, job, problem=_problem("job_abandoned", _ABANDONED))
        return
    declared = _KINDS.get(job.kind)
    if declared is None:
        await finish(parts, job, problem=_problem("internal_error", f"No work for {job.kind}."))
        return
    work = declared.work
    watch = _Watch()
    watching = asyncio.create_task(_watch(parts, job, borrowing_for, watch))
    if declared.resumable:
        _RESUMABLE_WATCHES.add(watch)
    try:
        with interruptible(watch.interrupt):
            await _attempt(parts, job, work, max_attempts)
    except WorkInterrupted:
        if watch.reason is _Stop.CANCELLED:
            log.info("job cancelled", extra={"job_id": str(job.id), "kind": job.kind})
            JOBS_FINISHED.labels(job.kind, "cancelled").inc()
            return
        if watch.reason is _Stop.LOST:
            log.warning(
                "job's claim was taken by another runner; this attempt stopped",
                extra={"job_id": str(job.id), "kind": job.kind, "attempt": job.attempts},
            )
            return
        # Its borrowed slot given back, or the job that runs it (run_now) stopped: to run
        # again later, this attempt not counted.
        await _update(parts, job, status=JobStatus.PENDING.value, attempts=job.attempts - 1)
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
    except ClaimLost:
        # Its claim was taken by another runner while this one was silent past its lease
        # (that one runs and ends the job), or the job was deleted: this attempt's last
        # transaction was rolled back, and it writes nothing more.
        log.warning(
            "job's attempt no longer holds it (claimed again, or deleted); it stopped writing",
            extra={"job_id": str(job.id), "kind": job.kind, "attempt": job.attempts},
        )
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
    again at once, up to `job_max_attempts`. A job already finished is left as it is; one
    another runner holds (the queue took it too) is waited for until it ends, or until its
    holder's claim runs out and it is claimed here. When the caller's job is stopped
    (cancelled, or giving its slot back), so is this job's bounded work: it is left
    `pending`, that attempt not counted, and WorkInterrupted raised to the caller (also
    while it waits for another runner)."""
    while True:
        try:
            await _run_claimed(parts, job_id, borrowing_for=None)
        except RetryJob:
            continue
        if await _ended(parts, job_id):
            return
        await until_interrupted(asyncio.sleep(CANCEL_CHECK_SECONDS))


async def _ended(parts: JobParts, job_id: uuid.UUID) -> bool:
    """Whether the job has ended (or its row is gone)."""
    async with parts.sessions() as session:
        status = (await session.exec(select(Job.status).where(col(Job.id) == job_id))).first()
    return status is None or JobStatus(status).finished


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


def lease_seconds(settings: Settings) -> float:
    """How long a `running` job's holder may go without renewing its claim before the job is
    taken for dead: the stall timeout less one heartbeat. procrastinate hands a stalled
    worker's job to another once that worker's heartbeat is `worker_stalled_seconds` old,
    so at least `worker_stalled_seconds - worker_heartbeat_seconds` after its last renewal:
    by then its claim has run out."""
    stalled = settings.worker_stalled_seconds
    return max(stalled - settings.worker_heartbeat_seconds, stalled / 2)


def renewal_seconds(settings: Settings) -> float:
    """How often a holder renews its claim: every heartbeat, and at least thrice a lease."""
    return min(settings.worker_heartbeat_seconds, lease_seconds(settings) / 3)


# Jobs this process holds (or is claiming): never claimed again from here. In the embedded
# default, the one process, a `running` job not in it is a dead run's.
_HELD: set[uuid.UUID] = set()
# What a released claim's `updated_at` says: older than any lease.
_RELEASED_AT = datetime(2000, 1, 1, tzinfo=UTC)


async def _claim(parts: JobParts, job_id: uuid.UUID) -> Job | None:
    """Take the job for one attempt (its attempt counted, its number the claim's token), if
    it is `pending` or `running` with its holder known dead; None otherwise."""
    if job_id in _HELD:
        return None
    _HELD.add(job_id)  # before any await: two claims in this process never both pass
    now = utcnow()
    pending = col(Job.status) == JobStatus.PENDING.value
    running = col(Job.status) == JobStatus.RUNNING.value
    if parts.settings.is_embedded:  # one process: a running job it does not hold is dead
        free = or_(pending, running)
    else:
        lease = timedelta(seconds=lease_seconds(parts.settings))
        free = or_(pending, and_(running, col(Job.updated_at) < now - lease))
    statement = (
        update(Job)
        .where(col(Job.id) == job_id, free)
        .values(
            status=JobStatus.RUNNING.value,
            attempts=col(Job.attempts) + 1,
            started_at=now,
            updated_at=now,
            progress=0.0,
        )
        .returning(Job)
    )
    job = None
    try:
        async with parts.sessions() as session:
            job = (await session.exec(statement)).scalars().first()  # type: ignore[call-overload]
            await session.commit()
    finally:
        if job is None:
            _HELD.discard(job_id)
    return job


async def _release(parts: JobParts, job: Job) -> None:
    """End `job`'s claim without ending the job: still `running` (between attempts), it may
    be claimed again at once."""
    try:
        async with parts.sessions() as session:
            statement = update(Job).where(_fenced(job)).values(updated_at=_RELEASED_AT)
            await session.exec(statement)  # type: ignore[call-overload]
            await session.commit()
    except Exception:
        log.warning("could not release a job's claim; it runs out", exc_info=True)


async def finish(parts: JobParts, job: Job, *, problem: dict[str, Any] | None) -> None:
    """End the job, and in the same transaction whatever its kind's `finished` hook
    changes (its document's status, say), then what its `reported` hooks record of the
    ending (a webhook event in the outbox): a client never sees one without the other, and
    an event is never lost nor sent for a change that was rolled back."""
    status = JobStatus.FAILED if problem else JobStatus.SUCCEEDED
    values: dict[str, Any] = {"status": status.value, "error": problem, "finished_at": utcnow()}
    if problem is None:
        values["progress"] = 1.0
    async with parts.sessions() as session:
        declared = _KINDS.get(job.kind)
        hook = declared.finished if declared is not None else None
        if hook is not None:
            if not await _holds(session, job):
                return  # cancelled, or its claim taken: that runner ends it
            # The subject's row (a document's, say) before the job's: the order a deletion of
            # the subject takes them in (strongroom.vault.documents.delete_document), so that
            # neither waits on the other's second row (a deadlock on PostgreSQL, seen as 503).
            await hook(session, job, problem)
        if not await _write(session, job, values):
            # Cancelled (its row was deleted, with its document, say), or its claim was
            # taken by another runner: that one ends it, and the hook's change is undone.
            await session.rollback()
            return
        for report in declared.reported if declared is not None else ():
            await report(parts, session, job, problem)
        await session.commit()
    JOBS_FINISHED.labels(job.kind, status.value).inc()


async def _update(parts: JobParts, job: Job, **values: Any) -> bool:
    """Change the job's row if `job`'s attempt still holds it; whether it did."""
    async with parts.sessions() as session:
        written = await _write(session, job, values)
        await session.commit()
    return written


async def _write(session: AsyncSession, job: Job, values: dict[str, Any]) -> bool:
    """Change the job's row if `job`'s attempt still holds it (the claim's fence); whether it
    did. A write of an attempt that lost its claim is logged, not made."""
    statement = update(Job).where(_fenced(job))
    result = await session.exec(statement.values(**values, updated_at=utcnow()))  # type: ignore[call-overload]
    if result.rowcount > 0:
        return True
    gone = (await session.exec(select(Job.id).where(col(Job.id) == job.id))).first() is None
    if not gone:
        log.warning(
            "a job's write was dropped: this attempt no longer holds the job",
            extra={"job_id": str(job.id), "kind": job.kind, "attempt": job.attempts},
        )
    return False
