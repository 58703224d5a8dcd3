"""Issue 18: a template is stored by POST /templates/fill and read only in its job, in a
bounded child process after its archive's sizes and XML tags were checked while streaming
(strongroom/ingest/office_limits.py, the guard ingestion uses too). A hostile template costs
neither the API process's memory nor its database connections, and fails its job with a
clear error."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.templates.hostile import MiB, PeakRss, paragraph_bomb
from tests.templates.test_template_fill_api import finished_fill, start_fill
from tests.vault.conftest import Vault

# The 154 KB DOCX inflating to 100 MiB of <w:p/>: past template_max_unzipped_bytes.
# 24 MiB of <w:p/> is within it, and within template_max_xml_bytes, but past
# template_max_xml_elements (4 million elements, one tag each).
BOMBS = {"100 MiB of <w:p/>": 100 * MiB, "24 MiB of <w:p/>": 24 * MiB}


@pytest.mark.parametrize("inflated", BOMBS.values(), ids=BOMBS.keys())
async def test_an_inflating_template_fails_its_job_without_growing_the_api(vault, inflated):
    bomb = paragraph_bomb(inflated)
    assert len(bomb) < 200_000
    with PeakRss() as memory:
        started = time.monotonic()
        response = await start_fill(vault, bomb)
        accepted_after = time.monotonic() - started
        assert response.status_code == 202, await response.get_json()
        fill = await finished_fill(vault, (await response.get_json())["job_id"])
    assert fill["status"] == "failed"
    assert fill["error"]["code"] == "template_too_large"
    assert "more than" in fill["error"]["detail"]
    assert fill["fields"] == []
    # Before: the 202 came after 42.9 s and the API process grew by 2.2 GB.
    assert accepted_after < 10
    assert memory.growth_mib < 150, f"the API process grew by {memory.growth_mib:.0f} MiB"


async def test_five_hostile_templates_at_once_do_not_stall_an_unrelated_get(vault: Vault):
    bomb = paragraph_bomb(100 * MiB)
    baseline_started = time.monotonic()
    await vault.get("/api/v2/vault/projects")
    baseline = time.monotonic() - baseline_started

    async def unrelated_get() -> float:
        await asyncio.sleep(0.05)  # while the uploads are being handled
        started = time.monotonic()
        await vault.get("/api/v2/vault/projects")
        return time.monotonic() - started

    *responses, stalled = await asyncio.gather(
        *(start_fill(vault, bomb) for _ in range(5)), unrelated_get()
    )
    assert [response.status_code for response in responses] == [202] * 5
    # Before: 28.3 s. A generous ceiling, and a ratio to the same GET unloaded.
    assert stalled < max(5.0, 50 * baseline), (stalled, baseline)
    for response in responses:
        fill = await finished_fill(vault, (await response.get_json())["job_id"])
        assert fill["error"]["code"] == "template_too_large"
