"""The durable copy of a cached response, written in the handler's own transaction.

Redis (or the in-process store) holds the lock and the fast copy of every cached response;
this row makes the outcome part of the work itself: if a process dies after its COMMIT but
before the response reached Redis, or Redis loses its data, a retry with the same key still
replays instead of running the work again. The primary key also stops two attempts of one key
from both committing, should the first outlive its 60 s lock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, LargeBinary
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime


class IdempotencyRecord(SQLModel, table=True):
    __tablename__ = "idempotency_records"

    # SHA-256 of the store key (namespace, method, path, hash of the Idempotency-Key).
    key: str = Field(primary_key=True, max_length=64)
    fingerprint: str = Field(max_length=64)
    status: int
    headers: list[Any] = Field(sa_type=JSON)
    body: bytes = Field(sa_type=LargeBinary)
    expires_at: datetime = Field(sa_type=UTCDateTime, nullable=False, index=True)
