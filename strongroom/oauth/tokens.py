"""Codes, access tokens and refresh tokens (D29, D33, D34, D40).

Access tokens are ES256 JWTs the API verifies without a database round trip for the
signature; their revocation is checked through their chain (`sid` claim) and `jti`.
Refresh tokens and codes are opaque, stored as digests, and single use.
"""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta

from authlib.oauth2.rfc7636 import create_s256_code_challenge as s256
from joserfc.errors import JoseError
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.db.types import utcnow
from strongroom.lazy import LazyModule
from strongroom.oauth.clients import CLIENT_ID, digest
from strongroom.oauth.errors import OAuthError
from strongroom.oauth.models import (
    OAuthChain,
    OAuthClient,
    OAuthCode,
    OAuthRefreshToken,
    OAuthRevokedToken,
)
from strongroom.oauth.signing import ALGORITHM, SigningKeys
from strongroom.tenants.models import Tenant, User

# joserfc.jwt and the cryptography it loads, on the first token (issue 29): most processes
# never see one (OAuth is off without signing keys).
jwt = LazyModule("joserfc.jwt")

ACCESS_TOKEN_SECONDS = 3600  # spec 2.4, D29
REFRESH_TOKEN_DAYS = 30  # spec 5.1, D34
CODE_SECONDS = 60  # D33
VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")  # spec 5.3 rule 3, RFC 7636 4.1
CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")  # base64url SHA-256, no padding


@dataclass(frozen=True)
class TokenSet:
    access_token: str
    refresh_token: str | None
    scope: str
    expires_in: int = ACCESS_TOKEN_SECONDS

    def body(self) -> dict:
        body = {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": self.scope,
        }
        if self.refresh_token is not None:
            body["refresh_token"] = self.refresh_token
        return body


