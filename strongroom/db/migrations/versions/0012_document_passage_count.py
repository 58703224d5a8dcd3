"""Each document keeps how many passages ingestion stored, so search reads BM25's corpus size
from the documents it covers instead of counting their passages on every query (issue 15:
that count was a third of a search's time at 10,000 passages).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 10:55:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(
            sa.Column("passage_count", sa.Integer(), nullable=False, server_default="0")
        )
    op.execute(
        "UPDATE documents SET passage_count = (SELECT count(*) FROM document_chunks "
        "WHERE document_chunks.document_id = documents.id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("passage_count")
