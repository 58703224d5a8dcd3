"""The priority a job is queued with (issue 41): its tenant's turn, and words before meaning
(issue 50)."""

from __future__ import annotations

import uuid

from sqlalchemy import func
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.jobs.models import Job, JobKind, JobStatus

# Work that makes what is already usable better (a document's vectors, issue 50) is queued this
# far behind: every job a client waits on (a document to become ready, a fill, a run) is
# fetched first, whoever's it is; among themselves, such jobs still take their tenants' turns.
# Far beyond any tenant's count of pending jobs, far inside procrastinate's int priority.
BEHIND = 1_000_000
BACKGROUND_KINDS = frozenset({JobKind.REEMBEDDING.value})


async def in_turn(session: AsyncSession, job: Job) -> int:
    """The priority to queue a new job with: minus its tenant's other pending jobs, so that
    each tenant's next job is fetched before any tenant's following one (issue 41: a
    tenant's small document waited behind another's 200 queued ones, which the slot shares of
    strongroom/jobs/fairness.py could only put back one at a time). A background kind counts
    the tenant's other background jobs and is queued BEHIND; any other counts the others.
    Jobs of equal priority run oldest first."""
    background = job.kind in BACKGROUND_KINDS
    kinds = col(Job.kind).in_(BACKGROUND_KINDS)
    statement = select(func.count()).where(
        col(Job.tenant_id) == job.tenant_id,
        col(Job.status) == JobStatus.PENDING.value,
        col(Job.id) != job.id,
        kinds if background else ~kinds,
    )
    turn = -(await session.exec(statement)).one()
    return turn - BEHIND if background else turn


async def turn_of(session: AsyncSession, job_id: uuid.UUID) -> int:
    """`in_turn` for a job queued again (deferred: its tenant held its share of a process's
    slots), so that it does not go back ahead of other tenants' next jobs."""
    job = await session.get(Job, job_id)
    return 0 if job is None else await in_turn(session, job)
