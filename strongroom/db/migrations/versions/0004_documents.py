"""Documents, their chunks with a full-text index, and background jobs (D42, D43, D46).

The full-text index is not in the models: on PostgreSQL a generated `search_vector`
column with a GIN index, on SQLite an FTS5 table kept in step by triggers.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 15:53:18.099732
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from procrastinate.schema import SchemaManager

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# SQLite: the FTS5 table keeps its own copy of the text (stemmed with porter) and the chunk's
# id; its rowid follows the chunk's rowid so the delete trigger finds it without a scan.
SQLITE_FTS = (
    "CREATE VIRTUAL TABLE document_chunks_fts USING fts5("
    "content, chunk_id UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER document_chunks_fts_insert AFTER INSERT ON document_chunks BEGIN "
    "INSERT INTO document_chunks_fts (rowid, content, chunk_id) "
    "VALUES (new.rowid, new.content, new.id); END",
    "CREATE TRIGGER document_chunks_fts_delete AFTER DELETE ON document_chunks BEGIN "
    "DELETE FROM document_chunks_fts WHERE rowid = old.rowid AND chunk_id = old.id; END",
)


# procrastinate's tables, functions and types all carry its prefix.
DROP_PROCRASTINATE = """
DO $$ DECLARE item record; BEGIN
  FOR item IN SELECT tablename FROM pg_tables
      WHERE schemaname = current_schema() AND tablename LIKE 'procrastinate\\_%' LOOP
    EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', item.tablename);
  END LOOP;
  FOR item IN SELECT p.oid::regprocedure AS signature FROM pg_proc p
      JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate\\_%' LOOP
    EXECUTE format('DROP FUNCTION IF EXISTS %s CASCADE', item.signature);
  END LOOP;
  FOR item IN SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname = current_schema() AND t.typname LIKE 'procrastinate\\_%'
        AND t.typtype IN ('e', 'c') LOOP
    EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', item.typname);
  END LOOP;
END $$
"""


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("subject_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_jobs_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_index("ix_jobs_status_updated", "jobs", ["status", "updated_at"], unique=False)
    op.create_table(
        "documents",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("document_type", sa.String(length=16), nullable=False),
        sa.Column("content_type", sa.String(length=128), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("page_count", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("blob_key", sa.String(length=255), nullable=False),
        sa.Column("ingestion_job_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["users.id"], name=op.f("fk_documents_owner_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_documents_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_documents_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_documents")),
    )
    op.create_index(
        "ix_documents_scope_project_created",
        "documents",
        ["tenant_id", "environment", "project_id", "created_at", "id"],
        unique=False,
    )
    op.create_table(
        "document_chunks",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("document_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("page_number", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_document_chunks_document_id_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_document_chunks")),
    )
    op.create_index(
        "ix_document_chunks_document", "document_chunks", ["document_id", "ordinal"], unique=False
    )
    op.create_index(
        "ix_document_chunks_scope",
        "document_chunks",
        ["tenant_id", "environment", "project_id"],
        unique=False,
    )
    if op.get_bind().dialect.name == "postgresql":
        # procrastinate's job queue (D46), at the version in uv.lock. Upgrading procrastinate
        # past a schema change means a new revision that runs its migration files.
        op.get_bind().exec_driver_sql(SchemaManager.get_schema().replace("%", "%%"))
        op.execute(
            "ALTER TABLE document_chunks ADD COLUMN search_vector tsvector "
            "GENERATED ALWAYS AS (to_tsvector('english', content)) STORED"
        )
        op.execute(
            "CREATE INDEX ix_document_chunks_search ON document_chunks USING gin (search_vector)"
        )
    else:
        for statement in SQLITE_FTS:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(DROP_PROCRASTINATE)
    if op.get_bind().dialect.name == "sqlite":
        for name in ("document_chunks_fts_insert", "document_chunks_fts_delete"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS document_chunks_fts")
    op.drop_index("ix_document_chunks_scope", table_name="document_chunks")
    op.drop_index("ix_document_chunks_document", table_name="document_chunks")
    op.drop_table("document_chunks")
    op.drop_index("ix_documents_scope_project_created", table_name="documents")
    op.drop_table("documents")
    op.drop_index("ix_jobs_status_updated", table_name="jobs")
    op.drop_table("jobs")
