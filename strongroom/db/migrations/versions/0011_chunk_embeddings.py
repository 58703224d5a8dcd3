"""Each passage may carry its embedding (float32 bytes) and the model that made it, for
search by meaning (issue 16). Vectors of another model than the configured one are not
compared: `strongroom reembed` replaces them.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 10:15:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN on both backends: SQLite must not rebuild document_chunks (its FTS5
    # triggers and rowids belong to it).
    op.add_column("document_chunks", sa.Column("embedding", sa.LargeBinary(), nullable=True))
    op.add_column(
        "document_chunks", sa.Column("embedding_model", sa.String(length=200), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("document_chunks", "embedding_model")
    op.drop_column("document_chunks", "embedding")
