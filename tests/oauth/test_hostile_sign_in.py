"""Issue 18: a `next` with CR/LF on the sign-in form, a failure after the session was
written, and access tokens not valid yet (`nbf`)."""

from __future__ import annotations

import time

import pytest

from strongroom.oauth import routes
from tests.oauth.conftest import AUTHORIZE
from tests.oauth.flow import authorize_query, hidden_fields, pkce_pair, post_form, register
from tests.oauth.test_server import bearer, forged


async def sign_in_form(client) -> dict[str, str]:
    page = await client.get(
        f"{AUTHORIZE}?{authorize_query(await register(client), pkce_pair()[1])}"
    )
    return hidden_fields(await page.get_data(as_text=True))


@pytest.mark.parametrize(
    "next_url",
    [
        "/api/v2/oauth/authorize?a=1\r\nSet-Cookie: stolen=1",
        "/api/v2/oauth/authorize?a=1\nLocation: https://evil.example/",
        "/api/v2/oauth/authorize?a=1\r",
        "/api/v2/oauth/authorize?a=\u00e9",
        "/api/v2/oauth/authorize? a",
    ],
)
async def test_a_next_with_cr_lf_or_other_unsafe_characters_goes_to_the_safe_default(
    client, user, next_url
):
    fields = await sign_in_form(client)
    response = await post_form(
        client, "/api/v2/oauth/sign-in", fields | {"email": user.user.email, "next": next_url}
    )
    assert response.status_code == 302  # before: 500, with the signed-in cookie set
    assert response.headers["Location"] == "/api/v2/oauth/authorize?"
    assert "stolen" not in response.headers.get("Set-Cookie", "")


async def test_a_sign_in_that_fails_after_writing_the_session_sets_no_cookie(
    client, user, monkeypatch
):
    """An unexpected failure after the session was written (simulated: the redirect
    raises) is a 500 that does not sign the browser in."""
    fields = await sign_in_form(client)

    def broken_redirect(*args, **kwargs):
        raise RuntimeError("simulated failure after the session was written")

    monkeypatch.setattr(routes, "redirect", broken_redirect)
    response = await post_form(client, "/api/v2/oauth/sign-in", fields | {"email": user.user.email})
    assert response.status_code == 500
    assert "Set-Cookie" not in response.headers


@pytest.mark.parametrize(
    ("offset", "status"), [(3600, 401), (120, 401), (10, 200), (-60, 200)]
)  # fmt: skip
async def test_an_access_token_before_its_nbf_is_invalid_token(
    client, login, runtime, offset, status
):
    _, tokens = await login()
    token = await forged(runtime, tokens, nbf=int(time.time()) + offset)
    response = await client.get("/api/v2/me", headers=bearer(token))
    assert response.status_code == status
    if status == 401:
        body = await response.get_json()
        assert body["code"] == "invalid_token"
        assert "not valid yet" in body["detail"]


async def test_a_non_numeric_nbf_is_invalid_token(client, login, runtime):
    _, tokens = await login()
    token = await forged(runtime, tokens, nbf="soon")
    response = await client.get("/api/v2/me", headers=bearer(token))
    assert response.status_code == 401
