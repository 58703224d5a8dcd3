"""`StoreUnavailable`: a shared store behind the request path could not serve a call.

The Redis-backed stores (the rate limit's buckets, the idempotency locks, the invalidation
events) raise it from redis-py's error or the socket's, at their boundary; the steps that
degrade while the store is away (D22: rate limiting fails open, an Idempotency-Key request
gets 503, an invalidation event is logged) catch this one exception of ours. So those steps
name no Redis error, and a process without Redis never imports redis-py (issue 29).
"""

from __future__ import annotations


class StoreUnavailable(Exception):
    """Raised from the store's own error (`__cause__`), which `reason` names for the logs."""

    @property
    def reason(self) -> str:
        cause = self.__cause__
        return type(cause if cause is not None else self).__name__
