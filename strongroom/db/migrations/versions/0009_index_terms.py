"""Index the vault's own analysis of each passage (strongroom.text.analysis), not the
databases' stemmers: `document_chunks.index_terms` holds a passage's terms (Snowball stems,
construction concepts), which PostgreSQL indexes with the `simple` configuration and SQLite
with FTS5's plain `unicode61` tokenizer. Both backends then match the same terms, and the
search, the index and the answer engines agree on what a word is (issue 15).

Existing passages are analysed here, in batches.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 00:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from strongroom.text.analysis import index_text

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500

SQLITE_FTS = (
    "CREATE VIRTUAL TABLE document_chunks_fts USING fts5("
    "index_terms, chunk_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 0')",
    "CREATE TRIGGER document_chunks_fts_insert AFTER INSERT ON document_chunks BEGIN "
    "INSERT INTO document_chunks_fts (rowid, index_terms, chunk_id) "
    "VALUES (new.rowid, new.index_terms, new.id); END",
    "CREATE TRIGGER document_chunks_fts_delete AFTER DELETE ON document_chunks BEGIN "
    "DELETE FROM document_chunks_fts WHERE rowid = old.rowid AND chunk_id = old.id; END",
    "CREATE TRIGGER document_chunks_fts_update AFTER UPDATE OF index_terms ON document_chunks "
    "BEGIN DELETE FROM document_chunks_fts WHERE rowid = old.rowid; "
    "INSERT INTO document_chunks_fts (rowid, index_terms, chunk_id) "
    "VALUES (new.rowid, new.index_terms, new.id); END",
    "INSERT INTO document_chunks_fts (rowid, index_terms, chunk_id) "
    "SELECT rowid, index_terms, id FROM document_chunks",
)
SQLITE_FTS_BEFORE = (
    "CREATE VIRTUAL TABLE document_chunks_fts USING fts5("
    "content, chunk_id UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER document_chunks_fts_insert AFTER INSERT ON document_chunks BEGIN "
    "INSERT INTO document_chunks_fts (rowid, content, chunk_id) "
    "VALUES (new.rowid, new.content, new.id); END",
    "CREATE TRIGGER document_chunks_fts_delete AFTER DELETE ON document_chunks BEGIN "
    "DELETE FROM document_chunks_fts WHERE rowid = old.rowid AND chunk_id = old.id; END",
    "INSERT INTO document_chunks_fts (rowid, content, chunk_id) "
    "SELECT rowid, content, id FROM document_chunks",
)


def _drop_sqlite_fts() -> None:
    for name in ("insert", "delete", "update"):
        op.execute(f"DROP TRIGGER IF EXISTS document_chunks_fts_{name}")
    op.execute("DROP TABLE IF EXISTS document_chunks_fts")


def _search_vector(source: str) -> None:
    op.execute("DROP INDEX IF EXISTS ix_document_chunks_search")
    op.execute("ALTER TABLE document_chunks DROP COLUMN IF EXISTS search_vector")
    op.execute(
        "ALTER TABLE document_chunks ADD COLUMN search_vector tsvector "
        f"GENERATED ALWAYS AS ({source}) STORED"
    )
    op.execute("ALTER TABLE document_chunks ALTER COLUMN search_vector SET STORAGE MAIN")
    op.execute(
        "CREATE INDEX ix_document_chunks_search ON document_chunks USING gin (search_vector)"
    )


def analyse_existing(connection: sa.Connection) -> None:
    """Compute `index_terms` for every passage, in batches of BATCH in id order."""
    chunks = sa.table(
        "document_chunks",
        sa.column("id", sa.Uuid()),
        sa.column("content"),
        sa.column("index_terms"),
    )
    after = None
    while True:
        statement = sa.select(chunks.c.id, chunks.c.content).order_by(chunks.c.id).limit(BATCH)
        if after is not None:
            statement = statement.where(chunks.c.id > after)
        rows = connection.execute(statement).all()
        if not rows:
            return
        connection.execute(
            sa.update(chunks).where(chunks.c.id == sa.bindparam("chunk_id")),
            [{"chunk_id": row.id, "index_terms": index_text(row.content)} for row in rows],
        )
        after = rows[-1].id


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if not postgres:
        _drop_sqlite_fts()
    op.add_column(
        "document_chunks",
        sa.Column("index_terms", sa.Text(), nullable=False, server_default=""),
    )
    analyse_existing(op.get_bind())
    if postgres:
        _search_vector("to_tsvector('simple', index_terms)")
    else:
        for statement in SQLITE_FTS:
            op.execute(statement)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        _search_vector("to_tsvector('english', content)")
    else:
        _drop_sqlite_fts()
    with op.batch_alter_table("document_chunks") as batch:
        batch.drop_column("index_terms")
    if not postgres:
        for statement in SQLITE_FTS_BEFORE:
            op.execute(statement)
