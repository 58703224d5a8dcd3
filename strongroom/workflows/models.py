"""Workflow runs (D47): which workflow, with what inputs, how far its steps got, and its
output. The run's state (D46) is its job's row in `jobs`."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow

RUN_PREFIX = "run_"
_HEX32 = re.compile(r"[0-9a-f]{32}")


class WorkflowRun(SQLModel, table=True):
    __tablename__ = "workflow_runs"
    __table_args__ = (Index("ix_workflow_runs_scope", "tenant_id", "environment", "created_at"),)

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    owner_id: uuid.UUID = Field(foreign_key="users.id")
    workflow_id: str = Field(max_length=64)
    job_id: uuid.UUID = Field(foreign_key="jobs.id", ondelete="CASCADE")
    project_id: uuid.UUID | None = Field(default=None)
    inputs: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    # [{name, status, started_at, finished_at}] in the workflow's order.
    steps: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    output: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)

    @property
    def public_id(self) -> str:
        """`run_` + 32 hex digits (D6)."""
        return RUN_PREFIX + self.id.hex


def parse_run_id(text: str) -> uuid.UUID | None:
    """The row id of a public run id, or None when it is not one."""
    digits = text.removeprefix(RUN_PREFIX)
    if not text.startswith(RUN_PREFIX) or not _HEX32.fullmatch(digits):
        return None
    return uuid.UUID(hex=digits)
