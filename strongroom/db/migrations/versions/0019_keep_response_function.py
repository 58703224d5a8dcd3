"""An Idempotency-Key's durable record sent with the COMMIT (issue 29):
`strongroom_keep_response`, the record's INSERT (replacing an expired record of the key)
in a function that raises SQLSTATE SR409 when a live record of the key is there, so that
the request path can send it with the call's other statements and its COMMIT in one round
trip (strongroom/db/together.py). PostgreSQL only: SQLite runs the upsert itself.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 15:20:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEEP_RESPONSE = """
CREATE FUNCTION strongroom_keep_response(
    p_key varchar, p_fingerprint varchar, p_status integer, p_headers json, p_body bytea,
    p_expires_at timestamptz, p_now timestamptz
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO idempotency_records AS kept (key, fingerprint, status, headers, body, expires_at)
    VALUES (p_key, p_fingerprint, p_status, p_headers, p_body, p_expires_at)
    ON CONFLICT (key) DO UPDATE SET
        fingerprint = excluded.fingerprint, status = excluded.status,
        headers = excluded.headers, body = excluded.body, expires_at = excluded.expires_at
    WHERE kept.expires_at <= p_now;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'a live record of the key exists' USING ERRCODE = 'SR409';
    END IF;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(KEEP_RESPONSE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "DROP FUNCTION strongroom_keep_response("
            "varchar, varchar, integer, json, bytea, timestamptz, timestamptz)"
        )
