"""Credit ledger (D21), with an opening balance for every existing tenant.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 02:48:22.746218
"""

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "credit_ledger",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("request_id", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_credit_ledger_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credit_ledger")),
        sa.UniqueConstraint("request_id", name=op.f("uq_credit_ledger_request_id")),
    )
    with op.batch_alter_table("credit_ledger", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_credit_ledger_tenant_id"), ["tenant_id"], unique=False)

    # The ledger must sum to each balance: record the balances that exist already.
    connection = op.get_bind()
    ledger = sa.table(
        "credit_ledger",
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("amount", sa.Integer()),
        sa.column("reason", sa.String()),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    now = datetime.now(UTC)
    if connection.dialect.name == "sqlite":
        now = now.replace(tzinfo=None)
    rows = connection.execute(sa.text("SELECT id, credits FROM tenants")).fetchall()
    if rows:
        op.bulk_insert(
            ledger,
            [
                {
                    "id": uuid.uuid4(),
                    # PostgreSQL hands back UUIDs, SQLite their 32-digit hex text.
                    "tenant_id": row[0] if isinstance(row[0], uuid.UUID) else uuid.UUID(row[0]),
                    "amount": row[1],
                    "reason": "opening_balance",
                    "created_at": now,
                }
                for row in rows
            ],
        )


def downgrade() -> None:
    with op.batch_alter_table("credit_ledger", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_credit_ledger_tenant_id"))

    op.drop_table("credit_ledger")
