"""OAuth test helpers on the in-process app (both backends)."""

from __future__ import annotations

import uuid

import pytest

from tests.oauth.flow import (
    Client,
    authorize_query,
    pkce_pair,
    post_form,
    query_of,
    register,
    sign_in_and_approve,
)

AUTHORIZE = "/api/v2/oauth/authorize"
TOKEN = "/api/v2/oauth/token"


@pytest.fixture
async def user(make_credential):
    """A provisioned user (with an API key they do not use here), with an address of its own:
    sign-in takes the oldest user of an address, so a shared one would sign in another."""
    return await make_credential(email=f"u{uuid.uuid4().hex}@example.com")


@pytest.fixture
def login(client, user):
    """Run the whole authorization flow; returns (client, token response body)."""

    async def login(oauth_client: Client | None = None, **authorize_options):
        oauth_client = oauth_client or await register(client)
        verifier, challenge = pkce_pair()
        response = await sign_in_and_approve(
            client,
            f"{AUTHORIZE}?{authorize_query(oauth_client, challenge, **authorize_options)}",
            user.user.email,
        )
        code = query_of(response.headers["Location"])["code"]
        form, headers = oauth_client.authenticate(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": oauth_client.redirect_uri,
                "code_verifier": verifier,
            }
        )
        token = await post_form(client, TOKEN, form, headers=headers)
        assert token.status_code == 200, await token.get_data(as_text=True)
        return oauth_client, await token.get_json()

    return login
