"""D46 for template fills, with a real `strongroom worker` on PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest

from tests.documents import make_docx_template, make_pdf
from tests.templates.test_template_fill_api import finished_fill, start_fill
from tests.workflows.test_workflows_api import CONTRACT_V1


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
async def test_a_template_fill_whose_worker_is_killed_ends_succeeded(vault, worker):
    """D46 for template fills: the job's worker is killed while it fills fields; the next
    worker runs the job again and it succeeds, with every field filled once."""
    project_id = await vault.create_project()
    await vault.ingested(make_pdf(CONTRACT_V1), "contract.pdf", project_id)
    names = [f"field_{index}" for index in range(150)]
    template = make_docx_template(
        [f"{{{{ {name} | What is the contract sum? }}}}" for name in names]
    )
    accepted = await (await start_fill(vault, template, project_id=project_id)).get_json()
    path = f"/api/v2/templates/fill/{accepted['job_id']}"
    async with asyncio.timeout(30):
        while not (fill := await vault.get(path))["fields"]:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    assert fill["status"] == "running", "the job ended before the worker could be killed"
    await worker.kill_and_restart()
    finished = await finished_fill(vault, accepted["job_id"])
    assert finished["status"] == "succeeded", finished["error"]
    assert [field["name"] for field in finished["fields"]] == names
    assert all("4,250,000" in field["value"] for field in finished["fields"])
