"""The credit ledger: one row per debit or grant, written in the same transaction as the
tenant's balance, so that the balance always equals the grants minus the billed calls."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow


class CreditEntry(SQLModel, table=True):
    __tablename__ = "credit_ledger"

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", index=True, ondelete="CASCADE")
    amount: int = Field(description="Negative for a billed call, positive for a grant.")
    reason: str = Field(max_length=64)
    request_id: str | None = Field(default=None, max_length=40, unique=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
