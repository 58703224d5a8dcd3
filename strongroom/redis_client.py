"""The shared Redis client: fails fast, so that a Redis outage degrades requests (D22)
instead of stalling them."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from strongroom.settings import Settings

# One immediate retry covers a connection that went stale when Redis restarted. Timeouts are
# not retried: the command may have run, and running a script twice is not harmless (it
# would take a lock we already hold, or charge tokens twice).
_RETRY = Retry(NoBackoff(), retries=1, supported_errors=(RedisConnectionError,))


def create_redis(settings: Settings) -> Redis | None:
    if not settings.redis_url:
        return None
    return Redis.from_url(
        settings.redis_url,
        socket_connect_timeout=0.5,
        socket_timeout=1.0,
        retry=_RETRY,
        health_check_interval=15,
        max_connections=256,
    )


def create_subscriber(url: str) -> Redis:
    """A client for one pub/sub connection: no read timeout (a quiet channel is no error);
    health checks find a dead connection instead."""
    return Redis.from_url(url, socket_connect_timeout=0.5, retry=_RETRY, health_check_interval=5)
