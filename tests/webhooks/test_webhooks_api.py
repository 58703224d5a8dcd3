"""Webhooks (issue 30) through the API, delivered to real receivers on 127.0.0.1 by the
deployment's own dispatcher (a `strongroom worker` on PostgreSQL, the app on SQLite)."""

from __future__ import annotations

import asyncio
import json

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from strongroom.jobs.runner import JobFailed
from strongroom.tenants.partition import Environment
from strongroom.workflows.catalogue import Step
from tests.documents import make_docx_template, make_pdf
from tests.vault.conftest import JOB_DEADLINE, Vault
from tests.webhooks.conftest import ALL_EVENTS, Hooks, create_endpoint
from tests.webhooks.receiver import Received, Receiver
from tests.workflows.registered import register

BROKEN_PDF = b"%PDF-1.7\n" + b"\x00junk" * 100
CONTRACT = ["1. Governing law. This Agreement is governed by the laws of England and Wales."]
FAILING = "wf_fails_for_webhook_tests"


async def endpoint_for(vault: Vault, receiver: Receiver, events: list[str] | None = None) -> dict:
    response = await create_endpoint(vault, receiver.url, events)
    assert response.status_code == 201, await response.get_json()
    return await response.get_json()


def payload(received: Received) -> dict:
    return json.loads(received.body)


async def deliveries(vault: Vault, endpoint_id: str) -> list[dict]:
    page = await vault.get(f"/api/v2/webhooks/endpoints/{endpoint_id}/deliveries")
    return page["data"]


async def until_delivery(vault: Vault, endpoint_id: str, check, seconds: float = 30) -> dict:
    """The endpoint's newest delivery once `check` holds of it."""
    async with asyncio.timeout(seconds):
        while True:
            listed = await deliveries(vault, endpoint_id)
            if listed and check(listed[0]):
                return listed[0]
            await asyncio.sleep(0.1)


@pytest.fixture
def failing_workflow(monkeypatch):
    """A workflow whose run fails in its step. (On PostgreSQL the worker process does not know
    it, and fails the run as `not_found`: a failed run either way.)"""

    async def fail(context) -> None:
        raise JobFailed("validation_error", "This workflow always fails.")

    workflow = register(monkeypatch, FAILING, Step("fail", fail), name="Always fails")
    return workflow


async def test_each_event_is_delivered_signed_with_the_resource_as_its_get_answers_it(
    hooks: Hooks, failing_workflow
):
    vault = await hooks.vault()
    with Receiver() as receiver:
        endpoint = await endpoint_for(vault, receiver)
        assert endpoint["secret"].startswith("whsec_")
        project_id = await vault.create_project()
        ready = await vault.ingested(make_pdf(CONTRACT), "contract.pdf", project_id)
        failed = await vault.ingested(BROKEN_PDF, "broken.pdf", project_id)
        assert (ready["status"], failed["status"]) == ("ready", "failed")
        fills = []
        for template in (["Law: {{ law | the governing law }}"], ["Nothing to fill."]):
            response = await vault.post_form(
                "/api/v2/templates/fill",
                make_docx_template(template),
                "t.docx",
                project_id=project_id,
            )
            assert response.status_code == 202, await response.get_json()
            job_id = (await response.get_json())["job_id"]
            fills.append(await vault.until_finished(f"/api/v2/templates/fill/{job_id}"))
        assert [fill["status"] for fill in fills] == ["succeeded", "failed"]
        runs = []
        for workflow_id in ("wf_summarise_documents", FAILING):
            response = await vault.client.post(
                f"/api/v2/workflows/{workflow_id}/runs",
                json={"project_id": project_id},
                headers=vault.headers,
            )
            assert response.status_code == 202, await response.get_json()
            run_id = (await response.get_json())["run_id"]
            runs.append(await vault.until_finished(f"/api/v2/workflows/runs/{run_id}"))
        assert [run["status"] for run in runs] == ["succeeded", "failed"]

        received = await receiver.until(6, JOB_DEADLINE)
    events = {payload(item)["type"]: item for item in received}
    assert sorted(events) == sorted(ALL_EVENTS)
    expected = {
        "document.ready": f"/api/v2/vault/documents/{ready['id']}",
        "document.failed": f"/api/v2/vault/documents/{failed['id']}",
        "template_fill.succeeded": f"/api/v2/templates/fill/{fills[0]['job_id']}",
        "template_fill.failed": f"/api/v2/templates/fill/{fills[1]['job_id']}",
        "workflow_run.succeeded": f"/api/v2/workflows/runs/{runs[0]['run_id']}",
        "workflow_run.failed": f"/api/v2/workflows/runs/{runs[1]['run_id']}",
    }
    verifier = Webhook(endpoint["secret"])
    for event_type, item in events.items():
        verified = verifier.verify(item.body, item.headers)
        assert verified["type"] == event_type
        assert verified["data"] == await vault.get(expected[event_type]), event_type
        assert item.webhook_id.startswith("msg_")
        assert item.headers["content-type"] == "application/json"
    assert len({item.webhook_id for item in received}) == 6
    listed = await deliveries(vault, endpoint["id"])
    assert {delivery["status"] for delivery in listed} == {"succeeded"}
    assert {delivery["event_id"] for delivery in listed} == {item.webhook_id for item in received}


