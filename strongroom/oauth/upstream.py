"""Sign-in through an upstream OpenID Connect provider (D39).

Strongroom is a relying party here: the authorization code flow with PKCE, `state` and
`nonce`, client authentication with `client_secret_basic`, and the ID token verified
against the provider's published keys (issuer, audience, expiry, nonce). A user is signed in
when the provider vouches for the e-mail address (`email_verified`) of a user provisioned
for a tenant; anyone else is refused.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from joserfc.errors import JoseError

from strongroom.lazy import LazyModule
from strongroom.oauth.tokens import s256
from strongroom.settings import Settings

# joserfc.jwt and the cryptography it loads, on the first token (issue 29): most processes
# never see one (OAuth is off without signing keys).
jwt = LazyModule("joserfc.jwt")
jwk = LazyModule("joserfc.jwk")

if TYPE_CHECKING:
    import httpx
    from joserfc.jwk import KeySet

ID_TOKEN_ALGORITHMS = ["RS256", "ES256", "PS256"]
CACHE_SECONDS = 300


class UpstreamError(Exception):
    """The provider's answer cannot sign anyone in; the message is safe to show."""


@dataclass(frozen=True)
class PendingSignIn:
    """What the callback needs, kept in the signed session meanwhile."""

    state: str
    nonce: str
    verifier: str
    next_url: str

    def as_dict(self) -> dict[str, str]:
        return {"state": self.state, "nonce": self.nonce, "verifier": self.verifier,
                "next": self.next_url}  # fmt: skip


class UpstreamProvider:
    """The OpenID provider users sign in with. httpx is imported only when one is configured
    (issue 29): with its command-line extras installed it takes a quarter of a second."""

    def __init__(self, settings: Settings, http: httpx.AsyncClient | None = None) -> None:
        import httpx

        self._issuer = settings.oidc_issuer.rstrip("/")
        self._client_id = settings.oidc_client_id
        self._secret = settings.oidc_client_secret.get_secret_value()
        self._http = http or httpx.AsyncClient(timeout=10)
        self._metadata: tuple[float, dict] | None = None
        self._keys: tuple[float, KeySet] | None = None

    async def metadata(self) -> dict:
        if self._metadata is None or self._metadata[0] < time.monotonic():
            document = await self._get_json(f"{self._issuer}/.well-known/openid-configuration")
            if document.get("issuer", "").rstrip("/") != self._issuer:
                raise UpstreamError("the provider's metadata names another issuer")
            self._metadata = (time.monotonic() + CACHE_SECONDS, document)
        return self._metadata[1]

    async def start(self, redirect_uri: str, next_url: str) -> tuple[str, PendingSignIn]:
        """The provider URL to send the browser to, and what to remember until it returns."""
        pending = PendingSignIn(
            state=secrets.token_urlsafe(24),
            nonce=secrets.token_urlsafe(24),
            verifier=secrets.token_urlsafe(48),
            next_url=next_url,
        )
        query = urlencode({
            "response_type": "code", "client_id": self._client_id, "redirect_uri": redirect_uri,
            "scope": "openid email", "state": pending.state, "nonce": pending.nonce,
            "code_challenge": s256(pending.verifier), "code_challenge_method": "S256",
        })  # fmt: skip
        endpoint = (await self.metadata())["authorization_endpoint"]
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}", pending

    async def finish(self, pending: PendingSignIn, code: str, redirect_uri: str) -> str:
        """Exchange the code and return the verified e-mail address of the user."""
        import httpx

        metadata = await self.metadata()
        try:
            response = await self._http.post(
                metadata["token_endpoint"],
                data={"grant_type": "authorization_code", "code": code,
                      "redirect_uri": redirect_uri, "code_verifier": pending.verifier},
                auth=(self._client_id, self._secret),
            )  # fmt: skip
        except httpx.HTTPError as error:
            raise UpstreamError("the identity provider is unreachable") from error
        try:
            id_token = response.json()["id_token"] if response.status_code == 200 else None
        except (ValueError, KeyError, TypeError):
            id_token = None
        if not isinstance(id_token, str):
            raise UpstreamError("the identity provider refused the sign-in")
        claims = await self._verify(id_token, pending.nonce)
        if claims.get("email_verified") is not True or not claims.get("email"):
            raise UpstreamError("the identity provider did not verify an e-mail address")
        return str(claims["email"]).strip().lower()

    async def _verify(self, id_token: str, nonce: str) -> dict:
        for refresh in (False, True):  # an unknown key may be a rotation: refetch once
            keys = await self._key_set(refresh)
            try:
                claims = jwt.decode(id_token, keys, algorithms=ID_TOKEN_ALGORITHMS).claims
                break
            except JoseError as error:
                if refresh:
                    raise UpstreamError("the ID token is not signed by the provider") from error
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        issuer = claims.get("iss")
        if (
            not isinstance(issuer, str)
            or issuer.rstrip("/") != self._issuer
            or (self._client_id not in audiences)
        ):
            raise UpstreamError("the ID token is for another issuer or client")
        if not isinstance(claims.get("exp"), int | float) or claims["exp"] <= time.time():
            raise UpstreamError("the ID token has expired")
        if claims.get("nonce") != nonce:
            raise UpstreamError("the ID token does not answer this sign-in")
        return claims

    async def _key_set(self, refresh: bool) -> KeySet:
        if refresh or self._keys is None or self._keys[0] < time.monotonic():
            document = await self._get_json((await self.metadata())["jwks_uri"])
            self._keys = (time.monotonic() + CACHE_SECONDS, jwk.KeySet.import_key_set(document))
        return self._keys[1]

    async def _get_json(self, url: str) -> dict:
        import httpx

        try:
            response = await self._http.get(url)
            response.raise_for_status()
            return response.json()
        except (httpx.HTTPError, ValueError) as error:
            raise UpstreamError("the identity provider is unreachable") from error

    async def close(self) -> None:
        await self._http.aclose()
