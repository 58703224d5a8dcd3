"""What a process holding passage vectors in memory (strongroom.retrieval.vector_memory, issue
16) needs to see on its next search that they changed, whichever process changed them:

- `documents.vectors_version` counts the changes to a document's passages' vectors: a
  trigger bumps it whenever a passage's `embedding` or `embedding_model` is updated
  (`strongroom reembed`, a `reembedding` job, any SQL); ingestion, which replaces a
  document's passages, bumps it in the same transaction (a per-row insert trigger would
  update the document row once per passage).
- `vault_generations` counts, per tenant and environment, the changes to its documents
  (added, deleted, status, project, `vectors_version`), bumped by triggers on `documents`:
  one row read per search tells whether anything changed.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
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


_POSTGRES_GENERATION_FUNCTION = """
CREATE FUNCTION documents_changed() RETURNS trigger AS $$
DECLARE
    changed documents%ROWTYPE;
BEGIN
    IF TG_OP = 'DELETE' THEN
        changed := OLD;
    ELSE
        changed := NEW;
    END IF;
    INSERT INTO vault_generations (tenant_id, environment, generation)
    VALUES (changed.tenant_id, changed.environment, 1)
    ON CONFLICT (tenant_id, environment)
    DO UPDATE SET generation = vault_generations.generation + 1;
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""

# Deferred to the commit: a transaction changing several documents takes the generation
# row's lock only once it will take no other document's, so two such transactions cannot
# deadlock on it (each would otherwise hold it while waiting for a document the other holds).
_POSTGRES_GENERATION_TRIGGERS = [
    "CREATE CONSTRAINT TRIGGER documents_added AFTER INSERT OR DELETE ON documents "
    "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION documents_changed()",
    "CREATE CONSTRAINT TRIGGER documents_changed "
    "AFTER UPDATE OF status, project_id, vectors_version ON documents "
    "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
    "WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.project_id IS DISTINCT FROM "
    "NEW.project_id OR OLD.vectors_version IS DISTINCT FROM NEW.vectors_version) "
    "EXECUTE FUNCTION documents_changed()",
]


def _sqlite_generation_trigger(name: str, event: str, row: str, when: str = "") -> str:
    """A trigger bumping the generation of the changed document's partition (the arguments
    are this module's constants)."""
    return f"""
CREATE TRIGGER {name} AFTER {event} ON documents {when}
BEGIN
    INSERT INTO vault_generations (tenant_id, environment, generation)
    VALUES ({row}.tenant_id, {row}.environment, 1)
    ON CONFLICT (tenant_id, environment) DO UPDATE SET generation = generation + 1;
END
"""  # noqa: S608


_SQLITE_GENERATION_TRIGGERS = [
    _sqlite_generation_trigger("documents_added", "INSERT", "NEW"),
    _sqlite_generation_trigger("documents_deleted", "DELETE", "OLD"),
    _sqlite_generation_trigger(
        "documents_changed",
        "UPDATE OF status, project_id, vectors_version",
        "NEW",
        "WHEN OLD.status IS NOT NEW.status OR OLD.project_id IS NOT NEW.project_id "
        "OR OLD.vectors_version IS NOT NEW.vectors_version",
    ),
]


def upgrade() -> None:
    # Plain ADD COLUMN (no batch rebuild): documents keeps its rows and references as they are.
    op.add_column(
        "documents",
        sa.Column("vectors_version", sa.Integer(), nullable=False, server_default="0"),
    )
    # No foreign key to tenants: the triggers of a tenant's deletion write here too.
    op.create_table(
        "vault_generations",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "environment"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_POSTGRES_FUNCTION)
        op.execute(_POSTGRES_TRIGGER)
        op.execute(_POSTGRES_GENERATION_FUNCTION)
        for trigger in _POSTGRES_GENERATION_TRIGGERS:
            op.execute(trigger)
    else:
        op.execute(_SQLITE_TRIGGER)
        for trigger in _SQLITE_GENERATION_TRIGGERS:
            op.execute(trigger)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for trigger, table in (
        ("document_chunks_vectors_changed", "document_chunks"),
        ("documents_added", "documents"),
        ("documents_deleted", "documents"),
        ("documents_changed", "documents"),
    ):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}" + (f" ON {table}" if postgres else ""))
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS document_chunks_vectors_changed()")
        op.execute("DROP FUNCTION IF EXISTS documents_changed()")
    op.drop_table("vault_generations")
    op.drop_column("documents", "vectors_version")
