"""Passage terms held in the process (strongroom.retrieval.term_memory, issue 16), on both
backends: the same BM25 scores as the database's pool scored in Python, filters applied
before scoring, coherent with changes made by other sessions and processes, bounded.

The passages are inserted with SQL (their terms analysed as ingestion analyses them), each a
few sentences drawn from a small contract vocabulary with a Zipf-like skew, so terms are
shared, rare and repeated as in real documents.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import tracemalloc
import uuid

import numpy as np
import pytest
from prometheus_client import REGISTRY
from sqlmodel import delete, select, update

from strongroom.corpus.models import Document, DocumentChunk
from strongroom.retrieval import term_memory
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import POOL, Candidate, rank, search_chunks
from strongroom.retrieval.term_memory import MERGE_FACTOR, TermMemory
from strongroom.runtime import Runtime
from strongroom.tenants.partition import DataPartition, Environment
from strongroom.text import analysis
from tests.vault.seeding import Seeded, new_project, passage_row, ready_document, store

WORDS = (
    "contractor owner subcontractor payment retention invoice schedule delay notice claim "
    "variation change order liquidated damages concrete steel formwork drawing specification "
    "warranty defect insurance indemnity termination default dispute arbitration site "
    "conditions access safety inspection completion milestone extension weather force "
    "majeure price adjustment bond guarantee suspension architect engineer approval submittal"
).split()
QUESTIONS = [
    "when is payment due after an invoice",
    "liquidated damages for delay",
    "who pays for concrete defects under the warranty",
    "notice of a claim for an extension of time",
    "termination for default and the bond",
    "site conditions differing from the drawings",
    "retention released at completion",
    "insurance and indemnity of the subcontractor",
    "zebra",
]


def passage(random: np.random.Generator) -> str:
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    chosen = random.choice(WORDS, size=int(random.integers(4, 40)), p=weights / weights.sum())
    return "The " + " ".join(chosen) + "."


async def seed(
    runtime: Runtime,
    credential,
    *,
    documents: int,
    per_document: int = 10,
    projects: int = 1,
    seed: int = 0,
    environment: Environment = Environment.TEST,
    project_ids: list[uuid.UUID] | None = None,
) -> Seeded:
    """Ready documents of `per_document` passages over `projects` new projects (or the
    given ones) of the credential's tenant."""
    random = np.random.default_rng(seed)
    tenant_id, owner_id = credential.tenant.id, credential.user.id
    project_rows = [
        new_project(tenant_id, owner_id, environment.value, f"Project {number}")
        for number in range(0 if project_ids else projects)
    ]
    project_ids = project_ids or [project.id for project in project_rows]
    document_rows, chunks = [], []
    for number in range(documents):
        document = ready_document(
            tenant_id, owner_id, environment.value,
            project_ids[number % len(project_ids)], per_document, f"Contract {number}.txt",
        )  # fmt: skip
        document_rows.append(document)
        texts = [passage(random) for _ in range(per_document)]
        chunks += [
            passage_row(document, ordinal, text, terms)
            for ordinal, (text, terms) in enumerate(
                zip(texts, analysis.index_texts(texts), strict=True)
            )
        ]
    await store(runtime, project_rows, document_rows, chunks)
    return Seeded(
        DataPartition(tenant_id, environment),
        project_ids,
        [document.id for document in document_rows],
    )


async def ranked(runtime, partition, question, filters=None, memory=None, k=POOL):
    """(chunk id, score) of search_chunks' `k` best: by held terms in `memory`, or (None)
    by the database's pool."""
    async with runtime.sessions() as session:
        hits = await search_chunks(
            session, partition, question, k=k, filters=filters or Filters(), terms=memory
        )
    return [(hit.chunk.id, hit.score) for hit in hits]


