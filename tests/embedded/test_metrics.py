"""Prometheus metrics on their own port, summed over several Hypercorn workers
(prometheus-client multiprocess mode): requests by route, method and status, latency,
refused credentials by code, rate-limit decisions. No label carries a key or an id."""

from __future__ import annotations

import asyncio
import re
import urllib.request

from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.processes import ServeProcess, free_port


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def value(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def test_metrics_sum_every_worker_and_leak_nothing(postgres_settings):
    runtime = Runtime.create(postgres_settings)
    credential = await issue_credential(runtime)
    await runtime.close()
    metrics_port = free_port()
    async with ServeProcess(postgres_settings, 2, "--metrics-port", str(metrics_port)) as server:
        for _ in range(20):
            await server.call("GET", "/api/v2/me", credential.key)
        for _ in range(3):
            await server.call("GET", "/api/v2/me")  # no credential
        await server.call("GET", f"/api/v2/vault/projects/{credential.tenant.id}", credential.key)
        text = await asyncio.to_thread(scrape, metrics_port)
    requests = "strongroom_http_requests_total"
    assert value(text, requests, route="/api/v2/me", method="GET", status="200") == 20
    assert value(text, requests, route="/api/v2/me", method="GET", status="401") == 3
    project_route = "/api/v2/vault/projects/<uuid:project_id>"
    assert value(text, requests, route=project_route, status="404") == 1
    assert value(text, "strongroom_http_request_duration_seconds_count", route="/api/v2/me") == 23
    assert value(text, "strongroom_auth_failures_total", code="missing_api_key") == 3
    assert value(text, "strongroom_rate_limit_decisions_total", outcome="allowed") >= 21
    assert credential.key not in text and credential.key[:12] not in text
    assert str(credential.tenant.id) not in text
    assert not re.search(r"ak_(live|test)_", text)
