"""Every kind of job, declared here and registered by the processes that run jobs (the
composition root: `strongroom worker`, and the app in the embedded default) with
`register_job_kinds()`; no module registers its work by being imported (issue 54).

For each kind: its work, what else changes in the job's transaction when it ends
(`finished`), and what records that it ended after that (`reported`, in order): the routines
a ready document starts, then the webhook event of the ending.
"""

from __future__ import annotations

from strongroom.jobs.models import JobKind
from strongroom.jobs.runner import JobReported, KindOfJob, register
from strongroom.routines import fire as routine_fires
from strongroom.routines import runner as routines
from strongroom.templates import service as templates
from strongroom.vault import ingestion, project_deletion, reembedding
from strongroom.webhooks.events import ENDINGS, record_ending
from strongroom.workflows import runner as workflows


def _event_of(kind: JobKind) -> tuple[JobReported, ...]:
    """The webhook event of a job's end, for the kinds that tell subscribers (ENDINGS)."""
    return (record_ending,) if kind in ENDINGS else ()


KINDS = (
    KindOfJob(
        JobKind.INGESTION.value,
        ingestion.ingest,
        finished=ingestion.set_document_status,
        reported=(routine_fires.document_became_ready, *_event_of(JobKind.INGESTION)),
    ),
    KindOfJob(
        JobKind.REEMBEDDING.value,
        reembedding.reembed_document,
        finished=reembedding.set_document_meaning,
        reported=_event_of(JobKind.REEMBEDDING),
        resumable=True,
    ),
    KindOfJob(
        JobKind.PROJECT_DELETION.value,
        project_deletion.remove_project,
        reported=_event_of(JobKind.PROJECT_DELETION),
    ),
    KindOfJob(
        JobKind.TEMPLATE_FILL.value,
        templates.fill_template,
        reported=_event_of(JobKind.TEMPLATE_FILL),
    ),
    KindOfJob(
        JobKind.WORKFLOW_RUN.value,
        workflows.run_workflow,
        finished=workflows.mark_failed_step,
        reported=_event_of(JobKind.WORKFLOW_RUN),
    ),
    KindOfJob(
        JobKind.ROUTINE_RUN.value,
        routines.run_routine,
        finished=routines.settle,
        reported=_event_of(JobKind.ROUTINE_RUN),
        runs_jobs_inside=True,
    ),
)


def register_job_kinds() -> None:
    """Make every kind of job known to this process's runner."""
    register(*KINDS)
