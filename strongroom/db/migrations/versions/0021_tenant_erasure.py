"""A deleted tenant's data is erased after a period (issue 42, item 5): `erasure_due_at` is
set when the tenant is marked deleted (`deleted_at` + `STRONGROOM_TENANT_ERASURE_DAYS`), and
`erased_at` when the periodic erasure (strongroom.tenant_erasure) or `strongroom tenants
erase` has removed its documents, passages, vectors, files, conversations and the rest; the
tenant's row, users, keys and credit ledger stay. Tenants deleted before this revision get no
due date: nothing is erased by the upgrade itself (`strongroom tenants erase NAME` does it).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-29 15:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN on both backends (nullable, no default): no table rebuilt on SQLite,
    # a catalogue change only on PostgreSQL.
    op.add_column("tenants", sa.Column("erasure_due_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("tenants", sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # Not in batch mode: rebuilding `tenants` on SQLite, foreign keys on, would cascade.
    op.drop_column("tenants", "erased_at")
    op.drop_column("tenants", "erasure_due_at")
