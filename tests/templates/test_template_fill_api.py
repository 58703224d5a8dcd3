"""Template fill (D45, D46) through the API on both backends: real DOCX templates generated
here are filled from real documents by the job machinery, and the output is reopened and
checked for text and formatting."""

from __future__ import annotations

import io

import pytest
from docx import Document as open_docx

from tests.documents import make_docx_template, make_pdf, make_xlsx
from tests.vault.conftest import Vault, unique_word


async def start_fill(vault: Vault, template: bytes, filename: str = "t.docx", **fields):
    return await vault.post_form("/api/v2/templates/fill", template, filename, **fields)


async def finished_fill(vault: Vault, job_id: str) -> dict:
    return await vault.until_finished(f"/api/v2/templates/fill/{job_id}")


@pytest.fixture
async def contract(vault) -> dict:
    word = unique_word()
    project_id = await vault.create_project()
    pdf = make_pdf(
        [
            f"Building contract {word}. The employer is Harbour Holdings Ltd.",
            f"The contract sum for {word} is 1,250,000 pounds. "
            f"The retention percentage for {word} is five per cent.",
        ]
    )
    document = await vault.ingested(pdf, "contract.pdf", project_id)
    return {"word": word, "project_id": project_id, "document": document}


async def test_a_template_is_filled_from_the_documents_keeping_its_formatting(vault, contract):
    word = contract["word"]
    template = make_docx_template(
        [
            ["Sum: ", ("{{", {"bold": True}), f"contract_sum_{word}", ("}}", {"italic": True})],
            [(f"Retention: {{{{ retention | What is the retention percentage for {word}? }}}}",
              {"size": 14})],
            "Unknown: {{ favourite_colour_of_the_architect }}.",
        ],
        table=[["Employer", "{{ employer | Who is the employer? }}"]],
        header=[f"Contract {word} - {{{{ contract_sum_{word} }}}}"],
    )  # fmt: skip
    response = await start_fill(
        vault, template, "Payment notice.docx", project_id=contract["project_id"]
    )
    assert response.status_code == 202, await response.get_json()
    accepted = await response.get_json()
    assert accepted["status"] == "pending"
    fill = await finished_fill(vault, accepted["job_id"])
    assert fill["status"] == "succeeded", fill["error"]
    assert fill["progress"] == 1.0
    fields = {field["name"]: field for field in fill["fields"]}
    assert set(fields) == {
        f"contract_sum_{word}",
        "retention",
        "employer",
        "favourite_colour_of_the_architect",
    }
    assert "1,250,000 pounds" in fields[f"contract_sum_{word}"]["value"], fields
    assert "five per cent" in fields["retention"]["value"]
    assert fields["retention"]["instruction"].startswith("What is the retention")
    assert "Harbour Holdings Ltd" in fields["employer"]["value"]
    assert fields["favourite_colour_of_the_architect"] == {
        "name": "favourite_colour_of_the_architect", "instruction": None,
        "value": None, "found": False, "citations": [],
    }  # fmt: skip
    for name in (f"contract_sum_{word}", "retention", "employer"):
        assert fields[name]["found"] is True
        [citation] = fields[name]["citations"]
        assert citation["document_id"] == contract["document"]["id"]
        assert fields[name]["value"] in " ".join(citation["content"].split())
    assert fill["result_url"].endswith(f"/api/v2/templates/fill/{accepted['job_id']}/result")

    download = await vault.client.get(
        f"/api/v2/templates/fill/{accepted['job_id']}/result", headers=vault.headers
    )
    assert download.status_code == 200
    assert download.headers["Content-Type"].startswith("application/vnd.openxmlformats")
    assert "Payment%20notice%20%28filled%29.docx" in download.headers["Content-Disposition"]
    filled = open_docx(io.BytesIO(await download.get_data()))
    sum_paragraph, retention, unknown = filled.paragraphs[:3]
    assert sum_paragraph.text.startswith("Sum: ") and "1,250,000 pounds" in sum_paragraph.text
    assert "{{" not in sum_paragraph.text
    value_run = next(run for run in sum_paragraph.runs if "1,250,000" in run.text)
    assert value_run.bold is True  # the formatting of the run the placeholder began in
    assert sum_paragraph.runs[0].text == "Sum: " and not sum_paragraph.runs[0].bold
    assert retention.runs[0].font.size.pt == 14 and "five per cent" in retention.text
    assert unknown.text == "Unknown: {{ favourite_colour_of_the_architect }}."
    assert "Harbour Holdings Ltd" in filled.tables[0].rows[0].cells[1].text
    assert "1,250,000 pounds" in filled.sections[0].header.paragraphs[0].text


