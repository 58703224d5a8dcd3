"""Routine tests reuse the vault's fixtures (routines read documents); on PostgreSQL the
session's real `strongroom worker` runs the routine runs and fires the schedules."""

from __future__ import annotations

from typing import Any

import pytest

from tests.documents import make_pdf
from tests.vault.conftest import Vault, owner_and_strangers, vault, worker  # noqa: F401

CONTRACT = [
    "BUILDING CONTRACT\n\nThis Agreement is made on 3 March 2026 between Harbour Holdings "
    'Ltd (the "Employer") and Deepfound Construction Limited (the "Contractor").',
    "2. Contract Sum. The Employer shall pay the Contractor the sum of £4,250,000.\n\n"
    "5. Governing law. This Agreement shall be governed by the laws of England and Wales.",
]


class Routines:
    """The routines endpoints as one credential calls them."""

    def __init__(self, caller: Vault) -> None:
        self.vault = caller
        self.client = caller.client
        self.headers = caller.headers

    async def create(self, status: int = 201, headers: dict | None = None, **body) -> dict:
        response = await self.client.post(
            "/api/v2/routines", json=body, headers={**self.headers, **(headers or {})}
        )
        assert response.status_code == status, await response.get_json()
        return await response.get_json()

    async def request(self, method: str, path: str, status: int = 200, **options) -> Any:
        response = await self.client.open(
            path, method=method, headers={**self.headers, **options.pop("headers", {})}, **options
        )
        assert response.status_code == status, await response.get_data(as_text=True)
        return None if status == 204 else await response.get_json()

    async def start(self, routine_id: str, status: int = 202, **body) -> dict:
        return await self.request("POST", f"/api/v2/routines/{routine_id}/runs", status, json=body)

    async def until(self, run_id: str, statuses: set[str]) -> dict:
        import asyncio

        from tests.vault.conftest import JOB_DEADLINE

        async with asyncio.timeout(JOB_DEADLINE):
            while True:
                run = await self.request("GET", f"/api/v2/routine-runs/{run_id}")
                if run["status"] in statuses:
                    return run
                await asyncio.sleep(0.1)


@pytest.fixture
async def routines(vault) -> Routines:  # noqa: F811
    return Routines(vault)


@pytest.fixture
async def contract(vault) -> dict:  # noqa: F811
    project_id = await vault.create_project()
    document = await vault.ingested(make_pdf(CONTRACT), "contract.pdf", project_id)
    return {"project_id": project_id, "document": document}
