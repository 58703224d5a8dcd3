"""The corpus: documents (D42), their passages (D43) and how often a partition's passages
changed (issue 16), all partitioned by tenant and environment (D13). The tables every stage of a
document's life shares: the vault accepts documents, strongroom.ingest's passages are written
here, strongroom.retrieval reads them."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, LargeBinary, Text
from sqlalchemy.orm import deferred
from sqlmodel import Field, SQLModel

from strongroom.corpus.kinds import DocumentMeaning, DocumentStatus, DocumentType
from strongroom.db.types import UTCDateTime, utcnow

# Defined in strongroom.corpus.kinds.
__all__ = ["DocumentMeaning", "DocumentStatus", "DocumentType"]


class Document(SQLModel, table=True):
    """An uploaded file (D42); its bytes live in the blob store under `blob_key`."""

    __tablename__ = "documents"
    __table_args__ = (
        Index(
            "ix_documents_scope_project_created",
            "tenant_id",
            "environment",
            "project_id",
            "created_at",
            "id",
        ),
    )

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    environment: str = Field(max_length=8)
    project_id: uuid.UUID = Field(foreign_key="projects.id", ondelete="CASCADE")
    owner_id: uuid.UUID = Field(foreign_key="users.id")
    name: str = Field(max_length=255)
    document_type: str = Field(max_length=16)
    content_type: str = Field(max_length=128)
    size_bytes: int = Field(sa_type=BigInteger)
    sha256: str = Field(max_length=64)
    page_count: int | None = Field(default=None)
    # Of its pages, those read by OCR and those that gave no text (issue 51, migration 0024).
    ocr_page_count: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    empty_page_count: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # How many passages ingestion stored (written with them): search sums it over the
    # documents it covers for BM25's corpus size, instead of counting passages per query.
    passage_count: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # Bumped whenever its passages' terms or vectors change (a trigger, and ingestion;
    # migrations 0014, 0015): processes holding them in memory (strongroom.retrieval.held) reload
    # them. The column keeps its first name, `vectors_version`, so that pods of the release
    # before 0015 keep working while a rolling upgrade replaces them.
    passages_version: int = Field(
        default=0, sa_column_kwargs={"name": "vectors_version", "server_default": "0"}
    )
    status: str = Field(default=DocumentStatus.PROCESSING.value, max_length=16)
    # Whether its passages' vectors are made (issue 50, migration 0023): a DocumentMeaning.
    meaning: str = Field(
        default=DocumentMeaning.OFF.value, max_length=16, sa_column_kwargs={"server_default": "off"}
    )
    # Why ingestion failed (a problem), when `status` is failed.
    error: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    blob_key: str = Field(max_length=255)
    ingestion_job_id: uuid.UUID
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


# The vectors of a passage's sentences (issue 40, migration 0020): deferred with raiseload, so
# a query loading whole passages (a search's hits, a workflow's sources) never reads these
# blobs (tens of kB a passage); code that wants them selects the column itself.
_SENTENCE_EMBEDDINGS = Column("sentence_embeddings", LargeBinary, nullable=True)


class DocumentChunk(SQLModel, table=True):
    """A passage of a document with the page it is on: the unit of search (D43).

    The full-text index is not declared here: PostgreSQL has a generated `search_vector`
    column (of `index_terms`) with a GIN index, SQLite an FTS5 table kept by triggers
    (migrations 0004, 0009)."""

    __tablename__ = "document_chunks"
    __table_args__ = (
        Index("ix_document_chunks_document", "document_id", "ordinal"),
        Index("ix_document_chunks_scope", "tenant_id", "environment", "project_id"),
    )
    __mapper_args__ = {
        "properties": {"sentence_embeddings": deferred(_SENTENCE_EMBEDDINGS, raiseload=True)}
    }

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    document_id: uuid.UUID = Field(foreign_key="documents.id", ondelete="CASCADE")
    tenant_id: uuid.UUID
    environment: str = Field(max_length=8)
    project_id: uuid.UUID
    ordinal: int
    page_number: int
    content: str = Field(sa_type=Text)
    # The passage's terms as strongroom.text.analysis computes them, which the full-text
    # index of both backends indexes as they are (migration 0009).
    index_terms: str = Field(default="", sa_type=Text)
    # The passage's embedding as float32 bytes, and the model that made it (issue 16,
    # migration 0011); None until embedded, or when no embeddings provider is configured.
    embedding: bytes | None = Field(default=None, sa_type=LargeBinary)
    embedding_model: str | None = Field(default=None, max_length=200)
    # Its candidate sentences' vectors by the same model (strongroom.retrieval.sentence_vectors
    # blob: keys, then float16 values); None until embedded, or with no provider.
    sentence_embeddings: bytes | None = Field(default=None, sa_column=_SENTENCE_EMBEDDINGS)


class VaultGeneration(SQLModel, table=True):
    """How many times a partition's ready documents or their passages changed (issue 16): a
    trigger on `documents` bumps it (migrations 0014, 0015) in the transaction of the change,
    so a process holding passages (strongroom.retrieval.held) checks one row per search instead
    of listing the documents."""

    __tablename__ = "vault_generations"

    tenant_id: uuid.UUID = Field(primary_key=True)
    environment: str = Field(primary_key=True, max_length=8)
    generation: int = Field(default=0, sa_type=BigInteger)
