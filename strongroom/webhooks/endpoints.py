"""A tenant's webhook endpoints and their deliveries (issue 30): the work behind the routes.

Every query is scoped to the caller's tenant and environment: another's endpoint is 404,
never 403. A URL is refused (422) unless it resolves to public addresses only
(strongroom/outbox/addresses.py); the dispatcher checks again at each attempt.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func
from sqlmodel import col, select

from strongroom.api.capability import Call
from strongroom.api.pagination import Position, newest_first
from strongroom.db.types import utcnow
from strongroom.outbox.addresses import UnsafeUrl, resolve_public
from strongroom.outbox.enums import DeliveryStatus, EndpointStatus
from strongroom.outbox.models import WebhookDelivery, WebhookEndpoint, WebhookEvent, webhook_id
from strongroom.outbox.record import wake_after_commit
from strongroom.outbox.signing import SecretBox, new_secret
from strongroom.problems import Problem
from strongroom.services import Services
from strongroom.webhooks.schemas import CreateEndpoint, DeliveryView, UpdateEndpoint

OLD_SECRET_SIGNS_FOR = timedelta(hours=24)


def _box(call: Call[Services]) -> SecretBox:
    return SecretBox(call.services.settings.secret("secret_key"))


async def _checked_url(call: Call[Services], url: str) -> str:
    try:
        await resolve_public(url, allow_private=call.services.settings.webhooks_allow_private_urls)
    except UnsafeUrl as error:
        raise Problem(
            "validation_error",
            "The endpoint's URL is refused.",
            errors=[{"field": "url", "message": str(error)}],
        ) from error
    return url


async def create(call: Call[Services], body: CreateEndpoint) -> tuple[WebhookEndpoint, str]:
    """A new endpoint, and its secret (shown this once)."""
    principal = call.principal
    limit = call.services.settings.webhooks_max_endpoints
    count = select(func.count()).where(
        col(WebhookEndpoint.tenant_id) == principal.tenant_id,
        col(WebhookEndpoint.environment) == principal.environment.value,
    )
    if (await call.session.exec(count)).one() >= limit:
        raise Problem(
            "validation_error",
            f"At most {limit} webhook endpoints per tenant and environment; delete one first.",
            errors=[{"field": "url", "message": f"the {limit} endpoints allowed exist"}],
        )
    secret = new_secret()
    endpoint = WebhookEndpoint(
        tenant_id=principal.tenant_id,
        environment=principal.environment.value,
        url=await _checked_url(call, body.url),
        events=[event.value for event in body.events],
        description=body.description,
        secret_sealed=_box(call).seal(secret),
    )
    call.session.add(endpoint)
    await call.session.flush()
    return endpoint, secret


async def find(call: Call[Services], endpoint_id: uuid.UUID) -> WebhookEndpoint:
    statement = select(WebhookEndpoint).where(
        col(WebhookEndpoint.id) == endpoint_id,
        col(WebhookEndpoint.tenant_id) == call.principal.tenant_id,
        col(WebhookEndpoint.environment) == call.principal.environment.value,
    )
    endpoint = (await call.session.exec(statement)).first()
    if endpoint is None:
        raise Problem("not_found", "No such webhook endpoint.")
    return endpoint


async def page(
    call: Call[Services], *, limit: int, after: Position | None
) -> tuple[list[WebhookEndpoint], bool]:
    statement = select(WebhookEndpoint).where(
        col(WebhookEndpoint.tenant_id) == call.principal.tenant_id,
        col(WebhookEndpoint.environment) == call.principal.environment.value,
    )
    return await newest_first(call.session, statement, WebhookEndpoint, limit=limit, after=after)


async def change(
    call: Call[Services], endpoint: WebhookEndpoint, body: UpdateEndpoint
) -> WebhookEndpoint:
    if body.url is not None:
        endpoint.url = await _checked_url(call, body.url)
    if body.events is not None:
        endpoint.events = [event.value for event in body.events]
    if "description" in body.model_fields_set:
        endpoint.description = body.description
    if body.status is not None and body.status.value != endpoint.status:
        endpoint.status = body.status.value
        disabled = body.status is EndpointStatus.DISABLED
        endpoint.disabled_reason = "Disabled by a PATCH." if disabled else None
    endpoint.updated_at = utcnow()
    call.session.add(endpoint)
    await call.session.flush()
    return endpoint


async def remove(call: Call[Services], endpoint: WebhookEndpoint) -> None:
    """The endpoint goes with its deliveries; the events stay for other endpoints."""
    await call.session.exec(  # type: ignore[call-overload]
        delete(WebhookDelivery).where(col(WebhookDelivery.endpoint_id) == endpoint.id)
    )
    await call.session.delete(endpoint)
    await call.session.flush()


async def rotate(call: Call[Services], endpoint: WebhookEndpoint) -> str:
    """A new secret; the one it replaces signs beside it for 24 hours."""
    secret = new_secret()
    now = utcnow()
    endpoint.previous_secret_sealed = endpoint.secret_sealed
    endpoint.previous_secret_expires_at = now + OLD_SECRET_SIGNS_FOR
    endpoint.secret_sealed = _box(call).seal(secret)
    endpoint.updated_at = now
    call.session.add(endpoint)
    await call.session.flush()
    return secret


def _deliveries(endpoint: WebhookEndpoint):
    return (
        select(WebhookDelivery, WebhookEvent.id)  # type: ignore[call-overload]
        .join(WebhookEvent, col(WebhookEvent.id) == col(WebhookDelivery.event_id))
        .where(col(WebhookDelivery.endpoint_id) == endpoint.id)
    )


def delivery_view(delivery: WebhookDelivery, event_id: uuid.UUID) -> DeliveryView:
    data: dict[str, Any] = {
        name: getattr(delivery, name) for name in DeliveryView.model_fields if name != "event_id"
    }
    return DeliveryView.model_validate(data | {"event_id": webhook_id(event_id)})


async def deliveries(
    call: Call[Services], endpoint: WebhookEndpoint, *, limit: int, after: Position | None
) -> tuple[list[DeliveryView], bool]:
    rows, has_more = await newest_first(
        call.session, _deliveries(endpoint), WebhookDelivery, limit=limit, after=after
    )
    return [delivery_view(delivery, event_id) for delivery, event_id in rows], has_more


async def retry(
    call: Call[Services], endpoint: WebhookEndpoint, delivery_id: uuid.UUID
) -> DeliveryView:
    """Due again now: one more attempt for a failed delivery, at once for a pending one, the
    event sent again for a succeeded one. An endpoint that is disabled gets it once enabled."""
    statement = _deliveries(endpoint).where(col(WebhookDelivery.id) == delivery_id)
    row = (await call.session.exec(statement)).first()
    if row is None:
        raise Problem("not_found", "No such delivery of this endpoint.")
    delivery, event_id = row
    now = utcnow()
    delivery.status = DeliveryStatus.PENDING.value
    delivery.next_attempt_at = delivery.updated_at = now
    call.session.add(delivery)
    await call.session.flush()
    wake_after_commit(call.session)
    return delivery_view(delivery, event_id)
