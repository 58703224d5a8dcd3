"""Request and response models of template fill (D45, D46)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from strongroom.api.fields import Timestamp
from strongroom.chat.schemas import CitationView
from strongroom.jobs.models import JobStatus
from strongroom.vault.schemas import MAX_FILTER_IDS


class TemplateForm(BaseModel):
    """The multipart form (documentation only: api/multipart.py parses it)."""

    file: bytes = Field(
        json_schema_extra={"format": "binary"},
        description="A DOCX with `{{field}}` or `{{field | how to find it}}` placeholders.",
    )
    project_id: uuid.UUID | None = Field(
        default=None, description="Fill from this project's documents."
    )
    document_ids: str | None = Field(
        default=None,
        description="Fill from these documents only: a JSON array or comma-separated ids.",
    )


class StoredTemplateFill(BaseModel):
    """Fill a DOCX template already uploaded to the vault."""

    model_config = ConfigDict(extra="forbid")

    template_document_id: uuid.UUID = Field(
        description="The uploaded DOCX with `{{field}}` or `{{field | how to find it}}` "
        "placeholders (any ingestion status: it is read as a file)."
    )
    project_id: uuid.UUID | None = Field(
        default=None, description="Fill from this project's documents."
    )
    document_ids: list[uuid.UUID] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_FILTER_IDS,
        description="Fill from these documents only.",
    )


class TemplateFillAccepted(BaseModel):
    job_id: uuid.UUID
    status: JobStatus
    created_at: Timestamp


class FieldView(BaseModel):
    name: str
    instruction: str | None
    value: str | None = Field(description="Null when the documents hold no value for it.")
    found: bool
    citations: list[CitationView]


class TemplateFillView(BaseModel):
    job_id: uuid.UUID
    status: JobStatus
    progress: float
    error: dict[str, Any] | None
    template_name: str
    project_id: uuid.UUID | None
    fields: list[FieldView] = Field(description="Filled in as the job goes.")
    result_url: str | None = Field(description="The filled DOCX, once the job succeeded.")
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
