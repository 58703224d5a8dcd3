"""The vault's own table: projects (spec 2.5, D41), partitioned by tenant and environment
(D13). Documents and their passages, which every stage of a document's life reads or writes,
are in strongroom.corpus.models."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import Index, Text
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow


class ProjectType(StrEnum):
    COMMERCIAL = "commercial"
    RESIDENTIAL = "residential"
    INDUSTRIAL = "industrial"
    INFRASTRUCTURE = "infrastructure"
    INSTITUTIONAL = "institutional"
    MIXED_USE = "mixed_use"
    OTHER = "other"


class ProjectStatus(StrEnum):
    ACTIVE = "active"
    ON_HOLD = "on_hold"
    COMPLETED = "completed"
    ARCHIVED = "archived"


# The status of a project being deleted (issue 42): its deletion job removes its documents
# and then it; meanwhile no list or lookup shows it. Not a ProjectStatus: no client sees it.
PROJECT_DELETING = "deleting"


class Project(SQLModel, table=True):
    __tablename__ = "projects"
    # The list query is keyset-paginated newest first inside one tenant and environment (D5).
    __table_args__ = (
        Index("ix_projects_scope_created", "tenant_id", "environment", "created_at", "id"),
    )

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    owner_id: uuid.UUID = Field(foreign_key="users.id")
    name: str = Field(max_length=255)
    description: str = Field(default="", sa_type=Text)
    project_type: str = Field(max_length=32)
    status: str = Field(default=ProjectStatus.ACTIVE.value, max_length=32)
    location: str | None = Field(default=None, max_length=255)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