async def exact(runtime, documents, question) -> list[tuple[uuid.UUID, float]]:
    """BM25 over every passage of `documents` holding a term of the question, best first
    (search.rank given them all: what the database's pool gives while it holds them all)."""
    async with runtime.sessions() as session:
        statement = select(DocumentChunk.id, DocumentChunk.index_terms).where(
            DocumentChunk.document_id.in_(documents)
        )
        rows = (await session.exec(statement)).all()
    terms = analysis.query(question).terms
    holding = [
        Candidate(chunk_id, text.split())
        for chunk_id, text in rows
        if set(terms) & set(text.split())
    ]
    return rank(terms, holding, len(rows))


async def chunk_ids(runtime, documents) -> set[uuid.UUID]:
    async with runtime.sessions() as session:
        statement = select(DocumentChunk.id).where(DocumentChunk.document_id.in_(documents))
        return set((await session.exec(statement)).all())


async def test_held_terms_score_exactly_as_the_databases_pool_scored_in_python(runtime, credential):
    seeded = await seed(runtime, credential, documents=25, projects=3)
    memory = TermMemory(2**24, runtime.sessions)
    compared = 0
    for filters in (
        Filters(),
        Filters(project_ids=[seeded.projects[1]]),
        Filters(document_ids=seeded.documents[3:9]),
        Filters(project_ids=[seeded.projects[0]], document_ids=seeded.documents[:6]),
    ):
        for question in QUESTIONS:
            held = await ranked(runtime, seeded.partition, question, filters, memory)
            pooled = await ranked(runtime, seeded.partition, question, filters)
            assert held == pooled  # the same ids in the same order, the same scores to the bit
            compared += len(held)
    assert compared > 1000
    assert memory.partitions() == [(seeded.partition.tenant_id, Environment.TEST.value)]


async def test_a_search_matching_more_passages_than_the_pool_ranks_every_one_by_bm25(
    runtime, credential
):
    # Most of the 400 passages hold "contractor": the database's pool (300) holds only part.
    seeded = await seed(runtime, credential, documents=40)
    memory = TermMemory(2**24, runtime.sessions)
    question = "the contractor"
    found = await ranked(runtime, seeded.partition, question, memory=memory, k=10**4)
    best = await exact(runtime, seeded.documents, question)
    assert len(best) > POOL
    assert found == best[:POOL]


async def test_a_tenant_with_few_passages_among_anothers_many_gets_only_its_own(
    runtime, make_credential
):
    crowd, few = await make_credential(), await make_credential()
    await seed(runtime, crowd, documents=60, seed=1)
    mine = await seed(runtime, few, documents=2, seed=2)
    live = await seed(runtime, few, documents=3, seed=3, environment=Environment.LIVE)
    memory = TermMemory(2**24, runtime.sessions)
    found = await ranked(runtime, mine.partition, "the contractor payment", memory=memory)
    assert {chunk_id for chunk_id, _ in found} <= await chunk_ids(runtime, mine.documents)
    assert len(found) >= 15
    found = await ranked(runtime, live.partition, "the contractor payment", memory=memory)
    assert {chunk_id for chunk_id, _ in found} <= await chunk_ids(runtime, live.documents)
    assert len(memory.partitions()) == 2


async def test_project_and_document_filters_apply_before_scoring_so_pages_are_full(
    runtime, credential
):
    seeded = await seed(runtime, credential, documents=40, projects=4)
    memory = TermMemory(2**24, runtime.sessions)
    project = seeded.projects[2]
    found = await ranked(
        runtime, seeded.partition, "contractor", Filters(project_ids=[project]), memory, k=50
    )
    in_project = await chunk_ids(runtime, seeded.documents[2::4])
    assert len(found) == 50 and {chunk_id for chunk_id, _ in found} <= in_project
    wanted = seeded.documents[5:7]
    found = await ranked(
        runtime, seeded.partition, "the contractor", Filters(document_ids=wanted), memory, k=50
    )
    assert found and {chunk_id for chunk_id, _ in found} <= await chunk_ids(runtime, wanted)
    assert found == await ranked(
        runtime, seeded.partition, "the contractor", Filters(document_ids=wanted), k=50
    )


