"""Routines and their runs (issue 43).

A run row is also the record that a trigger fired: a scheduled fire inserts the run with
`fire_key` `schedule:<its time>`, a document that became ready with `document:<its id>`, and
the unique (routine_id, fire_key) makes a second insert of the same fire fail, whichever
process or restart tries it (a manual run has none: NULLs never collide). The run's steps
execute in jobs (D46) of kind `routine_run`; `job_id` is the current one (a run waiting for
review gets a new job when approved).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING_FOR_REVIEW = "waiting_for_review"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REJECTED = "rejected"
    SKIPPED = "skipped"  # missed past the catch-up window, or its previous run unfinished

    @property
    def finished(self) -> bool:
        return self in {
            RunStatus.SUCCEEDED,
            RunStatus.FAILED,
            RunStatus.REJECTED,
            RunStatus.SKIPPED,
        }


class StepStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Routine(SQLModel, table=True):
    __tablename__ = "routines"
    __table_args__ = (
        Index("ix_routines_scope", "tenant_id", "environment", "created_at"),
        # What the firing loop reads: enabled scheduled routines by when they are due.
        Index("ix_routines_due", "next_run_at"),
        Index("ix_routines_project", "project_id"),
    )

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    owner_id: uuid.UUID = Field(foreign_key="users.id")
    # The grant (issue 52, docs/routines.md "Acting for its owner"): the API key that last
    # saved the routine's steps, and the scopes those steps need, which that key held then.
    # A run acts with these scopes as the key holds them at the step's start; NULL key: no
    # grant (saved before grants, none found), so nothing runs until the owner saves it.
    api_key_id: uuid.UUID | None = Field(default=None)
    granted_scopes: list[str] = Field(default_factory=list, sa_type=JSON)
    # Why the routine was paused (`enabled` false): {code, detail, at} of the owner check that
    # failed at a fire or a run (its key revoked or expired, its user deactivated); cleared
    # when the owner enables it again.
    paused: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    project_id: uuid.UUID = Field(foreign_key="projects.id", ondelete="CASCADE")
    name: str = Field(max_length=255)
    enabled: bool = Field(default=True)
    trigger: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    steps: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    review: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    # The next scheduled fire (UTC); NULL unless the routine is enabled and scheduled.
    next_run_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


class RoutineRun(SQLModel, table=True):
    __tablename__ = "routine_runs"
    __table_args__ = (
        UniqueConstraint("routine_id", "fire_key", name="uq_routine_runs_fire"),
        Index("ix_routine_runs_routine", "routine_id", "created_at"),
    )

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    routine_id: uuid.UUID = Field(foreign_key="routines.id", ondelete="CASCADE")
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    # The job running its steps now (none for a skipped run).
    job_id: uuid.UUID | None = Field(default=None)
    status: str = Field(default=RunStatus.QUEUED.value, max_length=24)
    trigger_type: str = Field(max_length=16)
    # What fired it, once per routine: `schedule:<UTC time>` or `document:<id>`; NULL: manual.
    fire_key: str | None = Field(default=None, max_length=64)
    scheduled_for: datetime | None = Field(default=None, sa_type=UTCDateTime)
    document_id: uuid.UUID | None = Field(default=None)
    # The routine's steps as they were when the run was made, each with its state:
    # {..the step.., status, result_id, result_type, error, started_at, finished_at}.
    steps: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    # {before_step, decision (approved|rejected|None), comment, decided_by, decided_at}
    review: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    error: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
