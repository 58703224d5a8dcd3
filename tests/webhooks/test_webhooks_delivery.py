"""Delivery under failure (issue 30): a worker killed mid-delivery, the database's
connections cut, an address refused at the moment of delivery, the backoff schedule."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from types import SimpleNamespace

import psycopg
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import insert

from strongroom.db.types import utcnow
from strongroom.outbox.dispatch import Claimed, Dispatcher, lease, next_wait
from strongroom.outbox.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from tests.documents import make_pdf
from tests.webhooks.conftest import Hooks
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_webhooks_api import CONTRACT, endpoint_for, until_delivery

ON_POSTGRESQL = pytest.mark.parametrize("hooks", ["postgresql"], indirect=True)


@ON_POSTGRESQL
async def test_a_worker_killed_mid_delivery_leaves_it_to_be_sent_again_with_the_same_id(
    hooks: Hooks,
):
    assert hooks.worker is not None
    vault = await hooks.vault()
    with Receiver() as receiver:
        receiver.hold = held = threading.Event()  # the first request is never answered
        endpoint = await endpoint_for(vault, receiver, ["document.ready"])
        await vault.ingested(make_pdf(CONTRACT), "contract.pdf", await vault.create_project())
        await receiver.until(1)
        await hooks.worker.kill_and_restart()  # SIGKILL while the request is open
        receiver.hold = None
        held.set()
        # The claim runs out (its lease), and the new worker sends it again.
        await receiver.until(2, lease(hooks.settings).total_seconds() + 30)
        delivered = await until_delivery(vault, endpoint["id"], lambda d: d["delivered_at"])
    first, second = receiver.received[:2]
    assert first.webhook_id == second.webhook_id
    assert first.body == second.body
    assert delivered["status"] == "succeeded"
    assert delivered["attempts"] == 2


@ON_POSTGRESQL
async def test_an_event_outlives_the_databases_connections_being_cut(hooks: Hooks):
    """What a PostgreSQL restart does to the processes: every connection they hold is cut.
    The event, committed with the document's status, is delivered all the same."""
    vault = await hooks.vault()
    receiver = Receiver()  # down: the delivery waits for it
    endpoint = await endpoint_for(vault, receiver, ["document.ready"])
    await vault.ingested(make_pdf(CONTRACT), "contract.pdf", await vault.create_project())
    await until_delivery(vault, endpoint["id"], lambda d: d["attempts"] >= 1)
    url = hooks.settings.resolved_database_url.replace("postgresql+psycopg", "postgresql")
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        cut = await connection.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        assert (await cut.fetchone())[0] >= 1
    with receiver:
        (item,) = await receiver.until(1, 60)
        delivered = await until_delivery(vault, endpoint["id"], lambda d: d["delivered_at"], 60)
    assert delivered["event_id"] == item.webhook_id


async def test_an_address_that_turned_private_is_refused_at_delivery(hooks: Hooks):
    """DNS can change after creation: the dispatcher checks each attempt's address again, and
    never connects to one that is not public."""
    vault = await hooks.vault()
    with Receiver() as receiver:
        endpoint = await endpoint_for(vault, receiver, ["document.ready"])
        delivery_id = await _delivery_not_yet_due(hooks, endpoint["id"])
        strict = hooks.settings.model_copy(
            update={"webhooks_allow_private_urls": False, "webhooks_first_retry_seconds": 3600}
        )
        dispatcher = Dispatcher(
            SimpleNamespace(
                settings=strict,
                sessions=hooks.runtime.sessions,
                read_engine=hooks.runtime.read_engine,
            )
        )
        before = _counted("retrying")
        try:
            outcome = await dispatcher.attempt(
                Claimed(
                    delivery_id=delivery_id,
                    endpoint_id=uuid.UUID(endpoint["id"]),
                    tenant_id=uuid.uuid4(),
                    attempts=1,
                    url=receiver.url,
                    secrets=(endpoint["secret"],),
                    message_id="msg_" + uuid.uuid4().hex,
                    body=b"{}",
                    event_created_at=utcnow(),
                )
            )
        finally:
            await dispatcher.sender.aclose()
    assert not outcome.succeeded
    assert "127.0.0.1" in outcome.error
    assert receiver.received == []
    async with hooks.runtime.sessions() as session:
        row = await session.get(WebhookDelivery, delivery_id)
    assert row.status == "pending"
    assert row.last_error == outcome.error
    assert row.next_attempt_at > utcnow() + timedelta(minutes=30)  # tried again later
    assert _counted("retrying") == before + 1


async def _delivery_not_yet_due(hooks: Hooks, endpoint_id: str) -> uuid.UUID:
    """A delivery row the deployment's dispatcher leaves alone (due in an hour)."""
    async with hooks.runtime.sessions() as session:
        endpoint = await session.get(WebhookEndpoint, uuid.UUID(endpoint_id))
        tenant_id, environment = endpoint.tenant_id, endpoint.environment
        event_id, delivery_id = uuid.uuid4(), uuid.uuid4()
        scope = {"tenant_id": tenant_id, "environment": environment}
        connection = await session.connection()
        await connection.execute(
            insert(WebhookEvent).values(id=event_id, type="document.ready", body="{}", **scope)
        )
        await connection.execute(
            insert(WebhookDelivery).values(
                id=delivery_id,
                event_id=event_id,
                endpoint_id=endpoint.id,
                event_type="document.ready",
                status="pending",
                attempts=1,
                next_attempt_at=utcnow() + timedelta(hours=1),
                **scope,
            )
        )
        await session.commit()
    return delivery_id


def _counted(outcome: str) -> float:
    sample = REGISTRY.get_sample_value("strongroom_webhook_deliveries_total", {"outcome": outcome})
    return sample or 0.0


def test_the_backoff_grows_threefold_to_twelve_hours_over_about_three_days(settings):
    defaults = settings.model_copy(
        update={"webhooks_first_retry_seconds": 5.0, "webhooks_max_attempts": 15}
    )
    waits = [next_wait(defaults, attempt) for attempt in range(1, 15)]
    assert timedelta(seconds=4) <= waits[0] <= timedelta(seconds=6)
    assert max(waits) <= timedelta(hours=12) * 1.2
    total = sum(waits, timedelta())
    assert timedelta(days=2.4) <= total <= timedelta(days=3.7)