async def test_a_document_added_deleted_moved_or_reindexed_elsewhere_is_seen_by_the_next_search(
    runtime, credential
):
    seeded = await seed(runtime, credential, documents=5, projects=2)
    memory = TermMemory(2**24, runtime.sessions)
    assert not await ranked(runtime, seeded.partition, "zebra", memory=memory)
    assert memory.partitions()
    other = Runtime.create(runtime.settings)  # another process: its own engine and sessions
    try:
        added = await seed(other, credential, documents=1, seed=9, project_ids=seeded.projects)
        async with other.sessions() as session:
            statement = select(DocumentChunk).where(DocumentChunk.document_id == added.documents[0])
            zebra = (await session.exec(statement)).first()
            zebra.index_terms += " zebra"
            await session.commit()
        found = await ranked(runtime, seeded.partition, "arbitration zebra", memory=memory)
        assert found == await ranked(runtime, seeded.partition, "arbitration zebra")
        assert found[0][0] == zebra.id  # the only passage holding "zebra"

        # `strongroom reindex` rewrites a held passage's terms.
        (reindexed, *_) = sorted(await chunk_ids(runtime, [seeded.documents[0]]))
        async with other.sessions() as session:
            await session.exec(
                update(DocumentChunk)
                .where(DocumentChunk.id == reindexed)
                .values(index_terms="quagga quagga")
            )
            await session.commit()
        assert [chunk_id for chunk_id, _ in await ranked(
            runtime, seeded.partition, "quagga", memory=memory
        )] == [reindexed]  # fmt: skip

        async with other.sessions() as session:  # moved to the other project
            for model, column in (
                (Document, Document.id),
                (DocumentChunk, DocumentChunk.document_id),
            ):
                await session.exec(
                    update(model)
                    .where(column == added.documents[0])
                    .values(project_id=seeded.projects[1])
                )
            await session.commit()
        for project, expected in ((seeded.projects[1], [zebra.id]), (seeded.projects[0], [])):
            within = Filters(project_ids=[project])
            moved = await ranked(runtime, seeded.partition, "zebra", within, memory)
            assert [chunk_id for chunk_id, _ in moved] == expected
            assert moved == await ranked(runtime, seeded.partition, "zebra", within)

        async with other.sessions() as session:
            await session.exec(delete(Document).where(Document.id == added.documents[0]))
            await session.commit()
        assert not await ranked(runtime, seeded.partition, "zebra", memory=memory)
    finally:
        await other.close()


async def test_an_update_of_a_passages_terms_bumps_its_documents_passages_version(
    runtime, credential
):
    seeded = await seed(runtime, credential, documents=1, per_document=2)
    async with runtime.sessions() as session:
        document = await session.get(Document, seeded.documents[0])
        version = document.passages_version
        await session.exec(
            update(DocumentChunk)
            .where(DocumentChunk.document_id == seeded.documents[0])
            .values(index_terms="zebra")
        )
        await session.commit()
        await session.refresh(document)
        assert document.passages_version == version + 2  # once per passage changed


async def test_documents_added_one_by_one_and_deleted_keep_few_segments_and_the_same_scores(
    runtime, credential
):
    seeded = await seed(runtime, credential, documents=2, projects=2)
    memory = TermMemory(2**24, runtime.sessions)
    key = (seeded.partition.tenant_id, Environment.TEST.value)
    documents = list(seeded.documents)
    for number in range(30):
        await ranked(runtime, seeded.partition, "payment", memory=memory)
        added = await seed(
            runtime, credential, documents=1, seed=100 + number, project_ids=seeded.projects
        )
        documents += added.documents
        if number % 3 == 2:  # and one in three of the earlier goes
            async with runtime.sessions() as session:
                await session.exec(delete(Document).where(Document.id == documents.pop(0)))
                await session.commit()
    for question in QUESTIONS:
        held = await ranked(runtime, seeded.partition, question, memory=memory)
        assert held == await ranked(runtime, seeded.partition, question)
    held_terms = memory._held[key]
    sizes = [segment.size for segment in held_terms.segments]
    assert len(sizes) <= 6
    assert all(older > MERGE_FACTOR * newer for older, newer in itertools.pairwise(sizes))
    live_rows = len(held_terms.live())
    assert live_rows == 10 * len(documents)
    assert held_terms.rows < 2 * live_rows  # deleted documents' rows are compacted away


