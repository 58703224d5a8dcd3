"""Authentication of API keys (spec 5.2, D7, D9, D10, D16).

The checks run in the order of D10 and the first failure wins. A value that is not of the
key shape is refused before any database work. Lookups go through the key cache (at most
2 s old, invalidated by events); a miss is one indexed SELECT, built once and run through
`db.reads.Reads` (on psycopg itself, issue 29).
"""

from __future__ import annotations

import asyncio
import functools
from datetime import datetime

from sqlalchemy import bindparam, select

from strongroom.auth.cache import KeyCache, KeyRecord
from strongroom.auth.keys import hash_key, parse_key
from strongroom.auth.models import ApiKey
from strongroom.auth.principal import Principal, check_owner
from strongroom.db.reads import Reads
from strongroom.db.types import utcnow
from strongroom.problems import Problem
from strongroom.tenants.models import BillingStatus, Tenant, User
from strongroom.tenants.partition import Environment

_keys = ApiKey.__table__
_users = User.__table__
_tenants = Tenant.__table__

_LOOKUP = (
    select(
        _keys.c.id,
        _keys.c.name,
        _keys.c.prefix,
        _keys.c.environment,
        _keys.c.scopes,
        _keys.c.rate_limit_tier,
        _keys.c.expires_at,
        _keys.c.revoked_at,
        _keys.c.user_id,
        _keys.c.tenant_id,
        _users.c.email,
        _users.c.active.label("user_active"),
        _tenants.c.suspended,
        _tenants.c.billing_status,
        _tenants.c.credits,
        _tenants.c.rate_limit_tier.label("tenant_tier"),
    )
    .join(_users, _users.c.id == _keys.c.user_id)
    .join(_tenants, _tenants.c.id == _keys.c.tenant_id)
    .where(_keys.c.key_hash == bindparam("key_hash"))
)


def bearer_credential(authorization: str | None) -> str:
    """Return the credential of an `Authorization: Bearer <credential>` header.

    Raises Problem `missing_api_key` when there is none or the scheme is not Bearer.
    """
    scheme, _, credential = (authorization or "").strip().partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential:
        raise Problem("missing_api_key", "Send your API key as `Authorization: Bearer <key>`.")
    return credential


class ApiKeyAuthenticator:
    def __init__(self, reads: Reads, pepper: bytes, cache: KeyCache) -> None:
        self._reads = reads
        self._pepper = pepper
        self._cache = cache
        # Lookups under way, by key and cache generation (see `_record`).
        self._lookups: dict[tuple[str, int], asyncio.Future[KeyRecord | None]] = {}

    async def authenticate(self, credential: str, now: datetime | None = None) -> Principal:
        """Return the principal of `credential`; raises Problem with the D10 code."""
        parsed = parse_key(credential)
        if parsed is None:
            raise Problem("invalid_api_key", "The API key is malformed.")
        key_hash = hash_key(parsed.raw, self._pepper)
        record = self._cache.get(key_hash)
        if record is None:
            record = await self._record(key_hash)
            if record is None:
                raise Problem("invalid_api_key", "The API key matches no credential.")
        return _principal(record, now or utcnow())

    async def _record(self, key_hash: str) -> KeyRecord | None:
        """The key's record from the database, cached. Requests that miss the cache while
        a lookup of the same key is under way wait for it rather than send their own: when
        a busy key's entry expires, every request in flight for it misses at once (32 per
        worker under the benchmark's load, each a query). A lookup started before an
        invalidation is joined by no request that came after it (the generation)."""
        generation = self._cache.generation
        flight = (key_hash, generation)
        lookup = self._lookups.get(flight)
        if lookup is None:
            lookup = asyncio.ensure_future(self._lookup_and_cache(key_hash, generation))
            self._lookups[flight] = lookup
            lookup.add_done_callback(functools.partial(self._landed, flight))
        # Shielded: a request that goes away does not cancel the others' lookup.
        return await asyncio.shield(lookup)

    def _landed(self, flight: tuple[str, int], lookup: asyncio.Future) -> None:
        del self._lookups[flight]
        if not lookup.cancelled():
            lookup.exception()  # retrieved, though every waiter may be gone

    async def _lookup_and_cache(self, key_hash: str, generation: int) -> KeyRecord | None:
        record = await self._lookup(key_hash)
        if record is not None:
            self._cache.put(key_hash, record, generation)
        return record

    async def _lookup(self, key_hash: str) -> KeyRecord | None:
        rows = await self._reads.all(_LOOKUP, {"key_hash": key_hash})
        if not rows:
            return None
        row = rows[0]
        return KeyRecord(
            api_key_id=row.id,
            name=row.name,
            prefix=row.prefix,
            environment=row.environment,
            scopes=frozenset(row.scopes),
            rate_limit_tier=row.rate_limit_tier or row.tenant_tier,
            expires_at=row.expires_at,
            revoked=row.revoked_at is not None,
            user_id=row.user_id,
            email=row.email,
            user_active=row.user_active,
            tenant_id=row.tenant_id,
            tenant_suspended=row.suspended,
            billing_past_due=row.billing_status == BillingStatus.PAST_DUE,
            credits=row.credits,
        )


def _principal(record: KeyRecord, now: datetime) -> Principal:
    """Apply the D10 checks after `invalid_api_key`, in order."""
    if record.revoked:
        raise Problem("api_key_revoked", "The API key has been revoked.")
    if record.expires_at is not None and record.expires_at <= now:
        raise Problem("api_key_expired", "The API key has passed its expiry date.")
    environment = Environment(record.environment)
    check_owner(
        tenant_suspended=record.tenant_suspended,
        user_active=record.user_active,
        environment=environment,
        owes=record.billing_past_due or record.credits <= 0,
    )
    return Principal(
        auth_method="api_key",
        user_id=record.user_id,
        tenant_id=record.tenant_id,
        email=record.email,
        environment=environment,
        rate_limit_tier=record.rate_limit_tier,
        scopes=record.scopes,
        api_key_id=record.api_key_id,
        api_key_name=record.name,
        api_key_prefix=record.prefix,
    )
