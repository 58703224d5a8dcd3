"""Issue 18: a template is stored by POST /templates/fill and read only in its job, in a
bounded child process after its archive's sizes and XML tags were checked while streaming
(strongroom/ingest/office_limits.py, the guard ingestion uses too). A hostile template costs
neither the API process's memory nor its database connections, and fails its job with a
clear error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from strongroom.templates import docx_fill
from tests.templates.hostile import MiB, PeakRss, paragraph_bomb
from tests.templates.test_template_fill_api import finished_fill, start_fill
from tests.vault.conftest import Vault

# The 154 KB DOCX inflating to 100 MiB of <w:p/>: past template_max_unzipped_bytes.
# 24 MiB of <w:p/> is within it, and within template_max_xml_bytes, but past
# template_max_xml_elements (4 million elements, one tag each).
BOMBS = {"100 MiB of <w:p/>": 100 * MiB, "24 MiB of <w:p/>": 24 * MiB}


@pytest.fixture
def opened_here(monkeypatch) -> list[Path]:
    """The templates this process (the API's, and the job runner's here) opened as
    documents: none may be, they are read in the job's child process. A count of work, not
    a stopwatch, so a slow machine cannot fail it (issue 44)."""
    opened: list[Path] = []
    original = docx_fill._open

    def counting(path, limits):
        opened.append(path)
        return original(path, limits)

    monkeypatch.setattr(docx_fill, "_open", counting)
    return opened


@pytest.mark.parametrize("inflated", BOMBS.values(), ids=BOMBS.keys())
async def test_an_inflating_template_fails_its_job_without_growing_the_api(
    vault, inflated, opened_here
):
    bomb = paragraph_bomb(inflated)
    assert len(bomb) < 200_000
    with PeakRss() as memory:
        response = await start_fill(vault, bomb)
        assert response.status_code == 202, await response.get_json()
        fill = await finished_fill(vault, (await response.get_json())["job_id"])
    assert fill["status"] == "failed"
    assert fill["error"]["code"] == "template_too_large"
    assert "more than" in fill["error"]["detail"]
    assert fill["fields"] == []
    # Before: the API process read the template before its 202 (42.9 s) and grew by 2.2 GB.
    assert opened_here == []
    assert memory.growth_mib < 150, f"the API process grew by {memory.growth_mib:.0f} MiB"


async def test_five_hostile_templates_at_once_do_not_stall_an_unrelated_get(
    vault: Vault, opened_here
):
    bomb = paragraph_bomb(100 * MiB)

    async def unrelated_get():
        await asyncio.sleep(0.05)  # while the uploads are being handled
        return await vault.get("/api/v2/vault/projects")

    async with asyncio.timeout(60):  # a bound on waiting, not the rule
        *responses, unrelated = await asyncio.gather(
            *(start_fill(vault, bomb) for _ in range(5)), unrelated_get()
        )
    assert [response.status_code for response in responses] == [202] * 5
    assert "data" in unrelated  # answered 200 (Vault.get checks the status)
    # Before: the GET waited 28.3 s behind the five templates read in the API process; none
    # is read there now, whatever the machine's load.
    assert opened_here == []
    for response in responses:
        fill = await finished_fill(vault, (await response.get_json())["job_id"])
        assert fill["error"]["code"] == "template_too_large"
