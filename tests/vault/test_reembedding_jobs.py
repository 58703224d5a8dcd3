"""`strongroom reembed --queue` and the `reembedding` job (issue 16), on a database of the
test's own (the queue picks documents across every tenant, so the shared test database
would hand it every other test's documents). The embeddings upstream is the FAKE of
tests/embeddings (no embedding model can run as a service here)."""

from __future__ import annotations

import uuid

from sqlmodel import select

from strongroom.corpus.models import Document, DocumentChunk, DocumentStatus
from strongroom.jobs.models import Job, JobKind, JobStatus
from strongroom.jobs.runner import run_job
from strongroom.runtime import Runtime
from strongroom.vault.models import Project
from strongroom.vault.reembedding import queue_reembedding
from tests.conftest import issue_credential, make_settings, migrated
from tests.embeddings.fake_upstream import FakeEmbeddingsUpstream


async def documents_with_passages(runtime: Runtime, model: str) -> tuple[uuid.UUID, uuid.UUID]:
    """Two ready documents of one tenant: the first's passages have no vector, the second's
    have one of `model` (and their sentence vectors: none, as such short passages have)."""
    credential = await issue_credential(runtime)
    tenant, user = credential.tenant, credential.user
    async with runtime.sessions() as session:
        project = Project(
            tenant_id=tenant.id, environment="test", owner_id=user.id, name="p",
            project_type="commercial",
        )  # fmt: skip
        session.add(project)
        await session.flush()  # no ORM relationships: rows go in the order flushed
        ids = []
        for name, vector in (("stale.txt", None), ("fresh.txt", b"\0" * 104)):
            document = Document(
                tenant_id=tenant.id, environment="test", project_id=project.id,
                owner_id=user.id, name=name, document_type="text", content_type="text/plain",
                size_bytes=1, sha256="0" * 64, blob_key=name, ingestion_job_id=uuid.uuid4(),
                status=DocumentStatus.READY.value,
            )  # fmt: skip
            session.add(document)
            await session.flush()
            for ordinal in range(2):
                session.add(
                    DocumentChunk(
                        document_id=document.id, tenant_id=tenant.id, environment="test",
                        project_id=project.id, ordinal=ordinal, page_number=1,
                        content=f"passage {ordinal} of {name}", embedding=vector,
                        embedding_model=model if vector else None,
                        sentence_embeddings=b"\0\0\0\0" if vector else None,  # no sentences
                    )
                )  # fmt: skip
            ids.append(document.id)
        await session.commit()
    return ids[0], ids[1]


async def test_reembed_queue_makes_one_job_per_stale_document_which_embeds_it(tmp_path):
    async with FakeEmbeddingsUpstream() as upstream:
        settings = await migrated(
            make_settings(
                f"sqlite+aiosqlite:///{tmp_path / 'own.db'}",
                tmp_path,
                embeddings_provider="openai",
                embeddings_openai_base_url=upstream.base_url,
                embeddings_openai_model="fake-embed",
            )
        )
        runtime = Runtime.create(settings)
        try:
            stale, fresh = await documents_with_passages(runtime, "openai:fake-embed")
            assert await queue_reembedding(runtime) == 1
            async with runtime.sessions() as session:
                [job] = (await session.exec(select(Job))).all()
            assert job.kind == JobKind.REEMBEDDING.value and job.subject_id == stale
            await run_job(runtime, job.id)
            async with runtime.sessions() as session:
                assert (await session.get(Job, job.id)).status == JobStatus.SUCCEEDED.value
                chunks = (await session.exec(select(DocumentChunk))).all()
        finally:
            await runtime.close()
    by_document = {chunk.document_id: chunk for chunk in chunks}
    assert by_document[stale].embedding_model == "openai:fake-embed"
    assert len(by_document[stale].embedding) == 26 * 4  # the fake's 26 letter counts
    assert all(chunk.embedding is not None for chunk in chunks)
    # The fresh document was not embedded again; the stale one's piece is one call, each text
    # once (each passage here is one sentence: its passage and sentence vectors are one run).
    sent = [body["input"] for _, body in upstream.requests]
    assert sent == [["passage 0 of stale.txt", "passage 1 of stale.txt"]]
    assert fresh in by_document
