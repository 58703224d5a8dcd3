"""What a tenant is given: its rate-limit tier and opening credits. Plain values, apart from the
tables, so that the CLI's options can name them without importing SQLModel (issue 29)."""

from __future__ import annotations

from enum import StrEnum

INITIAL_CREDITS = 100_000  # spec 1 and D21


class RateLimitTier(StrEnum):
    """Rate-limit tiers (D18)."""

    FREE = "free"
    STANDARD = "standard"
    PRO = "pro"
    ENTERPRISE = "enterprise"
