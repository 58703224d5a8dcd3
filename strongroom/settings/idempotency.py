"""Idempotency-Key locks and replayed responses (spec 4.1)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class IdempotencySettings(BaseModel):
    """Idempotency-Key locks and replayed responses (spec 4.1)."""

    idempotency_lock_seconds: float = Field(
        default=60.0,
        gt=0,
        description="In-progress lock lifetime (spec 3).",
    )
    idempotency_cache_seconds: int = Field(
        default=24 * 3600,
        gt=0,
        description="How long a 2xx response is replayable (spec 4.1 rule 3).",
    )
    idempotency_max_body_bytes: int = Field(
        default=64 * 1024,
        gt=0,
        description="Bodies above this bypass idempotency (spec 4.1 rule 8).",
    )
