"""Rows of a vault written straight to the database (no upload, no ingestion job): projects
and ready documents, for the tests that need many passages with terms or vectors they
choose (held terms, held vectors, hybrid search)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from strongroom.tenants.partition import DataPartition
from strongroom.vault.models import Document, DocumentStatus, Project


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
