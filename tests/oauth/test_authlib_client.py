"""Done-when of the OAuth issue: a real OAuth client (Authlib's async httpx client) drives
registration, authorization with PKCE, code exchange, an API call, refresh and revocation
against a running `strongroom serve`. The user's part in the browser is played by
tests/oauth/flow.py on the dev sign-in page (the upstream OpenID provider cannot run here;
the Chromium test plays it in a real browser)."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import AsyncOAuth2Client

from strongroom.runtime import Runtime
from tests.conftest import issue_credential
from tests.oauth.flow import sign_in_and_approve
from tests.processes import ServeProcess


@pytest.fixture
async def server(postgres_settings):
    async with ServeProcess(postgres_settings) as server:
        yield server


@pytest.mark.parametrize("auth_method", ["none", "client_secret_basic", "client_secret_post"])
async def test_authlib_client_runs_the_whole_flow(server, postgres_settings, monkeypatch,
                                                  auth_method):  # fmt: skip
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")  # the test server speaks http
    runtime = Runtime.create(postgres_settings)
    user = await issue_credential(runtime, email=f"authlib-{auth_method}@example.com")
    await runtime.close()
    base, redirect_uri = server.base, "http://127.0.0.1:8765/callback"

    async with AsyncOAuth2Client(base_url=base) as anonymous:
        registration = await anonymous.request(
            "POST",
            "/api/v2/oauth/register",
            withhold_token=True,  # registration needs no token
            json={
                "client_name": "Authlib test app",
                "redirect_uris": [redirect_uri],
                "token_endpoint_auth_method": auth_method,
            },
        )
    assert registration.status_code == 201
    registered = registration.json()

    client = AsyncOAuth2Client(
        client_id=registered["client_id"],
        client_secret=registered.get("client_secret"),
        token_endpoint_auth_method=auth_method,
        redirect_uri=redirect_uri,
        scope="vault:read meta:read",
        code_challenge_method="S256",
    )
    verifier = generate_token(64)
    url, state = client.create_authorization_url(
        f"{base}/api/v2/oauth/authorize", code_verifier=verifier
    )
    async with httpx.AsyncClient(base_url=base) as browser:
        parts = urlsplit(url)
        answer = await sign_in_and_approve(browser, f"{parts.path}?{parts.query}", user.user.email)
    callback = answer.headers["location"]
    assert callback.startswith(redirect_uri) and f"state={state}" in callback

    token = await client.fetch_token(
        f"{base}/api/v2/oauth/token", authorization_response=callback, code_verifier=verifier
    )
    assert token["token_type"] == "Bearer" and token["refresh_token"].startswith("rt_")

    me = await client.get(f"{base}/api/v2/me")
    assert me.status_code == 200
    assert me.json()["client_id"] == registered["client_id"]
    assert me.json()["auth_method"] == "oauth"

    refreshed = await client.refresh_token(f"{base}/api/v2/oauth/token")
    assert refreshed["refresh_token"] != token["refresh_token"]
    assert (await client.get(f"{base}/api/v2/vault/projects")).status_code == 200

    revoked = await client.revoke_token(
        f"{base}/api/v2/oauth/revoke", token=refreshed["refresh_token"],
        token_type_hint="refresh_token",
    )  # fmt: skip
    assert revoked.status_code == 200
    after = await client.get(f"{base}/api/v2/me")
    assert after.status_code == 401 and after.json()["code"] == "invalid_token"
    await client.aclose()