async def test_a_template_that_is_not_a_docx_is_400(vault):
    for content, name in ((make_pdf(["not a template"]), "t.docx"), (b"plain {{ text }}", "t.txt")):
        response = await start_fill(vault, content, name)
        assert response.status_code == 400
        assert (await response.get_json())["code"] == "unsupported_file_type"


async def test_a_template_without_placeholders_fails_its_job(vault):
    """The template is read in its job (issue 18), so what it holds is the job's error."""
    response = await start_fill(vault, make_docx_template(["Nothing to fill here."]))
    assert response.status_code == 202
    fill = await finished_fill(vault, (await response.get_json())["job_id"])
    assert fill["status"] == "failed"
    assert fill["error"]["code"] == "validation_error"
    assert fill["error"]["status"] == 422
    assert fill["error"]["detail"] == "The template has no {{placeholders}} to fill."


async def test_a_zip_that_is_not_a_docx_fails_its_job(vault):
    response = await start_fill(vault, make_xlsx({"Sheet": [["{{ a }}"]]}), "t.docx")
    assert response.status_code == 202
    fill = await finished_fill(vault, (await response.get_json())["job_id"])
    assert fill["status"] == "failed"
    assert fill["error"]["code"] == "unsupported_file_type"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"project_id": "nope"}, "project_id"),
        ({"document_ids": "[1, 2]"}, "document_ids"),
        ({"document_ids": "[" * 50_000}, "document_ids"),  # too deep for the JSON parser
    ],
)
async def test_bad_form_fields_are_422(vault, fields, field):
    response = await start_fill(vault, make_docx_template(["{{ a }}"]), **fields)
    assert response.status_code == 422
    assert (await response.get_json())["errors"][0]["field"] == field


async def test_fills_of_another_tenant_or_environment_are_404(owner_and_strangers):
    owner, strangers = owner_and_strangers
    project_id = await owner.create_project()
    accepted = await (
        await start_fill(owner, make_docx_template(["{{ a }}"]), project_id=project_id)
    ).get_json()
    for stranger in strangers:
        for path in (
            f"/api/v2/templates/fill/{accepted['job_id']}",
            f"/api/v2/templates/fill/{accepted['job_id']}/result",
        ):
            assert (await stranger.get(path, status=404))["code"] == "not_found"
        refused = await start_fill(stranger, make_docx_template(["{{ a }}"]), project_id=project_id)
        assert refused.status_code == 404


async def test_a_fill_costs_25_and_ignores_idempotency_keys(vault):
    vault.headers = {**vault.headers, "Idempotency-Key": "fill-1"}
    first = await start_fill(vault, make_docx_template(["{{ a }}"]))
    second = await start_fill(vault, make_docx_template(["{{ a }}"]))
    assert first.headers["X-RateLimit-Cost"] == "25"
    assert "Idempotent-Replayed" not in second.headers
    assert (await first.get_json())["job_id"] != (await second.get_json())["job_id"]


async def test_a_very_long_template_name_is_shortened_keeping_its_extension(vault):
    response = await start_fill(vault, make_docx_template(["{{ a }}"]), "n" * 400 + ".docx")
    assert response.status_code == 202
    fill = await vault.get(f"/api/v2/templates/fill/{(await response.get_json())['job_id']}")
    assert len(fill["template_name"]) == 255 and fill["template_name"].endswith(".docx")


async def test_a_template_with_more_than_200_fields_fails_its_job(vault):
    template = make_docx_template([f"{{{{ field_{index} }}}}" for index in range(201)])
    response = await start_fill(vault, template)
    assert response.status_code == 202
    fill = await finished_fill(vault, (await response.get_json())["job_id"])
    assert fill["error"]["code"] == "validation_error"
    assert fill["error"]["detail"] == "The template has more than 200 fields."
