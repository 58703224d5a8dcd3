"""The job table (D46): the state clients see. The queue only carries job ids; this row is
the truth, so a job lost by the queue can be found and sent again."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Index
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in {JobStatus.SUCCEEDED, JobStatus.FAILED}


class JobKind(StrEnum):
    INGESTION = "ingestion"
    TEMPLATE_FILL = "template_fill"
    WORKFLOW_RUN = "workflow_run"
    REEMBEDDING = "reembedding"  # one document's passages embedded again (issue 16)
    PROJECT_DELETION = "project_deletion"  # a project's documents, then it (issue 42)
    ROUTINE_RUN = "routine_run"  # a routine run's steps (issue 43)


class Job(SQLModel, table=True):
    __tablename__ = "jobs"
    # The sweeper looks for jobs left pending or running (D46: never lost or stuck).
    __table_args__ = (Index("ix_jobs_status_updated", "status", "updated_at"),)

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    kind: str = Field(max_length=32)
    # What the job works on (a document for ingestion).
    subject_id: uuid.UUID
    status: str = Field(default=JobStatus.PENDING.value, max_length=16)
    progress: float = Field(default=0.0)
    attempts: int = Field(default=0)
    error: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
