"""The event types and the states of endpoints and deliveries (issue 30): plain values, apart
from the tables, so that the API's schemas name them without importing the tables (issue 29)."""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    DOCUMENT_READY = "document.ready"
    DOCUMENT_FAILED = "document.failed"
    DOCUMENT_DELETED = "document.deleted"
    PROJECT_DELETED = "project.deleted"
    TEMPLATE_FILL_SUCCEEDED = "template_fill.succeeded"
    TEMPLATE_FILL_FAILED = "template_fill.failed"
    WORKFLOW_RUN_SUCCEEDED = "workflow_run.succeeded"
    WORKFLOW_RUN_FAILED = "workflow_run.failed"
    # Routines (issue 43)
    ROUTINE_RUN_WAITING_FOR_REVIEW = "routine.run.waiting_for_review"
    ROUTINE_RUN_SUCCEEDED = "routine.run.succeeded"
    ROUTINE_RUN_FAILED = "routine.run.failed"
    ROUTINE_RUN_REJECTED = "routine.run.rejected"


class EndpointStatus(StrEnum):
    ENABLED = "enabled"
    DISABLED = "disabled"


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # due at `next_attempt_at`
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # every attempt failed
