"""The API key table (spec 2.2, D9): only a display prefix and an HMAC of the key are stored."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_keys"

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", index=True, ondelete="CASCADE")
    user_id: uuid.UUID = Field(foreign_key="users.id", ondelete="CASCADE")
    name: str = Field(max_length=255)
    environment: str = Field(max_length=8)
    prefix: str = Field(max_length=16)
    key_hash: str = Field(max_length=64, unique=True)
    scopes: list[str] = Field(default_factory=list, sa_type=JSON)
    rate_limit_tier: str | None = Field(default=None, max_length=32)
    expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
