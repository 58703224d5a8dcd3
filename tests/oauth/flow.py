"""A user agent for the OAuth pages: signs in on the dev page and answers the consent page,
following the HTML forms as a browser would (without JavaScript, which the pages do not use).
The OpenID provider of production cannot run here; the dev sign-in page stands in (D39)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

HIDDEN = re.compile(r'<input type=hidden name="([^"]*)" value="([^"]*)">')


def hidden_fields(html: str) -> dict[str, str]:
    return {unescape(name): unescape(value) for name, value in HIDDEN.findall(html)}


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)[:64]
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.decode().rstrip("=")


def query_of(location: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


@dataclass
class Client:
    client_id: str
    redirect_uri: str
    client_secret: str | None = None
    auth_method: str = "none"

    def authenticate(self, form: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        """(form, headers) carrying this client's credentials by its registered method."""
        if self.auth_method == "client_secret_basic":
            pair = f"{self.client_id}:{self.client_secret}".encode()
            return form, {"Authorization": f"Basic {base64.b64encode(pair).decode()}"}
        form = form | {"client_id": self.client_id}
        if self.auth_method == "client_secret_post":
            form["client_secret"] = self.client_secret
        return form, {}


async def register(http, *, auth_method: str = "none", redirect_uri: str = "http://127.0.0.1:9/cb",
                   **extra) -> Client:  # fmt: skip
    response = await http.post(
        "/api/v2/oauth/register",
        json={
            "client_name": "Test app",
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": auth_method,
            **extra,
        },
    )
    assert response.status_code == 201, await _text(response)
    body = await _json(response)
    return Client(body["client_id"], redirect_uri, body.get("client_secret"), auth_method)


def authorize_query(client: Client, challenge: str, **overrides) -> str:
    params = {
        "client_id": client.client_id,
        "redirect_uri": client.redirect_uri,
        "response_type": "code",
        "scope": "vault:read meta:read",
        "state": "st-" + secrets.token_hex(4),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    } | overrides
    return urlencode({name: value for name, value in params.items() if value is not None})


async def sign_in_and_approve(http, authorize_url: str, email: str, *, approve: bool = True):
    """Drive the pages from the authorize URL to the redirect; returns the final response."""
    response = await http.get(authorize_url)
    if response.status_code == 200 and "Sign in" in await _text(response):
        fields = hidden_fields(await _text(response))
        response = await post_form(http, "/api/v2/oauth/sign-in", fields | {"email": email})
        assert response.status_code == 302, await _text(response)
        response = await http.get(_location(response))
    if response.status_code == 200 and "Allow access?" in await _text(response):
        fields = hidden_fields(await _text(response))
        decision = "approve" if approve else "deny"
        response = await post_form(http, "/api/v2/oauth/authorize", fields | {"decision": decision})
    return response


async def post_form(http, url: str, fields: dict[str, str], **options):
    """POST a form with either an httpx client or Quart's test client."""
    if isinstance(http, httpx.AsyncClient):
        return await http.post(url, data=fields, **options)
    return await http.post(url, form=fields, **options)


def _location(response) -> str:
    location = response.headers["Location"]
    parts = urlsplit(location)
    return f"{parts.path}?{parts.query}" if parts.scheme else location


async def _text(response) -> str:
    data = response.get_data(as_text=True) if hasattr(response, "get_data") else response.text
    return await data if hasattr(data, "__await__") else data


async def _json(response) -> dict:
    data = response.get_json() if hasattr(response, "get_json") else response.json()
    return await data if hasattr(data, "__await__") else data
