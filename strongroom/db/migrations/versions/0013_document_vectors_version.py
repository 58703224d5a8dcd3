"""Each document counts the changes to its passages' vectors (`vectors_version`), so a
process holding them in memory (strongroom.vault.vector_memory, issue 16) sees on its next
search that they changed, whichever process changed them.

A trigger bumps it whenever a passage's `embedding` or `embedding_model` is updated
(`strongroom reembed`, a `reembedding` job, any SQL); ingestion, which replaces a document's
passages, bumps it in the same transaction (a per-row insert trigger would update the
document row once per passage).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_POSTGRES_FUNCTION = """
CREATE FUNCTION document_chunks_vectors_changed() RETURNS trigger AS $$
BEGIN
    UPDATE documents SET vectors_version = vectors_version + 1 WHERE id = NEW.document_id;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""

_POSTGRES_TRIGGER = """
CREATE TRIGGER document_chunks_vectors_changed
AFTER UPDATE OF embedding, embedding_model ON document_chunks
FOR EACH ROW
WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding
      OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model)
EXECUTE FUNCTION document_chunks_vectors_changed()
"""

_SQLITE_TRIGGER = """
CREATE TRIGGER document_chunks_vectors_changed
AFTER UPDATE OF embedding, embedding_model ON document_chunks
WHEN OLD.embedding IS NOT NEW.embedding OR OLD.embedding_model IS NOT NEW.embedding_model
BEGIN
    UPDATE documents SET vectors_version = vectors_version + 1 WHERE id = NEW.document_id;
END
"""


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild): documents keeps its rows and references as they are.
    op.add_column(
        "documents",
        sa.Column("vectors_version", sa.Integer(), nullable=False, server_default="0"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_POSTGRES_FUNCTION)
        op.execute(_POSTGRES_TRIGGER)
    else:
        op.execute(_SQLITE_TRIGGER)


def downgrade() -> None:
    op.execute(
        "DROP TRIGGER IF EXISTS document_chunks_vectors_changed"
        + (" ON document_chunks" if op.get_bind().dialect.name == "postgresql" else "")
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS document_chunks_vectors_changed()")
    op.drop_column("documents", "vectors_version")
