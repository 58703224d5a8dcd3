"""Vault tests run on both backends. On PostgreSQL the ingestion jobs go through
procrastinate's queue to a real `strongroom worker` process started here; on SQLite the
embedded default runs them in-process."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from urllib3 import encode_multipart_formdata

from strongroom.settings import Settings
from strongroom.tenants.models import RateLimitTier
from strongroom.tenants.partition import Environment
from tests.processes import WorkerProcess


@pytest.fixture(scope="session")
async def worker(settings: Settings, app) -> AsyncIterator[WorkerProcess | None]:
    if settings.is_embedded:
        yield None
        return
    async with WorkerProcess(settings) as process:
        yield process


JOB_DEADLINE = 180  # seconds: a bound for a hung job, not a measurement (loaded CI machines)


class Vault:
    """The vault's endpoints as one credential calls them."""

    def __init__(self, client, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers

    async def create_project(self, name: str = "Harbour Tower") -> str:
        response = await self.client.post(
            "/api/v2/vault/projects",
            json={"name": name, "project_type": "commercial"},
            headers=self.headers,
        )
        assert response.status_code == 201, await response.get_json()
        return (await response.get_json())["id"]

    async def upload(self, project_id: str | None, content: bytes, filename: str, **fields):
        """POST a document's multipart form."""
        if project_id is not None:
            fields["project_id"] = project_id
        return await self.post_form("/api/v2/vault/documents", content, filename, **fields)

    async def post_form(self, path: str, content: bytes, filename: str, **fields):
        """POST a multipart form with one `file`, as a real client encodes it (urllib3;
        Quart's test client drops the line break that ends an empty file part)."""
        form: dict[str, Any] = {key: value for key, value in fields.items() if value is not None}
        form["file"] = (filename, content)
        body, content_type = encode_multipart_formdata(form)
        return await self.client.post(
            path, data=body, headers={**self.headers, "Content-Type": content_type}
        )

    async def ingested(self, content: bytes, filename: str, project_id: str) -> dict:
        """Upload, wait for ingestion to end, and return the document as then fetched."""
        response = await self.upload(project_id, content, filename)
        assert response.status_code == 202, await response.get_json()
        document = await response.get_json()
        await self.wait_for_job(document["ingestion_job_id"])
        return await self.get(f"/api/v2/vault/documents/{document['id']}")

    async def wait_for_job(self, job_id: str) -> dict:
        """The ingestion job once it has ended."""
        return await self.until_finished(f"/api/v2/vault/ingestion-jobs/{job_id}")

    async def until_finished(self, path: str) -> dict:
        """GET `path` until its `status` is succeeded or failed; fails the test if that takes
        over JOB_DEADLINE s."""
        async with asyncio.timeout(JOB_DEADLINE):
            while True:
                job = await self.get(path)
                if job["status"] in {"succeeded", "failed"}:
                    return job
                await asyncio.sleep(0.1)

    async def get(self, path: str, status: int = 200) -> dict:
        response = await self.client.get(path, headers=self.headers)
        assert response.status_code == status, await response.get_json()
        return await response.get_json()

    async def search(self, status: int = 200, **body) -> dict:
        response = await self.client.post("/api/v2/vault/search", json=body, headers=self.headers)
        assert response.status_code == status, await response.get_json()
        return await response.get_json()


@pytest.fixture
async def vault(client, make_credential, worker) -> Vault:
    """A fresh tenant's test key, on a tier that lets a test poll jobs freely."""
    credential = await make_credential(tier=RateLimitTier.ENTERPRISE)
    return Vault(client, credential.headers)


@pytest.fixture
async def owner_and_strangers(client, make_credential, worker) -> tuple[Vault, list[Vault]]:
    """A tenant's test key, and the two who must never see its data: another tenant, and
    the same tenant's live environment (D13)."""
    own = await make_credential(tier=RateLimitTier.ENTERPRISE)
    other_tenant = await make_credential()
    other_environment = await make_credential(environment=Environment.LIVE, tenant=own.tenant)
    return Vault(client, own.headers), [
        Vault(client, other_tenant.headers),
        Vault(client, other_environment.headers),
    ]


def unique_word() -> str:
    """A word no other test's document contains (letters only, so stemming keeps it)."""
    return "zq" + "".join(chr(ord("a") + int(ch, 16) % 26) for ch in uuid.uuid4().hex[:10])