class TokenService:
    def __init__(self, keys: SigningKeys, issuer: str, audience: str) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audience = audience

    # -- codes ---------------------------------------------------------------------------

    async def issue_code(
        self,
        session: AsyncSession,
        *,
        client: OAuthClient,
        user: User,
        redirect_uri: str,
        code_challenge: str,
        scope: str,
        resource: str | None,
    ) -> str:
        code = secrets.token_urlsafe(32)
        session.add(
            OAuthCode(
                code_hash=digest(code),
                client_id=client.id,
                user_id=user.id,
                tenant_id=user.tenant_id,
                redirect_uri=redirect_uri,
                code_challenge=code_challenge,
                scope=scope,
                resource=resource,
                expires_at=utcnow() + timedelta(seconds=CODE_SECONDS),
            )
        )
        await session.flush()
        return code

    async def exchange_code(
        self,
        session: AsyncSession,
        *,
        client: OAuthClient,
        code: str,
        redirect_uri: str | None,
        verifier: str | None,
        resource: str | None = None,
    ) -> TokenSet:
        """The authorization_code grant. Raises OAuthError `invalid_grant`, and
        `invalid_target` for a `resource` other than the one authorized (RFC 8707)."""
        if not verifier or not VERIFIER.fullmatch(verifier):
            raise OAuthError("invalid_grant", "code_verifier must be 43-128 unreserved characters")
        # Claim the code atomically (of two racing exchanges only one sees used_at NULL),
        # and open its token chain in the same commit, so that a second use arriving while
        # the first is still running finds the chain and revokes it (D33).
        now = utcnow()
        claimed = await session.exec(
            update(OAuthCode)
            .where(OAuthCode.code_hash == digest(code), OAuthCode.used_at.is_(None))
            .values(used_at=now)
            .returning(OAuthCode.code_hash)
        )
        first_use = claimed.first() is not None
        row = await session.get(OAuthCode, digest(code))
        if row is None:
            raise OAuthError("invalid_grant", "unknown authorization code")
        if not first_use:  # second use (D33): revoke what the first use issued
            if row.chain_id is not None:
                await self._revoke_chain(session, row.chain_id)
                await session.commit()
            raise OAuthError("invalid_grant", "authorization code already used")
        chain = OAuthChain(
            client_id=row.client_id, user_id=row.user_id, tenant_id=row.tenant_id, scope=row.scope
        )
        session.add(chain)
        await session.flush()
        row.chain_id = chain.id
        session.add(row)
        await session.commit()  # spent by any attempt, even one that fails below
        try:
            if row.expires_at <= now:
                raise OAuthError("invalid_grant", "authorization code expired")
            if row.client_id != client.id:
                raise OAuthError("invalid_grant", "authorization code issued to another client")
            if redirect_uri != row.redirect_uri:
                raise OAuthError("invalid_grant", "redirect_uri differs from the authorization")
            if s256(verifier) != row.code_challenge:
                raise OAuthError("invalid_grant", "code_verifier does not match the challenge")
            audience = self._audience_of(row, resource)
            user, _ = await self._active_owner(session, row.user_id)
        except OAuthError:
            await self._revoke_chain(session, chain.id)
            await session.commit()
            raise
        return await self._issue(session, chain, user, client=client, audience=audience)

    # -- refresh tokens ------------------------------------------------------------------

    async def refresh(
        self,
        session: AsyncSession,
        *,
        client: OAuthClient,
        refresh_token: str,
        scope: str | None,
        resource: str | None = None,
    ) -> TokenSet:
        """The refresh_token grant with rotation and replay detection (D34); the new access
        token is for the resource of the authorization (RFC 8707)."""
        now = utcnow()
        token = await session.get(OAuthRefreshToken, digest(refresh_token))
        if token is None:
            raise OAuthError("invalid_grant", "unknown refresh token")
        chain = await session.get(OAuthChain, token.chain_id)
        if chain.client_id != client.id:
            raise OAuthError("invalid_grant", "refresh token issued to another client")
        if chain.revoked_at is not None:
            raise OAuthError("invalid_grant", "refresh token revoked")
        code = (await session.exec(select(OAuthCode).where(OAuthCode.chain_id == chain.id))).first()
        audience = self._audience_of(code, resource)
        rotated = await session.exec(
            update(OAuthRefreshToken)
            .where(
                OAuthRefreshToken.token_hash == token.token_hash,
                OAuthRefreshToken.rotated_at.is_(None),
            )
            .values(rotated_at=now)
            .returning(OAuthRefreshToken.token_hash)
        )
        if rotated.first() is None:  # a rotated token came back: replay (spec 3, D34)
            await self._revoke_chain(session, chain.id)
            await session.commit()
            raise OAuthError("invalid_grant", "refresh token replayed; the grant is revoked")
        if token.expires_at <= now:
            raise OAuthError("invalid_grant", "refresh token expired")
        granted = set(chain.scope.split())
        if scope is not None:
            requested = set(scope.split())
            if not requested or not requested <= granted:
                raise OAuthError("invalid_scope", "a refresh may narrow the scope, not widen it")
            granted = requested
        user, _ = await self._active_owner(session, chain.user_id)
        return await self._issue(
            session, chain, user, client=client, scope=" ".join(sorted(granted)), audience=audience
        )

    def _audience_of(self, code: OAuthCode | None, requested: str | None) -> str:
        """The resource the grant was authorized for (the API when it named none); a token
        request may repeat it, never change it (RFC 8707 2.2)."""
        granted = (code.resource if code is not None else None) or self.audience
        if requested is not None and requested != granted:
            raise OAuthError("invalid_target", "resource differs from the authorization")
        return granted

    # -- revocation ----------------------------------------------------------------------

    async def revoke(self, session: AsyncSession, *, client: OAuthClient, token: str) -> None:
        """RFC 7009: revoke a refresh token's chain or an access token; unknown tokens and
        tokens of other clients are ignored (D40)."""
        refresh = await session.get(OAuthRefreshToken, digest(token))
        if refresh is not None:
            chain = await session.get(OAuthChain, refresh.chain_id)
            if chain.client_id == client.id:
                await self._revoke_chain(session, chain.id)
            return
        claims = self.verify_signature(token)
        if claims is None or claims.get("client_id") != client.id:
            return
        jti = str(claims.get("jti", ""))
        if jti and await session.get(OAuthRevokedToken, jti) is None:
            expires = utcnow() + timedelta(seconds=ACCESS_TOKEN_SECONDS)
            try:
                async with session.begin_nested():  # a concurrent revocation may win the row
                    session.add(OAuthRevokedToken(jti=jti, expires_at=expires))
            except IntegrityError:
                pass

    # -- access tokens -------------------------------------------------------------------

    def verify_signature(self, token: str) -> dict | None:
        """The claims of a token this server signed, or None (no other checks)."""
        try:
            return jwt.decode(token, self.keys.key_set, algorithms=[ALGORITHM]).claims
        except (JoseError, ValueError, TypeError):
            return None

    def _access_token(self, chain: OAuthChain, user: User, scope: str, audience: str) -> str:
        now = int(utcnow().timestamp())
        claims = {
            "iss": self.issuer,
            "sub": str(user.id),
            "aud": audience,
            "iat": now,
            "exp": now + ACCESS_TOKEN_SECONDS,
            "jti": secrets.token_urlsafe(16),
            "tid": str(user.tenant_id),
            "client_id": chain.client_id,
            "scope": scope,
            "sid": str(chain.id),
        }
        header = {"alg": ALGORITHM, "kid": self.keys.active.kid, "typ": "at+jwt"}
        return jwt.encode(header, claims, self.keys.active)

    async def _issue(
        self,
        session: AsyncSession,
        chain: OAuthChain,
        user: User,
        *,
        client: OAuthClient,
        scope: str | None = None,
        audience: str | None = None,
    ) -> TokenSet:
        refresh_token = None
        if "refresh_token" in client.grant_types:  # only clients registered for the grant
            refresh_token = f"rt_{secrets.token_urlsafe(32)}"
            session.add(
                OAuthRefreshToken(
                    token_hash=digest(refresh_token),
                    chain_id=chain.id,
                    expires_at=utcnow() + timedelta(days=REFRESH_TOKEN_DAYS),
                )
            )
            await session.flush()
        scope = scope or chain.scope
        access_token = self._access_token(chain, user, scope, audience or self.audience)
        return TokenSet(access_token, refresh_token, scope)

    @staticmethod
    async def _revoke_chain(session: AsyncSession, chain_id: uuid.UUID) -> None:
        await session.exec(
            update(OAuthChain)
            .where(OAuthChain.id == chain_id, OAuthChain.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )

    @staticmethod
    async def _active_owner(session: AsyncSession, user_id: uuid.UUID) -> tuple[User, Tenant]:
        user = await session.get(User, user_id)
        tenant = await session.get(Tenant, user.tenant_id) if user else None
        if user is None or tenant is None or not user.active or tenant.suspended:
            raise OAuthError("invalid_grant", "the user of this grant can no longer sign in")
        return user, tenant


async def find_client(session: AsyncSession, client_id: str | None) -> OAuthClient | None:
    if not client_id or not CLIENT_ID.fullmatch(client_id):
        return None
    return (await session.exec(select(OAuthClient).where(OAuthClient.id == client_id))).first()


async def revoke_tenant_grants(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """Revoke every grant (token chain) the tenant's users hold, with its refresh and access
    tokens (D34); return how many."""
    result = await session.exec(
        update(OAuthChain)
        .where(OAuthChain.tenant_id == tenant_id, OAuthChain.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    return result.rowcount
