"""Invalidation events (D16): "this key, user or tenant changed; forget what you cached".

Publishers (the CLI, the operator, the API itself) send an event; every API process applies
it to its key cache. Across replicas the events travel on Redis pub/sub; in the embedded
default they are applied in-process. A subscriber that loses Redis clears its cache when it
reconnects, since it may have missed events; meanwhile the cache TTL (at most 2 s) bounds
staleness.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Protocol

from strongroom.auth.cache import KeyCache
from strongroom.lazy import LazyModule
from strongroom.redis_client import create_subscriber
from strongroom.settings import Settings
from strongroom.unavailable import StoreUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("strongroom.invalidation")

# Read only when a publish fails, by then loaded with the client (issue 29: without Redis,
# no redis-py).
redis_exceptions = LazyModule("redis.exceptions")


class Invalidations(Protocol):
    async def publish(self, event: dict[str, str]) -> None:
        """Send `event` to every process; raises StoreUnavailable when it cannot."""
        ...

    async def run(self, cache: KeyCache) -> None:
        """Apply events to `cache` until cancelled."""
        ...


class LocalInvalidations:
    def __init__(self) -> None:
        self._caches: list[KeyCache] = []

    async def publish(self, event: dict[str, str]) -> None:
        for cache in self._caches:
            cache.invalidate(event)

    async def run(self, cache: KeyCache) -> None:
        self._caches.append(cache)
        try:
            await asyncio.Event().wait()
        finally:
            self._caches.remove(cache)


class RedisInvalidations:
    def __init__(self, publisher: Redis, settings: Settings) -> None:
        self._publisher = publisher
        self._url = settings.redis_url
        self._caches: list[KeyCache] = []
        self.channel = f"{settings.redis_prefix}invalidations"

    async def publish(self, event: dict[str, str]) -> None:
        """Apply `event` here at once, and send it to every other process."""
        for cache in self._caches:
            cache.invalidate(event)
        try:
            await self._publisher.publish(self.channel, json.dumps(event))
        except (redis_exceptions.RedisError, OSError) as error:
            raise StoreUnavailable("Redis could not publish the event") from error

    async def run(self, cache: KeyCache) -> None:
        self._caches.append(cache)
        try:
            await self._subscribe(cache)
        finally:
            self._caches.remove(cache)

    async def _subscribe(self, cache: KeyCache) -> None:
        delay = 0.1
        while True:
            subscriber = create_subscriber(self._url)
            try:
                async with subscriber.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self.channel)
                    cache.clear()  # events may have been missed while unsubscribed
                    delay = 0.1
                    while True:
                        message = await pubsub.get_message(timeout=1.0)
                        if message is not None:
                            cache.invalidate(json.loads(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception as error:  # Redis away: retry, the TTL bounds staleness
                if asyncio.current_task().cancelling():  # a cancel became a TimeoutError
                    raise asyncio.CancelledError from error
                log.warning(
                    "invalidation subscriber lost Redis; retrying",
                    extra={"error": type(error).__name__},
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            finally:
                await subscriber.aclose()


class KeyCacheListener:
    """The `key_cache_invalidations` background service (strongroom.background): applies
    the process's invalidation events to its key cache until cancelled."""

    def __init__(self, runtime) -> None:
        self._invalidations: Invalidations = runtime.invalidations
        self._cache: KeyCache = runtime.key_cache

    async def run(self) -> None:
        await self._invalidations.run(self._cache)

    def stop(self) -> None:
        """Nothing to finish: the supervisor cancels it."""
