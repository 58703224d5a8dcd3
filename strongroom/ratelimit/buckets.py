"""Token buckets: continuous refill, one atomic step per request (D17).

`RedisTokenBuckets` runs the whole step in one Lua script, on Redis's clock, so every
replica sees one bucket. `MemoryTokenBuckets` is the embedded default's in-process twin.

A cost above the burst could never be paid from a bucket that holds at most `burst`
tokens; such a call is let through when the bucket is full and leaves it in debt, so that
an expensive call on a small tier is slow, not impossible.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from redis.asyncio import Redis


@dataclass(frozen=True, slots=True)
class Tier:
    name: str
    per_minute: int
    burst: int

    @property
    def per_ms(self) -> float:
        return self.per_minute / 60_000


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_at: int  # unix seconds when the bucket is full again
    retry_after: int  # whole seconds, >= 1 when refused
    cost: int

    def headers(self) -> dict[str, str]:
        """D20 headers, for every authenticated response."""
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset_at),
            "X-RateLimit-Cost": str(self.cost),
        }


class TokenBuckets(Protocol):
    async def take(self, bucket: str, cost: int, tier: Tier) -> Decision:
        """Take `cost` tokens from `bucket` if it holds them; raises StoreUnavailable
        (strongroom/unavailable.py) when the store cannot serve the call."""
        ...


def _decision(allowed: bool, tokens: float, now_ms: float, tier: Tier, cost: int) -> Decision:
    to_full_ms = math.ceil(max(tier.burst - tokens, 0) / tier.per_ms)
    missing = min(cost, tier.burst) - tokens
    retry_ms = 0 if allowed else math.ceil(max(missing, 0) / tier.per_ms)
    return Decision(
        allowed=allowed,
        limit=tier.burst,
        remaining=max(math.floor(tokens), 0),
        reset_at=math.ceil((now_ms + to_full_ms) / 1000),
        retry_after=0 if allowed else max(1, math.ceil(retry_ms / 1000)),
        cost=cost,
    )


# KEYS[1] bucket; ARGV: tokens per ms, burst, cost. Returns {allowed, tokens*1000, now_ms}.
_TAKE = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now_ms
end
tokens = math.min(burst, tokens + math.max(now_ms - ts, 0) * rate)
local allowed = 0
if tokens >= math.min(cost, burst) then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', now_ms)
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate) + 1000)
return {allowed, math.floor(tokens * 1000), now_ms}
"""


class RedisTokenBuckets:
    def __init__(self, redis: Redis, prefix: str) -> None:
        # Imported with a client, not at the top: without Redis, no redis-py (issue 29).
        from strongroom.redis_batch import batched_script

        self._script = batched_script(redis, _TAKE)
        self._prefix = f"{prefix}rl:"

    async def take(self, bucket: str, cost: int, tier: Tier) -> Decision:
        allowed, milli_tokens, now_ms = await self._script(
            keys=[self._prefix + bucket], args=[repr(tier.per_ms), tier.burst, cost]
        )
        return _decision(bool(allowed), milli_tokens / 1000, now_ms, tier, cost)


class MemoryTokenBuckets:
    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}

    async def take(self, bucket: str, cost: int, tier: Tier) -> Decision:
        now_ms = time.time() * 1000
        tokens, ts = self._buckets.get(bucket, (tier.burst, now_ms))
        tokens = min(tier.burst, tokens + max(now_ms - ts, 0) * tier.per_ms)
        allowed = tokens >= min(cost, tier.burst)
        if allowed:
            tokens -= cost
        self._buckets[bucket] = (tokens, now_ms)
        return _decision(allowed, tokens, now_ms, tier, cost)
