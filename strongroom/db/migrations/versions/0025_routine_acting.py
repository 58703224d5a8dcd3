"""A routine acts for its owner with no more than the owner granted (issue 52): the API key
that saved its steps (`api_key_id`), the scopes its steps need (`granted_scopes`), and why it
paused itself (`paused`: its key revoked or expired, its owner deactivated).

Routines from before: granted by the newest key of their owner, in their tenant and
environment, that is neither revoked nor expired and holds `routines:write` and every scope
their steps need (a key with which the owner could have saved them); a routine for which no
such key exists holds no grant, and pauses itself at its next fire or run until its owner
saves it again.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 16:00:00
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The scope each type of step's capability needs, as at this revision.
_STEP_SCOPES = {
    "workflow": "workflows:write",
    "template_fill": "templates:write",
    "chat": "chat:write",
}

_routines = sa.table(
    "routines",
    sa.column("id", sa.Uuid()),
    sa.column("tenant_id", sa.Uuid()),
    sa.column("environment", sa.String()),
    sa.column("owner_id", sa.Uuid()),
    sa.column("steps", sa.JSON()),
    sa.column("api_key_id", sa.Uuid()),
    sa.column("granted_scopes", sa.JSON()),
)
_keys = sa.table(
    "api_keys",
    sa.column("id", sa.Uuid()),
    sa.column("tenant_id", sa.Uuid()),
    sa.column("user_id", sa.Uuid()),
    sa.column("environment", sa.String()),
    sa.column("scopes", sa.JSON()),
    sa.column("expires_at", sa.DateTime(timezone=True)),
    sa.column("revoked_at", sa.DateTime(timezone=True)),
    sa.column("created_at", sa.DateTime(timezone=True)),
)


def _live(expires_at: datetime | None, now: datetime) -> bool:
    if expires_at is None:
        return True
    if expires_at.tzinfo is None:  # SQLite hands back naive UTC
        expires_at = expires_at.replace(tzinfo=UTC)
    return expires_at > now


def _backfill() -> None:
    connection = op.get_bind()
    now = datetime.now(UTC)
    routines = connection.execute(sa.select(_routines)).all()
    for routine in routines:
        needed = sorted({_STEP_SCOPES[step["type"]] for step in routine.steps or []})
        keys = connection.execute(
            sa.select(_keys)
            .where(
                _keys.c.tenant_id == routine.tenant_id,
                _keys.c.user_id == routine.owner_id,
                _keys.c.environment == routine.environment,
                _keys.c.revoked_at.is_(None),
            )
            .order_by(_keys.c.created_at.desc())
        ).all()
        wanted = {"routines:write", *needed}
        key = next(
            (k for k in keys if _live(k.expires_at, now) and wanted <= set(k.scopes or [])),
            None,
        )
        connection.execute(
            sa.update(_routines)
            .where(_routines.c.id == routine.id)
            .values(
                api_key_id=None if key is None else key.id,
                granted_scopes=needed if key is not None else [],
            )
        )


def upgrade() -> None:
    op.add_column("routines", sa.Column("api_key_id", sa.Uuid(), nullable=True))
    # A constant default: a catalogue change on PostgreSQL, a plain ADD COLUMN on SQLite.
    op.add_column(
        "routines",
        sa.Column("granted_scopes", sa.JSON(), nullable=False, server_default="[]"),
    )
    op.add_column("routines", sa.Column("paused", sa.JSON(), nullable=True))
    _backfill()


def downgrade() -> None:
    for name in ("paused", "granted_scopes", "api_key_id"):
        op.drop_column("routines", name)
