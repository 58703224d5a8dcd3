"""Chat (D44) through the API with the default extractive engine, on both backends."""

from __future__ import annotations

import uuid

import pytest
from sqlmodel import select

from strongroom.corpus.models import DocumentChunk
from tests.chat.conftest import parse_events
from tests.documents import make_pdf
from tests.vault.conftest import Vault, unique_word


async def ask(vault: Vault, status: int = 200, path: str = "/api/v2/chat", **body):
    response = await vault.client.post(path, json=body, headers=vault.headers)
    assert response.status_code == status, await response.get_data()
    return response


async def chunk_text(runtime, chunk_id: str) -> str:
    async with runtime.sessions() as session:
        chunk = (
            await session.exec(select(DocumentChunk).where(DocumentChunk.id == uuid.UUID(chunk_id)))
        ).one()
    return chunk.content


@pytest.fixture
async def site(vault):
    """A project with a contract PDF and site notes, and the word only they contain."""
    word = unique_word()
    project_id = await vault.create_project()
    contract = make_pdf(
        [
            "Contract particulars. The employer is Harbour Holdings.",
            f"Liquidated damages are 5000 pounds per week of delay, payable to {word}. "
            "The date for completion is 1 March 2027.",
        ]
    )
    notes = f"Site notes.\n\nThe piling subcontractor for {word} is Deepfound Ltd.".encode()
    documents = [
        await vault.ingested(contract, "contract.pdf", project_id),
        await vault.ingested(notes, "notes.md", project_id),
    ]
    return {"word": word, "project_id": project_id, "documents": documents}


async def test_an_answer_quotes_the_documents_and_cites_chunks_that_hold_the_text(
    vault, site, runtime
):
    response = await ask(
        vault, query=f"What are the liquidated damages for {site['word']}?",
        project_ids=[site["project_id"]],
    )  # fmt: skip
    body = await response.get_json()
    assert "5000 pounds per week" in body["answer"]
    assert body["citations"], body
    contract = site["documents"][0]
    first = body["citations"][0]
    assert first["document_id"] == contract["id"]
    assert first["page_number"] == 2
    assert first["document_name"] == "contract.pdf"
    for citation in body["citations"]:
        assert citation["content"] == await chunk_text(runtime, citation["chunk_id"])
    quoted = body["answer"].split(" [")[0]
    assert quoted in " ".join(first["content"].split())  # wrapped lines joined
    assert body["usage"]["engine"] == "extractive"
    assert body["usage"]["passages"] >= 1
    assert body["usage"]["output_tokens"] > 0
    assert body["answer_type"] == "answered"
    assert body["unsupported_values"] == []  # quoted from the passages it cites