async def test_a_tampered_body_or_another_secret_does_not_verify(hooks: Hooks):
    vault = await hooks.vault()
    with Receiver() as receiver:
        endpoint = await endpoint_for(vault, receiver, ["document.ready"])
        other = await endpoint_for(vault, receiver, ["document.failed"])
        await vault.ingested(make_pdf(CONTRACT), "contract.pdf", await vault.create_project())
        (item,) = await receiver.until(1)
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint["secret"]).verify(item.body.replace(b"ready", b"read_"), item.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(other["secret"]).verify(item.body, item.headers)


async def test_only_subscribed_types_are_sent(hooks: Hooks):
    vault = await hooks.vault()
    with Receiver() as failures, Receiver() as readies:
        await endpoint_for(vault, failures, ["document.failed"])
        await endpoint_for(vault, readies, ["document.ready"])
        project_id = await vault.create_project()
        await vault.ingested(make_pdf(CONTRACT), "contract.pdf", project_id)
        await vault.ingested(BROKEN_PDF, "broken.pdf", project_id)
        (failure,) = await failures.until(1)
        (ready,) = await readies.until(1)
        await asyncio.sleep(0.5)  # nothing else comes
    assert payload(failure)["type"] == "document.failed"
    assert payload(ready)["type"] == "document.ready"
    assert (len(failures.received), len(readies.received)) == (1, 1)


async def test_a_receiver_that_is_down_gets_the_event_when_it_comes_back(hooks: Hooks):
    vault = await hooks.vault()
    receiver = Receiver()  # nothing listens on its port yet
    endpoint = await endpoint_for(vault, receiver, ["document.ready"])
    await vault.ingested(make_pdf(CONTRACT), "contract.pdf", await vault.create_project())
    # A claim counts its attempt before making it: wait for the attempt's outcome.
    refused = await until_delivery(vault, endpoint["id"], lambda d: d["last_error"])
    assert refused["attempts"] >= 1
    assert refused["status"] == "pending"
    assert refused["next_attempt_at"] is not None
    with receiver:
        (item,) = await receiver.until(1)
        delivered = await until_delivery(vault, endpoint["id"], lambda d: d["delivered_at"])
    assert delivered["status"] == "succeeded"
    assert delivered["event_id"] == item.webhook_id
    assert delivered["last_status_code"] == 200
    assert delivered["attempts"] >= 2


async def test_an_endpoint_that_keeps_failing_is_disabled_then_enabled_and_retried(hooks: Hooks):
    vault = await hooks.vault()
    with Receiver(status=500) as receiver:
        endpoint = await endpoint_for(vault, receiver, ["document.ready"])
        await vault.ingested(make_pdf(CONTRACT), "contract.pdf", await vault.create_project())
        failed = await until_delivery(vault, endpoint["id"], lambda d: d["status"] == "failed")
        attempts = hooks.settings.webhooks_max_attempts
        assert failed["attempts"] == attempts
        assert failed["last_status_code"] == 500
        assert len(receiver.received) == attempts
        assert len({item.webhook_id for item in receiver.received}) == 1  # one event, resent
        shown = await vault.get(f"/api/v2/webhooks/endpoints/{endpoint['id']}")
        assert shown["status"] == "disabled"
        assert "500" in shown["disabled_reason"]

        receiver.status = 200
        path = f"/api/v2/webhooks/endpoints/{endpoint['id']}"
        response = await vault.client.patch(path, json={"status": "enabled"}, headers=vault.headers)
        assert response.status_code == 200
        assert (await response.get_json())["disabled_reason"] is None
        response = await vault.client.post(
            f"{path}/deliveries/{failed['id']}/retry", headers=vault.headers
        )
        assert response.status_code == 202, await response.get_json()
        assert (await response.get_json())["status"] == "pending"
        await receiver.until(attempts + 1)
        delivered = await until_delivery(vault, endpoint["id"], lambda d: d["delivered_at"])
    assert delivered["status"] == "succeeded"
    assert receiver.received[-1].webhook_id == receiver.received[0].webhook_id


async def test_a_rotated_secret_and_the_old_one_both_sign_for_a_day(hooks: Hooks):
    vault = await hooks.vault()
    with Receiver() as receiver:
        endpoint = await endpoint_for(vault, receiver, ["document.ready"])
        response = await vault.client.post(
            f"/api/v2/webhooks/endpoints/{endpoint['id']}/rotate-secret", headers=vault.headers
        )
        assert response.status_code == 200
        rotated = await response.get_json()
        assert rotated["secret"] != endpoint["secret"]
        assert rotated["secret"].startswith("whsec_")
        await vault.ingested(make_pdf(CONTRACT), "contract.pdf", await vault.create_project())
        (item,) = await receiver.until(1)
    assert len(item.headers["webhook-signature"].split(" ")) == 2
    for secret in (endpoint["secret"], rotated["secret"]):
        assert Webhook(secret).verify(item.body, item.headers)["type"] == "document.ready"


async def test_the_secret_is_shown_once_and_an_idempotent_retry_replays_it(hooks: Hooks):
    vault = await hooks.vault()
    headers = {**vault.headers, "Idempotency-Key": "create-hook-1"}
    body = {"url": "http://127.0.0.1:9/hooks", "events": ["document.ready"]}
    first = await vault.client.post("/api/v2/webhooks/endpoints", json=body, headers=headers)
    again = await vault.client.post("/api/v2/webhooks/endpoints", json=body, headers=headers)
    assert first.status_code == again.status_code == 201
    created = await first.get_json()
    assert await again.get_json() == created
    shown = await vault.get(f"/api/v2/webhooks/endpoints/{created['id']}")
    listed = await vault.get("/api/v2/webhooks/endpoints")
    assert "secret" not in shown
    assert [item["id"] for item in listed["data"]] == [created["id"]]
    assert "secret" not in listed["data"][0]
    assert created["secret"] not in json.dumps(listed) + json.dumps(shown)
    assert {key: shown[key] for key in ("url", "events", "status", "description")} == {
        "url": body["url"],
        "events": body["events"],
        "status": "enabled",
        "description": None,
    }


async def test_deleting_an_endpoint_is_204_and_stops_its_deliveries(hooks: Hooks):
    vault = await hooks.vault()
    with Receiver() as receiver:
        endpoint = await endpoint_for(vault, receiver, ["document.ready"])
        path = f"/api/v2/webhooks/endpoints/{endpoint['id']}"
        response = await vault.client.delete(path, headers=vault.headers)
        assert response.status_code == 204
        assert await response.get_data() == b""
        assert response.headers["X-RateLimit-Cost"] == "1"
        await vault.get(path, status=404)
        await vault.ingested(make_pdf(CONTRACT), "contract.pdf", await vault.create_project())
        await asyncio.sleep(0.5)
    assert receiver.received == []


async def test_another_tenants_or_environments_endpoints_are_404_and_get_nothing(hooks: Hooks):
    owner = await hooks.credential()
    vault = Vault(hooks.app.test_client(), owner.headers)
    stranger = await hooks.vault()
    live = Vault(
        hooks.app.test_client(),
        (await hooks.credential(tenant=owner.tenant, environment=Environment.LIVE)).headers,
    )
    with Receiver() as receiver:
        endpoint = await endpoint_for(vault, receiver, ["document.ready"])
        path = f"/api/v2/webhooks/endpoints/{endpoint['id']}"
        for other in (stranger, live):
            await other.get(path, status=404)
            await other.get(path + "/deliveries", status=404)
            assert (await other.get("/api/v2/webhooks/endpoints"))["data"] == []
            response = await other.client.delete(path, headers=other.headers)
            assert response.status_code == 404
            response = await other.client.patch(
                path, json={"description": "mine"}, headers=other.headers
            )
            assert response.status_code == 404
        await stranger.ingested(make_pdf(CONTRACT), "theirs.pdf", await stranger.create_project())
        mine = await vault.ingested(make_pdf(CONTRACT), "mine.pdf", await vault.create_project())
        (item,) = await receiver.until(1)
        await asyncio.sleep(0.5)
    assert len(receiver.received) == 1
    assert payload(item)["data"]["id"] == mine["id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/hook", "events": ["document.ready"]}, "url"),
        ({"url": "https://user:pw@example.com/", "events": ["document.ready"]}, "url"),
        ({"url": "https://93.184.216.34/hook", "events": []}, "events"),
        ({"url": "https://93.184.216.34/hook", "events": ["document.shredded"]}, "events.0"),
        (
            {"url": "https://93.184.216.34/hook", "events": ["document.ready"], "secret": "x"},
            "secret",
        ),
    ],
)
async def test_an_invalid_endpoint_is_422_naming_the_field(hooks: Hooks, body, field):
    vault = await hooks.vault()
    response = await vault.client.post(
        "/api/v2/webhooks/endpoints", json=body, headers=vault.headers
    )
    assert response.status_code == 422
    problem = await response.get_json()
    assert problem["code"] == "validation_error"
    assert [error["field"] for error in problem["errors"]] == [field]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.1/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
    ],
)
async def test_private_loopback_and_metadata_addresses_are_refused_at_creation(
    hooks: Hooks, monkeypatch, url
):
    monkeypatch.setattr(hooks.settings, "webhooks_allow_private_urls", False)
    vault = await hooks.vault()
    response = await vault.client.post(
        "/api/v2/webhooks/endpoints",
        json={"url": url, "events": ["document.ready"]},
        headers=vault.headers,
    )
    assert response.status_code == 422
    problem = await response.get_json()
    assert [error["field"] for error in problem["errors"]] == ["url"]


