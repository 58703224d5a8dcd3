"""The API's side of OAuth: accept an access token (D11, D14).

The signature, algorithm (ES256 only: `none` and HMAC are refused), issuer, audience,
expiry and not-before (`nbf`, with `NBF_LEEWAY_SECONDS` for clocks a little apart) are
checked locally; revocation, and the state of the user and tenant, in one query
on the token's chain.
"""

from __future__ import annotations

import time
import uuid

from joserfc.errors import JoseError
from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from strongroom.auth.principal import Principal, check_owner
from strongroom.lazy import LazyModule
from strongroom.oauth.signing import ALGORITHM, SigningKeys
from strongroom.problems import Problem
from strongroom.tenants.models import BillingStatus, Tenant, User
from strongroom.tenants.partition import Environment

# joserfc.jwt and the cryptography it loads, on the first token (issue 29): most processes
# never see one (OAuth is off without signing keys).
jwt = LazyModule("joserfc.jwt")

NBF_LEEWAY_SECONDS = 30
REQUIRED_CLAIMS = ("iss", "sub", "aud", "exp", "jti", "tid", "client_id", "scope", "sid")

_users = User.__table__
_tenants = Tenant.__table__


def looks_like_jwt(credential: str) -> bool:
    return credential.count(".") == 2 and not credential.startswith("ak_")


def _invalid(detail: str) -> Problem:
    return Problem("invalid_token", f"The access token is {detail}.")


class AccessTokenVerifier:
    def __init__(self, keys: SigningKeys, issuer: str, audience: str, engine: AsyncEngine):
        self._keys = keys
        self._issuer = issuer
        self._audience = audience
        self._engine = engine

    async def authenticate(self, token: str, audience: str | None = None) -> Principal:
        """The OAuth principal of `token`, which must be for `audience` (default: the HTTP
        API; the MCP server passes its own, strongroom/oauth/resources.py); raises Problem
        (`invalid_token` and the D10 codes for the user and tenant)."""
        audience_wanted = audience or self._audience
        try:
            decoded = jwt.decode(token, self._keys.key_set, algorithms=[ALGORITHM])
        except JoseError as error:
            raise _invalid(f"malformed or not signed by this server ({error.error})") from error
        except (ValueError, TypeError) as error:
            raise _invalid("malformed") from error
        claims = decoded.claims
        if any(name not in claims for name in REQUIRED_CLAIMS):
            raise _invalid("missing required claims")
        if claims["iss"] != self._issuer:
            raise _invalid("from another issuer")
        audience = claims["aud"]
        if audience != audience_wanted and not (
            isinstance(audience, list) and audience_wanted in audience
        ):
            raise _invalid("for another audience")
        if not isinstance(claims["exp"], int | float) or claims["exp"] <= time.time():
            raise _invalid("expired")
        if "nbf" in claims and (
            not isinstance(claims["nbf"], int | float)
            or claims["nbf"] > time.time() + NBF_LEEWAY_SECONDS
        ):
            raise _invalid("not valid yet")
        try:
            chain_id = uuid.UUID(str(claims["sid"]))
        except ValueError as error:
            raise _invalid("malformed") from error
        row = await self._lookup(chain_id, str(claims["jti"]))
        if row is None or row.revoked_at is not None or row.revoked_jti is not None:
            raise _invalid("revoked")
        if str(row.user_id) != claims["sub"] or str(row.tenant_id) != claims["tid"]:
            raise _invalid("inconsistent with its grant")
        check_owner(
            tenant_suspended=row.suspended,
            user_active=row.active,
            environment=Environment.LIVE,  # D13: OAuth tokens act in live
            owes=row.billing_status == BillingStatus.PAST_DUE or row.credits <= 0,
        )
        return Principal(
            auth_method="oauth",
            user_id=row.user_id,
            tenant_id=row.tenant_id,
            email=row.email,
            environment=Environment.LIVE,  # D13: OAuth tokens act in live
            rate_limit_tier=row.rate_limit_tier,
            scopes=frozenset(str(claims["scope"]).split()),
            client_id=str(claims["client_id"]),
        )

    async def _lookup(self, chain_id: uuid.UUID, jti: str):
        # The grants' tables, at the first token: without signing keys there is none.
        from strongroom.oauth.models import OAuthChain, OAuthRevokedToken

        chains, revoked = OAuthChain.__table__, OAuthRevokedToken.__table__
        statement = (
            select(
                chains.c.revoked_at,
                chains.c.user_id,
                chains.c.tenant_id,
                revoked.c.jti.label("revoked_jti"),
                _users.c.email,
                _users.c.active,
                _tenants.c.suspended,
                _tenants.c.billing_status,
                _tenants.c.credits,
                _tenants.c.rate_limit_tier,
            )
            .select_from(chains)
            .join(_users, _users.c.id == chains.c.user_id)
            .join(_tenants, _tenants.c.id == chains.c.tenant_id)
            .outerjoin(revoked, and_(revoked.c.jti == jti))
            .where(chains.c.id == chain_id)
        )
        async with self._engine.connect() as connection:
            return (await connection.execute(statement)).first()
