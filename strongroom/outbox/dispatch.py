"""Delivering the outbox (issue 30): claim due deliveries, sign, POST, record the outcome.

Runs in every process that runs jobs: each `strongroom worker`, and the serving process of
the embedded default. Several dispatchers share the table: a claim chooses among the due
deliveries by tenant and endpoint (strongroom/outbox/fairness.py: a tenant's share of the
process's slots, an endpoint's limit in flight, turns), takes them with `FOR UPDATE SKIP
LOCKED` (PostgreSQL; SQLite has one process) and holds each for a lease longer than an
attempt may take. A process killed mid-attempt leaves its claim to expire; another
dispatcher then sends the same event again with the same `webhook-id` (at least once:
receivers de-duplicate by it).

An attempt that fails (not 2xx, a redirect, a timeout, a refused address) is tried again
after `webhooks_first_retry_seconds`, then 3 times longer each time up to 12 hours, with a
fifth of jitter: with the defaults, 15 attempts over about three days. The last failing
attempt fails the delivery and disables its endpoint, unless a delivery to it succeeded
meanwhile. A receiver that answers 410 Gone says the endpoint is gone (Standard Webhooks):
that delivery fails at once and the endpoint is disabled, whatever succeeded before. The
dispatcher outlives its database: a failed round is logged and tried again at the next
poll, and what it had claimed is claimed again once the lease runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import delete, exists, update
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.db.types import utcnow
from strongroom.metrics import WEBHOOK_DELIVERIES, WEBHOOK_DELIVERY_LATENCY
from strongroom.outbox.attempt import DeliveryAttempt
from strongroom.outbox.enums import DeliveryStatus, EndpointStatus
from strongroom.outbox.fairness import claimable, due_in_turn, pick, share
from strongroom.outbox.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from strongroom.outbox.record import on_recorded
from strongroom.outbox.signing import SecretBox, headers
from strongroom.settings import Settings

log = logging.getLogger("strongroom.webhooks")  # the name its log records had before the move

LONGEST_WAIT = timedelta(hours=12)
RETENTION_SWEEP_SECONDS = 3600.0
UNSEALABLE = (
    "not sent: the endpoint's secret cannot be read (STRONGROOM_SECRET_KEY changed since it "
    "was made); rotate its secret"
)


class DispatchParts(Protocol):
    """What the dispatcher uses of its process (a `Runtime` in every process)."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    read_engine: AsyncEngine  # the same pool without BEGIN/COMMIT


@dataclass(frozen=True)
class Claimed:
    """One delivery, claimed, with what its attempt needs."""

    delivery_id: uuid.UUID
    endpoint_id: uuid.UUID
    tenant_id: uuid.UUID
    attempts: int
    url: str
    secrets: tuple[str, ...]
    message_id: str
    body: bytes
    event_created_at: datetime


def next_wait(settings: Settings, attempts: int) -> timedelta:
    """The wait after the `attempts`-th failed attempt: first, 3 times longer each time, at
    most 12 hours, give or take a fifth."""
    seconds = settings.webhooks_first_retry_seconds * 3 ** (attempts - 1)
    jitter = random.uniform(0.8, 1.2)  # noqa: S311  spreads retries; nothing secret
    seconds = min(seconds, LONGEST_WAIT.total_seconds()) * jitter
    return timedelta(seconds=seconds)


def lease(settings: Settings) -> timedelta:
    """How long a claim holds a delivery: past an attempt's longest, with room to record."""
    return timedelta(seconds=settings.webhooks_timeout_seconds * 2 + 5)


