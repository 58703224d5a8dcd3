"""Request and response models of the project endpoints (spec 2.5, D41)."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from strongroom.api.fields import Timestamp
from strongroom.api.pagination import Page
from strongroom.vault.models import ProjectStatus, ProjectType

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]


class CreateProject(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name
    project_type: ProjectType
    description: str = Field(default="", max_length=10_000)
    location: Annotated[str, StringConstraints(strip_whitespace=True, max_length=255)] | None = None


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


class ProjectPage(Page[ProjectSummary]):
    """A page of projects, newest first."""
