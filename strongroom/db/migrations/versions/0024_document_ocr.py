"""A document says how many of its pages were read by OCR and how many gave no text
(issue 51): `ocr_page_count` and `empty_page_count`, 0 for documents read before.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07 14:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Constant defaults: a catalogue change on PostgreSQL, a plain ADD COLUMN on SQLite.
    for name in ("ocr_page_count", "empty_page_count"):
        op.add_column(
            "documents", sa.Column(name, sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    for name in ("empty_page_count", "ocr_page_count"):
        op.drop_column("documents", name)
