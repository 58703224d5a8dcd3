"""Who gets a process's delivery slots (issue 44).

Tenant A's 20 endpoints that never answered held all 8 of a worker's slots, 10 s an attempt,
and tenant B's one delivery, due after A's hundreds, waited 16 minutes without an attempt
(with A's retries, for good). Deliveries now share the slots as jobs do
(strongroom/jobs/fairness.py), with two rules of their own:

- **A tenant's share**: one tenant holds at most `webhooks_concurrency -
  webhooks_slots_kept_for_other_tenants` of a process's slots (at least one). Counted per
  process, as jobs are: no coordination, and each process keeps slots for other tenants.
- **An endpoint's limit**: one endpoint has at most `webhooks_endpoint_concurrency`
  deliveries in flight, counted across the processes from the table's live claims (claimed,
  outcome not yet recorded). An endpoint that hangs holds at most that many slots; its other
  deliveries wait in the table, and so do the retries of one that fails (until their
  `next_attempt_at`), holding no slot at all.
- **Turns**: of what is due, a claim takes every tenant's first delivery before any tenant's
  second, and within a tenant every endpoint's first before any endpoint's second; in each
  turn the longest due first. A tenant with hundreds of deliveries due is served no sooner
  than one with one.

A delivery passed over is left as it is (no attempt counted) for the next claim: when a slot
frees, or at the next poll. Two processes that claim at the same moment each count the other's
claims only once they are committed, so an endpoint may briefly have one more in flight than
its limit.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, func, or_, select
from sqlmodel import col

from strongroom.jobs.fairness import tenant_share
from strongroom.outbox.enums import DeliveryStatus, EndpointStatus
from strongroom.outbox.models import WebhookDelivery, WebhookEndpoint
from strongroom.settings import Settings


def share(settings: Settings) -> int:
    """The slots of a process one tenant's deliveries may hold."""
    return tenant_share(
        settings.webhooks_concurrency, settings.webhooks_slots_kept_for_other_tenants
    )


def claimable(now: datetime) -> list[ColumnElement[bool]]:
    """What makes a delivery claimable: pending, due, claimed by nobody (or by a process whose
    lease ran out), to an enabled endpoint (joined)."""
    return [
        col(WebhookDelivery.status) == DeliveryStatus.PENDING.value,
        col(WebhookDelivery.next_attempt_at) <= now,
        or_(col(WebhookDelivery.claimed_until).is_(None), col(WebhookDelivery.claimed_until) < now),
        col(WebhookEndpoint.status) == EndpointStatus.ENABLED.value,
    ]


def due_in_turn(now: datetime, settings: Settings) -> Select[Any]:
    """(delivery id, tenant id) of the claimable deliveries in the order of their turns, at
    most a tenant's share of each tenant's and each endpoint's free places (its limit less
    its deliveries in flight), at most `webhooks_concurrency` rows. That is enough for `pick`
    to fill every free slot: the rows it passes over, of tenants holding slots here, are at
    most as many as the slots held."""
    in_flight = (
        select(col(WebhookDelivery.endpoint_id), func.count().label("busy"))
        .where(
            col(WebhookDelivery.status) == DeliveryStatus.PENDING.value,
            col(WebhookDelivery.claimed_until) >= now,
        )
        .group_by(col(WebhookDelivery.endpoint_id))
        .subquery("in_flight")
    )
    due = (
        select(
            col(WebhookDelivery.id),
            col(WebhookDelivery.tenant_id),
            col(WebhookDelivery.next_attempt_at),
            func.coalesce(in_flight.c.busy, 0).label("busy"),
            func.row_number()
            .over(
                partition_by=col(WebhookDelivery.endpoint_id),
                order_by=(col(WebhookDelivery.next_attempt_at), col(WebhookDelivery.id)),
            )
            .label("place"),
        )
        .join(WebhookEndpoint, col(WebhookEndpoint.id) == col(WebhookDelivery.endpoint_id))
        .outerjoin(in_flight, in_flight.c.endpoint_id == col(WebhookDelivery.endpoint_id))
        .where(*claimable(now))
        .subquery("due")
    )
    allowed = (
        select(
            due.c.id,
            due.c.tenant_id,
            due.c.next_attempt_at,
            func.row_number()
            .over(
                partition_by=due.c.tenant_id,
                order_by=(due.c.place, due.c.next_attempt_at, due.c.id),
            )
            .label("turn"),
        )
        .where(due.c.place + due.c.busy <= settings.webhooks_endpoint_concurrency)
        .subquery("allowed")
    )
    return (
        select(allowed.c.id, allowed.c.tenant_id)
        .where(allowed.c.turn <= share(settings))
        .order_by(allowed.c.turn, allowed.c.next_attempt_at, allowed.c.id)
        .limit(settings.webhooks_concurrency)
    )


def pick(
    due: Iterable[tuple[uuid.UUID, uuid.UUID]],
    free: int,
    held: Mapping[uuid.UUID, int],
    tenant_share: int,
) -> list[uuid.UUID]:
    """Up to `free` of the `due` (delivery id, tenant id) in their order, passing over a
    delivery whose tenant would hold more than `tenant_share` slots (`held`: the slots each
    tenant holds in this process now)."""
    holding = Counter(held)
    picked: list[uuid.UUID] = []
    for delivery_id, tenant_id in due:
        if len(picked) == free:
            break
        if holding[tenant_id] < tenant_share:
            holding[tenant_id] += 1
            picked.append(delivery_id)
    return picked
