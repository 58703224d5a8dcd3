"""The shared Redis client: fails fast, so that a Redis outage degrades requests (D22)
instead of stalling them.

redis-py (with what it brings: about 0.1 s of imports) is imported here when a client is
made, so a process without Redis (the embedded default, the CLI's commands) never loads it
(issue 29); the stores that take a client import what else they need when they are made.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from strongroom.settings import Settings

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry


@functools.cache
def _retry() -> Retry:
    """One immediate retry covers a connection that went stale when Redis restarted.
    Timeouts are not retried: the command may have run, and running a script twice is not
    harmless (it would take a lock we already hold, or charge tokens twice). One policy,
    shared by every client of the process."""
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError

    return Retry(NoBackoff(), retries=1, supported_errors=(RedisConnectionError,))


def create_redis(settings: Settings) -> Redis | None:
    """The process's client, or None when no Redis is configured (the in-process stores)."""
    if not settings.redis_url:
        return None
    from redis.asyncio import Redis

    return Redis.from_url(
        settings.redis_url,
        socket_connect_timeout=0.5,
        socket_timeout=1.0,
        retry=_retry(),
        health_check_interval=15,
        max_connections=256,
    )


def create_subscriber(url: str) -> Redis:
    """A client for one pub/sub connection: no read timeout (a quiet channel is no error);
    health checks find a dead connection instead."""
    from redis.asyncio import Redis

    return Redis.from_url(url, socket_connect_timeout=0.5, retry=_retry(), health_check_interval=5)
