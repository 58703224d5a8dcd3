"""OAuth 2.1: the signing keys of access tokens and how users sign in (D29, D39)."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import BaseModel, Field, SecretStr, model_validator

from strongroom.settings.base import shown_default


class OAuthSettings(BaseModel):
    """OAuth 2.1: the signing keys of access tokens and how users sign in (D29, D39)."""

    oauth_signing_keys_file: Path | None = Field(
        default=None,
        json_schema_extra=shown_default("generated (SQLite only)"),
        description=(
            "JWKS file of ES256 private keys for OAuth access tokens (D29); the first key signs, "
            "all verify. Unset on PostgreSQL: OAuth is switched off (OAuth endpoints answer 501, "
            "access tokens are refused). See docs/oauth.md for rotation."
        ),
    )
    oidc_issuer: str | None = Field(
        default=None,
        description=(
            "Issuer URL of the upstream OpenID Connect provider users sign in with (D39); "
            "discovery at `<issuer>/.well-known/openid-configuration`. Register "
            "`<base_url>/api/v2/oauth/callback` as the redirect URI there."
        ),
    )
    oidc_client_id: str | None = Field(
        default=None,
        description="Strongroom's client id at that provider.",
    )
    oidc_client_secret: SecretStr | None = Field(
        default=None,
        description=(
            "Its secret (sent with `client_secret_basic`). The three OIDC settings go together."
        ),
    )
    dev_sign_in: bool = Field(
        default=False,
        json_schema_extra=shown_default("`false` (`strongroom dev`: on)"),
        description=(
            "The built-in OAuth sign-in page, which signs in any active user by e-mail without a "
            "password: for the embedded default and tests only (D39)."
        ),
    )

    @model_validator(mode="after")
    def _upstream_complete(self) -> Self:
        upstream = (self.oidc_issuer, self.oidc_client_id, self.oidc_client_secret)
        if any(upstream) and not all(upstream):
            raise ValueError("set STRONGROOM_OIDC_ISSUER, _CLIENT_ID and _CLIENT_SECRET together")
        return self
