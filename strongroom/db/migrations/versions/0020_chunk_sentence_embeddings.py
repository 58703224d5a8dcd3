"""Each passage may carry the vectors of its candidate sentences, made at ingestion by the
model of its `embedding_model` (issue 40, strongroom.retrieval.sentence_vectors): one blob of
keys and float16 values, so that an answer chosen by meaning embeds only the question at
question time. NULL until embedded (`strongroom reembed` fills it for passages stored before).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29 08:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN on both backends, as 0011: SQLite must not rebuild document_chunks (its
    # FTS5 triggers and rowids belong to it); a nullable column without a default is only a
    # catalogue change on PostgreSQL (no table rewrite), with or without pgvector's column.
    op.add_column(
        "document_chunks", sa.Column("sentence_embeddings", sa.LargeBinary(), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("document_chunks", "sentence_embeddings")
