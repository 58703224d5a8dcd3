"""The idempotency step of the request path (spec 3 and 4.1, D23-D28).

`begin` either hands back a cached response to replay, or takes the in-progress lock and
returns the attempt; `record` gives the request path a 2xx response's durable copy to commit
with the handler's work (strongroom/idempotency/durable.py); `finish` caches it in the store for 24
hours, or releases the lock at once for anything else (D25).

A key the store does not know runs, even if an earlier attempt committed a response that
never reached the store (its process died in between, or Redis lost its data): the durable
copy's primary key then refuses the second commit, the second attempt's work is rolled back,
and it replays the first's response. So the work commits once, and the common path pays one
statement in the round trip that commits the call (db/together.py) rather than a lookup
before every keyed request.
(The second attempt's handler has run by then: what it did outside the database is undone
by `call.undo_unless_committed` or, an upstream's answer say, simply thrown away.) Streamed
responses are recorded after their own commit, in the store only: for them a lost store
still means a retry runs again.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from quart import Response

from strongroom.db.types import utcnow
from strongroom.idempotency.durable import DurableRecords, KeptResponse
from strongroom.idempotency.keys import fingerprint, parse_idempotency_key
from strongroom.idempotency.store import (
    DONE,
    CachedResponse,
    IdempotencyStore,
    lock_value,
)
from strongroom.metrics import IDEMPOTENCY_OUTCOMES
from strongroom.problems import Problem
from strongroom.settings import Settings
from strongroom.unavailable import StoreUnavailable

log = logging.getLogger("strongroom.idempotency")

# The one header a replay does not repeat: the date is the replay's own (D26). Everything
# else, the X-RateLimit-* headers included, is replayed unchanged (spec 4.1 rule 3).
_NOT_REPLAYED = {"date"}


@dataclass(frozen=True)
class Attempt:
    store_key: str
    lock: str
    fingerprint: str


class IdempotencyGuard:
    def __init__(
        self, store: IdempotencyStore, settings: Settings, durable: DurableRecords
    ) -> None:
        self._store = store
        self._durable = durable
        self._lock_ms = int(settings.idempotency_lock_seconds * 1000)
        self._ttl_ms = settings.idempotency_cache_seconds * 1000

    async def begin(
        self, *, namespace: str, method: str, path: str, header: str, body: bytes, mimetype: str
    ) -> Attempt | Response:
        """Return the attempt to run, or the cached response to replay.

        Raises Problem: `invalid_idempotency_key`, `idempotency_in_progress`,
        `idempotency_key_reused`, or `service_unavailable` when the store is unreachable.
        """
        key = parse_idempotency_key(header)
        digest = hashlib.sha256(key.encode()).hexdigest()
        attempt = Attempt(
            store_key=f"{namespace}:{method}:{path}:{digest}",
            lock=lock_value(secrets.token_hex(8)),
            fingerprint=fingerprint(body, mimetype),
        )
        try:
            current = await self._store.acquire(attempt.store_key, attempt.lock, self._lock_ms)
        except StoreUnavailable as error:
            # The store may have taken the lock and only its answer been late (a timeout):
            # left, it would answer the client's retry 409 for the lock's whole life.
            await self.abandon(attempt)
            IDEMPOTENCY_OUTCOMES.labels("unavailable").inc()
            raise Problem(
                "service_unavailable",
                "Idempotency-Key requests cannot run while the idempotency store is "
                "unreachable; retry with the same key.",
                headers={"Retry-After": "5"},
            ) from error
        if current is None or current == attempt.lock:  # ours, if a re-sent script found it
            IDEMPOTENCY_OUTCOMES.labels("executed").inc()
            return attempt
        if not current.startswith(DONE):
            IDEMPOTENCY_OUTCOMES.labels("in_progress").inc()
            raise Problem(
                "idempotency_in_progress",
                "A request with this Idempotency-Key is still in progress; retry later.",
                headers={"Retry-After": "5"},
            )
        return self._replay_matching(attempt, CachedResponse.decode(current))

    async def replay_after_conflict(self, attempt: Attempt) -> Response:
        """The response an earlier attempt of the key committed (the store lost it, or that
        attempt outlived its lock); this attempt's work was rolled back. Put back in the
        store, so the next retry is answered from there."""
        found = await self._durable.find(attempt.store_key)
        if found is None:  # expired in between: nothing to replay, retry
            await self.abandon(attempt)
            raise Problem(
                "idempotency_in_progress",
                "A request with this Idempotency-Key is still in progress; retry later.",
                headers={"Retry-After": "5"},
            )
        committed, expires_at = found
        log.info("idempotent response replayed from the database")
        left_ms = int((expires_at - utcnow()).total_seconds() * 1000)
        try:  # for what is left of the replay window, not a new one
            await self._store.complete(
                attempt.store_key, attempt.lock, committed.encode(), max(left_ms, 1)
            )
        except StoreUnavailable:
            pass  # the lock expires by itself; the database answers the next retry again
        # Counted once, as `executed` by `begin`: its work ran, and was rolled back.
        return self._replay_matching(attempt, committed, count=False)

    def _replay_matching(
        self, attempt: Attempt, cached: CachedResponse, *, count: bool = True
    ) -> Response:
        if cached.fingerprint != attempt.fingerprint:
            if count:
                IDEMPOTENCY_OUTCOMES.labels("key_reused").inc()
            raise Problem(
                "idempotency_key_reused",
                "This Idempotency-Key was used with a different request body.",
            )
        if count:
            IDEMPOTENCY_OUTCOMES.labels("replayed").inc()
        return self._replay(cached)

    async def record(self, attempt: Attempt, response: Response) -> KeptResponse | None:
        """The durable record of a 2xx response, for the request path to commit with the
        work (a `db.together.Closing`); it raises KeyAlreadyCommitted if another attempt of
        the key committed first."""
        if not 200 <= response.status_code < 300:
            return None
        cached = self._cached(attempt, response, await response.get_data())
        return self._durable.keep(attempt.store_key, cached)

    async def finish(self, attempt: Attempt, kept: KeptResponse | None) -> None:
        """Once the work is committed: cache the response `record` kept, or release the lock
        when it kept none (not a 2xx). Store trouble is logged, not raised: the work is done,
        the database holds the response, and the lock expires by itself."""
        await self._settle(attempt, None if kept is None else kept.cached)

    async def recording(
        self,
        attempt: Attempt,
        chunks: AsyncIterator[bytes],
        response: Response,
        succeeded: Callable[[], bool],
    ) -> AsyncIterator[bytes]:
        """Pass a streamed body through as the client reads it, holding the lock; once it
        has ended and `succeeded()`, cache it whole (a replay sends it at once), else release
        the lock, as for any failed call (spec 4.1 rule 6). A client gone mid-stream
        releases it too."""
        sent: list[bytes] = []
        ended = False
        try:
            async for chunk in chunks:
                sent.append(chunk)
                yield chunk
            ended = True
        finally:
            cached = None
            if ended and succeeded() and 200 <= response.status_code < 300:
                cached = self._cached(attempt, response, b"".join(sent))
            await self._settle(attempt, cached)

    async def _settle(self, attempt: Attempt, cached: CachedResponse | None) -> None:
        """Cache `cached`, or release the lock when there is nothing to cache (a failure)."""
        try:
            if cached is not None:
                await self._store.complete(
                    attempt.store_key, attempt.lock, cached.encode(), self._ttl_ms
                )
            else:
                await self._store.release(attempt.store_key, attempt.lock)
        except StoreUnavailable as error:
            log.warning(
                "idempotency record not stored; the lock will expire",
                extra={"error": error.reason},
            )

    async def delete_expired_records(self) -> int:
        """Drop durable copies past the replay window (the worker's sweep; the embedded
        default hourly)."""
        return await self._durable.delete_expired()

    @staticmethod
    def _cached(attempt: Attempt, response: Response, body: bytes) -> CachedResponse:
        return CachedResponse(
            fingerprint=attempt.fingerprint,
            status=response.status_code,
            headers=[
                (name, value)
                for name, value in response.headers.items()
                if name.lower() not in _NOT_REPLAYED
            ],
            body=base64.b64encode(body).decode(),
        )

    async def abandon(self, attempt: Attempt) -> None:
        """Release the lock of an attempt whose handler raised (it answers 500)."""
        try:
            await self._store.release(attempt.store_key, attempt.lock)
        except StoreUnavailable:
            pass  # the lock expires by itself

    @staticmethod
    def _replay(cached: CachedResponse) -> Response:
        response = Response(base64.b64decode(cached.body), status=cached.status)
        response.headers.clear()
        for name, value in cached.headers:
            response.headers.add(name, value)
        response.headers["Idempotent-Replayed"] = "true"
        return response


async def delete_expired(services: Any) -> None:
    """The `idempotency_expiry` background task's round (strongroom.background): delete the
    durable records past the replay window."""
    await services.idempotency.delete_expired_records()