async def test_the_memory_bound_holds_and_the_least_recently_searched_tenant_goes_first(
    runtime, make_credential
):
    first, second = await make_credential(), await make_credential()
    one = await seed(runtime, first, documents=20, seed=4)
    two = await seed(runtime, second, documents=20, seed=5)
    probe = TermMemory(2**24, runtime.sessions)
    await ranked(runtime, one.partition, "contractor", memory=probe)
    size = probe.nbytes
    memory = TermMemory(int(size * 1.5), runtime.sessions)
    await ranked(runtime, one.partition, "contractor", memory=memory)
    await ranked(runtime, two.partition, "contractor", memory=memory)
    assert memory.partitions() == [(two.partition.tenant_id, Environment.TEST.value)]
    assert memory.nbytes <= memory.max_bytes


async def test_a_tenant_too_large_for_the_bound_is_searched_from_the_database(runtime, credential):
    seeded = await seed(runtime, credential, documents=20)
    memory = TermMemory(10_000, runtime.sessions)
    for question in QUESTIONS[:3]:
        found = await ranked(runtime, seeded.partition, question, memory=memory)
        assert found and found == await ranked(runtime, seeded.partition, question)
    assert memory.partitions() == [] and memory.nbytes == 0


async def test_a_partition_that_cannot_fit_even_at_its_floor_is_not_read_at_all(
    runtime, credential, monkeypatch
):
    """Issue 28: the bound is decided before building. 200 passages cost at least a row and
    a posting each, more than 10,000 bytes: refused from the counts, no passage read."""
    seeded = await seed(runtime, credential, documents=20)
    memory = TermMemory(10_000, runtime.sessions)

    async def no_read(*_):
        raise AssertionError("passages read for a partition that cannot fit")

    monkeypatch.setattr(memory, "_read", no_read)
    found = await ranked(runtime, seeded.partition, QUESTIONS[0], memory=memory)
    assert found and found == await ranked(runtime, seeded.partition, QUESTIONS[0])
    assert memory.partitions() == [] and memory.nbytes == 0


async def test_postings_that_cannot_fit_are_refused_before_any_is_built(
    runtime, credential, monkeypatch
):
    """Past its floor, a partition's postings are counted text by text and refused before
    the index is built (a first search of 171,000 passages took a process to 2 GB)."""
    seeded = await seed(runtime, credential, documents=20)
    floor = 200 * term_memory.FLOOR_BYTES_PER_PASSAGE
    memory = TermMemory(floor + 1_000, runtime.sessions)

    def no_build(*_):
        raise AssertionError("postings built past the bound")

    monkeypatch.setattr(term_memory, "_index", no_build)
    found = await ranked(runtime, seeded.partition, QUESTIONS[0], memory=memory)
    assert found and found == await ranked(runtime, seeded.partition, QUESTIONS[0])
    assert memory.partitions() == [] and memory.nbytes == 0


async def seed_wide(runtime: Runtime, credential, *, documents: int, per_document: int) -> Seeded:
    """Ready documents whose passages hold about 600 terms each (about 4.5 kB of terms),
    drawn from 60,000: a partition of many megabytes in a few thousand passages."""
    random = np.random.default_rng(11)
    tenant_id, owner_id = credential.tenant.id, credential.user.id
    project = new_project(tenant_id, owner_id, Environment.TEST.value)
    document_rows, chunks = [], []
    for number in range(documents):
        document = ready_document(
            tenant_id, owner_id, Environment.TEST.value, project.id, per_document, f"{number}.txt"
        )
        document_rows.append(document)
        for ordinal in range(per_document):
            terms = "contractor " + " ".join(f"w{term}" for term in random.integers(0, 60_000, 600))
            chunks.append(passage_row(document, ordinal, "The contractor.", terms))
    await store(runtime, [project], document_rows, chunks)
    return Seeded(
        DataPartition(tenant_id, Environment.TEST), [project.id], [row.id for row in document_rows]
    )


