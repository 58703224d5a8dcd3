"""Where PostgreSQL has the pgvector extension, passage vectors move into a `vector` column
that HNSW indexes serve (issue 16, strongroom.retrieval.vector_pgvector); elsewhere (SQLite,
PostgreSQL without the extension) nothing changes and vectors stay float32 bytes in
`embedding`, ranked in process.

With the extension: `CREATE EXTENSION vector` (if this role may: pgvector is not a trusted
extension, so a superuser may have to create it first), an untyped `embedding_vector vector`
column with statistics of its vectors' dimensions (PostgreSQL 14 or later), every stored
vector moved into it from `embedding` (then NULL: one copy), and one partial HNSW index per
(model, dimensions) found. Downgrade moves them back into `embedding`
and drops the column with its indexes; the extension stays (other schemas may use it).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 12:40:00
"""

import hashlib
import logging
from collections.abc import Sequence

import numpy as np
import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("alembic.runtime.migration")
BATCH = 1000
DIMENSION_STATISTICS = "document_chunks_embedding_dimensions"


def _has_column(bind) -> bool:
    return (
        bind.execute(
            sa.text(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'document_chunks' AND column_name = 'embedding_vector'"
            )
        ).first()
        is not None
    )


def _create_extension(bind) -> bool:
    """Whether the `vector` extension is (now) installed in this database."""
    if bind.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")).first():
        return True
    if not bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    ).first():
        log.info("no pgvector extension: passage vectors stay float32 bytes, ranked in process")
        return False
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
    except sa.exc.DBAPIError as error:
        log.warning(
            "pgvector is available but this role cannot create it (%s): vectors stay float32 "
            "bytes, ranked in process; see docs/embeddings.md",
            type(error.orig).__name__,
        )
        return False
    return True


def _as_text(blob: bytes) -> str:
    return "[" + ",".join(map(repr, np.frombuffer(blob, dtype="<f4").tolist())) + "]"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql" or _has_column(bind) or not _create_extension(bind):
        return
    op.execute("ALTER TABLE document_chunks ADD COLUMN embedding_vector vector")
    # Statistics of the vectors' dimensions, which the search's `vector_dims(...) = D` (the
    # index's predicate) needs: without them the planner guesses 0.5% of rows, then plans to
    # sort everything the index scan returns rather than stop at its LIMIT.
    op.execute(
        f"CREATE STATISTICS {DIMENSION_STATISTICS} ON (vector_dims(embedding_vector)) "
        "FROM document_chunks"
    )
    move = sa.text(
        "UPDATE document_chunks SET embedding_vector = CAST(:vector AS vector), embedding = NULL "
        "WHERE id = :id"
    )
    while True:
        rows = bind.execute(
            sa.text(
                "SELECT id, embedding FROM document_chunks WHERE embedding IS NOT NULL "
                "ORDER BY id LIMIT :batch"
            ),
            {"batch": BATCH},
        ).all()
        if not rows:
            break
        bind.execute(move, [{"id": id_, "vector": _as_text(blob)} for id_, blob in rows])
    op.execute("ANALYZE document_chunks")
    models = bind.execute(
        sa.text(
            "SELECT DISTINCT embedding_model, vector_dims(embedding_vector) FROM document_chunks "
            "WHERE embedding_vector IS NOT NULL"
        )
    ).all()
    for model, dimensions in models:
        # As strongroom.retrieval.vector_pgvector.ensure_index names and builds it.
        name = (
            f"document_chunks_hnsw_{hashlib.sha256(model.encode()).hexdigest()[:12]}_{dimensions}"
        )
        quoted = "'" + model.replace("'", "''") + "'"
        op.execute(
            f"CREATE INDEX {name} ON document_chunks USING hnsw "
            f"((embedding_vector::vector({int(dimensions)})) vector_cosine_ops) "
            f"WHERE embedding_model = {quoted} "
            f"AND vector_dims(embedding_vector) = {int(dimensions)}"
        )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql" or not _has_column(bind):
        return
    back = sa.text(
        "UPDATE document_chunks SET embedding = :blob, embedding_vector = NULL WHERE id = :id"
    )
    while True:
        rows = bind.execute(
            sa.text(
                "SELECT id, embedding_vector::text FROM document_chunks "
                "WHERE embedding_vector IS NOT NULL ORDER BY id LIMIT :batch"
            ),
            {"batch": BATCH},
        ).all()
        if not rows:
            break
        bind.execute(
            back,
            [
                {"id": id_, "blob": np.array(vector[1:-1].split(","), dtype="<f4").tobytes()}
                for id_, vector in rows
            ],
        )
    op.execute(f"DROP STATISTICS IF EXISTS {DIMENSION_STATISTICS}")
    op.execute("ALTER TABLE document_chunks DROP COLUMN embedding_vector")
