"""D22: with Redis down the API keeps serving reads, refuses Idempotency-Key requests with
503, lets rate limiting fail open (logged and counted), and recovers when Redis returns,
without a restart. The test runs its own throwaway redis-server so that it can stop it."""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis
from redis.exceptions import RedisError

from strongroom.admin import revoke_api_key
from strongroom.app import create_app
from tests.conftest import issue_credential
from tests.processes import free_port

ME = "/api/v2/me"
PROJECTS = "/api/v2/vault/projects"
BODY = {"name": "Harbour Tower", "project_type": "commercial"}


class ThrowawayRedis:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            shutil.which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", stdout=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        client = Redis.from_url(self.url)
        try:
            for _ in range(100):
                try:
                    await client.ping()
                    return
                except RedisError:
                    await asyncio.sleep(0.05)
            raise AssertionError("throwaway redis-server did not start")
        finally:
            await client.aclose()

    async def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            await self.process.wait()
            self.process = None


@pytest.fixture
async def redis_server() -> AsyncIterator[ThrowawayRedis]:
    server = ThrowawayRedis()
    await server.start()
    yield server
    await server.stop()


async def until_subscribed(url: str, channel: str) -> None:
    client = Redis.from_url(url)
    try:
        for _ in range(100):
            [(_, subscribers)] = await client.pubsub_numsub(channel)
            if subscribers:
                return
            await asyncio.sleep(0.05)
        raise AssertionError("the invalidation subscriber did not come back")
    finally:
        await client.aclose()


def fail_open_count() -> float:
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "strongroom_rate_limit_decisions"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels.get("outcome") == "fail_open"
    )


async def test_redis_outage_degrades_and_recovers_without_restart(
    postgres_settings, redis_server, caplog
):
    settings = postgres_settings.model_copy(update={"redis_url": redis_server.url})
    app = create_app(settings)
    async with app.test_app():
        runtime = app.extensions["strongroom"]
        credential = await issue_credential(runtime)
        client = app.test_client()
        with_key = {**credential.headers, "Idempotency-Key": str(uuid.uuid4())}

        healthy = await client.get(ME, headers=credential.headers)
        assert healthy.status_code == 200 and "X-RateLimit-Remaining" in healthy.headers

        await redis_server.stop()
        before = fail_open_count()
        with caplog.at_level(logging.WARNING, logger="strongroom.ratelimit"):
            read = await client.get(ME, headers=credential.headers)
        assert read.status_code == 200  # reads keep working
        assert "X-RateLimit-Remaining" not in read.headers  # rate limiting failed open
        assert fail_open_count() == before + 1
        assert "rate limiting fails open" in caplog.text

        refused = await client.post(PROJECTS, headers=with_key, json=BODY)
        assert refused.status_code == 503
        assert (await refused.get_json())["code"] == "service_unavailable"
        assert refused.headers["Retry-After"] == "5"

        plain = await client.post(PROJECTS, headers=credential.headers, json=BODY)
        assert plain.status_code == 201  # a write without a key needs no lock

        await redis_server.start()  # same port: the app reconnects by itself
        first = await client.post(PROJECTS, headers=with_key, json=BODY)
        replay = await client.post(PROJECTS, headers=with_key, json=BODY)
        assert first.status_code == 201 and replay.headers["Idempotent-Replayed"] == "true"
        assert "X-RateLimit-Remaining" in replay.headers

        # The invalidation subscriber is back too: a revocation lands at once.
        await until_subscribed(redis_server.url, runtime.invalidations.channel)
        assert (await client.get(ME, headers=credential.headers)).status_code == 200
        await revoke_api_key(runtime, credential.api_key.id)
        revoked = await client.get(ME, headers=credential.headers)
        assert (await revoked.get_json())["code"] == "api_key_revoked"
