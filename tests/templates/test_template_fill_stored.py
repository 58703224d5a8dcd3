"""Template fill from a DOCX already uploaded to the vault (issue 20: the MCP server's
template tool, which cannot upload), through the API on both backends."""

from __future__ import annotations

import pytest

from tests.documents import make_docx_template, make_pdf
from tests.vault.conftest import unique_word

FILL_STORED = "/api/v2/templates/fill/stored"


async def fill_stored(vault, **body):
    return await vault.client.post(FILL_STORED, json=body, headers=vault.headers)


async def uploaded(vault, content: bytes, filename: str) -> dict:
    """`content` uploaded into a project of templates of its own, ingestion ended."""
    response = await vault.upload(await vault.create_project("Templates"), content, filename)
    assert response.status_code == 202, await response.get_json()
    document = await response.get_json()
    await vault.wait_for_job(document["ingestion_job_id"])
    return document


async def test_a_stored_template_is_filled_and_stays_as_it_was(vault):
    word = unique_word()
    project_id = await vault.create_project()
    await vault.ingested(
        make_pdf([f"Contract {word}. The employer is Harbour Holdings Ltd."]), "c.pdf", project_id
    )
    template = make_docx_template(
        [f"Employer of {word}: {{{{ employer | Who is the employer? }}}}"]
    )
    stored = await uploaded(vault, template, "Notice.docx")

    response = await fill_stored(vault, template_document_id=stored["id"], project_id=project_id)
    assert response.status_code == 202, await response.get_json()
    accepted = await response.get_json()
    fill = await vault.until_finished(f"/api/v2/templates/fill/{accepted['job_id']}")
    assert fill["status"] == "succeeded", fill["error"]
    assert fill["template_name"] == "Notice.docx"
    [field] = fill["fields"]
    assert field["name"] == "employer" and "Harbour Holdings Ltd" in field["value"]
    original = await vault.client.get(
        f"/api/v2/vault/documents/{stored['id']}/content", headers=vault.headers
    )
    assert await original.get_data() == template  # the stored document is left alone


async def test_a_stored_document_that_is_not_a_docx_is_400(vault):
    stored = await uploaded(vault, make_pdf(["{{ not_a_template }}"]), "t.pdf")
    response = await fill_stored(vault, template_document_id=stored["id"])
    assert response.status_code == 400
    assert (await response.get_json())["code"] == "unsupported_file_type"


async def test_another_partitions_template_is_404(owner_and_strangers):
    owner, strangers = owner_and_strangers
    stored = await uploaded(owner, make_docx_template(["{{ a }}"]), "t.docx")
    for stranger in strangers:
        response = await fill_stored(stranger, template_document_id=stored["id"])
        assert response.status_code == 404
        assert (await response.get_json())["code"] == "not_found"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "template_document_id"),
        ({"template_document_id": "nope"}, "template_document_id"),
        ({"template_document_id": "00000000-0000-4000-8000-000000000000", "x": 1}, "x"),
        ({"template_document_id": "00000000-0000-4000-8000-000000000000", "document_ids": []},
         "document_ids"),
    ],
)  # fmt: skip
async def test_a_bad_body_is_422_naming_the_field(vault, body, field):
    response = await fill_stored(vault, **body)
    assert response.status_code == 422
    problem = await response.get_json()
    assert problem["code"] == "validation_error"
    assert [error["field"] for error in problem["errors"]] == [field]
