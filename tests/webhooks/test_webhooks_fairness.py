"""Fairness of delivery (issue 44): one tenant's endpoints that hang hold only that tenant's
share of a process's delivery slots, and an endpoint holds at most its own limit, so another
tenant's delivery goes out while they hang.

The deployments here wait 30 s for an answer: the endpoints that hang hold their slots for
the whole of a test, whatever the machine's load, so the tests count requests and their order
and never measure time."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert
from sqlmodel import col, select

from strongroom.db.types import utcnow
from strongroom.jobs.fairness import tenant_share
from strongroom.outbox.dispatch import Dispatcher
from strongroom.outbox.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from strongroom.outbox.record import wake_after_commit
from strongroom.outbox.signing import SecretBox, new_secret
from strongroom.runtime import Runtime
from tests.conftest import (
    REDIS_URL,
    issue_credential,
    make_settings,
    migrated,
    own_postgres_database,
)
from tests.documents import make_pdf
from tests.vault.conftest import JOB_DEADLINE, Vault
from tests.webhooks.conftest import WEBHOOK_SETTINGS, Hooks, create_endpoint, deployed
from tests.webhooks.receiver import Hanging, Receiver
from tests.webhooks.test_webhooks_api import CONTRACT, endpoint_for

FAIR_SETTINGS: dict[str, Any] = WEBHOOK_SETTINGS | {
    "webhooks_timeout_seconds": 30.0,  # an attempt at an endpoint that hangs outlasts a test
    "webhooks_concurrency": 4,
    "webhooks_slots_kept_for_other_tenants": 1,  # a tenant holds 3 of the 4
    "webhooks_endpoint_concurrency": 2,
}
SHARE = tenant_share(
    FAIR_SETTINGS["webhooks_concurrency"], FAIR_SETTINGS["webhooks_slots_kept_for_other_tenants"]
)
PER_ENDPOINT = FAIR_SETTINGS["webhooks_endpoint_concurrency"]


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
async def fair(request, tmp_path_factory, redis_prefix) -> AsyncIterator[Hooks]:
    async with deployed(request.param, tmp_path_factory, redis_prefix, FAIR_SETTINGS) as hooks:
        yield hooks


async def test_a_tenant_whose_endpoints_hang_holds_only_its_share_and_another_tenant_goes_first(
    fair: Hooks,
):
    """The issue's measurement, counted: tenant A's 20 endpoints never answer and each has
    due deliveries; tenant B's document's event is delivered while A's first attempts are
    still hanging, before any later attempt of A's, and A never has more than its share of
    the slots."""
    a = await fair.vault()
    async with Hanging() as hanging:
        endpoints = [await _hanging_endpoint(a, hanging, f"a/{n}") for n in range(20)]
        await due_now(fair.runtime, [endpoint["id"] for endpoint in endpoints], events=2)
        await hanging.until_open("a/", SHARE)  # A holds what it may

        b = await fair.vault()
        with Receiver() as receiver:
            await endpoint_for(b, receiver, ["document.ready"])
            await b.ingested(make_pdf(CONTRACT), "contract.pdf", await b.create_project())
            (delivered,) = await receiver.until(1, JOB_DEADLINE)

        # B's went out while A's first attempts hang (none has ended and been followed by
        # another: their timeout is 30 s); A took no more than its share, though 40 of its
        # deliveries were due before B's.
        assert json.loads(delivered.body)["type"] == "document.ready"
        assert len(hanging.arrived) == SHARE
        assert hanging.open_under("a/") == SHARE
        assert sum(hanging.most_open.values()) == SHARE
        assert max(hanging.most_open.values()) <= PER_ENDPOINT
        await _delete(a, endpoints)


async def test_an_endpoint_never_has_more_deliveries_in_flight_than_its_limit(fair: Hooks):
    """One endpoint that hangs with five deliveries due holds `webhooks_endpoint_concurrency`
    slots, though its tenant's share is larger: a delivery to the tenant's other endpoint,
    due after all five, goes out while the two hang, and no third is sent to it."""
    c = await fair.vault()
    async with Hanging() as hanging:
        stuck = await _hanging_endpoint(c, hanging, "c")
        await due_now(fair.runtime, [stuck["id"]], events=5)
        await hanging.until_open("c", PER_ENDPOINT)
        with Receiver() as receiver:
            working = await endpoint_for(c, receiver)
            await due_now(fair.runtime, [working["id"]])
            await receiver.until(1, JOB_DEADLINE)
        assert PER_ENDPOINT < SHARE
        assert hanging.arrived == ["c"] * PER_ENDPOINT
        assert hanging.most_open["c"] == PER_ENDPOINT
        await _delete(c, [stuck, working])


async def _hanging_endpoint(vault: Vault, hanging: Hanging, path: str) -> dict:
    response = await create_endpoint(vault, hanging.url(path), ["document.ready"])
    assert response.status_code == 201, await response.get_json()
    return await response.get_json()


async def _delete(vault: Vault, endpoints: list[dict]) -> None:
    """Their deliveries go with them: nothing is left to retry in the module's deployment."""
    for endpoint in endpoints:
        response = await vault.client.delete(
            f"/api/v2/webhooks/endpoints/{endpoint['id']}", headers=vault.headers
        )
        assert response.status_code == 204


