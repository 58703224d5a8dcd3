"""Spec 3 (the idempotency state table) and 4.1 (rules 1-10), D23-D28, on Redis and on the
embedded default's in-process store."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from strongroom.api import request_path
from strongroom.app import create_app
from strongroom.tenants.models import RateLimitTier
from tests.conftest import issue_credential

PROJECTS = "/api/v2/vault/projects"
BODY = {"name": "Harbour Tower", "project_type": "commercial"}


def with_key(credential, key: str) -> dict[str, str]:
    return {**credential.headers, "Idempotency-Key": key}


async def project_count(client, credential) -> int:
    body = await (await client.get(PROJECTS, headers=credential.headers)).get_json()
    return len(body["data"])


# Spec 3, row "unseen -> in progress -> cached", and 4.1 rules 3 and 10 (D26).
async def test_replay_returns_the_original_response_and_does_not_run_again(client, credential):
    key = str(uuid.uuid4())
    first = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    second = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    assert first.status_code == second.status_code == 201
    assert await second.get_data() == await first.get_data()
    assert second.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert second.headers["X-Request-Id"] == first.headers["X-Request-Id"]
    assert second.headers["Content-Type"] == first.headers["Content-Type"]
    assert await project_count(client, credential) == 1


def headers_but_date(response) -> dict[str, str]:
    return {name.lower(): value for name, value in response.headers.items() if name != "Date"}


# 4.1 rule 3, D26: status, headers and body unchanged (only Date may differ), X-RateLimit-*
# included: the replay does not describe the bucket after itself (issue 19).
async def test_replay_returns_the_original_headers_unchanged_rate_limit_included(
    client, credential
):
    key = str(uuid.uuid4())
    first = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    between = await client.get(PROJECTS, headers=credential.headers)  # the bucket moves on
    replay = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    assert first.status_code == replay.status_code == 201
    assert between.headers["X-RateLimit-Remaining"] != first.headers["X-RateLimit-Remaining"]
    assert "X-RateLimit-Remaining" in first.headers and "X-RateLimit-Reset" in first.headers
    replayed = headers_but_date(replay)
    assert replayed.pop("idempotent-replayed") == "true"
    assert replayed == headers_but_date(first)
    assert await replay.get_data() == await first.get_data()


# 4.1 rule 4, D24.
async def test_same_key_with_a_different_body_is_idempotency_key_reused(client, credential):
    key = str(uuid.uuid4())
    await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    response = await client.post(
        PROJECTS, headers=with_key(credential, key), json={**BODY, "name": "Other"}
    )
    assert response.status_code == 422
    assert (await response.get_json())["code"] == "idempotency_key_reused"
    assert await project_count(client, credential) == 1


async def test_body_is_compared_in_canonical_form(client, credential):
    key = str(uuid.uuid4())
    headers = {**with_key(credential, key), "Content-Type": "application/json"}
    await client.post(PROJECTS, headers=headers, data=json.dumps(BODY))
    reordered = '{ "project_type" : "commercial",\n "name": "Harbour Tower" }'
    response = await client.post(PROJECTS, headers=headers, data=reordered)
    assert response.headers["Idempotent-Replayed"] == "true"


# Spec 3, row "in progress + same key", 4.1 rule 5.
async def test_request_while_in_progress_is_409_with_retry_after_5(
    probe_client, probes, credential
):
    headers = with_key(credential, str(uuid.uuid4()))
    first = asyncio.create_task(probe_client.post("/api/v2/test/slow", headers=headers))
    await asyncio.wait_for(probes.started.wait(), 5)
    second = await probe_client.post("/api/v2/test/slow", headers=headers)
    assert second.status_code == 409
    assert second.headers["Retry-After"] == "5"
    assert (await second.get_json())["code"] == "idempotency_in_progress"
    probes.release.set()
    assert (await first).status_code == 201
    third = await probe_client.post("/api/v2/test/slow", headers=headers)
    assert third.headers["Idempotent-Replayed"] == "true"
    assert probes.executions["slow"] == 1


# 4.1 rule 6, D25: 4xx are not cached and release the lock at once.
async def test_4xx_is_not_cached_and_a_retry_executes(client, credential):
    key = str(uuid.uuid4())
    bad = await client.post(PROJECTS, headers=with_key(credential, key), json={"name": ""})
    assert bad.status_code == 422
    good = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    assert good.status_code == 201
    assert "Idempotent-Replayed" not in good.headers


# 4.1 rule 6: 5xx are not cached; the handler's writes are rolled back.
async def test_5xx_is_not_cached_and_a_retry_executes_again(probe_client, probes, credential):
    headers = with_key(credential, str(uuid.uuid4()))
    for attempt in (1, 2):
        response = await probe_client.post("/api/v2/test/crash", headers=headers)
        assert response.status_code == 500
        assert probes.executions["crash"] == attempt
    listed = await (await probe_client.get(PROJECTS, headers=credential.headers)).get_json()
    assert listed["data"] == []


# Spec 3, row "handler dies without caching -> lock TTL elapses -> unseen".
async def test_lock_of_a_dead_request_expires_and_the_key_becomes_retryable(settings, credential):
    app = create_app(settings.model_copy(update={"idempotency_lock_seconds": 0.5}))
    async with app.test_app():
        runtime = app.extensions["strongroom"]
        key = str(uuid.uuid4())
        body = json.dumps(BODY).encode()
        # A process that took the lock and died before answering:
        await runtime.idempotency.begin(
            namespace=f"key:{credential.api_key.id}", method="POST", path=PROJECTS,
            header=key, body=body, mimetype="application/json",
        )  # fmt: skip
        client = app.test_client()
        blocked = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
        assert blocked.status_code == 409
        await asyncio.sleep(0.7)
        retried = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
        assert retried.status_code == 201
        assert "Idempotent-Replayed" not in retried.headers


# 4.1 rule 7, D27.
async def test_each_api_key_has_its_own_namespace(client, make_credential):
    first = await make_credential()
    second = await make_credential(tenant=first.tenant, email="other@example.com")
    key = str(uuid.uuid4())
    for credential in (first, second):
        response = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
        assert response.status_code == 201
        assert "Idempotent-Replayed" not in response.headers
    assert await project_count(client, first) == 2


async def test_the_same_key_on_another_path_is_another_entry(probe_client, credential):
    key = str(uuid.uuid4())
    await probe_client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    response = await probe_client.post(
        "/api/v2/test/echo", headers=with_key(credential, key), json={"data": "x"}
    )
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response.headers


# 4.1 rule 8.
async def test_bodies_over_64_kib_bypass_idempotency(probe_client, probes, credential):
    headers = with_key(credential, str(uuid.uuid4()))
    big = {"data": "x" * (64 * 1024)}
    for _ in range(2):
        response = await probe_client.post("/api/v2/test/echo", headers=headers, json=big)
        assert response.status_code == 201
        assert "Idempotent-Replayed" not in response.headers
    assert probes.executions["echo"] == 2


async def test_bodies_just_under_64_kib_are_idempotent(probe_client, probes, credential):
    headers = with_key(credential, str(uuid.uuid4()))
    body = {"data": "x" * (64 * 1024 - 20)}
    for _ in range(2):
        await probe_client.post("/api/v2/test/echo", headers=headers, json=body)
    assert probes.executions["echo"] == 1


# 4.1 rule 2.
async def test_get_ignores_the_header_entirely(client, credential):
    headers = with_key(credential, "x" * 300)  # invalid, yet ignored
    first = await client.get(PROJECTS, headers=headers)
    second = await client.get(PROJECTS, headers=headers)
    assert first.status_code == second.status_code == 200
    assert "Idempotent-Replayed" not in second.headers
    assert first.headers["X-Request-Id"] != second.headers["X-Request-Id"]


# 4.1 rule 1, D23.
@pytest.mark.parametrize("key", ["x" * 255, "a", "!~", "abc-DEF_123.:/"])
async def test_valid_keys_are_accepted(client, credential, key):
    response = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    assert response.status_code == 201


@pytest.mark.parametrize(
    "key", ["x" * 256, "", "has space", "tab\there", "bell\x07", "caf\u00e9", '""', '"a b"']
)
async def test_invalid_keys_are_invalid_idempotency_key(client, credential, key):
    response = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
    assert response.status_code == 422
    assert (await response.get_json())["code"] == "invalid_idempotency_key"
    assert await project_count(client, credential) == 0


async def test_quoted_key_is_the_same_key_unquoted(client, credential):
    await client.post(PROJECTS, headers=with_key(credential, "abc123"), json=BODY)
    response = await client.post(PROJECTS, headers=with_key(credential, '"abc123"'), json=BODY)
    assert response.headers["Idempotent-Replayed"] == "true"


# Issue 3: concurrent duplicates.
async def test_fifty_simultaneous_duplicates_create_exactly_one_project(client, make_credential):
    credential = await make_credential(tier=RateLimitTier.ENTERPRISE)
    headers = with_key(credential, str(uuid.uuid4()))
    responses = await asyncio.gather(
        *(client.post(PROJECTS, headers=headers, json=BODY) for _ in range(50))
    )
    executed = [
        r for r in responses if r.status_code == 201 and "Idempotent-Replayed" not in r.headers
    ]
    others = {(r.status_code, r.headers.get("Idempotent-Replayed")) for r in responses} - {
        (201, None)
    }
    assert len(executed) == 1
    assert others <= {(409, None), (201, "true")}
    assert await project_count(client, credential) == 1


async def test_records_live_24_hours_and_locks_60_seconds_in_redis(postgres_settings, probes):
    app = create_app(postgres_settings)
    request_path.install(app, probes.routes)
    async with app.test_app():
        runtime = app.extensions["strongroom"]
        credential = await issue_credential(runtime)
        client = app.test_client()
        prefix = f"{runtime.settings.redis_prefix}idem:key:{credential.api_key.id}:POST:"
        task = asyncio.create_task(
            client.post("/api/v2/test/slow", headers=with_key(credential, "ttl"))
        )
        await probes.started.wait()
        [lock_key] = [key async for key in runtime.redis.scan_iter(match=f"{prefix}*")]
        assert 50_000 < await runtime.redis.pttl(lock_key) <= 60_000
        probes.release.set()
        assert (await task).status_code == 201
        assert 24 * 3600_000 - 5_000 < await runtime.redis.pttl(lock_key) <= 24 * 3600_000
