"""What each kind of job's end tells subscribers (issue 30), recorded in the outbox in the
job's own transaction (strongroom.jobs.runner.after_finished), after the area's own hook has
set the resource's final state: `data` is the resource exactly as its GET then answers it.

Imported by strongroom.job_kinds, so every process that runs jobs records their events.
"""

from __future__ import annotations

from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.models import Document
from strongroom.jobs.models import Job, JobKind
from strongroom.jobs.runner import after_finished
from strongroom.services import Services
from strongroom.templates.models import TemplateFill
from strongroom.templates.routes import fill_view
from strongroom.vault.schemas import DocumentView
from strongroom.webhooks.models import EventType
from strongroom.webhooks.outbox import record_event
from strongroom.workflows.models import WorkflowRun
from strongroom.workflows.routes import run_view


async def _record(
    session: AsyncSession, job: Job, event_type: EventType, data: dict[str, Any]
) -> None:
    await record_event(
        session,
        tenant_id=job.tenant_id,
        environment=job.environment,
        event_type=event_type,
        data=data,
    )


async def _ended(session: AsyncSession, job: Job) -> Job:
    """The job as its end left it (the runner's copy predates it)."""
    ended = await session.get(Job, job.id, populate_existing=True)
    assert ended is not None, "the runner has just written it"
    return ended


@after_finished(JobKind.INGESTION.value)
async def document_ended(
    services: Services, session: AsyncSession, job: Job, problem: dict[str, Any] | None
) -> None:
    document = await session.get(Document, job.subject_id, populate_existing=True)
    if document is None:
        return
    event_type = EventType.DOCUMENT_FAILED if problem else EventType.DOCUMENT_READY
    await _record(
        session, job, event_type, DocumentView.model_validate(document).model_dump(mode="json")
    )


@after_finished(JobKind.TEMPLATE_FILL.value)
async def template_fill_ended(
    services: Services, session: AsyncSession, job: Job, problem: dict[str, Any] | None
) -> None:
    fill = await session.get(TemplateFill, job.subject_id, populate_existing=True)
    if fill is None:
        return
    view = fill_view(services.settings.base_url, await _ended(session, job), fill)
    event_type = EventType.TEMPLATE_FILL_FAILED if problem else EventType.TEMPLATE_FILL_SUCCEEDED
    await _record(session, job, event_type, view.model_dump(mode="json"))


@after_finished(JobKind.WORKFLOW_RUN.value)
async def workflow_run_ended(
    services: Services, session: AsyncSession, job: Job, problem: dict[str, Any] | None
) -> None:
    run = await session.get(WorkflowRun, job.subject_id, populate_existing=True)
    if run is None:
        return
    view = run_view(run, await _ended(session, job))
    event_type = EventType.WORKFLOW_RUN_FAILED if problem else EventType.WORKFLOW_RUN_SUCCEEDED
    await _record(session, job, event_type, view.model_dump(mode="json"))