async def test_endpoints_per_tenant_and_environment_are_bounded(hooks: Hooks, monkeypatch):
    monkeypatch.setattr(hooks.settings, "webhooks_max_endpoints", 2)
    vault = await hooks.vault()
    statuses = [
        (await create_endpoint(vault, "https://93.184.216.34/hook", ["document.ready"])).status_code
        for _ in range(3)
    ]
    assert statuses == [201, 201, 422]


async def test_webhooks_need_their_scopes(hooks: Hooks):
    reader = await hooks.vault(scopes=["webhooks:read"])
    writer = await hooks.vault(scopes=["webhooks:write"])
    response = await create_endpoint(reader, "https://93.184.216.34/hook")
    assert response.status_code == 403
    assert (await response.get_json())["code"] == "insufficient_scope"
    assert (await create_endpoint(writer, "https://93.184.216.34/hook")).status_code == 201
    response = await writer.client.get("/api/v2/webhooks/endpoints", headers=writer.headers)
    assert response.status_code == 403
    assert (await reader.get("/api/v2/webhooks/endpoints"))["data"] == []


async def test_costs_are_two_for_create_and_rotate_one_for_the_rest(hooks: Hooks):
    vault = await hooks.vault()
    response = await create_endpoint(vault, "https://93.184.216.34/hook", ["document.ready"])
    assert response.headers["X-RateLimit-Cost"] == "2"
    path = f"/api/v2/webhooks/endpoints/{(await response.get_json())['id']}"
    calls = [
        ("get", path, 1),
        ("get", path + "/deliveries", 1),
        ("get", "/api/v2/webhooks/endpoints", 1),
        ("post", path + "/rotate-secret", 2),
        ("patch", path, 1),
    ]
    for method, target, cost in calls:
        options = {"json": {"description": "d"}} if method == "patch" else {}
        response = await getattr(vault.client, method)(target, headers=vault.headers, **options)
        assert response.status_code == 200, (target, await response.get_json())
        assert response.headers["X-RateLimit-Cost"] == str(cost), target


async def test_a_receiver_that_answers_410_gone_disables_its_endpoint_at_once(hooks: Hooks):
    """Issue 44: a 410 was retried like a 500; Standard Webhooks says the endpoint is gone."""
    vault = await hooks.vault()
    with Receiver(status=410) as receiver:
        endpoint = await endpoint_for(vault, receiver, ["document.ready"])
        await vault.ingested(make_pdf(CONTRACT), "contract.pdf", await vault.create_project())
        failed = await until_delivery(vault, endpoint["id"], lambda d: d["status"] == "failed")
        assert failed["attempts"] == 1 and failed["last_status_code"] == 410
        assert len(receiver.received) == 1
        shown = await vault.get(f"/api/v2/webhooks/endpoints/{endpoint['id']}")
        assert shown["status"] == "disabled"
        assert "410" in shown["disabled_reason"]
