"""Template-fill endpoints (D45).

The work behind them (service.py: the tables, the job, chat's search) is imported at the
first template request rather than at every start (issue 29): `service` is a
`strongroom.lazy.LazyModule`.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from quart import Response

from strongroom.api.capability import Call, Capability, Routes
from strongroom.auth.scopes import Scope
from strongroom.jobs.models import Job, JobStatus
from strongroom.lazy import LazyModule
from strongroom.problems import Problem
from strongroom.services import Services
from strongroom.templates.schemas import (
    FieldView,
    StoredTemplateFill,
    TemplateFillAccepted,
    TemplateFillView,
    TemplateForm,
)
from strongroom.vault.routes import blob_download, printable

service = LazyModule("strongroom.templates.service")

if TYPE_CHECKING:
    from strongroom.templates.models import TemplateFill

routes = Routes()

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@routes.capability(
    Capability(
        name="templates.fill",
        method="POST",
        path="/api/v2/templates/fill",
        summary="Start filling a DOCX template from documents",
        description="multipart/form-data with the DOCX `file` and optional `project_id` and "
        "`document_ids`. Each `{{field}}` is answered from the documents in a background "
        "job; poll GET /api/v2/templates/fill/{job_id}. Not idempotent: an `Idempotency-Key` "
        "is ignored, so a retry starts another job.",
        tag="templates",
        scopes=frozenset({Scope.TEMPLATES_WRITE.value}),
        cost=25,
        oauth=False,
        status=202,
        upload=TemplateForm,
        media_types=(DOCX,),
        honours_idempotency_key=False,
        response=TemplateFillAccepted,
        problems=frozenset(
            {"not_found", "unsupported_file_type"}
        ),  # the project, documents; no zip
    )
)
async def start_fill(call: Call[Services]) -> TemplateFillAccepted:
    form = call.upload
    if form.file is None:
        raise Problem(
            "validation_error",
            "The template form is invalid.",
            errors=[{"field": "file", "message": "a DOCX file is required"}],
        )
    project_id = None
    if raw := form.fields.get("project_id", "").strip():
        try:
            project_id = uuid.UUID(raw)
        except ValueError as error:
            raise Problem(
                "validation_error",
                "The template form is invalid.",
                errors=[{"field": "project_id", "message": "not a UUID"}],
            ) from error
    job, _ = await service.accept_template(
        call,
        form.file,
        project_id=project_id,
        document_ids=service.parse_document_ids(form.fields.get("document_ids")),
        name=printable(form.file.filename) or "template.docx",
    )
    return TemplateFillAccepted(
        job_id=job.id, status=JobStatus(job.status), created_at=job.created_at
    )


@routes.capability(
    Capability(
        name="templates.fill_stored",
        method="POST",
        path="/api/v2/templates/fill/stored",
        summary="Start filling a DOCX template already uploaded to the vault",
        description="JSON with `template_document_id` (an uploaded DOCX) and optional "
        "`project_id` and `document_ids`; otherwise as POST /api/v2/templates/fill, whose "
        "job it starts. Not idempotent: an `Idempotency-Key` is ignored, so a retry starts "
        "another job.",
        tag="templates",
        scopes=frozenset({Scope.TEMPLATES_WRITE.value}),
        cost=25,
        oauth=False,
        status=202,
        body=StoredTemplateFill,
        honours_idempotency_key=False,
        response=TemplateFillAccepted,
        # Not a DOCX; the template, project or documents.
        problems=frozenset({"unsupported_file_type", "not_found"}),
    )
)
async def start_stored_fill(call: Call[Services]) -> TemplateFillAccepted:
    body: StoredTemplateFill = call.body
    job, _ = await service.accept_stored_template(
        call,
        body.template_document_id,
        project_id=body.project_id,
        document_ids=body.document_ids,
    )
    return TemplateFillAccepted(
        job_id=job.id, status=JobStatus(job.status), created_at=job.created_at
    )


@routes.capability(
    Capability(
        name="templates.get_fill",
        method="GET",
        path="/api/v2/templates/fill/<uuid:job_id>",
        summary="Get a template-fill job",
        tag="templates",
        scopes=frozenset({Scope.TEMPLATES_READ.value}),
        cost=1,
        response=TemplateFillView,
    )
)
async def get_fill(call: Call[Services]) -> TemplateFillView:
    job, fill = await service.find_fill(call, call.path["job_id"])
    return fill_view(call.services.settings.base_url, job, fill)


def fill_view(base: str, job: Job, fill: TemplateFill) -> TemplateFillView:
    """The fill as its GET answers it (and as its webhook events carry it)."""
    succeeded = job.status == JobStatus.SUCCEEDED.value and fill.result_blob_key is not None
    return TemplateFillView(
        job_id=job.id,
        status=JobStatus(job.status),
        progress=job.progress,
        error=job.error,
        template_name=fill.template_name,
        project_id=fill.project_id,
        fields=[FieldView.model_validate(field) for field in fill.fields],
        result_url=f"{base}/api/v2/templates/fill/{job.id}/result" if succeeded else None,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
    )


@routes.capability(
    Capability(
        name="templates.get_fill_result",
        method="GET",
        path="/api/v2/templates/fill/<uuid:job_id>/result",
        summary="Download the filled DOCX",
        description="404 until the job has succeeded.",
        tag="templates",
        scopes=frozenset({Scope.TEMPLATES_READ.value}),
        cost=1,
        raw_response=True,
        media_types=(DOCX,),
    )
)
async def get_fill_result(call: Call[Services]) -> Response:
    job, fill = await service.find_fill(call, call.path["job_id"])
    if job.status != JobStatus.SUCCEEDED.value or fill.result_blob_key is None:
        raise Problem("not_found", f"The job has no result (it is {job.status}).")
    name = fill.template_name.removesuffix(".docx") + " (filled).docx"
    return await blob_download(call, fill.result_blob_key, name, DOCX)
