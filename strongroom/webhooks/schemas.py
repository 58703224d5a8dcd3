"""Bodies and answers of the webhook endpoints (issue 30, docs/webhooks.md)."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from strongroom.api.fields import Text, Timestamp
from strongroom.api.pagination import Page
from strongroom.outbox.addresses import MAX_URL_LENGTH
from strongroom.outbox.enums import EndpointStatus, EventType

EventTypes = Annotated[list[EventType], Field(min_length=1, max_length=len(EventType))]


def _distinct(events: list[EventType] | None) -> list[EventType] | None:
    return None if events is None else list(dict.fromkeys(events))


class CreateEndpoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: Text(MAX_URL_LENGTH, min_length=1, strip=True) = Field(
        description="Where events are POSTed: http or https, a public address."
    )
    events: EventTypes = Field(description="The event types to send, at least one.")
    description: Text(500, strip=True) | None = Field(
        default=None, description="A note for people: what the endpoint is for."
    )

    _distinct_events = field_validator("events")(_distinct)


class UpdateEndpoint(BaseModel):
    """What a PATCH changes; a field left out stays as it is."""

    model_config = ConfigDict(extra="forbid")

    url: Text(MAX_URL_LENGTH, min_length=1, strip=True) | None = Field(
        default=None, description="A new address for the events (http or https, public)."
    )
    events: EventTypes | None = Field(
        default=None, description="The event types to send from now on, at least one."
    )
    description: Text(500, strip=True) | None = Field(
        default=None, description="A new note for people; null removes it."
    )
    status: EndpointStatus | None = Field(
        default=None,
        description="`enabled` again after it was disabled (deliveries left pending resume), "
        "or `disabled` to pause it.",
    )

    _distinct_events = field_validator("events")(_distinct)


class EndpointView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    url: str
    events: list[EventType]
    description: str | None
    status: EndpointStatus
    disabled_reason: str | None = Field(
        description="Why it was disabled: every attempt at a delivery failed, or a PATCH."
    )
    created_at: Timestamp
    updated_at: Timestamp


class EndpointWithSecret(EndpointView):
    secret: str = Field(
        description="`whsec_` + base64 of the signing key (Standard Webhooks). Shown only "
        "in the answer that creates it."
    )


class EndpointPage(Page[EndpointView]):
    """A page of webhook endpoints, newest first."""


class DeliveryView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    event_id: str = Field(description="The `webhook-id` the receiver gets: `msg_` + 32 hex.")
    event_type: EventType
    status: str = Field(description="`pending`, `succeeded` or `failed` (every attempt failed).")
    attempts: int
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: Timestamp | None
    delivered_at: Timestamp | None
    created_at: Timestamp


class DeliveryPage(Page[DeliveryView]):
    """A page of one endpoint's deliveries, newest first."""