class Dispatcher:
    def __init__(self, parts: DispatchParts) -> None:
        self.parts = parts
        self.settings = parts.settings
        self.box = SecretBox(parts.settings.secret("secret_key"))
        from strongroom.outbox.sender import Sender  # httpx: only where webhooks go out

        self.sender = Sender(
            timeout_seconds=parts.settings.webhooks_timeout_seconds,
            allow_private=parts.settings.webhooks_allow_private_urls,
        )
        self._wake = asyncio.Event()
        self._running: dict[asyncio.Task[None], uuid.UUID] = {}  # each attempt's tenant
        self._held: Counter[uuid.UUID] = Counter()  # the slots each tenant holds here
        self._share = share(parts.settings)
        self._last_sweep = 0.0
        self._stopping = False

    async def run(self) -> None:
        """Deliver until `stop()` (the round in progress ends first, so no claim or record
        is cut off mid-statement) or until cancelled. The attempts in flight are then cut
        off: their claims expire and they are sent again."""
        loop = asyncio.get_running_loop()
        forget = on_recorded(lambda: loop.call_soon_threadsafe(self._wake.set))
        try:
            while not self._stopping:
                await self._round()
        finally:
            forget()
            for task in self._running:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*self._running, return_exceptions=True)
            await self.sender.aclose()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()

    async def _round(self) -> None:
        self._wake.clear()
        free = self.settings.webhooks_concurrency - len(self._running)
        claimed: list[Claimed] = []
        if free > 0 and not self._stopping:
            try:
                claimed = await self.claim(free)
                await self._sweep_expired()
            except Exception:
                log.exception("claiming webhook deliveries failed; trying again")
        for claim in claimed:
            task = asyncio.create_task(self._attempt_logged(claim))
            self._running[task] = claim.tenant_id
            self._held[claim.tenant_id] += 1
            task.add_done_callback(self._attempt_ended)
        if claimed and len(claimed) == free:
            await self._wait(0)  # more may be due: claim again as soon as a slot frees
        else:
            await self._wait(self.settings.webhooks_poll_seconds)

    def _attempt_ended(self, task: asyncio.Task[None]) -> None:
        tenant_id = self._running.pop(task)
        self._held[tenant_id] -= 1
        if self._held[tenant_id] <= 0:
            del self._held[tenant_id]
        self._wake.set()  # a slot is free

    async def _wait(self, seconds: float) -> None:
        if seconds == 0 and len(self._running) < self.settings.webhooks_concurrency:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds or None):
                await self._wake.wait()

    async def claim(self, limit: int) -> list[Claimed]:
        """Take up to `limit` due deliveries of enabled endpoints, counting their attempt:
        each tenant's and each endpoint's in turn, none past a tenant's share of this
        process's slots or an endpoint's limit in flight (strongroom/outbox/fairness.py)."""
        now = utcnow()
        # Choosing only reads (no lock, no write transaction: SQLite has one writer), so an
        # idle poll writes nothing.
        async with self.parts.sessions(bind=self.parts.read_engine) as session:
            due = (await session.exec(due_in_turn(now, self.settings))).all()  # type: ignore[call-overload]
        picked = pick(due, limit, self._held, self._share)
        if not picked:
            return []
        # Taken again only if still claimable: another process may have taken one since.
        chosen = (
            select(WebhookDelivery.id)
            .join(WebhookEndpoint, col(WebhookEndpoint.id) == col(WebhookDelivery.endpoint_id))
            .where(col(WebhookDelivery.id).in_(picked), *claimable(now))
            .with_for_update(skip_locked=True, of=WebhookDelivery)  # type: ignore[arg-type]
        )
        take = (
            update(WebhookDelivery)
            .where(col(WebhookDelivery.id).in_(chosen.scalar_subquery()))
            .values(
                claimed_until=now + lease(self.settings),
                attempts=col(WebhookDelivery.attempts) + 1,
                updated_at=now,
            )
            .returning(col(WebhookDelivery.id))
        )
        async with self.parts.sessions() as session:
            ids = list((await session.exec(take)).scalars())  # type: ignore[call-overload]
            await session.commit()
            if not ids:
                return []
            rows = await session.exec(
                select(WebhookDelivery, WebhookEvent, WebhookEndpoint)
                .join(WebhookEvent, col(WebhookEvent.id) == col(WebhookDelivery.event_id))
                .join(WebhookEndpoint, col(WebhookEndpoint.id) == col(WebhookDelivery.endpoint_id))
                .where(col(WebhookDelivery.id).in_(ids))
            )
            return [self._claimed(*row, now) for row in rows.all()]

    def _claimed(
        self,
        delivery: WebhookDelivery,
        event: WebhookEvent,
        endpoint: WebhookEndpoint,
        now: datetime,
    ) -> Claimed:
        sealed = [endpoint.secret_sealed]
        expires = endpoint.previous_secret_expires_at
        if endpoint.previous_secret_sealed and expires is not None and expires > now:
            sealed.append(endpoint.previous_secret_sealed)
        secrets = []
        for token in sealed:
            try:
                secrets.append(self.box.unseal(token))
            except ValueError:  # sealed under another STRONGROOM_SECRET_KEY
                log.error("a webhook endpoint's secret cannot be unsealed; rotate it",
                          extra={"endpoint_id": str(endpoint.id)})  # fmt: skip
        return Claimed(
            delivery_id=delivery.id,
            endpoint_id=endpoint.id,
            tenant_id=delivery.tenant_id,
            attempts=delivery.attempts,
            url=endpoint.url,
            secrets=tuple(secrets),
            message_id=event.public_id,
            body=event.body.encode(),
            event_created_at=event.created_at,
        )

    async def _attempt_logged(self, claim: Claimed) -> None:
        try:
            await self.attempt(claim)
        except Exception:
            # Its claim runs out and it is attempted again (the database may be restarting).
            log.exception("recording a webhook delivery failed", extra=_ids(claim))

    async def attempt(self, claim: Claimed) -> DeliveryAttempt:
        """Send the claimed delivery once and record the outcome."""
        if claim.secrets:
            timestamp = int(time.time())
            signed = headers(claim.secrets, claim.message_id, timestamp, claim.body)
            signed["user-agent"] = "Strongroom-Webhooks/1"
            outcome = await self.sender.post(claim.url, claim.body, signed)
        else:
            outcome = DeliveryAttempt(status_code=None, body="", error=UNSEALABLE, seconds=0.0)
        if outcome.succeeded:
            await self._delivered(claim, outcome)
        else:
            await self._failed(claim, outcome)
        return outcome

    async def _delivered(self, claim: Claimed, outcome: DeliveryAttempt) -> None:
        now = utcnow()
        async with self.parts.sessions() as session:
            await session.exec(  # type: ignore[call-overload]
                update(WebhookDelivery)
                .where(col(WebhookDelivery.id) == claim.delivery_id)
                .values(
                    status=DeliveryStatus.SUCCEEDED.value,
                    delivered_at=now,
                    next_attempt_at=None,
                    claimed_until=None,
                    last_status_code=outcome.status_code,
                    last_response_body=outcome.body,
                    last_error=None,
                    updated_at=now,
                )
            )
            await session.commit()
        WEBHOOK_DELIVERIES.labels("delivered").inc()
        WEBHOOK_DELIVERY_LATENCY.observe((now - claim.event_created_at).total_seconds())

    async def _failed(self, claim: Claimed, outcome: DeliveryAttempt) -> None:
        now = utcnow()
        gone = outcome.status_code == GONE
        last = gone or claim.attempts >= self.settings.webhooks_max_attempts
        values = {
            "claimed_until": None,
            "last_status_code": outcome.status_code,
            "last_response_body": outcome.body,
            "last_error": (outcome.error or f"answered {outcome.status_code}")[:1024],
            "updated_at": now,
        }
        if last:
            values |= {"status": DeliveryStatus.FAILED.value, "next_attempt_at": None}
        else:
            values["next_attempt_at"] = now + next_wait(self.settings, claim.attempts)
        async with self.parts.sessions() as session:
            await session.exec(  # type: ignore[call-overload]
                update(WebhookDelivery)
                .where(
                    col(WebhookDelivery.id) == claim.delivery_id,
                    col(WebhookDelivery.status) == DeliveryStatus.PENDING.value,
                )
                .values(**values)
            )
            if gone:
                await _disable(session, claim.endpoint_id, "The receiver answered 410 Gone.")
            elif last:
                await _disable_unless_recovered(session, claim, values["last_error"])
            await session.commit()
        WEBHOOK_DELIVERIES.labels("failed" if last else "retrying").inc()
        log.info(
            "webhook delivery failed",
            extra=_ids(claim) | {"attempts": claim.attempts, "final": last},
        )

    async def _sweep_expired(self) -> None:
        """Events past `webhooks_retention_days` go, with their deliveries (once an hour)."""
        if time.monotonic() - self._last_sweep < RETENTION_SWEEP_SECONDS:
            return
        self._last_sweep = time.monotonic()
        cutoff = utcnow() - timedelta(days=self.settings.webhooks_retention_days)
        old = select(WebhookEvent.id).where(col(WebhookEvent.created_at) < cutoff)
        async with self.parts.sessions() as session:
            await session.exec(  # type: ignore[call-overload]
                delete(WebhookDelivery).where(col(WebhookDelivery.event_id).in_(old))
            )
            await session.exec(delete(WebhookEvent).where(col(WebhookEvent.created_at) < cutoff))  # type: ignore[call-overload]
            await session.commit()


