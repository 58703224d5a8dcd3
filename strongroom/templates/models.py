"""Template-fill jobs (D45): the template, what each field was filled with, and the result.
The job's state (D46) is its row in `jobs`, whose id is this row's id."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow


class TemplateFill(SQLModel, table=True):
    __tablename__ = "template_fills"
    __table_args__ = (Index("ix_template_fills_scope", "tenant_id", "environment", "created_at"),)

    id: uuid.UUID = Field(foreign_key="jobs.id", primary_key=True, ondelete="CASCADE")
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    owner_id: uuid.UUID = Field(foreign_key="users.id")
    project_id: uuid.UUID | None = Field(default=None)
    document_ids: list[str] | None = Field(default=None, sa_type=JSON)
    template_name: str = Field(max_length=255)
    template_blob_key: str = Field(max_length=255)
    result_blob_key: str | None = Field(default=None, max_length=255)
    # [{name, instruction, value, found, citations}], once the job has filled them.
    fields: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
