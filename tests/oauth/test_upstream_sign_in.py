"""D39: in production users sign in through an upstream OpenID Connect provider, matched by
verified e-mail to users provisioned for a tenant; others are refused. The provider is the
stand-in of tests/oauth/fake_provider.py, served over real HTTP."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from pydantic import SecretStr

from strongroom.app import create_app
from tests.oauth.fake_provider import CLIENT_ID, CLIENT_SECRET, FakeProvider
from tests.oauth.flow import (
    authorize_query,
    hidden_fields,
    pkce_pair,
    post_form,
    query_of,
    register,
)

AUTHORIZE = "/api/v2/oauth/authorize"


@pytest.fixture
async def provider():
    async with FakeProvider() as provider:
        yield provider


@pytest.fixture
async def oidc_app(settings, provider):
    settings = settings.model_copy(update={
        "dev_sign_in": False, "oidc_issuer": provider.issuer, "oidc_client_id": CLIENT_ID,
        "oidc_client_secret": SecretStr(CLIENT_SECRET)})  # fmt: skip
    app = create_app(settings)
    async with app.test_app():
        yield app


async def through_provider(client, authorize_url: str):
    """Follow Strongroom -> provider -> Strongroom's callback; returns the callback answer."""
    start = await client.get(authorize_url)
    assert start.status_code == 302
    async with httpx.AsyncClient() as browser:
        at_provider = await browser.get(start.headers["Location"])
    callback = urlsplit(at_provider.headers["location"])
    assert callback.path == "/api/v2/oauth/callback"
    return await client.get(f"{callback.path}?{callback.query}")


async def test_a_verified_provisioned_user_signs_in_and_reaches_consent(oidc_app, provider,
                                                                      make_credential):  # fmt: skip
    user = await make_credential(email="upstream@example.com")
    provider.behaviour.email = "Upstream@Example.com"
    client = oidc_app.test_client()
    oauth_client = await register(client)
    query = authorize_query(oauth_client, pkce_pair()[1])
    answer = await through_provider(client, f"{AUTHORIZE}?{query}")
    assert answer.status_code == 302 and answer.headers["Location"].startswith(AUTHORIZE)
    consent = await client.get(answer.headers["Location"])
    page = await consent.get_data(as_text=True)
    assert "Allow access?" in page and user.user.email in page
    approved = await post_form(client, AUTHORIZE, hidden_fields(page) | {"decision": "approve"})
    assert "code" in query_of(approved.headers["Location"])


@pytest.mark.parametrize(
    ("change", "message"),
    [({"email_verified": False}, "did not verify"),
     ({"email": "stranger@example.com"}, "no active account"),
     ({"wrong_key": True}, "not signed by the provider"),
     ({"wrong_nonce": True}, "does not answer this sign-in")],
)  # fmt: skip
async def test_the_provider_answer_is_checked(oidc_app, provider, make_credential, change, message):
    await make_credential(email="upstream@example.com")
    provider.behaviour.email = "upstream@example.com"
    for name, value in change.items():
        setattr(provider.behaviour, name, value)
    client = oidc_app.test_client()
    query = authorize_query(await register(client), pkce_pair()[1])
    answer = await through_provider(client, f"{AUTHORIZE}?{query}")
    assert answer.status_code == 403
    assert message in await answer.get_data(as_text=True)
    again = await client.get(f"{AUTHORIZE}?{query}")
    assert again.status_code == 302  # still not signed in: back to the provider


async def test_a_callback_with_another_state_is_refused(oidc_app, provider, make_credential):
    client = oidc_app.test_client()
    query = authorize_query(await register(client), pkce_pair()[1])
    await client.get(f"{AUTHORIZE}?{query}")  # starts a sign-in
    answer = await client.get("/api/v2/oauth/callback?code=x&state=forged")
    assert answer.status_code == 400
