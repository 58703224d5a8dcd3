"""A write's debit and its commit in one round trip (issue 29): `strongroom_debit`, the
balance's guarded UPDATE and the ledger's INSERT in a function that raises SQLSTATE SR402
when the balance is at or below zero, so that the request path can send it with the COMMIT
at once (billing/credits.py). PostgreSQL only: SQLite runs the two statements itself.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 13:20:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEBIT = """
CREATE FUNCTION strongroom_debit(
    p_tenant uuid, p_amount integer, p_entry uuid, p_reason varchar, p_request varchar,
    p_at timestamptz
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    balance integer;
BEGIN
    UPDATE tenants SET credits = credits - p_amount
    WHERE id = p_tenant AND credits > 0
    RETURNING credits INTO balance;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'insufficient credits' USING ERRCODE = 'SR402';
    END IF;
    INSERT INTO credit_ledger (id, tenant_id, amount, reason, request_id, created_at)
    VALUES (p_entry, p_tenant, -p_amount, p_reason, p_request, p_at);
    RETURN balance;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(DEBIT)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "DROP FUNCTION strongroom_debit(uuid, integer, uuid, varchar, varchar, timestamptz)"
        )
