"""Redis, shared by the replicas for idempotency, rate limits and cache invalidation."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RedisSettings(BaseModel):
    """Redis, shared by the replicas for idempotency, rate limits and cache invalidation."""

    redis_url: str | None = Field(
        default=None,
        description=(
            "Redis for idempotency records, rate-limit buckets and cache invalidation across "
            "replicas. Unset: in-process stores (one process only: the embedded default)."
        ),
    )
    redis_prefix: str = Field(
        default="strongroom:",
        description=(
            "Prefix of every Redis key and channel, to share one Redis between deployments."
        ),
    )
