"""Template fill retrieves its fields' passages as chat does: by meaning as well as words
when an embeddings provider is configured (issue 16). The upstream is the FAKE of
tests/embeddings (no embedding model can run as a service here); it records what it is
asked to embed."""

from __future__ import annotations

import asyncio

import pytest

from strongroom.embeddings.openai import OpenAIEmbeddings
from strongroom.retrieval import vectors
from tests.documents import make_docx_template
from tests.embeddings.fake_upstream import FakeEmbeddingsUpstream
from tests.templates.test_template_fill_api import finished_fill, start_fill
from tests.vault.conftest import JOB_DEADLINE, unique_word

QUESTION = "What is the retention percentage?"


@pytest.fixture
async def upstream(runtime, monkeypatch):
    async with FakeEmbeddingsUpstream() as fake:
        provider = OpenAIEmbeddings(base_url=fake.base_url, upstream_model="fake-embed")
        monkeypatch.setattr(runtime, "embeddings", provider)
        vectors._readiness.clear()
        yield fake
        vectors._readiness.clear()


async def meaning_complete(vault, document_id: str) -> None:
    """Wait for the document's vectors job (issue 50), which runs after ingestion: a fill
    started before it ends searches by words only and embeds nothing (this test's flakiness
    under load, when the job had not run yet)."""
    async with asyncio.timeout(JOB_DEADLINE):  # a bound for a stuck job, not a measurement
        while True:
            document = await vault.get(f"/api/v2/vault/documents/{document_id}")
            if document["meaning"] == "complete":
                return
            await asyncio.sleep(0.1)


# The provider is set on this process's runtime: on SQLite the jobs run in this process (on
# PostgreSQL a `strongroom worker` of its own would not have it).
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_template_field_is_searched_by_meaning_when_a_provider_is_configured(
    vault, upstream
):
    word = unique_word()
    project_id = await vault.create_project()
    text = f"Contract {word}. The retention percentage for {word} is five per cent."
    document = await vault.ingested(text.encode(), "contract.txt", project_id)
    await meaning_complete(vault, document["id"])
    template = make_docx_template([f"Retention: {{{{ retention | {QUESTION} }}}}"])
    accepted = await (await start_fill(vault, template, project_id=project_id)).get_json()
    finished = await finished_fill(vault, accepted["job_id"])
    assert finished["status"] == "succeeded", finished["error"]
    [field] = finished["fields"]
    assert field["value"] == "five per cent"
    embedded = [text for _, body in upstream.requests for text in body["input"]]
    assert text in embedded  # the passage, at ingestion
    assert QUESTION in embedded  # the field's question, to search by meaning
