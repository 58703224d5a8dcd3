"""`strongroom worker` serves its Prometheus metrics on STRONGROOM_WORKER_METRICS_PORT: a real
`strongroom serve` takes an upload, a real worker ingests it, and the worker's /metrics counts
the job and its pages. The worker runs on a database of its own, so that no other test's
worker (tests/vault starts one for the session) takes the job."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from collections.abc import AsyncIterator

import pytest
from urllib3 import encode_multipart_formdata

from strongroom.runtime import Runtime
from strongroom.settings import Settings
from strongroom.tenants.models import RateLimitTier
from tests.conftest import (
    REDIS_URL,
    issue_credential,
    make_settings,
    migrated,
    own_postgres_database,
)
from tests.processes import STRONGROOM, ServeProcess, WorkerProcess, environment_of, free_port


@pytest.fixture(scope="module")
async def own_settings(redis_prefix: str, tmp_path_factory) -> AsyncIterator[Settings]:
    """A fresh PostgreSQL database (and data directory) for this module only."""
    async with own_postgres_database() as url:
        yield await migrated(
            make_settings(url, tmp_path_factory.mktemp("data-worker-metrics"),
                          redis_url=REDIS_URL, redis_prefix=redis_prefix)
        )  # fmt: skip


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


def samples(text: str) -> dict[str, float]:
    """`name{labels}` -> value for every sample line."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            found[series] = float(value)
    return found


async def serving(port: int, worker: WorkerProcess, seconds: float = 30) -> str:
    """The first scrape that answers, while the worker process is alive."""
    async with asyncio.timeout(seconds):
        while True:
            assert worker.process.returncode is None, worker.log_path.read_text()[-2000:]
            try:
                return await asyncio.to_thread(scrape, port)
            except OSError:
                await asyncio.sleep(0.1)


def upload(base: str, key: str, project_id: str, content: bytes, filename: str) -> dict:
    body, content_type = encode_multipart_formdata(
        {"project_id": project_id, "file": (filename, content)}
    )
    request = urllib.request.Request(  # noqa: S310
        f"{base}/api/v2/vault/documents", data=body, method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": content_type},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            assert response.status == 202
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise AssertionError(f"upload answered {error.code}: {error.read()!r}") from error


async def test_the_worker_serves_its_job_metrics_after_an_ingestion(own_settings, tmp_path):
    runtime = Runtime.create(own_settings)
    credential = await issue_credential(runtime, tier=RateLimitTier.ENTERPRISE)
    await runtime.close()
    port = free_port()
    # A PROMETHEUS_MULTIPROC_DIR left over from `strongroom serve`'s environment, pointing
    # nowhere: the worker must ignore it (else it stops at start, or writes files nothing reads).
    worker = WorkerProcess(
        own_settings,
        STRONGROOM_WORKER_METRICS_PORT=str(port),
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "gone"),
    )
    async with ServeProcess(own_settings) as server, worker:
        before = samples(await serving(port, worker))
        # Every series the alerts and dashboards use exists from the start, at 0.
        for series in (
            'strongroom_jobs_finished_total{kind="ingestion",status="succeeded"}',
            'strongroom_jobs_finished_total{kind="ingestion",status="failed"}',
            'strongroom_jobs_retried_total{reason="stalled"}',
            'strongroom_jobs_retried_total{reason="lost"}',
            "strongroom_ingested_pages_total",
        ):
            assert before[series] == 0, series
        # One process, in-memory mode: prometheus-client's process metrics are there too.
        assert before["process_resident_memory_bytes"] > 0

        status, project, _ = await server.call(
            "POST", "/api/v2/vault/projects", credential.key,
            body={"name": "Metrics Tower", "project_type": "commercial"},
        )  # fmt: skip
        assert status == 201, project
        text = b"The retention is released on practical completion.\n" * 50
        document = await asyncio.to_thread(
            upload, server.base, credential.key, project["id"], text, "retention.txt"
        )
        job_path = f"/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}"
        async with asyncio.timeout(60):
            while True:
                job = (await server.call("GET", job_path, credential.key))[1]
                if job["status"] in {"succeeded", "failed"}:
                    break
                await asyncio.sleep(0.1)
        assert job["status"] == "succeeded", job

        after = samples(await asyncio.to_thread(scrape, port))
    assert after['strongroom_jobs_finished_total{kind="ingestion",status="succeeded"}'] == 1
    assert after['strongroom_jobs_finished_total{kind="ingestion",status="failed"}'] == 0
    assert after["strongroom_ingested_pages_total"] >= 1
    assert not (tmp_path / "gone").exists()
    assert credential.key not in json.dumps(after) and str(credential.tenant.id) not in str(after)


async def test_a_worker_whose_metrics_port_is_taken_stops_at_start(own_settings):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))  # noqa: S104 (the worker binds every interface)
        taken.listen()
        port = taken.getsockname()[1]
        env = environment_of(own_settings, STRONGROOM_WORKER_METRICS_PORT=str(port))
        process = await asyncio.create_subprocess_exec(
            STRONGROOM, "worker", env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            _, stderr = await asyncio.wait_for(process.communicate(), 30)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode != 0
    assert b"Address already in use" in stderr
