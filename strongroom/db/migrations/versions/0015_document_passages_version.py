"""Passage terms held in the process too (strongroom.vault.term_memory, issue 16): a change
of a passage's `index_terms` (`strongroom reindex`, any SQL) must reach the processes
holding them, as a change of its vector already does (migration 0014). So the document's
counter counts changes to its passages' terms or vectors, and is named for it:
`documents.vectors_version` becomes `passages_version`, and the trigger bumping it fires on
updates of `index_terms` as well as of `embedding` and `embedding_model`.

The generation triggers on `documents` (0014) follow the renamed column: PostgreSQL keeps
column numbers in a trigger, SQLite's RENAME COLUMN rewrites the triggers naming it.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 15:20:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_POSTGRES_FUNCTION = """
CREATE FUNCTION document_chunks_passages_changed() RETURNS trigger AS $$
BEGIN
    UPDATE documents SET passages_version = passages_version + 1 WHERE id = NEW.document_id;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""

_POSTGRES_TRIGGER = """
CREATE TRIGGER document_chunks_passages_changed
AFTER UPDATE OF index_terms, embedding, embedding_model ON document_chunks
FOR EACH ROW
WHEN (OLD.index_terms IS DISTINCT FROM NEW.index_terms
      OR OLD.embedding IS DISTINCT FROM NEW.embedding
      OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model)
EXECUTE FUNCTION document_chunks_passages_changed()
"""

_SQLITE_TRIGGER = """
CREATE TRIGGER document_chunks_passages_changed
AFTER UPDATE OF index_terms, embedding, embedding_model ON document_chunks
WHEN OLD.index_terms IS NOT NEW.index_terms OR OLD.embedding IS NOT NEW.embedding
     OR OLD.embedding_model IS NOT NEW.embedding_model
BEGIN
    UPDATE documents SET passages_version = passages_version + 1 WHERE id = NEW.document_id;
END
"""

# 0014's, to put back on downgrade.
_POSTGRES_OLD_FUNCTION = """
CREATE FUNCTION document_chunks_vectors_changed() RETURNS trigger AS $$
BEGIN
    UPDATE documents SET vectors_version = vectors_version + 1 WHERE id = NEW.document_id;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""

_POSTGRES_OLD_TRIGGER = """
CREATE TRIGGER document_chunks_vectors_changed
AFTER UPDATE OF embedding, embedding_model ON document_chunks
FOR EACH ROW
WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding
      OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model)
EXECUTE FUNCTION document_chunks_vectors_changed()
"""

_SQLITE_OLD_TRIGGER = """
CREATE TRIGGER document_chunks_vectors_changed
AFTER UPDATE OF embedding, embedding_model ON document_chunks
WHEN OLD.embedding IS NOT NEW.embedding OR OLD.embedding_model IS NOT NEW.embedding_model
BEGIN
    UPDATE documents SET vectors_version = vectors_version + 1 WHERE id = NEW.document_id;
END
"""


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.execute(
        "DROP TRIGGER document_chunks_vectors_changed" + (" ON document_chunks" if postgres else "")
    )
    if postgres:
        op.execute("DROP FUNCTION document_chunks_vectors_changed()")
    op.execute("ALTER TABLE documents RENAME COLUMN vectors_version TO passages_version")
    if postgres:
        op.execute(_POSTGRES_FUNCTION)
        op.execute(_POSTGRES_TRIGGER)
    else:
        op.execute(_SQLITE_TRIGGER)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.execute(
        "DROP TRIGGER document_chunks_passages_changed"
        + (" ON document_chunks" if postgres else "")
    )
    if postgres:
        op.execute("DROP FUNCTION document_chunks_passages_changed()")
    op.execute("ALTER TABLE documents RENAME COLUMN passages_version TO vectors_version")
    if postgres:
        op.execute(_POSTGRES_OLD_FUNCTION)
        op.execute(_POSTGRES_OLD_TRIGGER)
    else:
        op.execute(_SQLITE_OLD_TRIGGER)
