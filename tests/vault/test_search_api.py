"""Search (D43) through the API, on both backends: ranked, stemmed, filtered, and only ever
over the caller's tenant and environment."""

from __future__ import annotations

import uuid

import pytest
from sqlmodel import update

from strongroom.corpus.models import Document, DocumentChunk
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import Candidate, rank, search_chunks
from strongroom.tenants.partition import DataPartition
from strongroom.text import analysis
from strongroom.vault.reindex import reindex
from tests.documents import make_pdf
from tests.vault.conftest import unique_word


async def test_words_match_through_stemming(vault):
    word = unique_word()
    project_id = await vault.create_project()
    document = await vault.ingested(
        f"The {word} foundations were poured in March.".encode(), "f.txt", project_id
    )
    hits = (await vault.search(query=f"{word} foundation pouring"))["data"]
    assert [hit["document_id"] for hit in hits] == [document["id"]]


async def test_passages_with_more_of_the_words_rank_higher(vault):
    word, other = unique_word(), unique_word()
    project_id = await vault.create_project()
    one = await vault.ingested(f"{word} is mentioned here once.".encode(), "1.txt", project_id)
    both = await vault.ingested(
        f"{word} and {other} appear together.".encode(), "2.txt", project_id
    )
    hits = (await vault.search(query=f"{word} {other}"))["data"]
    assert [hit["document_id"] for hit in hits] == [both["id"], one["id"]]
    assert hits[0]["score"] > hits[1]["score"]


async def test_results_carry_the_passage_its_page_and_its_document(vault):
    word = unique_word()
    project_id = await vault.create_project()
    pdf = make_pdf(["Cover sheet.", "Contents.", f"Liquidated damages are payable by {word}."])
    document = await vault.ingested(pdf, "contract.pdf", project_id)
    [hit] = (await vault.search(query=word))["data"]
    assert hit["document_id"] == document["id"]
    assert hit["document_name"] == "contract.pdf"
    assert hit["project_id"] == project_id
    assert hit["page_number"] == 3
    assert word in hit["content"]
    assert f"<mark>{word}</mark>" in hit["snippet"]
    assert isinstance(hit["chunk_id"], str) and isinstance(hit["score"], float)


async def test_filters_by_project_and_by_document(vault):
    word = unique_word()
    first, second = await vault.create_project(), await vault.create_project()
    in_first = await vault.ingested(f"{word} alpha".encode(), "a.txt", first)
    in_second = await vault.ingested(f"{word} beta".encode(), "b.txt", second)
    both = {hit["document_id"] for hit in (await vault.search(query=word))["data"]}
    assert both == {in_first["id"], in_second["id"]}
    by_project = (await vault.search(query=word, project_ids=[second]))["data"]
    assert [hit["document_id"] for hit in by_project] == [in_second["id"]]
    by_document = (await vault.search(query=word, document_ids=[in_first["id"]]))["data"]
    assert [hit["document_id"] for hit in by_document] == [in_first["id"]]


async def test_k_caps_the_number_of_results(vault):
    word = unique_word()
    project_id = await vault.create_project()
    for index in range(4):
        await vault.ingested(f"{word} number {index}".encode(), f"{index}.txt", project_id)
    assert len((await vault.search(query=word, k=2))["data"]) == 2
    assert len((await vault.search(query=word))["data"]) == 4


async def test_another_tenant_or_environment_never_sees_the_passages(owner_and_strangers):
    owner, strangers = owner_and_strangers
    word = unique_word()
    project_id = await owner.create_project()
    await owner.ingested(f"Confidential {word}".encode(), "c.txt", project_id)
    for stranger in strangers:
        assert (await stranger.search(query=word))["data"] == []
        refused = await stranger.search(404, query=word, project_ids=[project_id])
        assert refused["code"] == "not_found" and project_id in refused["detail"]


async def test_a_project_or_document_id_that_is_not_the_callers_is_404_naming_it(vault):
    """Issue 42: a search naming a project id that does not exist answered 200 with an empty
    list, so a typo looked like "no results". Every unknown id is named; known ones pass."""
    project_id = await vault.create_project()
    document = await vault.ingested(b"Retention is five per cent.", "r.txt", project_id)
    unknown_project, unknown_document = str(uuid.uuid4()), str(uuid.uuid4())
    refused = await vault.search(404, query="retention", project_ids=[project_id, unknown_project])
    assert refused["code"] == "not_found"
    assert unknown_project in refused["detail"] and project_id not in refused["detail"]
    refused = await vault.search(
        404, query="retention", document_ids=[document["id"], unknown_document]
    )
    assert unknown_document in refused["detail"] and document["id"] not in refused["detail"]
    found = await vault.search(
        query="retention", project_ids=[project_id], document_ids=[document["id"]]
    )
    assert [hit["document_id"] for hit in found["data"]] == [document["id"]]
    assert (await vault.search(query="retention", project_ids=[]))["data"] == []


@pytest.mark.parametrize("syntax", ["'", "&", ":*", '"', "!", "|", "(", "-", "OR", "NEAR(", "*"])
async def test_search_syntax_in_a_query_is_plain_text(vault, syntax):
    word = unique_word()
    project_id = await vault.create_project()
    document = await vault.ingested(f"Clause about {word}.".encode(), "s.txt", project_id)
    glued = f"{syntax}{word}{syntax}" if not syntax[0].isalpha() else f"{syntax} {word} {syntax}"
    hits = (await vault.search(query=f"{glued} {syntax}"))["data"]
    assert [hit["document_id"] for hit in hits] == [document["id"]]