async def due_now(runtime: Runtime, endpoint_ids: list[str], events: int = 1) -> None:
    """`events` events recorded now for each endpoint's tenant, with one delivery each to its
    endpoint, due at once (what the outbox records); wakes this process's dispatcher."""
    async with runtime.sessions() as session:
        ids = [uuid.UUID(endpoint_id) for endpoint_id in endpoint_ids]
        rows = await session.exec(select(WebhookEndpoint).where(col(WebhookEndpoint.id).in_(ids)))
        endpoints = sorted(rows.all(), key=lambda endpoint: ids.index(endpoint.id))
        connection = await session.connection()
        for n in range(events):
            for endpoint in endpoints:
                await _record(connection, endpoint, utcnow(), f"event {n}")
        wake_after_commit(session)
        await session.commit()


async def _record(connection, endpoint: WebhookEndpoint, due, text: str) -> uuid.UUID:
    """One event and its delivery to `endpoint`, due at `due`; the delivery's id."""
    event_id, delivery_id = uuid.uuid4(), uuid.uuid4()
    scope = {"tenant_id": endpoint.tenant_id, "environment": endpoint.environment}
    body = json.dumps({"type": "document.ready", "data": {"text": text}})
    await connection.execute(
        insert(WebhookEvent).values(id=event_id, type="document.ready", body=body, **scope)
    )
    await connection.execute(
        insert(WebhookDelivery).values(
            id=delivery_id,
            event_id=event_id,
            endpoint_id=endpoint.id,
            event_type="document.ready",
            status="pending",
            attempts=0,
            next_attempt_at=due,
            created_at=due,
            **scope,
        )
    )
    return delivery_id


# The claim itself, on a database no dispatcher runs on.


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
async def quiet(request, tmp_path_factory, redis_prefix) -> AsyncIterator[Runtime]:
    """A runtime on a database of its own, not started: no dispatcher claims its rows."""
    data_dir: Path = tmp_path_factory.mktemp(f"quiet-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{data_dir / 'strongroom.db'}"
        runtime = Runtime.create(await migrated(make_settings(url, data_dir, **FAIR_SETTINGS)))
        yield runtime
        await runtime.close()
        return
    async with own_postgres_database() as url:
        settings = make_settings(
            url, data_dir, redis_url=REDIS_URL, redis_prefix=redis_prefix, **FAIR_SETTINGS
        )
        runtime = Runtime.create(await migrated(settings))
        yield runtime
        await runtime.close()


async def test_a_claim_takes_each_tenants_first_delivery_before_any_tenants_second(
    quiet: Runtime,
):
    """A's nine deliveries (three endpoints) are due before B's one and C's two: a claim of
    three takes one of each tenant's, and a claim after it takes no endpoint past its limit."""
    now = utcnow()
    a, b, c = [(await issue_credential(quiet)).tenant.id for _ in range(3)]
    endpoints = {
        "a1": await _endpoint(quiet, a),
        "a2": await _endpoint(quiet, a),
        "a3": await _endpoint(quiet, a),
        "b": await _endpoint(quiet, b),
        "c": await _endpoint(quiet, c),
    }
    async with quiet.sessions() as session:
        connection = await session.connection()
        minutes = iter(range(100))
        for name in ("a1", "a2", "a3") * 3 + ("b", "c", "c"):
            due = now - timedelta(minutes=60) + timedelta(minutes=next(minutes))
            await _record(connection, endpoints[name], due, name)
        await session.commit()

    dispatcher = Dispatcher(quiet)
    try:
        first = await dispatcher.claim(3)
        assert sorted(claim.tenant_id for claim in first) == sorted([a, b, c])
        assert {claim.endpoint_id for claim in first} == {
            endpoints["a1"].id,
            endpoints["b"].id,
            endpoints["c"].id,
        }
        await dispatcher.claim(10)
    finally:
        await dispatcher.sender.aclose()
    in_flight = await _claimed_per_endpoint(quiet)
    assert max(in_flight.values()) == PER_ENDPOINT
    assert in_flight[endpoints["a1"].id] == PER_ENDPOINT  # three due, one left for later


async def _endpoint(runtime: Runtime, tenant_id: uuid.UUID) -> WebhookEndpoint:
    box = SecretBox(runtime.settings.secret("secret_key"))
    endpoint = WebhookEndpoint(
        tenant_id=tenant_id,
        environment="test",
        url="http://127.0.0.1:9/hooks",
        events=["document.ready"],
        secret_sealed=box.seal(new_secret()),
    )
    async with runtime.sessions() as session:
        session.add(endpoint)
        await session.commit()
        await session.refresh(endpoint)
    return endpoint


async def _claimed_per_endpoint(runtime: Runtime) -> Counter[uuid.UUID]:
    async with runtime.sessions() as session:
        rows = await session.exec(
            select(WebhookDelivery.endpoint_id).where(
                col(WebhookDelivery.claimed_until).is_not(None)
            )
        )
        return Counter(rows.all())