async def test_the_conversation_is_created_then_continued_and_kept_in_order(vault, site):
    first = await (
        await ask(vault, query=f"Who is the piling subcontractor for {site['word']}?")
    ).get_json()
    assert "Deepfound Ltd" in first["answer"]
    second = await (
        await ask(
            vault, query=f"When is completion for {site['word']}?",
            conversation_id=first["conversation_id"],
        )
    ).get_json()  # fmt: skip
    assert second["conversation_id"] == first["conversation_id"]
    assert "1 March 2027" in second["answer"]
    conversation = await vault.get(f"/api/v2/conversations/{first['conversation_id']}")
    assert conversation["message_count"] == 4
    assert conversation["title"].startswith("Who is the piling subcontractor")
    roles = [message["role"] for message in conversation["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert conversation["messages"][1]["id"] == first["message_id"]
    assert conversation["messages"][1]["content"] == first["answer"]
    assert conversation["messages"][1]["citations"] == first["citations"]
    assert conversation["messages"][2]["content"].startswith("When is completion")
    assert conversation["updated_at"] >= conversation["created_at"]
    listed = await vault.get("/api/v2/conversations")
    assert [item["id"] for item in listed["data"]] == [first["conversation_id"]]
    assert listed["data"][0]["message_count"] == 4


async def test_a_project_without_documents_gets_an_honest_no_answer(vault):
    empty = await vault.create_project()
    body = await (await ask(vault, query="What is the retention?", project_ids=[empty])).get_json()
    assert body["answer"].startswith("Not found in the documents")
    assert body["answer_type"] == "not_found"
    assert body["citations"] == []
    assert body["usage"]["passages"] == 0


async def test_a_question_the_documents_do_not_answer_says_so(vault, site):
    body = await (
        await ask(vault, query="zebra giraffe", project_ids=[site["project_id"]])
    ).get_json()
    assert body["answer"].startswith("Not found in the documents")
    assert body["answer_type"] == "not_found"
    assert body["citations"] == []  # search found no passage to be close


@pytest.mark.parametrize("path", ["/api/v2/chat", "/api/v2/chat/stream"])
async def test_a_not_found_is_typed_and_cites_the_closest_passages_for_a_person(vault, site, path):
    """Issue 27: passages were found, but no sentence answers (they hold no count of
    cranes): the answer says so plainly (`answer_type` not_found, in the response, the
    stream's `done` and the stored conversation) and cites the passages that came closest,
    so that a person can read them."""
    response = await ask(
        vault, path=path, query=f"How many cranes may {site['word']} erect?",
        project_ids=[site["project_id"]],
    )  # fmt: skip
    if path.endswith("stream"):
        body = parse_events(await response.get_data())[-1][1]
    else:
        body = await response.get_json()
    assert body["answer"].startswith("Not found in the documents")
    assert body["answer_type"] == "not_found"
    assert body["unsupported_values"] == []
    cited = {citation["document_id"] for citation in body["citations"]}
    assert cited == {document["id"] for document in site["documents"]}
    assert 1 <= len(body["citations"]) <= 3
    stored = (await vault.get(f"/api/v2/conversations/{body['conversation_id']}"))["messages"]
    assert [m["answer_type"] for m in stored] == [None, "not_found"]
    assert stored[1]["citations"] == body["citations"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x" * 8001}, "query"),
        ({"query": "ok", "k": 0}, "k"),
        ({"query": "ok", "k": 51}, "k"),
        ({"query": "ok", "conversation_id": "nope"}, "conversation_id"),
    ],
    ids=["empty", "8001-chars", "k-0", "k-51", "bad-conversation-id"],
)
@pytest.mark.parametrize("path", ["/api/v2/chat", "/api/v2/chat/stream"])
async def test_invalid_questions_are_422(vault, path, body, field):
    problem = await (await ask(vault, 422, path, **body)).get_json()
    assert problem["code"] == "validation_error"
    assert problem["errors"][0]["field"] == field


async def test_an_8000_character_question_is_accepted(vault):
    await ask(vault, query="retention " * 799 + "abcdefghi")


@pytest.mark.parametrize("path", ["/api/v2/chat", "/api/v2/chat/stream"])
async def test_an_unknown_conversation_is_404(vault, path):
    problem = await (
        await ask(vault, 404, path, query="hi", conversation_id=str(uuid.uuid4()))
    ).get_json()
    assert problem["code"] == "not_found"


async def test_conversations_of_another_tenant_or_environment_are_404(owner_and_strangers):
    owner, strangers = owner_and_strangers
    conversation_id = (await (await ask(owner, query="anything at all")).get_json())[
        "conversation_id"
    ]
    for stranger in strangers:
        await stranger.get(f"/api/v2/conversations/{conversation_id}", status=404)
        assert (await stranger.get("/api/v2/conversations"))["data"] == []
        await ask(stranger, 404, query="continue", conversation_id=conversation_id)


# Spec 5.4's scope table: chat:write covers asking chat, streaming or not (D44, issue 19).
async def test_asking_needs_chat_write_alone(client, make_credential, worker):
    only_chat = await make_credential(scopes=["chat:write"])
    for path in ("/api/v2/chat", "/api/v2/chat/stream"):
        response = await client.post(path, json={"query": "hello"}, headers=only_chat.headers)
        assert response.status_code == 200, path
    only_read = await make_credential(scopes=["chat:read", "vault:read"])
    response = await client.post("/api/v2/chat", json={"query": "hello"}, headers=only_read.headers)
    assert response.status_code == 403
    assert (await response.get_json())["missing_scopes"] == ["chat:write"]


async def test_asking_costs_10_rate_limit_tokens_d19(vault):
    response = await ask(vault, query="hello")
    assert response.headers["X-RateLimit-Cost"] == "10"


async def test_the_stream_sends_progress_citations_and_deltas_then_done_and_stores_it(vault, site):
    response = await ask(
        vault, path="/api/v2/chat/stream",
        query=f"Who is the piling subcontractor for {site['word']}?",
    )  # fmt: skip
    assert response.headers["Content-Type"] == "text/event-stream"
    events = parse_events(await response.get_data())
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "progress"
    assert kinds[-1] == "done"
    assert "delta" in kinds and "citation" in kinds
    assert kinds.index("citation") < kinds.index("delta")
    done = events[-1][1]
    streamed = "".join(data["text"] for kind, data in events if kind == "delta")
    assert streamed == done["answer"]
    assert "Deepfound Ltd" in streamed
    assert [data for kind, data in events if kind == "citation"] == done["citations"]
    conversation = await vault.get(f"/api/v2/conversations/{done['conversation_id']}")
    stored = conversation["messages"][-1]
    assert (stored["id"], stored["content"], stored["citations"]) == (
        done["message_id"], streamed, done["citations"],
    )  # fmt: skip
    assert (stored["answer_type"], stored["unsupported_values"]) == ("answered", [])
    assert done["answer_type"] == "answered"


async def test_a_chat_is_replayed_under_its_idempotency_key(vault, site):
    vault.headers = {**vault.headers, "Idempotency-Key": f"ask-{uuid.uuid4()}"}
    for path in ("/api/v2/chat", "/api/v2/chat/stream"):
        question = {"query": f"Who is the piling subcontractor for {site['word']}?"}
        first = await ask(vault, path=path, **question)
        again = await ask(vault, path=path, **question)
        assert again.headers["Idempotent-Replayed"] == "true"
        assert await again.get_data() == await first.get_data()
        vault.headers["Idempotency-Key"] += "-stream"
    listed = await vault.get("/api/v2/conversations")
    assert len(listed["data"]) == 2  # one per first call, none for the replays


@pytest.fixture
async def wings(vault, client, make_credential):
    """One passage per page: the north wing's roof (naming the wing twice), and the dates
    for completion of the north and south wings. Another tenant's programmes make "date"
    and "completion" common words, as in the full suite (SQLite ranks with corpus-wide
    statistics): where a first version of the fusion tied the roof passage with the north
    wing's date, and failed on CI only."""
    other = Vault(client, (await make_credential()).headers)
    programmes = "\f".join(f"The date for completion of section {n} is fixed." for n in range(40))
    await other.ingested(programmes.encode(), "programmes.txt", await other.create_project())
    word = unique_word()
    project_id = await vault.create_project()
    text = (
        f"Roof works. The {word} north wing roof membrane is supplied by Acme Roofing; the "
        "north wing membrane carries a twenty year warranty.\f"
        f"Programme. The date for completion of the {word} north wing is 1 March 2027.\f"
        f"Programme. The date for completion of the {word} south wing is 1 June 2027."
    )
    await vault.ingested(text.encode(), "programme.txt", project_id)
    return {"word": word, "project_id": project_id}


async def test_a_follow_up_is_retrieved_in_the_context_of_the_previous_question(vault, wings):
    word = wings["word"]
    follow_up = f"And for the {word} north wing?"
    alone = await (await ask(vault, query=follow_up)).get_json()
    assert "Acme Roofing" in alone["citations"][0]["content"]  # the wing named most

    first = await (await ask(vault, query=f"What is the date for completion of {word}?")).get_json()
    followed = await (
        await ask(vault, query=follow_up, conversation_id=first["conversation_id"])
    ).get_json()
    assert "north wing is 1 March 2027" in followed["citations"][0]["content"]
    assert "1 March 2027" in followed["answer"]


@pytest.mark.parametrize(
    ("field", "meant"), [("project_id", "project_ids"), ("document_id", "document_ids")]
)
async def test_a_singular_filter_is_refused_with_the_field_meant(vault, field, meant):
    """Issue 31: `project_id`, the singular every other call uses, stays refused (an unknown
    filter must not be ignored) but the 422 names the field meant."""
    problem = await (await ask(vault, 422, query="ok", **{field: str(uuid.uuid4())})).get_json()
    [error] = problem["errors"]
    assert error["field"] == field
    assert error["message"] == f"Extra inputs are not permitted; did you mean `{meant}`?"


async def test_a_project_or_document_id_that_is_not_the_callers_is_404_naming_it(vault):
    """Issue 42: a question narrowed to an id that does not exist answered as if the project
    held nothing; now it is 404 `not_found` naming the ids, before any charge for an answer."""
    project_id = await vault.create_project()
    unknown = str(uuid.uuid4())
    for filters in ({"project_ids": [project_id, unknown]}, {"document_ids": [unknown]}):
        for path in ("/api/v2/chat", "/api/v2/chat/stream"):
            response = await ask(vault, 404, path, query="What is the retention?", **filters)
            body = await response.get_json()
            assert body["code"] == "not_found" and unknown in body["detail"]
            assert project_id not in body["detail"]
