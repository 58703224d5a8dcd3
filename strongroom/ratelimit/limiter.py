"""The rate-limit step of the request path: the caller's tier, the capability's cost, and
failing open when the bucket store is unreachable (D22)."""

from __future__ import annotations

import logging
import time

from strongroom.auth.principal import Principal
from strongroom.metrics import RATE_LIMIT_DECISIONS
from strongroom.ratelimit.buckets import Decision, Tier, TokenBuckets
from strongroom.unavailable import StoreUnavailable

log = logging.getLogger("strongroom.ratelimit")

FAIL_OPEN_LOG_INTERVAL = 10.0  # seconds between two fail-open warnings


class RateLimiter:
    def __init__(self, buckets: TokenBuckets, tiers: dict[str, tuple[int, int]]) -> None:
        self._buckets = buckets
        self._tiers = {name: Tier(name, *limits) for name, limits in tiers.items()}
        self._last_warning = 0.0

    def tier(self, name: str) -> Tier:
        return self._tiers.get(name) or self._tiers["standard"]

    async def take(self, principal: Principal, cost: int) -> Decision | None:
        """Return the decision, or None when the store is down and the call goes through."""
        tier = self.tier(principal.rate_limit_tier)
        try:
            decision = await self._buckets.take(principal.credential_id, cost, tier)
        except StoreUnavailable as error:
            RATE_LIMIT_DECISIONS.labels(tier.name, "fail_open").inc()
            now = time.monotonic()
            if now - self._last_warning >= FAIL_OPEN_LOG_INTERVAL:
                self._last_warning = now
                log.warning(
                    "rate limiting fails open: bucket store unreachable",
                    extra={"error": error.reason},
                )
            return None
        RATE_LIMIT_DECISIONS.labels(tier.name, "allowed" if decision.allowed else "limited").inc()
        return decision
