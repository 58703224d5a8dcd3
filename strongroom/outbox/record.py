"""The outbox (issue 30): an event is recorded in the transaction of the change it reports,
with one delivery for each of the tenant's enabled endpoints that subscribed to its type.

Nothing is sent here. A process that delivers webhooks (strongroom/outbox/dispatch.py)
claims the deliveries; one in the same process is woken as soon as the transaction that
recorded an event commits (`on_recorded`), so an event is on its way in milliseconds rather
than at the next poll. A transaction rolled back records nothing and wakes nobody.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import insert
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.db.commit_hooks import after_commit
from strongroom.db.types import utcnow
from strongroom.outbox.enums import DeliveryStatus, EndpointStatus, EventType
from strongroom.outbox.models import WebhookDelivery, WebhookEndpoint, WebhookEvent

_LISTENERS: list[Callable[[], None]] = []


async def record_event(
    session: AsyncSession,
    *,
    tenant_id: uuid.UUID,
    environment: str,
    event_type: EventType,
    data: dict[str, Any],
) -> int:
    """Record `event_type` about `data` (the resource as its GET answers it) for every
    endpoint subscribed to it; the deliveries recorded. None subscribed: nothing is stored."""
    statement = select(WebhookEndpoint.id, WebhookEndpoint.events).where(
        col(WebhookEndpoint.tenant_id) == tenant_id,
        col(WebhookEndpoint.environment) == environment,
        col(WebhookEndpoint.status) == EndpointStatus.ENABLED.value,
    )
    endpoints = [
        endpoint_id
        for endpoint_id, events in (await session.exec(statement)).all()
        if event_type.value in events
    ]
    if not endpoints:
        return 0
    now = utcnow()
    event_id = uuid.uuid4()
    payload = {"type": event_type.value, "timestamp": now.isoformat(), "data": data}
    scope = {"tenant_id": tenant_id, "environment": environment}
    connection = await session.connection()
    await connection.execute(
        insert(WebhookEvent).values(
            id=event_id,
            type=event_type.value,
            body=json.dumps(payload, separators=(",", ":"), ensure_ascii=False),
            created_at=now,
            **scope,
        )
    )
    await connection.execute(
        insert(WebhookDelivery),
        [
            {
                "id": uuid.uuid4(),
                "event_id": event_id,
                "endpoint_id": endpoint_id,
                "event_type": event_type.value,
                "status": DeliveryStatus.PENDING.value,
                "attempts": 0,
                "next_attempt_at": now,
                "created_at": now,
                "updated_at": now,
                **scope,
            }
            for endpoint_id in endpoints
        ],
    )
    wake_after_commit(session)
    return len(endpoints)


def wake_after_commit(session: AsyncSession) -> None:
    """Wake this process's dispatcher once `session`'s transaction commits (deliveries are
    due now)."""
    after_commit(session, _wake, key=_wake)


def on_recorded(listener: Callable[[], None]) -> Callable[[], None]:
    """Call `listener` whenever a transaction of this process that recorded an event
    commits. Returns what removes it."""
    _LISTENERS.append(listener)
    return lambda: _LISTENERS.remove(listener)


def _wake() -> None:
    for listener in list(_LISTENERS):
        listener()
