"""Client registration (RFC 7591, D35, D37, D38) and client authentication at the token and
revocation endpoints (spec 5.3 rule 5)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import re
import secrets
from typing import Literal
from urllib.parse import SplitResult, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.auth.scopes import Scope
from strongroom.oauth.errors import OAuthError
from strongroom.oauth.models import OAuthClient

READ_SCOPES = (
    Scope.VAULT_READ.value,
    Scope.CHAT_READ.value,
    Scope.TEMPLATES_READ.value,
    Scope.WORKFLOWS_READ.value,
    Scope.META_READ.value,
)
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class RegistrationRequest(BaseModel):
    """RFC 7591 client metadata the server understands; others are ignored."""

    model_config = ConfigDict(extra="ignore")

    client_name: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f\x7f]+$")
    redirect_uris: list[str] = Field(min_length=1, max_length=20)
    grant_types: list[Literal["authorization_code", "refresh_token"]] = [
        "authorization_code",
        "refresh_token",
    ]
    response_types: list[Literal["code"]] = ["code"]
    token_endpoint_auth_method: Literal["none", "client_secret_basic", "client_secret_post"] = (
        "client_secret_basic"
    )
    application_type: Literal["web", "native"] = "web"
    scope: str | None = Field(default=None, max_length=1024)

    @field_validator("redirect_uris")
    @classmethod
    def _valid_redirect_uris(cls, uris: list[str]) -> list[str]:
        for uri in uris:
            problem = redirect_uri_problem(uri)
            if problem:
                raise ValueError(f"{uri!r}: {problem}")
        return uris


MAX_URI = 2048
CLIENT_ID = re.compile(r"client_[A-Za-z0-9_-]{1,64}")


def _strict_parts(uri: str) -> SplitResult | None:
    """`uri` split, if it reads the same to us and to a browser: printable ASCII only, no
    backslash, no user info, no fragment (a browser may take `http://evil\\@127.0.0.1/` for
    evil's host where Python sees 127.0.0.1)."""
    if len(uri) > MAX_URI or not uri.isascii() or any(c in uri for c in "\\#@"):
        return None
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in uri):
        return None
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        return None
    return parts if parts.hostname else None


def redirect_uri_problem(uri: str) -> str | None:
    """Why `uri` cannot be registered (D35), or None."""
    parts = _strict_parts(uri)
    if parts is None:
        return "must be an absolute URI of printable ASCII without user info or fragment"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return None
    return "must be https, or http on a loopback host"


def redirect_uri_matches(registered: list[str], candidate: str) -> bool:
    """Exact match, except that loopback http URIs match on any port (RFC 8252 7.3, D35)."""
    wanted = _strict_parts(candidate)
    if wanted is None:
        return False
    if candidate in registered:
        return True
    if wanted.scheme != "http" or wanted.hostname not in LOOPBACK_HOSTS:
        return False
    return any(
        (parts := _strict_parts(uri)) is not None
        and parts.scheme == "http"
        and parts.hostname in LOOPBACK_HOSTS
        and _without_port(parts) == _without_port(wanted)
        for uri in registered
    )


def _without_port(parts: SplitResult) -> tuple:
    host = parts.hostname or ""
    try:
        host = str(ipaddress.ip_address(host))
    except ValueError:
        pass
    return (parts.scheme, host, parts.path, parts.query)


async def register_client(
    session: AsyncSession, request: RegistrationRequest, *, dynamic: bool = True,
    scope: str | None = None,
) -> tuple[OAuthClient, str | None]:  # fmt: skip
    """Store a client; return it and its secret (None for public clients), shown once.

    Dynamically registered clients always get exactly the five read scopes (D37); clients
    made by an admin (`dynamic=False`) get `scope` as given.
    """
    if "refresh_token" in request.grant_types and "authorization_code" not in request.grant_types:
        raise OAuthError(
            "invalid_client_metadata", "refresh_token needs the authorization_code grant"
        )
    secret = None
    if request.token_endpoint_auth_method != "none":
        secret = secrets.token_urlsafe(32)
    client = OAuthClient(
        id=f"client_{secrets.token_urlsafe(16)}",
        client_name=request.client_name,
        redirect_uris=request.redirect_uris,
        grant_types=sorted(set(request.grant_types)),
        response_types=["code"],
        token_endpoint_auth_method=request.token_endpoint_auth_method,
        application_type=request.application_type,
        scope=" ".join(READ_SCOPES) if dynamic else (scope or " ".join(READ_SCOPES)),
        secret_hash=digest(secret) if secret else None,
        dynamic=dynamic,
    )
    session.add(client)
    await session.flush()
    return client, secret


async def authenticate_client(
    session: AsyncSession,
    authorization: str | None,
    form: dict[str, str],
    *,
    registered_method_only: bool = True,
) -> OAuthClient:
    """The client making a token or revocation request (spec 5.3 rule 5).

    Confidential clients must present their secret on every call: at the token endpoint by
    their registered method (RFC 7591 `token_endpoint_auth_method`), at the revocation
    endpoint by either secret method (`registered_method_only=False`; RFC 7009 has no
    per-client method). Public clients name themselves with `client_id`. Raises OAuthError
    `invalid_client`.
    """
    basic = authorization is not None and authorization[:6].lower() == "basic "
    if basic:
        client_id, secret = _basic_credentials(authorization)
        if form.get("client_id") not in (None, client_id):
            raise OAuthError("invalid_request", "client_id differs from the Basic credentials")
    else:
        client_id, secret = form.get("client_id"), form.get("client_secret")
    if not client_id:
        raise OAuthError("invalid_client", "client authentication required", basic_tried=basic)
    if not CLIENT_ID.fullmatch(client_id):
        raise OAuthError("invalid_client", "unknown client", basic_tried=basic)
    client = await session.get(OAuthClient, client_id)
    if client is None:
        raise OAuthError("invalid_client", "unknown client", basic_tried=basic)
    method = client.token_endpoint_auth_method
    if method == "none":
        if secret:
            raise OAuthError("invalid_client", "public clients have no secret", basic_tried=basic)
        return client
    expected_basic = method == "client_secret_basic"
    if secret is None or (registered_method_only and basic != expected_basic):
        raise OAuthError(
            "invalid_client", f"authenticate with {method} on every request", basic_tried=basic
        )
    if not hmac.compare_digest(digest(secret).encode(), (client.secret_hash or "").encode()):
        raise OAuthError("invalid_client", "client authentication failed", basic_tried=basic)
    return client


def _basic_credentials(authorization: str) -> tuple[str, str]:
    try:
        decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
        client_id, _, secret = decoded.partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise OAuthError(
            "invalid_client", "malformed Basic credentials", basic_tried=True
        ) from error
    return unquote(client_id), unquote(secret)
