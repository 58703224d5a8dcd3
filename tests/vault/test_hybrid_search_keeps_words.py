"""Hybrid search keeps the words asked (issue 53, item 1), through the API on a vault of
several documents, with the real offline `minilm` embeddings: the README's first search,
"liquidated damages", over a small contract and a few public contract clauses. The
contract's passage that says it holds the words; clauses about disputes, bonds and warranty
do not, and are close to the question by meaning."""

from __future__ import annotations

import uuid

import pytest

from strongroom.corpus.models import Document
from strongroom.embeddings.minilm import MiniLMEmbeddings
from strongroom.retrieval import vectors
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import search_chunks
from strongroom.retrieval.semantic import Semantic
from strongroom.retrieval.vector_memory import VectorMemory
from strongroom.tenants.partition import DataPartition
from strongroom.text import analysis
from strongroom.vault import reembedding

QUERY = "liquidated damages"

CONTRACT = """Agreement for the extension of the Harbour Tower

1. Parties. This agreement is made between Harbour Holdings Limited (the Employer) and
Northgate Building Services Limited (the Contractor) for the extension of the Harbour Tower
shown on the drawings listed in the schedule.

2. The works. The Contractor shall carry out and complete the works in a proper and
workmanlike manner, with materials of the kinds and standards described in the
specification, and shall give the Employer's representative access to the site and to every
place where work is being prepared for the contract at all reasonable times.

3. Time. The Contractor shall begin the works within ten days of possession of the site and
shall complete them by 30 June 2027. Where the works are delayed by a cause beyond the
Contractor's control and the Contractor gives notice within fourteen days, the Employer's
representative shall fix a fair later date for completion. If the works are not complete by
the date for completion, the Contractor shall pay liquidated damages of 5,000 pounds per week
until they are complete, which the Employer may deduct from any sum due.
"""

# Shortened from public FAR clauses (52.211-12, 52.233-1, 52.228-15, 52.246-21).
CLAUSES = {
    "ld-clause.txt": (
        "Liquidated Damages - Construction. If the Contractor fails to complete the work "
        "within the time specified in the contract, the Contractor shall pay liquidated "
        "damages to the Government in the amount of 1,000 dollars for each calendar day of "
        "delay until the work is completed or accepted."
    ),
    "disputes.txt": (
        "Disputes. A claim by the Contractor shall be made in writing and submitted to the "
        "Contracting Officer for a written decision. The Contracting Officer's decision shall "
        "be final unless the Contractor appeals or files a suit. The Contractor shall proceed "
        "diligently with performance of this contract, pending final resolution of any "
        "request for relief, claim, appeal, or action arising under the contract."
    ),
    "bonds.txt": (
        "Performance and Payment Bonds. The penal amount of performance bonds at the time of "
        "contract award shall be 100 percent of the original contract price. The Contractor "
        "shall furnish all executed bonds before receiving a notice to proceed. If any surety "
        "becomes unacceptable, the Contractor shall promptly furnish a new bond."
    ),
    "warranty.txt": (
        "Warranty of Construction. The Contractor warrants that work performed conforms to "
        "the contract requirements and is free of any defect in equipment, material, or "
        "workmanship. This warranty shall continue for a period of 1 year from the date of "
        "final acceptance. The Contractor shall remedy at its expense any failure to conform."
    ),
}


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


@pytest.fixture
def hybrid(runtime, minilm, monkeypatch) -> MiniLMEmbeddings:
    """The app's runtime with `minilm` and vectors held in memory, as the service has them."""
    monkeypatch.setattr(runtime, "embeddings", minilm)
    monkeypatch.setattr(runtime, "vectors", VectorMemory(2**24, runtime.sessions))
    vectors._readiness.clear()
    yield minilm
    vectors._readiness.clear()


async def vault_of_contracts(vault, runtime) -> tuple[str, dict[str, str]]:
    """A project with the contract and the clauses, each a document ingested by words, then
    embedded by `reembed` (so every vector is there when the test searches)."""
    project_id = await vault.create_project()
    documents = {"contract.txt": CONTRACT, **CLAUSES}
    ids = {}
    provider, runtime.embeddings = runtime.embeddings, None
    try:
        for name, text in documents.items():
            ids[name] = (await vault.ingested(text.encode(), name, project_id))["id"]
    finally:
        runtime.embeddings = provider
    for document_id in ids.values():
        await reembedding.reembed(runtime, uuid.UUID(document_id))
    return project_id, ids


def holds_every_word(content: str) -> bool:
    return set(analysis.query(QUERY).terms) <= set(analysis.terms(content))


async def test_a_passage_holding_every_word_asked_is_above_every_passage_holding_none(
    vault, runtime, hybrid
):
    project_id, ids = await vault_of_contracts(vault, runtime)
    hits = (await vault.search(query=QUERY, project_ids=[project_id]))["data"]
    holding = [holds_every_word(hit["content"]) for hit in hits]
    assert sum(holding) == 2 and holding[:2] == [True, True], [h["document_name"] for h in hits]
    contract = next(n for n, hit in enumerate(hits, 1) if hit["document_id"] == ids["contract.txt"])
    assert contract <= 3
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True)


async def test_the_database_s_pool_keeps_the_words_as_the_held_terms_do(vault, runtime, hybrid):
    project_id, ids = await vault_of_contracts(vault, runtime)
    async with runtime.sessions() as session:
        document = await session.get(Document, uuid.UUID(ids["contract.txt"]))
        partition = DataPartition.of(document)
        found = {}
        for name, terms in (("pool", None), ("held", runtime.terms)):
            hits = await search_chunks(
                session, partition, QUERY, k=10, filters=Filters([uuid.UUID(project_id)]),
                semantic=Semantic(hybrid), terms=terms,
            )  # fmt: skip
            found[name] = [(hit.chunk.id, round(hit.score, 9)) for hit in hits]
            assert [holds_every_word(hit.chunk.content) for hit in hits][:2] == [True, True]
    assert found["pool"] == found["held"]
