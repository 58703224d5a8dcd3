"""Passage terms held in the process too (strongroom.retrieval.term_memory, issue 16): a change
of a passage's `index_terms` (`strongroom reindex`, any SQL) must reach the processes
holding them, as a change of its vector already does (migration 0014). So the document's
counter counts changes to its passages' terms or vectors: the trigger bumping
`documents.vectors_version` fires on updates of `index_terms` as well as of `embedding` and
`embedding_model`, and is named for it.

The column keeps its name (the model calls it `passages_version`): migrations run while the
previous release's pods still serve (docs/deploy.md), and those select and update
`vectors_version`; a rename would fail them until they are replaced.

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
    UPDATE documents SET vectors_version = vectors_version + 1 WHERE id = NEW.document_id;
END
"""

# 0014's, put back on downgrade.
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
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER document_chunks_vectors_changed ON document_chunks")
        # The function (bump the document's counter) stays; only its name follows the trigger.
        op.execute(
            "ALTER FUNCTION document_chunks_vectors_changed() "
            "RENAME TO document_chunks_passages_changed"
        )
        op.execute(_POSTGRES_TRIGGER)
    else:
        op.execute("DROP TRIGGER document_chunks_vectors_changed")
        op.execute(_SQLITE_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER document_chunks_passages_changed ON document_chunks")
        op.execute(
            "ALTER FUNCTION document_chunks_passages_changed() "
            "RENAME TO document_chunks_vectors_changed"
        )
        op.execute(_POSTGRES_OLD_TRIGGER)
    else:
        op.execute("DROP TRIGGER document_chunks_passages_changed")
        op.execute(_SQLITE_OLD_TRIGGER)
