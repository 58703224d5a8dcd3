"""Request and response models of workflows and their runs (D47, D46)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from strongroom.api.fields import Timestamp
from strongroom.api.pagination import Page
from strongroom.jobs.models import JobStatus


class WorkflowView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str = Field(description="`wf_...`")
    name: str
    description: str
    enabled: bool
    trigger_type: str = Field(description="`manual`: runs start through the API.")
    input_schema: dict[str, Any] = Field(description="JSON Schema of a run's `inputs`.")
    created_at: Timestamp
    updated_at: Timestamp


class WorkflowPage(Page[WorkflowView]):
    """The catalogue, a page at a time."""


class StartRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inputs: dict[str, Any] = Field(default_factory=dict, description="As `input_schema` says.")
    project_id: uuid.UUID | None = Field(default=None, description="The project it works on.")


class RunAccepted(BaseModel):
    run_id: str = Field(description="`run_...`")
    workflow_id: str
    status: JobStatus
    created_at: Timestamp


class StepView(BaseModel):
    name: str
    status: str = Field(description="pending, running, succeeded or failed")
    started_at: str | None
    finished_at: str | None


class RunView(BaseModel):
    run_id: str
    workflow_id: str
    project_id: uuid.UUID | None
    inputs: dict[str, Any]
    status: JobStatus
    progress: float
    error: dict[str, Any] | None
    steps: list[StepView]
    output: dict[str, Any] | None = Field(description="Once the run has succeeded.")
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
