"""Request and response models of the vault: projects (spec 2.5, D41), documents and
ingestion jobs (D42, D46), search (D43)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from strongroom.api.fields import Text, Timestamp
from strongroom.api.pagination import Page, PageQuery
from strongroom.corpus.models import DocumentMeaning, DocumentStatus, DocumentType
from strongroom.jobs.models import JobStatus
from strongroom.vault.models import ProjectStatus, ProjectType


class CreateProject(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Text(255, min_length=1, strip=True) = Field(description="The project's name.")
    project_type: ProjectType = Field(description="What kind of project it is.")
    description: Text(10_000) = Field(default="", description="Free text about the project.")
    location: Text(255, strip=True) | None = Field(
        default=None, description="Where the project is (a site address, a city)."
    )


class UpdateProject(BaseModel):
    """What a PATCH changes (issue 42); a field left out stays as it is. `name`,
    `project_type` and `status` (issue 52) may not be null (their defaults below are never
    validated: only a null sent is, and refused)."""

    model_config = ConfigDict(extra="forbid")

    name: Text(255, min_length=1, strip=True) = Field(  # type: ignore[assignment]
        default=None, description="The project's new name."
    )
    project_type: ProjectType = Field(  # type: ignore[assignment]
        default=None, description="What kind of project it is."
    )
    description: Text(10_000) = Field(  # type: ignore[assignment]
        default=None, description="Free text about the project."
    )
    location: Text(255, strip=True) | None = Field(
        default=None, description="Where the project is; null clears it."
    )
    status: ProjectStatus = Field(  # type: ignore[assignment]
        default=None,
        description="The project's status, from any other: a label for the tenant's own "
        "use, which changes nothing else.",
    )


class ProjectSummary(BaseModel):
    """A project as listed (spec 2.5)."""

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    name: str
    description: str
    project_type: ProjectType
    status: ProjectStatus
    created_at: Timestamp


class ProjectDetail(ProjectSummary):
    """A project as fetched or created (spec 2.5 plus D41)."""

    tenant_id: uuid.UUID
    owner_id: uuid.UUID
    location: str | None
    updated_at: Timestamp


class ProjectDeletion(BaseModel):
    """A project's deletion, accepted (issue 42): the project is gone from every list and
    lookup; its documents, their passages and files are removed by a job, and the
    `project.deleted` event was recorded."""

    project_id: uuid.UUID
    status: Literal["deleting"] = "deleting"
    document_count: int = Field(description="The documents being removed with it.")


class ProjectPage(Page[ProjectSummary]):
    """A page of projects, newest first."""


class UploadForm(BaseModel):
    """The multipart form of an upload (documentation only: api/multipart.py parses it)."""

    file: bytes = Field(
        json_schema_extra={"format": "binary"},
        description="The document: PDF, DOCX, XLSX, plain text, Markdown, HTML or CSV.",
    )
    project_id: uuid.UUID
    name: str | None = Field(default=None, max_length=255, description="Default: the file name.")


class DocumentView(BaseModel):
    """A document (D42)."""

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    document_type: DocumentType
    content_type: str
    size_bytes: int
    sha256: str
    page_count: int | None = Field(description="Known once ingestion has read the file.")
    ocr_page_count: int = Field(
        description="How many of its pages were read by OCR (scanned PDF pages, images)."
    )
    empty_page_count: int = Field(
        description="How many of its pages gave no text (blank, or a scan OCR could not read)."
    )
    status: DocumentStatus
    meaning: DocumentMeaning = Field(
        description="Whether its passages' vectors are made (search and answers by meaning): "
        "`pending` for a while after it is `ready` (it is searched by words meanwhile), then "
        "`complete`; `failed` if the embeddings provider failed (by words until `strongroom "
        "reembed`), `off` with no embeddings provider."
    )
    error: dict[str, Any] | None = Field(description="Why ingestion failed (a problem).")
    ingestion_job_id: uuid.UUID
    created_at: Timestamp
    updated_at: Timestamp


class DocumentPage(Page[DocumentView]):
    """A page of documents, newest first."""


class DocumentPageQuery(PageQuery):
    project_id: uuid.UUID | None = Field(default=None, description="Only this project's.")


class IngestionJobView(BaseModel):
    """The job that reads a document and indexes it for search (D46)."""

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    document_id: uuid.UUID = Field(validation_alias="subject_id")
    status: JobStatus
    progress: float
    error: dict[str, Any] | None
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None


MAX_FILTER_IDS = 100


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Text(1000, min_length=1, strip=True) = Field(
        description="What to look for, in words or as a question."
    )
    project_ids: list[uuid.UUID] | None = Field(
        default=None,
        max_length=MAX_FILTER_IDS,
        description="Search only these projects' documents; omitted: every project's.",
    )
    document_ids: list[uuid.UUID] | None = Field(
        default=None,
        max_length=MAX_FILTER_IDS,
        description="Search only these documents; omitted: every document in scope.",
    )
    k: int = Field(default=10, ge=1, le=50, description="How many passages to return.")


class SearchHit(BaseModel):
    document_id: uuid.UUID
    document_name: str
    project_id: uuid.UUID
    chunk_id: uuid.UUID
    page_number: int
    content: str = Field(description="The whole passage.")
    snippet: str = Field(description="Where it matches, query words inside <mark></mark>.")
    score: float = Field(description="Relevance; higher is better, comparable within a call.")


class SearchResults(BaseModel):
    data: list[SearchHit]
