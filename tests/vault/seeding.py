"""Rows of a vault written straight to the database (no upload, no ingestion job): projects
and ready documents, for the tests that need many passages with terms or vectors they
choose (held terms, held vectors, hybrid search)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from strongroom.corpus.models import Document, DocumentChunk, DocumentStatus
from strongroom.runtime import Runtime
from strongroom.tenants.partition import DataPartition
from strongroom.vault.models import Project


@dataclass
class Seeded:
    """What a test seeded: the partition, its projects and its documents."""

    partition: DataPartition
    projects: list[uuid.UUID]
    documents: list[uuid.UUID]


def new_project(
    tenant_id: uuid.UUID, owner_id: uuid.UUID, environment: str, name: str = "Harbour Tower"
) -> Project:
    return Project(
        tenant_id=tenant_id,
        environment=environment,
        owner_id=owner_id,
        name=name,
        project_type="commercial",
    )


def ready_document(
    tenant_id: uuid.UUID,
    owner_id: uuid.UUID,
    environment: str,
    project_id: uuid.UUID,
    passages: int,
    name: str = "contract.txt",
) -> Document:
    """A document whose ingestion finished with `passages` passages (written apart)."""
    return Document(
        tenant_id=tenant_id,
        environment=environment,
        project_id=project_id,
        owner_id=owner_id,
        name=name,
        document_type="text",
        content_type="text/plain; charset=utf-8",
        size_bytes=1,
        sha256="0" * 64,
        passage_count=passages,
        status=DocumentStatus.READY.value,
        blob_key=f"test/{uuid.uuid4()}",
        ingestion_job_id=uuid.uuid4(),
    )


def passage_row(
    document: Document, ordinal: int, content: str, index_terms: str, **columns
) -> DocumentChunk:
    """The document's passage number `ordinal` (page 1), with `columns` (a vector...)."""
    return DocumentChunk(
        document_id=document.id,
        tenant_id=document.tenant_id,
        environment=document.environment,
        project_id=document.project_id,
        ordinal=ordinal,
        page_number=1,
        content=content,
        index_terms=index_terms,
        **columns,
    )


async def store(
    runtime: Runtime,
    projects: list[Project],
    documents: list[Document],
    passages: list[DocumentChunk],
) -> None:
    """Write them, each kind after those it refers to."""
    async with runtime.sessions() as session:
        for rows in (projects, documents, passages):
            session.add_all(rows)
            await session.flush()
        await session.commit()
