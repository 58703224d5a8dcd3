"""One engine for chat and fill (issue 53 item 6): a template field is answered as chat answers
its question, over the same passages, with the same citations, narrowed to the value asked."""

from __future__ import annotations

from tests.documents import make_docx_template
from tests.vault.conftest import unique_word


async def test_a_field_gets_the_citations_of_chats_answer_to_its_question(vault):
    word = unique_word()
    project_id = await vault.create_project()
    text = (
        f"# Payment terms {word}\n\n"
        f"The Employer may retain 5% of each interim payment for {word} until completion. "
        "The balance of the retention is released after the defects liability period.\n\n"
        f"# Notices {word}\n\n"
        f"Each party shall give notice of a claim for {word} within 28 days.\n"
    )
    await vault.ingested(text.encode(), "contract.md", project_id)
    question = f"What percentage of each interim payment may the Employer retain for {word}?"

    response = await vault.client.post(
        "/api/v2/chat", json={"query": question, "project_ids": [project_id]}, headers=vault.headers
    )
    assert response.status_code == 200, await response.get_json()
    chat = await response.get_json()
    assert "retain 5%" in chat["answer"]

    template = make_docx_template([f"Retention: {{{{ retention | {question} }}}}"])
    response = await vault.post_form(
        "/api/v2/templates/fill", template, "t.docx", project_id=project_id
    )
    assert response.status_code == 202, await response.get_json()
    job_id = (await response.get_json())["job_id"]
    fill = await vault.until_finished(f"/api/v2/templates/fill/{job_id}")
    assert fill["status"] == "succeeded", fill["error"]
    [field] = fill["fields"]
    assert field["value"] == "5%"
    assert field["citations"] == chat["citations"]
