"""Exactly once across lost caches: a 2xx response under an Idempotency-Key is committed in
the same transaction as the work it answers (strongroom/idempotency/durable.py), so a retry
replays it even when the store never got it (a process dying between COMMIT and the store
write, Redis losing its data, the embedded default restarting), and two attempts of one key
never both commit. On PostgreSQL + Redis and on the embedded default."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlmodel import col, select

from strongroom.api import request_path
from strongroom.api.capability import Call
from strongroom.app import create_app
from strongroom.idempotency.durable import DurableRecords, KeyAlreadyCommitted, record_key
from strongroom.idempotency.models import IdempotencyRecord
from strongroom.idempotency.store import CachedResponse
from strongroom.vault.models import Project
from tests.api.conftest import Probes
from tests.api.test_idempotency import BODY, PROJECTS, with_key
from tests.conftest import issue_credential


async def forget_cached_responses(runtime) -> None:
    """What a lost store looks like: Redis without the records (a restart without
    persistence, or the write that never happened); a new embedded process has none."""
    if runtime.redis is not None:
        pattern = f"{runtime.settings.redis_prefix}idem:*"
        async for key in runtime.redis.scan_iter(match=pattern):
            await runtime.redis.delete(key)


async def projects_named(runtime, credential, prefix: str) -> list[Project]:
    statement = select(Project).where(
        col(Project.tenant_id) == credential.tenant.id, col(Project.name).startswith(prefix)
    )
    async with runtime.sessions() as session:
        return list((await session.exec(statement)).all())


async def test_a_committed_response_the_store_lost_is_replayed_not_made_again(settings, credential):
    key = str(uuid.uuid4())
    first_app = create_app(settings)
    async with first_app.test_app():
        first = await first_app.test_client().post(
            PROJECTS, headers=with_key(credential, key), json=BODY
        )
        assert first.status_code == 201
        await forget_cached_responses(first_app.extensions["strongroom"])
    restarted = create_app(settings)  # the embedded default's store starts empty
    async with restarted.test_app():
        client = restarted.test_client()
        retried = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
        again = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
        listed = await (await client.get(PROJECTS, headers=credential.headers)).get_json()
    assert retried.status_code == again.status_code == 201
    assert await retried.get_data() == await again.get_data() == await first.get_data()
    assert retried.headers["Idempotent-Replayed"] == again.headers["Idempotent-Replayed"] == "true"
    assert retried.headers["X-Request-Id"] == first.headers["X-Request-Id"]
    for name in ("X-RateLimit-Remaining", "X-RateLimit-Reset"):  # 4.1 rule 3 (issue 19)
        assert retried.headers[name] == again.headers[name] == first.headers[name]
    assert [project["id"] for project in listed["data"]] == [(await first.get_json())["id"]]


async def test_after_a_lost_store_another_body_with_the_key_is_idempotency_key_reused(
    client, runtime, credential
):
    key = str(uuid.uuid4())
    assert (await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)).status_code
    await forget_cached_responses(runtime)
    other = {**BODY, "name": "Another tower"}
    response = await client.post(PROJECTS, headers=with_key(credential, key), json=other)
    assert response.status_code == 422
    assert (await response.get_json())["code"] == "idempotency_key_reused"


async def test_two_attempts_of_one_key_commit_once_when_the_lock_expires_midway(
    settings, credential
):
    """The first attempt outlives its lock; a retry takes a new one and runs too. Both reach
    their commit: one commits, the other is rolled back and replays the first's response."""
    probes = Probes()
    app = create_app(settings.model_copy(update={"idempotency_lock_seconds": 0.3}))
    request_path.install(app, probes.routes)
    async with app.test_app():
        client = app.test_client()
        headers = with_key(credential, str(uuid.uuid4()))
        first = asyncio.create_task(client.post("/api/v2/test/slow_write", headers=headers))
        await probes.started.wait()
        await asyncio.sleep(0.5)  # the first attempt's lock expires
        second = asyncio.create_task(client.post("/api/v2/test/slow_write", headers=headers))
        async with asyncio.timeout(10):
            while probes.executions["slow_write"] < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        probes.release.set()
        responses = await asyncio.gather(first, second)
        written = await projects_named(app.extensions["strongroom"], credential, "slow write")
    assert [r.status_code for r in responses] == [201, 201]
    replayed = sorted(str(r.headers.get("Idempotent-Replayed")) for r in responses)
    assert replayed == ["None", "true"]
    bodies = {await r.get_data() for r in responses}
    assert len(bodies) == 1
    assert len(written) == 1


async def commit_records(runtime, *kept) -> None:
    """Commit records as the request path does: the last statements of a call's commit
    (sent with its COMMIT on PostgreSQL, db/together.py)."""
    call = Call(principal=None, services=runtime)  # a commit reads no principal
    try:
        await call.commit(*kept)
    finally:
        await call.close()


async def test_a_record_is_written_once_while_live_and_replaced_once_expired(runtime):
    live = DurableRecords(runtime.sessions, ttl_seconds=3600)
    expired = DurableRecords(runtime.sessions, ttl_seconds=-1)
    store_key = f"test:{uuid.uuid4()}"
    cached = CachedResponse(fingerprint="f" * 64, status=201, headers=[("A", "b")], body="e30=")

    await commit_records(runtime, expired.keep(store_key, cached))
    assert await live.find(store_key) is None  # expired: not replayed
    await commit_records(runtime, live.keep(store_key, cached))  # replaces the expired one
    found = await live.find(store_key)
    assert found is not None and found[0] == cached
    with pytest.raises(KeyAlreadyCommitted):
        await commit_records(runtime, live.keep(store_key, cached))


async def test_records_past_the_replay_window_are_deleted_and_live_ones_kept(runtime):
    store_key_expired, store_key_live = f"test:{uuid.uuid4()}", f"test:{uuid.uuid4()}"
    cached = CachedResponse(fingerprint="f" * 64, status=201, headers=[], body="e30=")
    await commit_records(
        runtime,
        DurableRecords(runtime.sessions, ttl_seconds=-1).keep(store_key_expired, cached),
        DurableRecords(runtime.sessions, ttl_seconds=3600).keep(store_key_live, cached),
    )
    assert await runtime.idempotency.delete_expired_records() >= 1
    async with runtime.sessions() as session:
        keys = set((await session.exec(select(IdempotencyRecord.key))).all())
    assert record_key(store_key_expired) not in keys
    assert record_key(store_key_live) in keys


async def test_a_replay_from_the_database_keeps_the_original_replay_window(postgres_settings):
    """Put back in Redis for what is left of the first commit's window, not a new one."""
    app = create_app(postgres_settings.model_copy(update={"idempotency_cache_seconds": 60}))
    async with app.test_app():
        runtime = app.extensions["strongroom"]
        credential = await issue_credential(runtime)
        client = app.test_client()
        key = str(uuid.uuid4())
        assert (
            await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
        ).status_code == 201
        await forget_cached_responses(runtime)
        await asyncio.sleep(1.2)
        retried = await client.post(PROJECTS, headers=with_key(credential, key), json=BODY)
        assert retried.headers["Idempotent-Replayed"] == "true"
        pattern = f"{runtime.settings.redis_prefix}idem:key:{credential.api_key.id}:*"
        [store_key] = [name async for name in runtime.redis.scan_iter(match=pattern)]
        assert 0 < await runtime.redis.pttl(store_key) <= 59_000
