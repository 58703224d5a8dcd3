"""Where idempotency records live: Redis across replicas, a dict in the embedded default.

One store key holds either the in-progress lock or the cached response. The lock value names
its owner, so only the request that took the lock can replace it with the response or
release it; a lock whose owner died expires on its own (spec 3: TTL 60 s).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from redis.asyncio import Redis

LOCK = "L:"
DONE = "D:"


@dataclass(frozen=True)
class CachedResponse:
    fingerprint: str
    status: int
    headers: list[tuple[str, str]]
    body: str

    def encode(self) -> str:
        return DONE + json.dumps(
            {"fp": self.fingerprint, "s": self.status, "h": self.headers, "b": self.body}
        )

    @classmethod
    def decode(cls, value: str) -> CachedResponse:
        fields = json.loads(value[len(DONE) :])
        headers = [(name, header) for name, header in fields["h"]]
        return cls(fields["fp"], fields["s"], headers, fields["b"])


def lock_value(owner: str) -> str:
    return f"{LOCK}{owner}"


class IdempotencyStore(Protocol):
    """Each method raises StoreUnavailable (strongroom/unavailable.py) when the store cannot
    serve the call."""

    async def acquire(self, key: str, lock: str, lock_ms: int) -> str | None:
        """Set `lock` at `key` unless something is there; return what is there, else None."""
        ...

    async def complete(self, key: str, lock: str, record: str, ttl_ms: int) -> None:
        """Replace our `lock` with `record`; does nothing if the lock is no longer ours."""
        ...

    async def release(self, key: str, lock: str) -> None:
        """Delete our `lock`; does nothing if it is no longer ours."""
        ...


_ACQUIRE = """
local current = redis.call('GET', KEYS[1])
if current then return current end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
"""
_COMPLETE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisIdempotencyStore:
    def __init__(self, redis: Redis, prefix: str) -> None:
        # Imported with a client, not at the top: without Redis, no redis-py (issue 29).
        from strongroom.redis_batch import batched_script

        self._prefix = f"{prefix}idem:"
        # In the rate limit's round trips (strongroom/redis_batch.py): under load a lock
        # costs a share of a pipeline, not a round trip of its own (issue 29).
        self._acquire = batched_script(redis, _ACQUIRE)
        self._complete = batched_script(redis, _COMPLETE)
        self._release = batched_script(redis, _RELEASE)

    async def acquire(self, key: str, lock: str, lock_ms: int) -> str | None:
        current = await self._acquire(keys=[self._prefix + key], args=[lock, lock_ms])
        return current.decode() if current else None

    async def complete(self, key: str, lock: str, record: str, ttl_ms: int) -> None:
        await self._complete(keys=[self._prefix + key], args=[lock, record, ttl_ms])

    async def release(self, key: str, lock: str) -> None:
        await self._release(keys=[self._prefix + key], args=[lock])


class MemoryIdempotencyStore:
    """The same semantics in one process (D28); entries expire lazily."""

    SWEEP_EVERY = 1024

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, float]] = {}
        self._acquisitions = 0

    def _get(self, key: str) -> str | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[1] <= time.monotonic():
            del self._entries[key]
            return None
        return entry[0]

    async def acquire(self, key: str, lock: str, lock_ms: int) -> str | None:
        self._sweep()
        current = self._get(key)
        if current is None:
            self._entries[key] = (lock, time.monotonic() + lock_ms / 1000)
        return current

    async def complete(self, key: str, lock: str, record: str, ttl_ms: int) -> None:
        if self._get(key) == lock:
            self._entries[key] = (record, time.monotonic() + ttl_ms / 1000)

    async def release(self, key: str, lock: str) -> None:
        if self._get(key) == lock:
            del self._entries[key]

    def _sweep(self) -> None:
        """Drop expired entries now and then, so memory follows the live entries."""
        self._acquisitions += 1
        if self._acquisitions % self.SWEEP_EVERY == 0:
            now = time.monotonic()
            for key in [k for k, (_, expiry) in self._entries.items() if expiry <= now]:
                del self._entries[key]
