"""A deleted tenant is kept for audit, suspended and stamped `deleted_at`; the operator never
re-adopts it for a new Tenant of the same name unless asked (issue 17).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 09:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("deleted_at")
