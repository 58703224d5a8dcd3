"""Inputs and races found in review: each once produced a 500, an overspend, a leak or a
missing header."""

from __future__ import annotations

import asyncio
import logging

import pytest

from strongroom.auth.keys import generate_key
from strongroom.idempotency.durable import DurableRecords
from strongroom.idempotency.guard import IdempotencyGuard
from strongroom.idempotency.store import MemoryIdempotencyStore
from strongroom.problems import Problem
from strongroom.tenants.partition import Environment
from strongroom.unavailable import StoreUnavailable

ME = "/api/v2/me"
PROJECTS = "/api/v2/vault/projects"
BODY = {"name": "Harbour Tower", "project_type": "commercial"}


# D21: the debit is guarded in the UPDATE, so a stale (cached) balance cannot be overspent.
async def test_concurrent_live_calls_cannot_overspend_the_balance(client, runtime, make_credential):
    credential = await make_credential(environment=Environment.LIVE, credits=3)
    responses = await asyncio.gather(
        *(client.post(PROJECTS, headers=credential.headers, json=BODY) for _ in range(20))
    )
    created = [r for r in responses if r.status_code == 201]
    refused = [r for r in responses if r.status_code == 401]
    assert len(created) == 2  # 3 -> 1 -> -1: the last call may take it below zero once
    assert len(created) + len(refused) == 20
    assert {(await r.get_json())["code"] for r in refused} <= {"payment_required"}
    assert all('error_description="payment_required"' in r.headers["WWW-Authenticate"]
               for r in refused)  # fmt: skip
    listed = await (await client.get(PROJECTS, headers=credential.headers)).get_json()
    assert listed["code"] == "payment_required"  # and nothing more runs


async def test_deeply_nested_json_is_validation_error_not_500(client, credential):
    nested = "[" * 100_000 + "]" * 100_000
    headers = {**credential.headers, "Content-Type": "application/json"}
    response = await client.post(PROJECTS, headers=headers, data=nested)
    assert response.status_code == 422
    assert (await response.get_json())["code"] == "validation_error"
    assert (await client.get(ME, headers=headers, data=nested)).status_code == 200


@pytest.mark.parametrize("field", ["name", "description", "location"])
async def test_nul_characters_are_validation_errors_on_every_backend(client, credential, field):
    body = {**BODY, field: "a\u0000b"}
    response = await client.post(PROJECTS, headers=credential.headers, json=body)
    assert response.status_code == 422
    assert field in {error["field"] for error in (await response.get_json())["errors"]}


async def test_key_as_a_json_field_name_is_refused_and_not_echoed(client, credential):
    leaked = generate_key(Environment.LIVE)
    response = await client.post(PROJECTS, headers=credential.headers, json={**BODY, leaked: 1})
    assert response.status_code == 400
    assert (await response.get_json())["code"] == "credentials_in_request"
    assert leaked not in await response.get_data(as_text=True)


async def test_key_as_a_query_or_cookie_name_is_refused(client, credential):
    leaked = generate_key(Environment.TEST)
    response = await client.get(f"{PROJECTS}?{leaked}", headers=credential.headers)
    assert response.status_code == 400
    headers = {**credential.headers, "Cookie": f"{leaked}=1"}
    assert (await client.get(ME, headers=headers)).status_code == 400


async def test_a_key_pasted_into_the_path_is_not_logged(client, credential, caplog):
    leaked = generate_key(Environment.LIVE)
    with caplog.at_level(logging.INFO, logger="strongroom.api"):
        response = await client.get(f"/api/v2/{leaked}", headers=credential.headers)
    assert response.status_code == 404
    [record] = [r for r in caplog.records if r.getMessage() == "request"]
    assert record.path == "/api/v2/ak_live_[redacted]"
    assert leaked[8:] not in str(vars(record))


async def test_scope_refusals_carry_rate_limit_headers_and_cost_nothing(client, make_credential):
    credential = await make_credential(scopes=["vault:write"])
    refused = await client.get(PROJECTS, headers=credential.headers)
    assert refused.status_code == 403
    assert refused.headers["X-RateLimit-Cost"] == "0"
    assert refused.headers["X-RateLimit-Remaining"] == "120"


@pytest.mark.parametrize("limit", ["10.0", "1e2", "0x10", "ten"])
async def test_only_integer_text_is_an_integer_limit(client, credential, limit):
    response = await client.get(PROJECTS, headers=credential.headers, query_string={"limit": limit})
    assert response.status_code == 422


async def test_huge_limit_clamps_to_100(client, credential):
    response = await client.get(
        PROJECTS, headers=credential.headers, query_string={"limit": "9" * 30}
    )
    assert response.status_code == 200


class ResendingStore(MemoryIdempotencyStore):
    """A store whose first acquire reply was lost to a timeout, so the client sent it again:
    the second run finds the lock the first one set."""

    async def acquire(self, key: str, lock: str, lock_ms: int) -> str | None:
        await super().acquire(key, lock, lock_ms)
        return await super().acquire(key, lock, lock_ms)


async def test_a_resent_acquire_that_finds_its_own_lock_runs(settings, runtime):
    guard = IdempotencyGuard(ResendingStore(), settings, DurableRecords(runtime.sessions, 60))
    attempt = await guard.begin(
        namespace="key:x", method="POST", path=PROJECTS, header="k", body=b"{}",
        mimetype="application/json",
    )  # fmt: skip
    assert not hasattr(attempt, "status_code")  # an attempt to run, not a 409 or a replay


class LateOnceStore(MemoryIdempotencyStore):
    """A store that took the first lock but answered too late: the client timed out."""

    late = True

    async def acquire(self, key: str, lock: str, lock_ms: int) -> str | None:
        current = await super().acquire(key, lock, lock_ms)
        if self.late:
            self.late = False
            raise StoreUnavailable("timed out")
        return current


async def test_a_lock_taken_by_an_acquire_that_timed_out_does_not_hold_the_retry(settings, runtime):
    """Found on a real node (issue 45): Redis took the lock and answered after the client's
    1 s timeout; the request got its 503, and its retry with the same key 409 for the lock's
    whole life. The lock is released with the 503 (when the store answers by then)."""
    guard = IdempotencyGuard(LateOnceStore(), settings, DurableRecords(runtime.sessions, 60))
    request = {
        "namespace": "key:x", "method": "POST", "path": PROJECTS, "header": "k", "body": b"{}",
        "mimetype": "application/json",
    }  # fmt: skip
    with pytest.raises(Problem) as refused:
        await guard.begin(**request)
    assert refused.value.code == "service_unavailable"
    retried = await guard.begin(**request)
    assert not hasattr(retried, "status_code")  # runs: not 409 idempotency_in_progress


async def test_runtime_repr_hides_the_pepper(runtime):
    assert runtime.key_pepper.decode() not in repr(runtime)
