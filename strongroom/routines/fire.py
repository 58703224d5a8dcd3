"""Firing routines exactly once (issue 43): scheduled fires and documents that became ready.

Scheduled fires. Every process that runs jobs (each `strongroom worker`, or the embedded
default's one process) looks every TICK_SECONDS for enabled routines whose `next_run_at` has
passed. Each is fired in one transaction: the routine row is locked (`FOR NO KEY UPDATE SKIP
LOCKED` on PostgreSQL, so two workers never wait on, nor both take, the same routine), the
run for the fire time is inserted with its job, and `next_run_at` moves past now; then the
job is queued. The unique (routine_id, fire_key) of `routine_runs` (`schedule:<time>`) makes
a second insert of the same fire fail, whatever the locks: a worker killed before its commit leaves
nothing (the next tick, its own or another worker's, fires it), one killed after leaves the
run and a `pending` job, which the worker's sweep queues again (D46).

Missed fires. After downtime a routine fires once, for the latest time it missed, if that is
at most MISSED_FIRE_WINDOW late; past the window that time is recorded as a `skipped` run
instead. Earlier times missed in the same outage are neither run nor recorded.

Why not procrastinate's periodic tasks: they defer one queued job per period from each
worker's deferrer, which gives the ticks but not the exactly-once of a routine's fire (a
routine's schedule is its own, in its own zone); that comes from the unique row either way,
and a loop of our own works the same in the embedded default, which has no procrastinate.

Documents that became ready: `document_ready` registers with the ingestion job's end
(`jobs.runner.after_finished`), so the runs are inserted in the transaction that makes the
document `ready`, each unique per routine and document (`document:<id>`), and queued once it
commits.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import event
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.models import Document
from strongroom.db.types import utcnow
from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import after_finished
from strongroom.metrics import ROUTINE_FIRE_LATENESS, ROUTINE_RUNS
from strongroom.problems import Problem
from strongroom.routines import schedule
from strongroom.routines.grant import acting, pause
from strongroom.routines.models import Routine, RunStatus
from strongroom.routines.service import new_run
from strongroom.services import Services
from strongroom.tenants.models import Tenant

log = logging.getLogger("strongroom.routines")

TICK_SECONDS = 1.0
MISSED_FIRE_WINDOW = timedelta(hours=1)
BATCH = 100  # routines fired per tick at most; the rest at the next
MAX_DOCUMENT_RUNS = 100  # runs one document starts at most (one per routine)


async def fire_forever(services: Services) -> None:
    """Fire due routines every TICK_SECONDS until cancelled."""
    while True:
        try:
            await fire_due(services)
        except Exception:
            log.exception("firing routines failed; trying again next tick")
        await asyncio.sleep(TICK_SECONDS)


async def fire_due(services: Services, now: datetime | None = None) -> int:
    """Fire the routines due at `now` (default: the clock); the number of runs queued."""
    now = now or utcnow()
    # A suspended or deleted tenant's routines do not fire (issue 52): left out here, so
    # they neither fire nor hold up others' in the batch; restored, they fire as after
    # downtime (MISSED_FIRE_WINDOW).
    statement = (
        select(Routine.id)
        .join(Tenant, col(Tenant.id) == col(Routine.tenant_id))
        .where(
            col(Routine.enabled),
            col(Routine.next_run_at) <= now,
            col(Tenant.suspended).is_(False),
            col(Tenant.deleted_at).is_(None),
        )
        .order_by(col(Routine.next_run_at))
        .limit(BATCH)
    )
    async with services.sessions() as session:
        due = list((await session.exec(statement)).all())
    queued = 0
    for routine_id in due:
        job = await _fire(services, routine_id, now)
        if job is not None:
            await services.jobs.enqueue(job.id)
            queued += 1
    return queued


async def _fire(services: Services, routine_id: uuid.UUID, now: datetime) -> Job | None:
    """Fire one routine; the job queued for it, if any."""
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
            return None  # another process has it, or fired it
        if await _refused(session, routine):
            await session.commit()
            return None
        trigger = routine.trigger
        zone = schedule.saved_zone(trigger["timezone"])
        due = schedule.latest_due(trigger["cron"], zone, since=routine.next_run_at, until=now)
        routine.next_run_at = schedule.next_fire(trigger["cron"], zone, after=now)
        session.add(routine)
        job = run = None
        if due is not None:
            late = now - due
            status = RunStatus.QUEUED if late <= MISSED_FIRE_WINDOW else RunStatus.SKIPPED
            run, job = new_run(routine, trigger_type="schedule", scheduled_for=due, status=status)
            if job is not None:
                session.add(job)
                await session.flush()
            session.add(run)
        try:
            await session.commit()
        except IntegrityError:
            log.info("a fire of routine %s was recorded already", routine_id)
            return None
    if run is not None and due is not None:
        ROUTINE_FIRE_LATENESS.observe((now - due).total_seconds())
        if run.status == RunStatus.SKIPPED.value:
            ROUTINE_RUNS.labels(RunStatus.SKIPPED.value).inc()
    return job


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

_TO_QUEUE = "strongroom.routines.to_queue"
_PENDING: set[asyncio.Task] = set()


def matches(trigger: dict[str, Any], document: Document) -> bool:
    """Whether a `document_ready` trigger takes `document` (its type and name filters)."""
    types = trigger.get("file_types")
    if types and document.document_type not in types:
        return False
    pattern = trigger.get("name_pattern")
    return not pattern or fnmatch.fnmatchcase(document.name.lower(), pattern.lower())


@after_finished(JobKind.INGESTION.value)
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
    if jobs:
        queued = session.sync_session.info.setdefault(_TO_QUEUE, [])
        queued.extend((services.jobs, job_id) for job_id in jobs)


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


@event.listens_for(Session, "after_commit")
def _queue_committed(session: Session) -> None:
    queued = session.info.pop(_TO_QUEUE, None)
    if not queued:
        return
    loop = asyncio.get_running_loop()
    for queue, job_id in queued:
        task = loop.create_task(_enqueue(queue, job_id))
        _PENDING.add(task)
        task.add_done_callback(_PENDING.discard)


@event.listens_for(Session, "after_rollback")
def _forget(session: Session) -> None:
    session.info.pop(_TO_QUEUE, None)


async def _enqueue(queue: Any, job_id: uuid.UUID) -> None:
    try:
        await queue.enqueue(job_id)
    except Exception:  # the job stays pending: the worker's sweep queues it
        log.warning("a routine run's job was not queued", extra={"job_id": str(job_id)})
