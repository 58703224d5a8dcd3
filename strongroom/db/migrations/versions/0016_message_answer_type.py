"""An answer says what kind it is (issue 27): `answer_type`, "answered" or "not_found" (the
passages hold no answer; its citations are the closest passages), and `unsupported_values`,
the values it asserts that no passage it cites holds. Null for a question.

Answers stored before this are typed by their text: every engine began a "not found" with
the same phrase ("Not found in the documents"), and they cite nothing.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("answer_type", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("unsupported_values", sa.JSON(), nullable=True))
    op.execute(
        "UPDATE messages SET answer_type = CASE WHEN content LIKE 'Not found in the documents%' "
        "THEN 'not_found' ELSE 'answered' END WHERE role = 'assistant'"
    )


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("unsupported_values")
        batch.drop_column("answer_type")
