"""Request and response models of the project endpoints (spec 2.5, D41)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict

from strongroom.api.fields import Text, Timestamp
from strongroom.api.pagination import Page
from strongroom.vault.models import ProjectStatus, ProjectType


class CreateProject(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Text(255, min_length=1, strip=True)
    project_type: ProjectType
    description: Text(10_000) = ""
    location: Text(255, strip=True) | None = None


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
