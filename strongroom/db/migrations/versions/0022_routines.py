"""Routines (issue 43): routines and their runs (strongroom/routines/models.py). A run is also
the record of a fire: unique per (routine, fire_key), the key naming the scheduled time or
the document that fired it.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-29 15:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str, column: str, target: str, ondelete: str | None = "CASCADE"):
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_{table}_{column}_{target}"),
        ondelete=ondelete,
    )


def _when(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "routines",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("trigger", sa.JSON(), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("review", sa.JSON(), nullable=True),
        _when("next_run_at", nullable=True),
        _when("created_at"),
        _when("updated_at"),
        _fk("routines", "owner_id", "users", ondelete=None),
        _fk("routines", "project_id", "projects"),
        _fk("routines", "tenant_id", "tenants"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_routines")),
    )
    op.create_index("ix_routines_due", "routines", ["next_run_at"])
    op.create_index("ix_routines_project", "routines", ["project_id"])
    op.create_index("ix_routines_scope", "routines", ["tenant_id", "environment", "created_at"])
    op.create_table(
        "routine_runs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("routine_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("trigger_type", sa.String(length=16), nullable=False),
        sa.Column("fire_key", sa.String(length=64), nullable=True),
        _when("scheduled_for", nullable=True),
        sa.Column("document_id", sa.Uuid(), nullable=True),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("review", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        _when("created_at"),
        _when("updated_at"),
        _when("started_at", nullable=True),
        _when("finished_at", nullable=True),
        _fk("routine_runs", "routine_id", "routines"),
        _fk("routine_runs", "tenant_id", "tenants"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_routine_runs")),
        sa.UniqueConstraint("routine_id", "fire_key", name="uq_routine_runs_fire"),
    )
    op.create_index("ix_routine_runs_routine", "routine_runs", ["routine_id", "created_at"])


def downgrade() -> None:
    op.drop_table("routine_runs")
    op.drop_table("routines")
