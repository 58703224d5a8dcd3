"""A document says whether its meaning is complete (issue 50): `meaning` is `pending` while
its vectors are made by their own job after it is `ready`, then `complete`, or `failed` (the
embeddings provider failed: searched by words until `strongroom reembed`), or `off` (no
provider when it was read).

Documents from before: `complete` where every passage holds a vector and its sentence
vectors (as ingestion made them when a provider was configured), else `off`.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COMPLETE = """
UPDATE documents SET meaning = 'complete'
WHERE EXISTS (SELECT 1 FROM document_chunks c WHERE c.document_id = documents.id)
  AND NOT EXISTS (
    SELECT 1 FROM document_chunks c
    WHERE c.document_id = documents.id
      AND (c.embedding_model IS NULL OR c.sentence_embeddings IS NULL)
  )
"""


def upgrade() -> None:
    # A constant default: a catalogue change on PostgreSQL 11+, a plain ADD COLUMN on SQLite
    # (no rebuild of a table with triggers).
    op.add_column(
        "documents",
        sa.Column("meaning", sa.String(length=16), nullable=False, server_default="off"),
    )
    op.execute(_COMPLETE)


def downgrade() -> None:
    op.drop_column("documents", "meaning")
