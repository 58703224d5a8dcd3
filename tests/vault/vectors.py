"""Passages with chosen vectors for the tests of search by meaning (issue 16): one tenant's
projects and documents inserted with SQL (no ingestion job, no model), and numpy's exact
ranking of them to compare the database's with."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from sqlalchemy import insert, text

from strongroom.billing.accounts import create_tenant
from strongroom.jobs.models import Job
from strongroom.jobs.runner import JobContext, run_now
from strongroom.retrieval.filters import Filters
from strongroom.retrieval.search import _scope
from strongroom.retrieval.semantic import Semantic, vector_ranking
from strongroom.retrieval.vectors import VectorStore
from strongroom.runtime import Runtime
from strongroom.tenants.models import Tenant
from strongroom.tenants.partition import DataPartition, Environment
from strongroom.tenants.service import ensure_user
from strongroom.vault.ingestion import ingest
from tests.vault.seeding import new_project, ready_document

DIMENSIONS = 32
MODEL = f"test:random-{DIMENSIONS}"


class ChosenQuestion:
    """An embeddings provider whose every text's vector is `question` (set by the test)."""

    model = MODEL
    answer_floor = 0.5  # the protocol's; these tests choose no answer

    def __init__(self) -> None:
        self.question = unit(np.random.default_rng(0).standard_normal(DIMENSIONS))

    async def embed(self, texts) -> np.ndarray:
        return np.tile(self.question, (len(texts), 1)).astype(np.float32)


def unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


class Tenancy:
    """One tenant's projects and documents, filled with passages that carry given vectors."""

    def __init__(self, runtime: Runtime, tenant: Tenant, user_id: uuid.UUID) -> None:
        self.runtime, self.tenant, self.user_id = runtime, tenant, user_id
        self.vectors: dict[uuid.UUID, np.ndarray] = {}
        self.project_of: dict[uuid.UUID, uuid.UUID] = {}
        self.document_of: dict[uuid.UUID, uuid.UUID] = {}

    @classmethod
    async def create(cls, runtime: Runtime) -> Tenancy:
        async with runtime.sessions() as session:
            tenant = await create_tenant(session, f"pgvector-{uuid.uuid4().hex[:8]}")
            user = await ensure_user(session, tenant, "owner@example.com")
            await session.commit()
            return cls(runtime, tenant, user.id)

    @property
    def partition(self) -> DataPartition:
        return DataPartition(self.tenant.id, Environment.TEST)

    async def document(
        self,
        vectors: np.ndarray,
        project_id: uuid.UUID | None = None,
        store: VectorStore | None = None,
    ):
        """A ready document of one passage per vector, in a new project unless given, its
        vectors written as `store` says (by default, as the database's VectorStore does);
        returns (project id, document id)."""
        async with self.runtime.sessions() as session:
            if project_id is None:
                project = new_project(self.tenant.id, self.user_id, "test")
                session.add(project)
                await session.flush()  # before the document that refers to it
                project_id = project.id
            document = ready_document(
                self.tenant.id, self.user_id, "test", project_id, len(vectors)
            )
            session.add(document)
            await session.commit()
            connection = await session.connection()
            store = store or await VectorStore.of(connection)
            rows = []
            for ordinal, vector in enumerate(vectors):
                chunk_id = uuid.uuid4()
                self.vectors[chunk_id] = vector
                self.project_of[chunk_id], self.document_of[chunk_id] = project_id, document.id
                rows.append(
                    {
                        "id": chunk_id, "document_id": document.id, "tenant_id": self.tenant.id,
                        "environment": "test", "project_id": project_id, "ordinal": ordinal,
                        "page_number": 1, "content": f"passage {ordinal}",
                        "index_terms": "passage",
                    } | store.values(vector, MODEL)
                )  # fmt: skip
            await connection.execute(insert(store.table), rows)
            await session.commit()
        await store.indexed(self.runtime.engine, MODEL, DIMENSIONS)
        return project_id, document.id

    def exact(self, question: np.ndarray, among=None) -> list[uuid.UUID]:
        """The passages' ids by cosine to `question`, best first, ties by id: numpy's."""
        ids = [chunk_id for chunk_id in self.vectors if among is None or chunk_id in among]
        cosines = np.stack([self.vectors[chunk_id] for chunk_id in ids]) @ question
        return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-cosines[i], ids[i]))]

    async def nearest(self, provider, filters=None, settings: str = "") -> list[uuid.UUID]:
        """The ids search's vector half returns, best first. `settings`: planner settings
        for this transaction (to make the planner take the HNSW index on a small table)."""
        async with self.runtime.sessions() as session:
            if settings:
                await session.exec(text(settings))
            ranked = await vector_ranking(
                session, Semantic(provider),
                lambda s: _scope(s, self.partition, filters or Filters()),
                "any question", [], self.partition, filters or Filters(),
            )  # fmt: skip
        return [chunk_id for chunk_id, _ in ranked]


def random_unit(count: int, seed: int) -> np.ndarray:
    return unit(np.random.default_rng(seed).standard_normal((count, DIMENSIONS)))


class HeldQueue:
    """A job queue that keeps the ids it is given instead of running them (not a mock of
    anything missing here: a seam, so that a test runs the job itself, in this process)."""

    def __init__(self) -> None:
        self.queued: list[uuid.UUID] = []

    async def enqueue(self, job_id: uuid.UUID, delay_seconds: float = 0.0, priority: int = 0):
        self.queued.append(job_id)
        return True


async def ingest_here(runtime: Runtime, job: Job) -> None:
    """The ingestion `job`, then its document's vectors' job (issue 50), both run in this
    process with the runtime's provider (on PostgreSQL the suite's worker process has none):
    the vectors' job is kept from the runtime's queue, so that no other runner takes it."""
    held = HeldQueue()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "jobs", held)
        await ingest(JobContext(runtime, job))
    for job_id in held.queued:
        await run_now(runtime, job_id)
