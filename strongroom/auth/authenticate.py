"""Authentication of API keys (spec 5.2, D7, D9, D10).

The checks run in the order of D10 and the first failure wins. A value that is not of the
key shape is refused before any database work. The lookup is one indexed Core SELECT on the
autocommit engine: this runs on every request.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from strongroom.auth.keys import Environment, hash_key, parse_key
from strongroom.auth.models import ApiKey
from strongroom.auth.principal import Principal
from strongroom.db.types import utcnow
from strongroom.problems import Problem
from strongroom.tenants.models import BillingStatus, Tenant, User

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
    def __init__(self, engine: AsyncEngine, pepper: bytes) -> None:
        self._engine = engine
        self._pepper = pepper

    async def authenticate(self, credential: str, now: datetime | None = None) -> Principal:
        """Return the principal of `credential`; raises Problem with the D10 code."""
        parsed = parse_key(credential)
        if parsed is None:
            raise Problem("invalid_api_key", "The API key is malformed.")
        statement = _LOOKUP.where(_keys.c.key_hash == hash_key(parsed.raw, self._pepper))
        async with self._engine.connect() as connection:
            row = (await connection.execute(statement)).first()
        if row is None:
            raise Problem("invalid_api_key", "The API key matches no credential.")
        now = now or utcnow()
        if row.revoked_at is not None:
            raise Problem("api_key_revoked", "The API key has been revoked.")
        if row.expires_at is not None and row.expires_at <= now:
            raise Problem("api_key_expired", "The API key has passed its expiry date.")
        if row.suspended:
            raise Problem("tenant_disabled", "The tenant that owns this key is suspended.")
        if not row.user_active:
            raise Problem("user_inactive", "The user that owns this key is deactivated.")
        environment = Environment(row.environment)
        if environment is Environment.LIVE and (
            row.billing_status == BillingStatus.PAST_DUE or row.credits <= 0
        ):
            raise Problem("payment_required", "The tenant's billing is past due.")
        return Principal(
            auth_method="api_key",
            user_id=row.user_id,
            tenant_id=row.tenant_id,
            email=row.email,
            environment=environment,
            rate_limit_tier=row.rate_limit_tier or row.tenant_tier,
            scopes=frozenset(row.scopes),
            api_key_id=row.id,
            api_key_name=row.name,
            api_key_prefix=row.prefix,
        )