async def test_deciding_a_partition_does_not_fit_costs_at_most_about_the_bound(runtime, credential):
    """Issue 44.4: a partition of about 9 MB of terms (2,000 passages: past its floor) and a
    bound of 1 MiB. The decision that it does not fit must not first read or build it all
    (a 32 MiB bound cost 202 MB for 37,476 passages): the peak of what it allocates stays
    under twice the bound."""
    seeded = await seed_wide(runtime, credential, documents=40, per_document=50)
    memory = TermMemory(2**20, runtime.sessions, inline_rows=10**6)  # decided in the search
    key = (seeded.partition.tenant_id, Environment.TEST.value)
    await ranked(runtime, seeded.partition, "contractor")  # a connection, statements compiled
    async with runtime.sessions() as session:
        tracemalloc.start()
        try:
            held = await memory.current(session, key, seeded.partition)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert held is None and memory.partitions() == [] and key in memory._too_large
    assert peak < 2 * memory.max_bytes, f"{peak / 2**20:.1f} MiB allocated to decide"
    found = await ranked(runtime, seeded.partition, "contractor", memory=memory)
    assert found and found == await ranked(runtime, seeded.partition, "contractor")


async def test_deciding_a_partition_does_not_fit_reads_at_most_about_the_bound_of_its_terms(
    runtime, credential, monkeypatch
):
    """Issue 44.4, counted as work: the bytes of terms the decision fetches from the
    database, whichever statement fetches them, are at most about the bound, not the
    partition's (about 9 MB)."""
    seeded = await seed_wide(runtime, credential, documents=40, per_document=50)
    memory = TermMemory(2**20, runtime.sessions, inline_rows=10**6)
    fetched = []
    read = memory._read

    async def counted_read(*arguments):
        rows = await read(*arguments)
        fetched.extend(len(row[-1]) for row in rows)
        return rows

    terms = getattr(term_memory, "_terms", None)

    async def counted_terms(*arguments):
        async with contextlib.aclosing(terms(*arguments)) as inner:
            async for texts in inner:
                fetched.extend(len(text) for text in texts)
                yield texts

    monkeypatch.setattr(memory, "_read", counted_read)
    monkeypatch.setattr(term_memory, "_terms", counted_terms, raising=False)
    found = await ranked(runtime, seeded.partition, "contractor", memory=memory)
    assert found and found == await ranked(runtime, seeded.partition, "contractor")
    assert memory.partitions() == []
    assert 0 < len(fetched) < 2_000 and sum(fetched) < 2 * memory.max_bytes


async def test_a_large_partition_loads_in_the_background_and_the_database_answers_meanwhile(
    runtime, credential
):
    seeded = await seed(runtime, credential, documents=30)
    memory = TermMemory(2**24, runtime.sessions, inline_rows=50)
    question = QUESTIONS[0]
    first = await ranked(runtime, seeded.partition, question, memory=memory)
    assert first == await ranked(runtime, seeded.partition, question)
    await memory.settled()
    assert memory.partitions() and memory.nbytes > 0
    assert await ranked(runtime, seeded.partition, question, memory=memory) == first


async def test_the_service_holds_terms_unless_their_memory_is_zero(runtime):
    assert runtime.terms is not None and runtime.terms.max_bytes == 256 * 2**20
    switched_off = Runtime.create(runtime.settings.model_copy(update={"search_term_memory_mb": 0}))
    try:
        assert switched_off.terms is None
    finally:
        await switched_off.close()


async def test_every_search_counts_where_its_words_were_scored(runtime, credential):
    seeded = await seed(runtime, credential, documents=2)

    def count(source: str) -> float:
        labels = {"half": "terms", "source": source}
        return REGISTRY.get_sample_value("strongroom_search_halves_total", labels) or 0.0

    held, database = count("held"), count("database")
    await ranked(runtime, seeded.partition, "payment", memory=TermMemory(2**24, runtime.sessions))
    await ranked(runtime, seeded.partition, "payment")
    assert (count("held"), count("database")) == (held + 1, database + 1)