async def test_a_query_of_punctuation_only_finds_nothing(vault):
    assert (await vault.search(query="'&:* \"!"))["data"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "x" * 1001}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "ok", "k": 0}, "k"),
        ({"query": "ok", "k": 51}, "k"),
        ({"query": "ok", "project_ids": ["not-a-uuid"]}, "project_ids.0"),
        ({"query": "ok", "unknown": 1}, "unknown"),
    ],
    ids=["1001-chars", "empty", "blank", "k-0", "k-51", "bad-project-id", "unknown-field"],
)
async def test_invalid_search_requests_are_422(vault, body, field):
    problem = await vault.search(status=422, **body)
    assert problem["code"] == "validation_error"
    assert problem["errors"][0]["field"] == field


async def test_a_1000_character_query_is_accepted(vault):
    assert (await vault.search(query="a" * 1000))["data"] == []


async def test_search_costs_5_rate_limit_tokens_d19(vault):
    response = await vault.client.post(
        "/api/v2/vault/search", json={"query": "anything"}, headers=vault.headers
    )
    assert response.headers["X-RateLimit-Cost"] == "5"


async def test_stop_words_match_nothing_on_either_backend(vault):
    project_id = await vault.create_project()
    await vault.ingested(b"The works of the contractor and the engineer.", "s.txt", project_id)
    assert (await vault.search(query="the of and"))["data"] == []


async def test_snippets_are_html_escaped_with_only_the_marks_as_markup(vault):
    word = unique_word()
    project_id = await vault.create_project()
    text = f"Bolts & nuts <b>{word}</b> 'grade' 8.8"
    await vault.ingested(text.encode(), "escape.txt", project_id)
    [hit] = (await vault.search(query=word))["data"]
    assert hit["content"] == text  # the passage itself is data, returned as stored
    assert f"<mark>{word}</mark>" in hit["snippet"]
    assert "&amp;" in hit["snippet"]
    assert "<b>" not in hit["snippet"]


async def test_passages_of_a_document_not_yet_ready_are_not_found(vault, runtime):
    word = unique_word()
    project_id = await vault.create_project()
    document = await vault.ingested(f"Pending {word}".encode(), "p.txt", project_id)
    async with runtime.sessions() as session:
        await session.exec(
            update(Document)
            .where(Document.id == uuid.UUID(document["id"]))
            .values(status="processing")
        )
        await session.commit()
    assert (await vault.search(query=word))["data"] == []


async def test_results_are_in_score_order_with_the_same_scores_on_both_backends(vault, runtime):
    """Scores are BM25 computed in Python over the terms the index holds (never a database's
    own ranking), so the order is the score order and equal on PostgreSQL and SQLite."""
    word, other, third = unique_word(), unique_word(), unique_word()
    project_id = await vault.create_project()
    texts = [
        f"{word} is mentioned here once, among many other words of a longer passage.",
        f"{word} and {other} appear together.",
        f"{third} {word} {word}.",
    ]
    documents = [
        await vault.ingested(text.encode(), f"{n}.txt", project_id) for n, text in enumerate(texts)
    ]
    async with runtime.sessions() as session:
        partition = DataPartition.of(await session.get(Document, uuid.UUID(documents[0]["id"])))
        hits = await search_chunks(
            session, partition, f"{word} {other}", k=10, filters=Filters([uuid.UUID(project_id)])
        )
    wanted = analysis.query(f"{word} {other}").terms
    candidates = [Candidate(hit.chunk.id, hit.chunk.index_terms.split()) for hit in hits]
    expected = rank(wanted, candidates, total=3)
    assert [(hit.chunk.id, hit.score) for hit in hits] == expected
    assert str(hits[0].chunk.document_id) == documents[1]["id"]
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


async def test_an_abbreviation_finds_the_words_it_stands_for(vault):
    """The construction thesaurus (strongroom.text.thesaurus): `LDs` in a question finds a
    passage saying `liquidated damages`, and the other way round."""
    word = unique_word()
    project_id = await vault.create_project()
    full = await vault.ingested(
        f"{word}: liquidated damages of $500 per day apply.".encode(), "full.txt", project_id
    )
    short = await vault.ingested(f"{word} LDs are capped at 10%.".encode(), "short.txt", project_id)
    found = (await vault.search(query="What are the LDs?", project_ids=[project_id]))["data"]
    assert {hit["document_id"] for hit in found} == {full["id"], short["id"]}
    found = (await vault.search(query="liquidated damages", project_ids=[project_id]))["data"]
    assert {hit["document_id"] for hit in found} == {full["id"], short["id"]}


async def test_snippets_mark_the_words_of_a_concept(vault):
    word = unique_word()
    project_id = await vault.create_project()
    await vault.ingested(
        f"{word} The subcontractor shall carry insurance.".encode(), "s.txt", project_id
    )
    hits = (await vault.search(query=f"{word} subs", project_ids=[project_id]))["data"]
    assert "<mark>subcontractor</mark>" in hits[0]["snippet"]


async def test_reindex_brings_stale_index_terms_up_to_date(vault, runtime):
    """`strongroom reindex` after the analysis changed: stale terms are analysed again."""
    word = unique_word()
    project_id = await vault.create_project()
    document = await vault.ingested(f"The {word} pile caps.".encode(), "r.txt", project_id)
    async with runtime.sessions() as session:
        await session.exec(
            update(DocumentChunk)
            .where(DocumentChunk.document_id == uuid.UUID(document["id"]))
            .values(index_terms="stale")
        )
        await session.commit()
    assert (await vault.search(query=word, project_ids=[project_id]))["data"] == []
    assert await reindex(runtime) >= 1
    hits = (await vault.search(query=word, project_ids=[project_id]))["data"]
    assert [hit["document_id"] for hit in hits] == [document["id"]]
    assert await reindex(runtime) == 0  # nothing left to change
