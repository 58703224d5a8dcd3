"""Keep chunks' search vectors in the row (PostgreSQL `STORAGE MAIN`): out of line (TOAST),
ranking fetched them again for every matching passage (bench/RESULTS.md: the any-word fill
1.1-2.2x faster). Applies to rows written from now on; `VACUUM FULL document_chunks` moves
existing ones.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 17:55:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE document_chunks ALTER COLUMN search_vector SET STORAGE MAIN")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE document_chunks ALTER COLUMN search_vector SET STORAGE EXTENDED")
