"""Workflows (D47) through the API on both backends: the catalogue, validated inputs, and
each built-in run by the job machinery over documents generated here."""

from __future__ import annotations

import pytest

from tests.documents import make_docx, make_pdf
from tests.vault.conftest import Vault

CONTRACT_V1 = [
    "BUILDING CONTRACT\n\nThis Agreement is made on 3 March 2026 between Harbour Holdings "
    'Ltd (the "Employer") and Deepfound Construction Limited (the "Contractor").',
    "1. Works. The Contractor shall carry out and complete the Works.\n\n"
    "2. Contract Sum. The Employer shall pay the Contractor the sum of £4,250,000.\n\n"
    "3. Retention. The Employer may retain 5% of each payment.\n\n"
    "4. Insurance. The Contractor shall insure the Works for their full value.\n\n"
    "5. Governing law. This Agreement shall be governed by the laws of England and Wales.",
]
CONTRACT_V2 = [
    CONTRACT_V1[0],
    "1. Works. The Contractor shall carry out and complete the Works.\n\n"
    "2. Contract Sum. The Employer shall pay the Contractor the sum of £4,500,000.\n\n"
    "4. Insurance. The Contractor shall insure the Works for their full value.\n\n"
    "5. Governing law. This Agreement shall be governed by the laws of England and Wales.\n\n"
    "6. Adjudication. Disputes shall be referred to adjudication under the Scheme.",
]


async def start(vault: Vault, workflow_id: str, status: int = 202, **body) -> dict:
    response = await vault.client.post(
        f"/api/v2/workflows/{workflow_id}/runs", json=body, headers=vault.headers
    )
    assert response.status_code == status, await response.get_json()
    return await response.get_json()


async def finished_run(vault: Vault, run_id: str) -> dict:
    return await vault.until_finished(f"/api/v2/workflows/runs/{run_id}")


@pytest.fixture
async def contracts(vault) -> dict:
    project_id = await vault.create_project()
    v1 = await vault.ingested(make_pdf(CONTRACT_V1), "contract-v1.pdf", project_id)
    v2 = await vault.ingested(make_pdf(CONTRACT_V2), "contract-v2.pdf", project_id)
    return {"project_id": project_id, "v1": v1, "v2": v2}


def evidence_of(output) -> list[dict]:
    """Every evidence object anywhere in a workflow's output."""
    found = []
    if isinstance(output, dict):
        if {"chunk_id", "excerpt"} <= output.keys():
            found.append(output)
        for value in output.values():
            found += evidence_of(value)
    elif isinstance(output, list):
        for item in output:
            found += evidence_of(item)
    return found


async def assert_evidence_is_real(vault: Vault, output: dict) -> None:
    """Each excerpt is text of the chunk it names (fetched through search's own data)."""
    evidence = evidence_of(output)
    assert evidence
    from sqlmodel import select

    from strongroom.corpus.models import DocumentChunk

    runtime = vault.client.app.extensions["strongroom"]
    async with runtime.sessions() as session:
        chunks = {
            str(chunk.id): chunk.content
            for chunk in (await session.exec(select(DocumentChunk))).all()
        }
    for item in evidence:
        assert item["excerpt"] in chunks[item["chunk_id"]]


async def test_the_catalogue_lists_the_built_ins_with_their_input_schemas(vault):
    page = await vault.get("/api/v2/workflows")
    ids = {workflow["id"] for workflow in page["data"]}
    assert {"wf_summarise_documents", "wf_extract_key_terms", "wf_compare_documents"} <= ids
    compare = next(w for w in page["data"] if w["id"] == "wf_compare_documents")
    assert compare["trigger_type"] == "manual" and compare["enabled"] is True
    assert set(compare["input_schema"]["required"]) == {"left_document_id", "right_document_id"}
    assert page["has_more"] is False and page["next_cursor"] is None


async def test_the_catalogue_pages_with_cursors(vault):
    first = await vault.get("/api/v2/workflows?limit=2")
    assert len(first["data"]) == 2 and first["has_more"] is True
    rest = await vault.get(f"/api/v2/workflows?limit=2&cursor={first['next_cursor']}")
    seen = [w["id"] for w in first["data"] + rest["data"]]
    assert len(seen) == len(set(seen)) == 3


async def test_summarise_a_projects_documents(vault, contracts):
    accepted = await start(vault, "wf_summarise_documents", project_id=contracts["project_id"])
    assert accepted["run_id"].startswith("run_") and accepted["status"] == "pending"
    run = await finished_run(vault, accepted["run_id"])
    assert run["status"] == "succeeded", run["error"]
    assert [step["status"] for step in run["steps"]] == ["succeeded", "succeeded"]
    assert [step["name"] for step in run["steps"]] == ["gather_documents", "summarise"]
    summarised = {document["document_name"] for document in run["output"]["documents"]}
    assert summarised == {"contract-v1.pdf", "contract-v2.pdf"}
    assert run["output"]["overall"]
    await assert_evidence_is_real(vault, run["output"])


async def test_extract_key_terms_as_structured_values_with_citations(vault, contracts):
    accepted = await start(
        vault, "wf_extract_key_terms", inputs={"document_ids": [contracts["v1"]["id"]]}
    )
    run = await finished_run(vault, accepted["run_id"])
    assert run["status"] == "succeeded", run["error"]
    output = run["output"]
    names = {party["name"] for party in output["parties"]}
    assert {"Harbour Holdings Ltd", "Deepfound Construction Limited"} <= names
    assert "2026-03-03" in {date["iso"] for date in output["dates"]}
    assert {"value": "4250000.00", "currency": "GBP"}.items() <= next(
        amount for amount in output["amounts"] if amount["currency"] == "GBP"
    ).items()
    assert output["governing_law"][0]["jurisdiction"] == "England and Wales"
    await assert_evidence_is_real(vault, output)


