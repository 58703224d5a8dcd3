"""Firing routines exactly once (issue 43): scheduled fires and documents that became ready.

Scheduled fires. Every process that runs jobs (each `strongroom worker`, or the embedded
default's one process) looks every second (its `routine_fires` background task,
strongroom.background) for enabled routines whose `next_run_at` has
passed. Each is fired in one transaction: the routine row is locked (`FOR NO KEY UPDATE SKIP
LOCKED` on PostgreSQL, so two workers never wait on, nor both take, the same routine), the
run for the fire time is inserted with its job, and `next_run_at` moves past now; then the
job is queued. The unique (routine_id, fire_key) of `routine_runs` (`schedule:<time>`) makes
a second insert of the same fire fail, whatever the locks: a worker killed before its commit leaves
nothing (the next tick, its own or another worker's, fires it), one killed after leaves the
run and a `pending` job, which the worker's sweep queues again (D46).

Fair ticks (issue 52). A tick takes each tenant's TENANT_SHARE earliest due routines at most
(`row_number()` over the tenant's due routines, on PostgreSQL and SQLite alike), and fires
every tenant's first before any tenant's second, BATCH in all; a tick that was full is
followed by another at once, without the second's pause. So one tenant's flood of due
routines is fired a share at a time, and another tenant's routine that comes due waits for
one short tick at most, never for the flood.

Missed fires. After downtime a routine fires once, for the latest time it missed, if that is
at most MISSED_FIRE_WINDOW late; past the window that time is recorded as a `skipped` run
instead. Earlier times missed in the same outage are neither run nor recorded. A fire that
comes while the routine's latest run is still `queued` or `running` (its job unfinished) is
coalesced: recorded as a `skipped` run whose `error` names that run
(`previous_run_unfinished`), nothing queued, and the schedule moves on; so a routine slower
than its schedule has one run waiting or running, not a growing queue.

Why not procrastinate's periodic tasks: they defer one queued job per period from each
worker's deferrer, which gives the ticks but not the exactly-once of a routine's fire (a
routine's schedule is its own, in its own zone); that comes from the unique row either way,
and a loop of our own works the same in the embedded default, which has no procrastinate.

Documents that became ready: `document_became_ready` is a `reported` hook of the ingestion
job's end (strongroom/job_kinds.py), so the runs are inserted in the transaction that makes the
document `ready`, each unique per routine and document (`document:<id>`), and queued once it
commits.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.models import Document
from strongroom.db.commit_hooks import after_commit
from strongroom.db.types import utcnow
from strongroom.jobs.models import Job, JobStatus
from strongroom.metrics import ROUTINE_FIRE_LATENESS, ROUTINE_RUNS
from strongroom.problems import Problem
from strongroom.routines import schedule
from strongroom.routines.grant import acting, pause
from strongroom.routines.models import Routine, RoutineRun, RunStatus
from strongroom.routines.service import new_run
from strongroom.services import Services
from strongroom.tenants.models import Tenant

log = logging.getLogger("strongroom.routines")

MISSED_FIRE_WINDOW = timedelta(hours=1)
BATCH = 20  # routines one tick fires at most; a full tick is followed by another at once
TENANT_SHARE = 5  # of them, one tenant's at most (its earliest due)
MAX_DOCUMENT_RUNS = 100  # runs one document starts at most (one per routine)
# A run of the routine in one of these, its job not finished, holds the next fire back.
UNFINISHED = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)
UNFINISHED_JOBS = (JobStatus.PENDING.value, JobStatus.RUNNING.value)


async def tick(services: Services) -> bool:
    """The `routine_fires` background task's round (strongroom.background), every second:
    fire what is due now. True when it fired a full batch or a tenant's full
    share, so that another tick follows at once (the rest of a flood)."""
    _, again = await _tick(services, utcnow())
    return again


async def fire_due(services: Services, now: datetime | None = None) -> int:
    """Fire the routines due at `now` (default: the clock), one tick; the number of runs
    queued."""
    queued, _ = await _tick(services, now or utcnow())
    return queued


def due_statement(now: datetime) -> Any:
    """The routines one tick fires, in order: each tenant's TENANT_SHARE earliest due
    (`row_number()` over the tenant's due routines by `next_run_at`), then every tenant's
    first before any tenant's second, and so on, earliest due first within a rank; BATCH
    at most. Rows of (id, rank)."""
    # A suspended or deleted tenant's routines do not fire (issue 52): left out here, so
    # they neither fire nor hold up others' in the batch; restored, they fire as after
    # downtime (MISSED_FIRE_WINDOW).
    rank = (
        func.row_number()
        .over(
            partition_by=col(Routine.tenant_id),
            order_by=(col(Routine.next_run_at), col(Routine.id)),
        )
        .label("rank")
    )
    ranked = (
        select(col(Routine.id).label("id"), col(Routine.next_run_at).label("due"), rank)
        .join(Tenant, col(Tenant.id) == col(Routine.tenant_id))
        .where(
            col(Routine.enabled),
            col(Routine.next_run_at) <= now,
            col(Tenant.suspended).is_(False),
            col(Tenant.deleted_at).is_(None),
        )
        .subquery()
    )
    return (
        select(ranked.c.id, ranked.c.rank)
        .where(ranked.c.rank <= TENANT_SHARE)
        .order_by(ranked.c.rank, ranked.c.due, ranked.c.id)
        .limit(BATCH)
    )


async def _tick(services: Services, now: datetime) -> tuple[int, bool]:
    """One tick: the runs queued, and whether another tick should follow at once (the
    batch or a tenant's share was full, and something was fired)."""
    async with services.sessions() as session:
        due = list((await session.exec(due_statement(now))).all())
    queued = handled = 0
    for routine_id, _ in due:
        fired, job = await _fire(services, routine_id, now)
        handled += fired
        if job is not None:
            await services.jobs.enqueue(job.id)
            queued += 1
    full = len(due) >= BATCH or any(rank >= TENANT_SHARE for _, rank in due)
    return queued, full and handled > 0


async def _fire(
    services: Services, routine_id: uuid.UUID, now: datetime
) -> tuple[bool, Job | None]:
    """Fire one routine: whether this call fired (or skipped, or paused) it, and the job
    queued for it, if any."""
    statement = select(Routine).where(
        col(Routine.id) == routine_id, col(Routine.enabled), col(Routine.next_run_at) <= now
    )
    if services.reads.on_postgresql:
        # FOR NO KEY UPDATE: only `next_run_at` changes, so a transaction inserting a run of
        # the routine (its foreign key's FOR KEY SHARE) neither waits for nor holds up a fire.
        statement = statement.with_for_update(skip_locked=True, key_share=True)
    async with services.sessions() as session:
        routine = (await session.exec(statement)).first()
        if routine is None or routine.next_run_at is None:
            return False, None  # another process has it, or fired it
        if await _refused(session, routine):
            await session.commit()
            return True, None
        trigger = routine.trigger
        zone = schedule.saved_zone(trigger["timezone"])
        due = schedule.latest_due(trigger["cron"], zone, since=routine.next_run_at, until=now)
        routine.next_run_at = schedule.next_fire(trigger["cron"], zone, after=now)
        session.add(routine)
        job = run = None
        if due is not None:
            status, reason = RunStatus.QUEUED, None
            if now - due > MISSED_FIRE_WINDOW:
                status, reason = RunStatus.SKIPPED, _missed(due, now)
            elif (unfinished := await _unfinished_run(session, routine.id)) is not None:
                status, reason = RunStatus.SKIPPED, _coalesced(*unfinished)
            run, job = new_run(routine, trigger_type="schedule", scheduled_for=due, status=status)
            run.error = reason
            if job is not None:
                session.add(job)
                await session.flush()
            session.add(run)
        try:
            await session.commit()
        except IntegrityError:
            log.info("a fire of routine %s was recorded already", routine_id)
            return False, None
    if run is not None and due is not None:
        ROUTINE_FIRE_LATENESS.observe((now - due).total_seconds())
        if run.status == RunStatus.SKIPPED.value:
            ROUTINE_RUNS.labels(RunStatus.SKIPPED.value).inc()
    return True, job


async def _unfinished_run(
    session: AsyncSession, routine_id: uuid.UUID
) -> tuple[uuid.UUID, str] | None:
    """The routine's latest run that was not skipped, (id, status), if it is still queued
    or running with its job not finished (a run whose job is gone or ended holds nothing
    back). Read through (routine_id, created_at): the runs skipped since it, then it."""
    statement = (
        select(RoutineRun.id, RoutineRun.status, Job.status)
        .outerjoin(Job, col(Job.id) == col(RoutineRun.job_id))
        .where(
            col(RoutineRun.routine_id) == routine_id,
            col(RoutineRun.status) != RunStatus.SKIPPED.value,
        )
        .order_by(col(RoutineRun.created_at).desc())
        .limit(1)
    )
    latest = (await session.exec(statement)).first()
    if latest is None:
        return None
    run_id, status, job_status = latest
    if status in UNFINISHED and job_status in UNFINISHED_JOBS:
        return run_id, status
    return None


def _missed(due: datetime, now: datetime) -> dict[str, Any]:
    late = int((now - due).total_seconds() // 60)
    return {
        "code": "fire_missed",
        "detail": f"The fire was missed by {late} minutes, past the catch-up window of "
        f"{int(MISSED_FIRE_WINDOW.total_seconds() // 60)}: nothing ran.",
    }


def _coalesced(run_id: uuid.UUID, status: str) -> dict[str, Any]:
    return {
        "code": "previous_run_unfinished",
        "detail": f"The routine's run {run_id} was still {status} at this fire time: "
        "nothing ran (a routine has at most one scheduled run waiting or running).",
        "run_id": str(run_id),
    }


async def _refused(session: AsyncSession, routine: Routine) -> bool:
    """Whether the routine does not fire for its owner checks (grant.py): a revoked or
    expired key, a deactivated owner or no grant pauses it (disabled, `paused` saying why;
    not committed); a tenant suspended or deleted since the due query only skips it. A
    tenant past due fires: the run's steps fail with `payment_required`, as at zero
    credits."""
    try:
        await acting(session, routine)
    except Problem as problem:
        if problem.code == "payment_required":
            return False
        if await pause(session, routine.id, problem):
            log.info("routine %s paused: %s", routine.id, problem.code)
        return True
    return False


# --- documents that became ready ------------------------------------------------------------

_PENDING: set[asyncio.Task] = set()


def matches(trigger: dict[str, Any], document: Document) -> bool:
    """Whether a `document_ready` trigger takes `document` (its type and name filters)."""
    types = trigger.get("file_types")
    if types and document.document_type not in types:
        return False
    pattern = trigger.get("name_pattern")
    return not pattern or fnmatch.fnmatchcase(document.name.lower(), pattern.lower())


async def document_became_ready(
    services: Services, session: AsyncSession, job: Job, problem: dict[str, Any] | None
) -> None:
    """Insert a run of each enabled `document_ready` routine of the document's project that
    takes it, in the ingestion's own transaction (inside a savepoint: whatever goes wrong
    here never fails the ingestion); their jobs are queued once it commits."""
    if problem is not None:
        return
    try:
        async with session.begin_nested():
            jobs = await _document_runs(session, job)
    except Exception:
        log.exception("document_ready routines not started", extra={"job_id": str(job.id)})
        return
    for job_id in jobs:
        after_commit(session, functools.partial(_queue_soon, services.jobs, job_id))


async def _document_runs(session: AsyncSession, job: Job) -> list[uuid.UUID]:
    document = await session.get(Document, job.subject_id, populate_existing=True)
    if document is None or document.status != "ready":
        return []
    statement = (
        select(Routine)
        .where(
            col(Routine.tenant_id) == document.tenant_id,
            col(Routine.environment) == document.environment,
            col(Routine.project_id) == document.project_id,
            col(Routine.enabled),
        )
        .limit(MAX_DOCUMENT_RUNS)
    )
    jobs: list[uuid.UUID] = []
    for routine in (await session.exec(statement)).all():
        trigger = routine.trigger
        if trigger.get("type") != "document_ready" or not matches(trigger, document):
            continue
        if await _refused(session, routine):
            continue
        run, new_job = new_run(routine, trigger_type="document_ready", document_id=document.id)
        assert new_job is not None
        try:
            async with session.begin_nested():  # unique (routine, `document:<id>`)
                session.add(new_job)
                await session.flush()
                session.add(run)
                await session.flush()
        except IntegrityError:
            continue  # this document started this routine already
        jobs.append(new_job.id)
    return jobs


def _queue_soon(queue: Any, job_id: uuid.UUID) -> None:
    """Queue a committed run's job from the loop (a commit hook cannot await)."""
    task = asyncio.get_running_loop().create_task(_enqueue(queue, job_id))
    _PENDING.add(task)
    task.add_done_callback(_PENDING.discard)


async def _enqueue(queue: Any, job_id: uuid.UUID) -> None:
    try:
        await queue.enqueue(job_id)
    except Exception:  # the job stays pending: the worker's sweep queues it
        log.warning("a routine run's job was not queued", extra={"job_id": str(job_id)})
