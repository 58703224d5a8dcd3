"""What each kind of job's end tells subscribers (issue 30), recorded in the outbox in the
job's own transaction (a `reported` hook, strongroom.job_kinds), after the area's own hook has
set the resource's final state: `data` is the resource exactly as its GET then answers it.

Declared for each kind in ENDINGS by strongroom.job_kinds, so every process that runs jobs
records their events. It sits above the areas because it takes their views of their
resources; an area that records an event of its own calls
`strongroom.outbox.record.record_event` in its own transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.models import Document
from strongroom.jobs.models import Job, JobKind
from strongroom.outbox.enums import EventType
from strongroom.outbox.record import record_event
from strongroom.services import Services
from strongroom.templates.models import TemplateFill
from strongroom.templates.routes import fill_view
from strongroom.vault.schemas import DocumentView
from strongroom.workflows.models import WorkflowRun
from strongroom.workflows.routes import run_view


async def _ended(session: AsyncSession, job: Job) -> Job:
    """The job as its end left it (the runner's copy predates it)."""
    ended = await session.get(Job, job.id, populate_existing=True)
    assert ended is not None, "the runner has just written it"
    return ended


async def _document(services: Services, session: AsyncSession, job: Job) -> BaseModel | None:
    document = await session.get(Document, job.subject_id, populate_existing=True)
    return None if document is None else DocumentView.model_validate(document)


async def _fill(services: Services, session: AsyncSession, job: Job) -> BaseModel | None:
    fill = await session.get(TemplateFill, job.subject_id, populate_existing=True)
    if fill is None:
        return None
    return fill_view(services.settings.base_url, await _ended(session, job), fill)


async def _run(services: Services, session: AsyncSession, job: Job) -> BaseModel | None:
    run = await session.get(WorkflowRun, job.subject_id, populate_existing=True)
    return None if run is None else run_view(run, await _ended(session, job))


View = Callable[[Services, AsyncSession, Job], Awaitable[BaseModel | None]]

# Each kind of job: the view of what it worked on, its events when it succeeds and fails.
ENDINGS: dict[JobKind, tuple[View, EventType, EventType]] = {
    JobKind.INGESTION: (_document, EventType.DOCUMENT_READY, EventType.DOCUMENT_FAILED),
    JobKind.TEMPLATE_FILL: (
        _fill,
        EventType.TEMPLATE_FILL_SUCCEEDED,
        EventType.TEMPLATE_FILL_FAILED,
    ),
    JobKind.WORKFLOW_RUN: (
        _run,
        EventType.WORKFLOW_RUN_SUCCEEDED,
        EventType.WORKFLOW_RUN_FAILED,
    ),
}


async def record_ending(
    services: Services, session: AsyncSession, job: Job, problem: dict[str, Any] | None
) -> None:
    """Record the event of `job`'s end, with what it worked on as its GET now answers it."""
    view_of, succeeded, failed = ENDINGS[JobKind(job.kind)]
    view = await view_of(services, session, job)
    if view is None:  # what it worked on is gone
        return
    await record_event(
        session,
        tenant_id=job.tenant_id,
        environment=job.environment,
        event_type=failed if problem else succeeded,
        data=view.model_dump(mode="json"),
    )
