"""Workflow endpoints (D47): the catalogue, starting runs, and their status.

The runs' table and the runner are imported by the handlers that use them, at the first run
started or read rather than at every start (issue 29).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from pydantic import ValidationError
from sqlmodel import select

from strongroom.api.capability import Call, Capability, Routes
from strongroom.api.pagination import PageQuery, page_of
from strongroom.api.request_path import field_message
from strongroom.auth.scopes import Scope
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.problems import Problem
from strongroom.services import Services, queue_at_commit
from strongroom.vault import documents, projects
from strongroom.workflows.catalogue import WORKFLOWS, CompareInputs, DocumentSetInputs, catalogue
from strongroom.workflows.schemas import (
    RunAccepted,
    RunView,
    StartRun,
    StepView,
    WorkflowPage,
)

if TYPE_CHECKING:
    from strongroom.workflows.models import WorkflowRun

routes = Routes()


@routes.capability(
    Capability(
        name="workflows.list",
        method="GET",
        path="/api/v2/workflows",
        summary="List workflows",
        tag="workflows",
        scopes=frozenset({Scope.WORKFLOWS_READ.value}),
        cost=1,
        query=PageQuery,
        response=WorkflowPage,
    )
)
async def list_workflows(call: Call[Services]) -> WorkflowPage:
    query: PageQuery = call.query
    scope = "workflows.list"
    after = call.services.cursors.after(scope, query.cursor)
    rows = [w for w in catalogue() if after is None or w.position < after]
    return page_of(
        WorkflowPage,
        rows[: query.page_size],
        len(rows) > query.page_size,
        cursors=call.services.cursors,
        scope=scope,
        position=lambda workflow: workflow.position,
    )


@routes.capability(
    Capability(
        name="workflows.start_run",
        method="POST",
        path="/api/v2/workflows/<workflow_id>/runs",
        summary="Start a workflow run",
        description="`inputs` must match the workflow's `input_schema`. Runs in the "
        "background; poll GET /api/v2/workflows/runs/{run_id}.",
        tag="workflows",
        scopes=frozenset({Scope.WORKFLOWS_WRITE.value}),
        cost=25,
        oauth=False,
        status=202,
        body=StartRun,
        response=RunAccepted,
    )
)
async def start_run(call: Call[Services]) -> RunAccepted:
    from strongroom.workflows.models import WorkflowRun
    from strongroom.workflows.runner import fresh_steps

    workflow = WORKFLOWS.get(call.path["workflow_id"])
    if workflow is None or not workflow.enabled:
        raise Problem("not_found", "No such workflow.")
    request: StartRun = call.body
    try:
        inputs = workflow.inputs.model_validate(request.inputs)
    except ValidationError as error:
        raise Problem(
            "validation_error",
            "The run's inputs do not match the workflow's input_schema.",
            errors=[
                {
                    "field": ".".join(["inputs", *(str(part) for part in item["loc"])]),
                    "message": field_message(item, "inputs", workflow.inputs),
                }
                for item in error.errors(include_url=False)
            ],
        ) from error
    await _check_references(call, request.project_id, inputs, workflow.reads_document_set)
    principal = call.principal
    job_id, run_id = uuid.uuid4(), uuid.uuid4()
    job = Job(
        id=job_id,
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        kind=JobKind.WORKFLOW_RUN.value,
        subject_id=run_id,
    )
    run = WorkflowRun(
        id=run_id,
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        owner_id=principal.user_id,
        workflow_id=workflow.id,
        job_id=job_id,
        project_id=request.project_id,
        inputs=inputs.model_dump(mode="json", exclude_none=True),
        steps=fresh_steps(workflow.id),
    )
    call.session.add(job)
    await call.session.flush()  # the job row first: the run refers to it
    call.session.add(run)
    await queue_at_commit(call, job)
    return RunAccepted(
        run_id=run.public_id,
        workflow_id=workflow.id,
        status=JobStatus.PENDING,
        created_at=run.created_at,
    )


async def _check_references(
    call: Call[Services], project_id, inputs, reads_document_set: bool
) -> None:
    """404 for a project or document that is not the caller's; 422 when a document-set
    workflow has neither a project nor documents to read, or documents of another project
    than the run's."""
    if project_id is not None:
        if await projects.get_project(call.session, call.principal, project_id) is None:
            raise Problem("not_found", "No such project.")
    if isinstance(inputs, DocumentSetInputs):
        if reads_document_set and project_id is None and not inputs.document_ids:
            raise Problem(
                "validation_error",
                "Say what to read.",
                errors=[{"field": "project_id", "message": "required without inputs.document_ids"}],
            )
        if inputs.document_ids:
            await documents.require_documents(
                call.session, call.principal, inputs.document_ids,
                ready=True, field="inputs.document_ids",
            )  # fmt: skip
            if project_id is not None:  # as the input schema says (issue 31)
                await documents.require_in_project(
                    call.session, inputs.document_ids, project_id, field="inputs.document_ids"
                )
    elif isinstance(inputs, CompareInputs):
        for field, document_id in (
            ("inputs.left_document_id", inputs.left_document_id),
            ("inputs.right_document_id", inputs.right_document_id),
        ):
            await documents.require_documents(
                call.session, call.principal, [document_id], ready=True, field=field
            )


@routes.capability(
    Capability(
        name="workflows.get_run",
        method="GET",
        path="/api/v2/workflows/runs/<run_id>",
        summary="Get a workflow run",
        tag="workflows",
        scopes=frozenset({Scope.WORKFLOWS_READ.value}),
        cost=1,
        response=RunView,
    )
)
async def get_run(call: Call[Services]) -> RunView:
    from strongroom.workflows.models import WorkflowRun, parse_run_id

    row_id = parse_run_id(call.path["run_id"])
    statement = select(WorkflowRun, Job).where(
        WorkflowRun.id == row_id,
        Job.id == WorkflowRun.job_id,
        WorkflowRun.tenant_id == call.principal.tenant_id,
        WorkflowRun.environment == call.principal.environment.value,
    )
    row = (await call.session.exec(statement)).first() if row_id else None
    if row is None:
        raise Problem("not_found", "No such workflow run.")
    run, job = row
    return run_view(run, job)


def run_view(run: WorkflowRun, job: Job) -> RunView:
    """The run as its GET answers it (and as its webhook events carry it)."""
    return RunView(
        run_id=run.public_id,
        workflow_id=run.workflow_id,
        project_id=run.project_id,
        inputs=run.inputs,
        status=JobStatus(job.status),
        progress=job.progress,
        error=job.error,
        steps=[StepView.model_validate(step) for step in run.steps],
        output=run.output if job.status == JobStatus.SUCCEEDED.value else None,
        created_at=run.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
    )