async def test_a_search_cancelled_during_its_refresh_leaves_nothing_half_held(
    runtime, credential, monkeypatch
):
    seeded = await seed(runtime, credential, documents=5)
    memory = TermMemory(2**24, runtime.sessions)
    inside, release = threading.Event(), threading.Event()
    index = term_memory._index

    def slow_index(*arguments):
        inside.set()
        release.wait(10)
        return index(*arguments)

    monkeypatch.setattr(term_memory, "EXECUTOR_TEXTS", 0)  # indexed in a thread, awaited
    monkeypatch.setattr(term_memory, "_index", slow_index)
    search = asyncio.create_task(ranked(runtime, seeded.partition, "payment", memory=memory))
    await asyncio.get_running_loop().run_in_executor(None, inside.wait, 10)
    search.cancel()  # the client went away while its search was refreshing the partition
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await search
    monkeypatch.setattr(term_memory, "_index", index)
    for question in QUESTIONS[:3]:
        held = await ranked(runtime, seeded.partition, question, memory=memory)
        assert held and held == await ranked(runtime, seeded.partition, question)
    assert memory.partitions()


async def test_a_refresh_that_fails_leaves_the_search_to_the_database_until_a_change(
    runtime, credential, monkeypatch
):
    seeded = await seed(runtime, credential, documents=3)
    memory = TermMemory(2**24, runtime.sessions)

    def broken(*arguments):
        raise MemoryError("no room for the postings")

    monkeypatch.setattr(term_memory, "_index", broken)
    found = await ranked(runtime, seeded.partition, "payment", memory=memory)
    assert found and found == await ranked(runtime, seeded.partition, "payment")
    assert memory.partitions() == []
    monkeypatch.undo()
    assert await ranked(runtime, seeded.partition, "payment", memory=memory) == found
    assert memory.partitions() == []  # not tried again at the same generation
    await seed(runtime, credential, documents=1, seed=7, project_ids=seeded.projects)
    found = await ranked(runtime, seeded.partition, "payment", memory=memory)
    assert found == await ranked(runtime, seeded.partition, "payment")
    assert memory.partitions()  # held again after the change


async def test_reindexing_every_passage_of_a_partition_that_fits_keeps_it_held(runtime, credential):
    # More documents than a refresh reads at once (200): the first batch comes back while
    # the rows of the rest's old versions are still held.
    seeded = await seed(runtime, credential, documents=250, per_document=2)
    probe = TermMemory(2**24, runtime.sessions)
    await ranked(runtime, seeded.partition, "payment", memory=probe)
    memory = TermMemory(int(probe.nbytes * 1.2), runtime.sessions)
    await ranked(runtime, seeded.partition, "payment", memory=memory)
    assert memory.partitions()
    async with runtime.sessions() as session:  # strongroom reindex rewrites every passage
        rows = (await session.exec(select(DocumentChunk.id, DocumentChunk.index_terms))).all()
        for chunk_id, terms in rows:
            await session.exec(
                update(DocumentChunk)
                .where(DocumentChunk.id == chunk_id)
                .values(index_terms=f"{terms} reindexed")
            )
        await session.commit()
    for question in ("reindexed payment", *QUESTIONS[:2]):
        held = await ranked(runtime, seeded.partition, question, memory=memory)
        assert held == (await exact(runtime, seeded.documents, question))[:POOL]
    assert memory.partitions() and memory.nbytes <= memory.max_bytes


async def test_two_first_searches_at_once_start_one_background_load(runtime, credential):
    seeded = await seed(runtime, credential, documents=10)
    memory = TermMemory(2**24, runtime.sessions, inline_rows=20)
    loads = []
    load = memory._load

    async def counted(*arguments):
        loads.append(arguments)
        await load(*arguments)

    memory._load = counted
    await asyncio.gather(
        *(ranked(runtime, seeded.partition, question, memory=memory) for question in QUESTIONS)
    )
    await memory.settled()
    assert len(loads) == 1 and not memory._loading and memory.partitions()