async def test_compare_two_versions_of_a_contract(vault, contracts):
    accepted = await start(
        vault,
        "wf_compare_documents",
        inputs={
            "left_document_id": contracts["v1"]["id"],
            "right_document_id": contracts["v2"]["id"],
        },
    )
    run = await finished_run(vault, accepted["run_id"])
    assert run["status"] == "succeeded", run["error"]
    output = run["output"]
    text = str(output)
    assert "Adjudication" in str(output["added"])
    assert "Retention" in str(output["removed"])
    assert "4,500,000" in str(output["changed"]) and "4,250,000" in text
    await assert_evidence_is_real(vault, output)


async def test_an_unknown_workflow_is_404(vault):
    problem = await start(vault, "wf_does_not_exist", 404, inputs={})
    assert problem["code"] == "not_found"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {"inputs": {"left_document_id": "nope", "right_document_id": "nope"}},
            "inputs.left_document_id",
        ),
        ({"inputs": {"left_document_id": 5}}, "inputs.left_document_id"),
        ({"inputs": {"unknown": 1}}, "inputs.left_document_id"),
        ({"inputs": "not an object"}, "inputs"),
    ],
    ids=["not-uuids", "wrong-type", "unknown-field", "not-an-object"],
)
async def test_inputs_that_do_not_match_the_schema_are_422(vault, body, field):
    problem = await start(vault, "wf_compare_documents", 422, **body)
    assert problem["code"] == "validation_error"
    assert field in [error["field"] for error in problem["errors"]]


async def test_an_unknown_input_is_said_as_other_bodies_say_it_naming_the_one_meant(vault):
    """Issue 52: the inputs' problems said pydantic's raw message, without the near miss
    that every other body's 422 names (issue 31)."""
    problem = await start(
        vault, "wf_summarise_documents", 422, inputs={"document_id": []}, project_id=None
    )
    assert problem["errors"] == [
        {
            "field": "inputs.document_id",
            "message": "Extra inputs are not permitted; did you mean `document_ids`?",
        }
    ]


async def test_a_document_set_workflow_needs_a_project_or_documents(vault):
    problem = await start(vault, "wf_summarise_documents", 422, inputs={})
    assert problem["errors"] == [
        {"field": "project_id", "message": "required without inputs.document_ids"}
    ]


async def test_projects_documents_and_runs_of_another_tenant_or_environment_are_404(
    owner_and_strangers,
):
    owner, strangers = owner_and_strangers
    project_id = await owner.create_project()
    document = await owner.ingested(make_docx(["Scope of works."]), "s.docx", project_id)
    accepted = await start(owner, "wf_summarise_documents", project_id=project_id)
    for stranger in strangers:
        await start(stranger, "wf_summarise_documents", 404, project_id=project_id)
        await start(
            stranger, "wf_extract_key_terms", 404, inputs={"document_ids": [document["id"]]}
        )
        await stranger.get(f"/api/v2/workflows/runs/{accepted['run_id']}", status=404)
    await owner.get("/api/v2/workflows/runs/run_not-a-run", status=404)


async def test_starting_a_run_costs_25_d19(vault, contracts):
    response = await vault.client.post(
        "/api/v2/workflows/wf_summarise_documents/runs",
        json={"project_id": contracts["project_id"]},
        headers=vault.headers,
    )
    assert response.headers["X-RateLimit-Cost"] == "25"


async def test_a_document_that_is_not_ready_cannot_be_compared(vault, contracts):
    project_id = contracts["project_id"]
    failed = await vault.ingested(b"%PDF-1.7\n" + b"\x00junk" * 100, "broken.pdf", project_id)
    assert failed["status"] == "failed"
    problem = await start(
        vault,
        "wf_compare_documents",
        422,
        inputs={"left_document_id": contracts["v1"]["id"], "right_document_id": failed["id"]},
    )
    assert [error["field"] for error in problem["errors"]] == ["inputs.right_document_id"]


async def test_run_ids_are_run_and_32_hex_digits_only(vault, contracts):
    accepted = await start(vault, "wf_summarise_documents", project_id=contracts["project_id"])
    digits = accepted["run_id"].removeprefix("run_")
    assert len(digits) == 32
    dashed = f"run_{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"
    for other in (dashed, "run_" + digits.upper(), digits, f"run_{{{digits}}}"):
        await vault.get(f"/api/v2/workflows/runs/{other}", status=404)


@pytest.mark.parametrize("workflow_id", ["wf_extract_key_terms", "wf_summarise_documents"])
async def test_documents_of_another_project_than_the_runs_are_422(vault, contracts, workflow_id):
    """Issue 31: the served input schema says the documents are of the run's `project_id`;
    one of another project was read as nothing (four empty lists). It is refused, naming it."""
    other = await vault.create_project()
    problem = await start(vault, workflow_id, 422, project_id=other,
                          inputs={"document_ids": [contracts["v1"]["id"]]})  # fmt: skip
    assert problem["code"] == "validation_error"
    [error] = problem["errors"]
    assert error["field"] == "inputs.document_ids" and contracts["v1"]["id"] in error["message"]
    await start(vault, workflow_id, project_id=contracts["project_id"],
                inputs={"document_ids": [contracts["v1"]["id"]]})  # fmt: skip
