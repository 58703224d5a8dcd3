"""Tenant and user tables."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow
from strongroom.tenants.tiers import INITIAL_CREDITS, RateLimitTier


class BillingStatus(StrEnum):
    ACTIVE = "active"
    PAST_DUE = "past_due"


class Tenant(SQLModel, table=True):
    __tablename__ = "tenants"

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    name: str = Field(max_length=255, unique=True)
    rate_limit_tier: str = Field(default=RateLimitTier.STANDARD.value, max_length=32)
    credits: int = Field(default=INITIAL_CREDITS)
    suspended: bool = Field(default=False)
    billing_status: str = Field(default=BillingStatus.ACTIVE.value, max_length=32)
    deleted_at: datetime | None = Field(
        default=None, sa_type=UTCDateTime, description="Deleted (kept for audit, suspended)."
    )
    # Issue 42, item 5: when a deleted tenant's data is to be erased, and when it was
    # (strongroom.tenant_erasure); the row itself, its users, keys and ledger stay.
    erasure_due_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    erased_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


class User(SQLModel, table=True):
    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("tenant_id", "email", name="uq_users_tenant_email"),)

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", index=True, ondelete="CASCADE")
    email: str = Field(max_length=320)
    name: str = Field(default="", max_length=255)
    active: bool = Field(default=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