GONE = 410  # the receiver says the endpoint is gone: no more attempts (issue 44 point 5)


async def _disable(
    session: AsyncSession, endpoint_id: uuid.UUID, reason: str, *conditions: Any
) -> None:
    """The endpoint is disabled (if it is enabled, and `conditions` hold), for `reason`."""
    await session.exec(  # type: ignore[call-overload]
        update(WebhookEndpoint)
        .where(
            col(WebhookEndpoint.id) == endpoint_id,
            col(WebhookEndpoint.status) == EndpointStatus.ENABLED.value,
            *conditions,
        )
        .values(
            status=EndpointStatus.DISABLED.value,
            disabled_reason=reason[:1024],
            updated_at=utcnow(),
        )
    )


async def _disable_unless_recovered(session: AsyncSession, claim: Claimed, error: str) -> None:
    """Every attempt at this delivery failed: its endpoint is disabled, unless a delivery to
    it has succeeded since this one's event."""
    recovered = exists().where(
        col(WebhookDelivery.endpoint_id) == claim.endpoint_id,
        col(WebhookDelivery.delivered_at) > claim.event_created_at,
    )
    reason = f"Every attempt at a delivery failed ({claim.attempts}); the last: {error}"
    await _disable(session, claim.endpoint_id, reason, ~recovered)


def _ids(claim: Claimed) -> dict[str, str]:
    return {"delivery_id": str(claim.delivery_id), "webhook_id": claim.message_id}
