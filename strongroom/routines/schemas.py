"""Request and response models of routines and their runs (issue 43): the shapes the issue
gives, so that clients can rely on them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from strongroom.api.fields import Text, Timestamp
from strongroom.api.pagination import Page
from strongroom.corpus.kinds import DocumentType
from strongroom.routines.models import RunStatus, StepStatus
from strongroom.routines.schedule import MAX_CRON_CHARS, MAX_PREVIEW, MAX_ZONE_CHARS
from strongroom.vault.schemas import MAX_FILTER_IDS

MAX_STEPS = 10  # steps one routine holds
MAX_INPUT_KEYS = 20  # keys of a workflow step's `inputs`
# A preview's `after`: far enough from the ends of the calendar that a zone's offset and
# croniter's walk stay inside the years Python's datetime can hold.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
# The document types by value (the enum's own docstring would become the schema's text).
FileType = Literal[tuple(kind.value for kind in DocumentType)]  # type: ignore[valid-type]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScheduleTrigger(_Closed):
    type: Literal["schedule"]
    cron: Text(MAX_CRON_CHARS, min_length=1, strip=True) = Field(
        description="Five fields (minute hour day-of-month month day-of-week), matched "
        "against the wall clock of `timezone`.",
        examples=["0 7 * * 1"],
    )
    timezone: Text(MAX_ZONE_CHARS, min_length=1, strip=True) = Field(
        default="UTC", description="An IANA time zone.", examples=["Australia/Sydney"]
    )


class DocumentReadyTrigger(_Closed):
    type: Literal["document_ready"]
    file_types: list[FileType] | None = Field(
        default=None, max_length=len(DocumentType), description="Only documents of these types."
    )
    name_pattern: Text(255, min_length=1) | None = Field(
        default=None,
        description="Only documents whose name matches this shell-style pattern "
        "(`*.pdf`, `Contract*`), ignoring case.",
    )


class ManualTrigger(_Closed):
    type: Literal["manual"]


Trigger = Annotated[
    ScheduleTrigger | DocumentReadyTrigger | ManualTrigger, Field(discriminator="type")
]


class _Step(_Closed):
    documents_from_step: int | None = Field(
        default=None,
        ge=1,
        le=MAX_STEPS,
        description="Read the documents that this earlier step's result cites (a chat "
        "answer's citations, a workflow's evidence, a fill's found fields), instead of the "
        "trigger's document or the project's. Not with named documents; a workflow step "
        "only if its workflow reads a set of documents.",
    )


class WorkflowStep(_Step):
    type: Literal["workflow"]
    workflow_id: Text(64, min_length=1) = Field(examples=["wf_extract_key_terms"])
    inputs: dict[str, Any] = Field(
        default_factory=dict,
        description="As the workflow's `input_schema` says. Without `document_ids`, a "
        "document-set workflow reads the trigger's document (document_ready), else every "
        "ready document of the routine's project.",
    )

    @field_validator("inputs")
    @classmethod
    def _bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > MAX_INPUT_KEYS:
            raise ValueError(f"at most {MAX_INPUT_KEYS} inputs")
        return value


class TemplateFillStep(_Step):
    type: Literal["template_fill"]
    template_id: uuid.UUID = Field(description="A DOCX template uploaded to the vault.")
    document_ids: list[uuid.UUID] | None = Field(
        default=None,
        max_length=MAX_FILTER_IDS,
        description="Fill from these documents; omitted: the trigger's document "
        "(document_ready), else the routine's project.",
    )


class ChatStep(_Step):
    type: Literal["chat"]
    query: Text(8000, min_length=1, strip=True) = Field(
        description="Asked about the routine's project (and the trigger's document); the "
        "answer is kept as a conversation."
    )


Step = Annotated[WorkflowStep | TemplateFillStep | ChatStep, Field(discriminator="type")]


class Review(_Closed):
    before_step: int = Field(
        ge=1, le=MAX_STEPS, description="The run waits for approval before this step (from 1)."
    )


_NAME = "What people call the routine (1-255 characters)."
_ENABLED = "Whether it fires on its trigger (a manual run needs no enabling)."
_TRIGGER = (
    "When it runs: `manual`, a `schedule` (five-field cron in an IANA zone), or "
    "`document_ready` (each document of its project that becomes ready)."
)
_STEPS = "What it does, in order (1-10 steps): a workflow run, a template fill or a chat question."
_REVIEW = "A person's approval before the step it names, or null for none."


class CreateRoutine(_Closed):
    name: Text(255, min_length=1, strip=True) = Field(description=_NAME)
    project_id: uuid.UUID = Field(description="The project whose documents its steps read.")
    enabled: bool = Field(default=True, description=_ENABLED)
    trigger: Trigger = Field(description=_TRIGGER)
    steps: list[Step] = Field(min_length=1, max_length=MAX_STEPS, description=_STEPS)
    review: Review | None = Field(default=None, description=_REVIEW)


class UpdateRoutine(_Closed):
    """Only the fields sent change; `review: null` removes the review."""

    name: Text(255, min_length=1, strip=True) | None = Field(default=None, description=_NAME)
    enabled: bool | None = Field(default=None, description=_ENABLED)
    trigger: Trigger | None = Field(default=None, description=_TRIGGER)
    steps: list[Step] | None = Field(
        default=None, min_length=1, max_length=MAX_STEPS, description=_STEPS
    )
    review: Review | None = Field(default=None, description=_REVIEW)


class RoutineView(BaseModel):
    id: uuid.UUID
    name: str
    project_id: uuid.UUID
    enabled: bool
    trigger: dict[str, Any]
    steps: list[dict[str, Any]]
    review: dict[str, Any] | None
    next_run_at: Timestamp | None = Field(
        description="The next scheduled fire (UTC); null unless enabled and scheduled."
    )
    granted_scopes: list[str] = Field(
        description="The scopes the steps act with, granted by the key that last saved them "
        "(each step also needs the key to hold it still)."
    )
    paused: dict[str, Any] | None = Field(
        description="Why the routine was disabled by itself (`code`, `detail`, `at`): its "
        "key was revoked or expired, or its owner deactivated. Null otherwise; enabling it "
        "again (with a valid key of its owner) clears it."
    )
    created_at: Timestamp
    updated_at: Timestamp


class RoutinePage(Page[RoutineView]):
    """A tenant's routines, newest first."""


class ScheduleQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    count: int = Field(default=10, ge=1, le=MAX_PREVIEW, description="How many fire times.")
    after: AwareDatetime | None = Field(
        default=None,
        description="RFC 3339 with an offset, from 1970 to 9000; default: now.",
    )

    @field_validator("after")
    @classmethod
    def _in_range(cls, value: datetime | None) -> datetime | None:
        if value is not None and not (EARLIEST <= value < LATEST):
            raise ValueError("must be from 1970-01-01 to 9000-01-01 (UTC)")
        return value


class FireTime(BaseModel):
    at: Timestamp = Field(description="UTC.")
    local: str = Field(description="The same instant on the routine's clock, with its offset.")


class ScheduleView(BaseModel):
    routine_id: uuid.UUID
    cron: str
    timezone: str
    enabled: bool
    data: list[FireTime]


class StartRoutineRun(_Closed):
    document_id: uuid.UUID | None = Field(
        default=None, description="A document the steps read as the trigger's document."
    )


class Decision(_Closed):
    comment: Text(2000) | None = Field(
        default=None, description="Why, for the run's record (up to 2,000 characters)."
    )


class RunStepView(BaseModel):
    position: int = Field(description="From 1, in the routine's order.")
    type: str
    status: StepStatus
    result_type: str | None = Field(description="workflow_run, template_fill or chat_message.")
    result_id: str | None = Field(
        description="The workflow run's `run_id`, the template fill's `job_id`, or the chat "
        "answer's `message_id`."
    )
    conversation_id: uuid.UUID | None = None
    documents_from_step: int | None = Field(
        default=None, description="The earlier step whose result's documents it read."
    )
    error: dict[str, Any] | None = None
    started_at: str | None = None
    finished_at: str | None = None


class ReviewView(BaseModel):
    before_step: int
    decision: Literal["approved", "rejected"] | None = None
    comment: str | None = None
    decided_by: uuid.UUID | None = None
    decided_at: str | None = None


class RoutineRunView(BaseModel):
    id: uuid.UUID
    routine_id: uuid.UUID
    status: RunStatus
    trigger_type: str
    scheduled_for: Timestamp | None
    document_id: uuid.UUID | None
    steps: list[RunStepView]
    review: ReviewView | None
    error: dict[str, Any] | None
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None


class RoutineRunPage(Page[RoutineRunView]):
    """A routine's runs, newest first."""
