"""Webhooks' tables (issue 30): a tenant's endpoints, the outbox of events, and one delivery
of each event to each endpoint that subscribed to its type when it was recorded.

The outbox is written in the transaction that makes the change an event reports (a job's
end), so an event exists exactly when its change does; deliveries are claimed and attempted
by the processes that run jobs (strongroom/outbox/dispatch.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON, Index, Text
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow
from strongroom.outbox.enums import DeliveryStatus, EndpointStatus

EVENT_ID_PREFIX = "msg_"


def webhook_id(event_id: uuid.UUID) -> str:
    """An event's `webhook-id`: `msg_` + 32 hex digits, the same on every attempt."""
    return EVENT_ID_PREFIX + event_id.hex


class WebhookEndpoint(SQLModel, table=True):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (
        Index("ix_webhook_endpoints_scope", "tenant_id", "environment", "created_at"),
    )

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    url: str = Field(max_length=2048)
    events: list[str] = Field(default_factory=list, sa_type=JSON)
    description: str | None = Field(default=None, max_length=500)
    status: str = Field(default=EndpointStatus.ENABLED.value, max_length=16)
    disabled_reason: str | None = Field(default=None, max_length=1024)
    # Signing secrets, sealed (strongroom/outbox/signing.py): they sign, so they cannot be
    # kept as digests. The one before a rotation signs too until `previous_secret_expires_at`.
    secret_sealed: str = Field(sa_type=Text)
    previous_secret_sealed: str | None = Field(default=None, sa_type=Text)
    previous_secret_expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


class WebhookEvent(SQLModel, table=True):
    """One event as it is sent: `body` is the exact JSON signed, the same on every attempt."""

    __tablename__ = "webhook_events"
    __table_args__ = (Index("ix_webhook_events_created", "created_at"),)

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    type: str = Field(max_length=64)
    body: str = Field(sa_type=Text)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)

    @property
    def public_id(self) -> str:
        return webhook_id(self.id)


class WebhookDelivery(SQLModel, table=True):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        # What the dispatchers claim: pending deliveries by when they are due.
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        Index("ix_webhook_deliveries_endpoint", "endpoint_id", "created_at"),
    )

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    event_id: uuid.UUID = Field(foreign_key="webhook_events.id", ondelete="CASCADE")
    endpoint_id: uuid.UUID = Field(foreign_key="webhook_endpoints.id", ondelete="CASCADE")
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    event_type: str = Field(max_length=64)
    status: str = Field(default=DeliveryStatus.PENDING.value, max_length=16)
    attempts: int = Field(default=0)
    next_attempt_at: datetime | None = Field(default_factory=utcnow, sa_type=UTCDateTime)
    # A dispatcher that claimed the delivery holds it until then; past it (the process was
    # killed mid-attempt) another claims it, and the receiver gets the same `webhook-id`.
    claimed_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_status_code: int | None = Field(default=None)
    last_response_body: str | None = Field(default=None, sa_type=Text)  # at most 1 KB
    last_error: str | None = Field(default=None, max_length=1024)
    delivered_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
