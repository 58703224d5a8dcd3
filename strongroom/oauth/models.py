"""OAuth tables. Secrets, codes and refresh tokens are stored only as SHA-256 digests: they
are random 256-bit values, so a plain digest is enough to make a leaked table useless."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from strongroom.db.types import UTCDateTime, utcnow


class OAuthClient(SQLModel, table=True):
    __tablename__ = "oauth_clients"

    id: str = Field(primary_key=True, max_length=64, description="client_<id>")
    client_name: str = Field(max_length=255)
    redirect_uris: list[str] = Field(sa_type=JSON)
    grant_types: list[str] = Field(sa_type=JSON)
    response_types: list[str] = Field(sa_type=JSON)
    token_endpoint_auth_method: str = Field(max_length=32)
    scope: str = Field(max_length=1024)
    application_type: str = Field(default="web", max_length=16)
    secret_hash: str | None = Field(default=None, max_length=64)
    dynamic: bool = Field(default=True, description="Registered through RFC 7591.")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


class OAuthCode(SQLModel, table=True):
    """An authorization code (D33): single use, 60 s, bound to everything it was issued for."""

    __tablename__ = "oauth_codes"

    code_hash: str = Field(primary_key=True, max_length=64)
    client_id: str = Field(foreign_key="oauth_clients.id", ondelete="CASCADE", max_length=64)
    user_id: uuid.UUID = Field(foreign_key="users.id", ondelete="CASCADE")
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    redirect_uri: str = Field(max_length=2048)
    code_challenge: str = Field(max_length=128)
    scope: str = Field(max_length=1024)
    resource: str | None = Field(default=None, max_length=2048)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    chain_id: uuid.UUID | None = Field(default=None, description="Tokens issued from it.")


class OAuthChain(SQLModel, table=True):
    """One grant's line of refresh tokens and the access tokens issued along it (D34):
    revoking the chain revokes them all."""

    __tablename__ = "oauth_chains"

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    client_id: str = Field(foreign_key="oauth_clients.id", ondelete="CASCADE", max_length=64)
    user_id: uuid.UUID = Field(foreign_key="users.id", ondelete="CASCADE")
    tenant_id: uuid.UUID = Field(foreign_key="tenants.id", ondelete="CASCADE")
    scope: str = Field(max_length=1024)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class OAuthRefreshToken(SQLModel, table=True):
    __tablename__ = "oauth_refresh_tokens"

    token_hash: str = Field(primary_key=True, max_length=64)
    chain_id: uuid.UUID = Field(foreign_key="oauth_chains.id", ondelete="CASCADE", index=True)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    rotated_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)


class OAuthRevokedToken(SQLModel, table=True):
    """An access token revoked before its expiry (D40), kept until it would have expired."""

    __tablename__ = "oauth_revoked_tokens"

    jti: str = Field(primary_key=True, max_length=64)
    expires_at: datetime = Field(sa_type=UTCDateTime)


class OAuthConsent(SQLModel, table=True):
    """Scopes a user approved for a client (D39: later approvals skip the consent page)."""

    __tablename__ = "oauth_consents"

    user_id: uuid.UUID = Field(foreign_key="users.id", ondelete="CASCADE", primary_key=True)
    client_id: str = Field(
        foreign_key="oauth_clients.id", ondelete="CASCADE", primary_key=True, max_length=64
    )
    scope: str = Field(max_length=1024)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, nullable=False)
