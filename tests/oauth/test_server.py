"""Spec 2.3, 2.4, 4 (OAuth rows, rules 1-3), 5.3, 9.2 and D29-D40, with the attacks the
issue lists. The dev sign-in page stands in for the upstream OpenID provider (D39), which
cannot run here."""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import urlencode

import pytest
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from joserfc import jwt
from joserfc.jwk import OctKey

from tests.oauth.conftest import AUTHORIZE, TOKEN
from tests.oauth.flow import (
    authorize_query,
    hidden_fields,
    pkce_pair,
    post_form,
    query_of,
    register,
    sign_in_and_approve,
)

BASE = "http://api.strongroom.test"
READ = {"vault:read", "chat:read", "templates:read", "workflows:read", "meta:read"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def problem_code(response) -> str:
    return (await response.get_json())["code"]


# -- metadata ------------------------------------------------------------------------------


async def test_authorization_server_metadata_follows_rfc_8414_and_rule_1(client, monkeypatch):
    response = await client.get("/.well-known/oauth-authorization-server")
    metadata = await response.get_json()
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")  # the test base URL is http
    AuthorizationServerMetadata(metadata).validate()
    assert metadata["issuer"] == BASE  # a bare origin
    paths = {"authorization": "authorize", "token": "token", "revocation": "revoke",
             "registration": "register"}  # fmt: skip
    for name, path in paths.items():
        assert metadata[f"{name}_endpoint"] == f"{BASE}/api/v2/oauth/{path}"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert metadata["response_types_supported"] == ["code"]
    assert set(metadata["token_endpoint_auth_methods_supported"]) == {
        "none", "client_secret_basic", "client_secret_post"}  # fmt: skip
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["jwks_uri"] == f"{BASE}/.well-known/jwks.json"


@pytest.mark.parametrize(
    ("path", "identifier"),
    [("/.well-known/oauth-protected-resource", BASE),
     ("/.well-known/oauth-protected-resource/api/v2", f"{BASE}/api/v2")],
)  # fmt: skip
async def test_protected_resource_metadata_names_the_identifier_its_url_was_built_from(
    client, path, identifier
):
    """RFC 9728 3.3 (issue 31): the well-known prefix inserted into the identifier makes the
    URL, so the bare path names the origin, the suffixed one the API."""
    resource = await (await client.get(path)).get_json()
    issuer = (await (await client.get("/.well-known/oauth-authorization-server")).get_json())[
        "issuer"
    ]
    assert resource["resource"] == identifier
    assert resource["authorization_servers"] == [issuer]
    assert resource["bearer_methods_supported"] == ["header"]


async def test_jwks_publishes_public_es256_keys_only(client):
    keys = (await (await client.get("/.well-known/jwks.json")).get_json())["keys"]
    assert keys and all(
        key["kty"] == "EC" and key["crv"] == "P-256" and "kid" in key for key in keys
    )
    assert all("d" not in key for key in keys)


# -- registration (RFC 7591, D35, D37, D38) -------------------------------------------------


async def test_dynamic_clients_get_exactly_the_five_read_scopes(client):
    response = await client.post("/api/v2/oauth/register", json={
        "client_name": "App", "redirect_uris": ["https://app.example/cb"],
        "token_endpoint_auth_method": "none", "scope": "vault:write vault:read"})  # fmt: skip
    body = await response.get_json()
    assert response.status_code == 201
    assert body["client_id"].startswith("client_")
    assert set(body["scope"].split()) == READ
    assert "client_secret" not in body
    assert isinstance(body["client_id_issued_at"], int)


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_confidential_clients_get_their_secret_once(client, method):
    registered = await register(client, auth_method=method)
    assert registered.client_secret
    assert response_has_no_store(await client.post("/api/v2/oauth/register", json={
        "client_name": "x", "redirect_uris": ["https://a.example/cb"]}))  # fmt: skip


def response_has_no_store(response) -> bool:
    return response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    "uri",
    [
        "http://app.example/cb",
        "https://app.example/cb#frag",
        "/relative",
        "javascript:alert(1)",
        "ftp://127.0.0.1/cb",
    ],
)
async def test_redirect_uris_must_be_https_or_loopback_without_fragment(client, uri):
    response = await client.post("/api/v2/oauth/register", json={
        "client_name": "App", "redirect_uris": [uri]})  # fmt: skip
    assert response.status_code == 400
    assert (await response.get_json())["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize(
    "body",
    [{}, {"client_name": "x"}, {"client_name": "x", "redirect_uris": ["https://a.example/cb"],
      "grant_types": ["password"]}, {"client_name": "x", "redirect_uris": ["https://a.example/cb"],
      "response_types": ["token"]}, {"client_name": "x", "redirect_uris": ["https://a.example/cb"],
      "token_endpoint_auth_method": "private_key_jwt"}],
)  # fmt: skip
async def test_bad_client_metadata_is_refused(client, body):
    response = await client.post("/api/v2/oauth/register", json=body)
    assert response.status_code == 400
    assert (await response.get_json())["error"] in {
        "invalid_client_metadata",
        "invalid_redirect_uri",
    }


# -- the whole flow (spec 2.4, D14, D15, D29) -----------------------------------------------


async def test_code_flow_gives_a_bearer_jwt_and_a_rotating_refresh_token(client, login, user):
    oauth_client, tokens = await login()
    assert tokens["token_type"] == "Bearer"
    assert tokens["expires_in"] == 3600
    assert tokens["refresh_token"].startswith("rt_") and len(tokens["refresh_token"]) == 46
    assert set(tokens["scope"].split()) == {"vault:read", "meta:read"}
    header = json.loads(base64.urlsafe_b64decode(tokens["access_token"].split(".")[0] + "=="))
    assert header["alg"] == "ES256" and header["kid"]
    claims = json.loads(base64.urlsafe_b64decode(tokens["access_token"].split(".")[1] + "=="))
    assert claims["iss"] == BASE and claims["aud"] == f"{BASE}/api/v2"
    assert claims["sub"] == str(user.user.id) and claims["tid"] == str(user.tenant.id)
    assert claims["client_id"] == oauth_client.client_id
    assert claims["exp"] - claims["iat"] == 3600


async def test_me_with_an_access_token_is_the_oauth_principal(client, login, user):
    oauth_client, tokens = await login()
    body = await (await client.get("/api/v2/me", headers=bearer(tokens["access_token"]))).get_json()
    assert body == {
        "user_id": str(user.user.id), "tenant_id": str(user.tenant.id), "auth_method": "oauth",
        "email": user.user.email, "client_id": oauth_client.client_id, "environment": "live",
        "rate_limit_tier": "standard", "scopes": ["meta:read", "vault:read"],
    }  # fmt: skip


async def test_access_tokens_apply_scopes_and_refuse_writes(client, login):
    _, tokens = await login(scope="meta:read")
    listing = await client.get("/api/v2/vault/projects", headers=bearer(tokens["access_token"]))
    assert listing.status_code == 403 and await problem_code(listing) == "insufficient_scope"
    _, tokens = await login()
    create = await client.post("/api/v2/vault/projects", headers=bearer(tokens["access_token"]),
                               json={"name": "x", "project_type": "other"})  # fmt: skip
    assert create.status_code == 403 and await problem_code(create) == "oauth_not_supported"
    listing = await client.get("/api/v2/vault/projects", headers=bearer(tokens["access_token"]))
    assert listing.status_code == 200


async def test_oauth_calls_are_rate_limited_per_client_and_user(client, login):
    _, first = await login()
    _, second = await login()  # another client, same user: another bucket
    for _ in range(3):
        await client.get("/api/v2/me", headers=bearer(first["access_token"]))
    one = await client.get("/api/v2/me", headers=bearer(first["access_token"]))
    other = await client.get("/api/v2/me", headers=bearer(second["access_token"]))
    assert int(one.headers["X-RateLimit-Remaining"]) == 116
    assert int(other.headers["X-RateLimit-Remaining"]) == 119


# -- access token attacks (D11) -------------------------------------------------------------


def _b64(document: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")


async def forged(runtime, tokens: dict, **changes) -> str:
    claims = runtime.tokens.verify_signature(tokens["access_token"]) | changes
    key = runtime.tokens.keys.active
    return jwt.encode({"alg": "ES256", "kid": key.kid}, claims, key)


async def test_alg_none_and_hs256_tokens_are_invalid_token(client, login, runtime):
    _, tokens = await login()
    claims = runtime.tokens.verify_signature(tokens["access_token"])
    none = f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(claims)}."
    hs256 = jwt.encode({"alg": "HS256"}, claims, OctKey.import_key(b"k" * 32))
    for token in (none, hs256, tokens["access_token"][:-4] + "AAAA", "a.b.c"):
        response = await client.get("/api/v2/me", headers=bearer(token))
        assert response.status_code == 401 and await problem_code(response) == "invalid_token"
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


@pytest.mark.parametrize(
    ("changes", "detail"),
    [({"aud": "https://other.example/api"}, "another audience"),
     ({"iss": "https://evil.example"}, "another issuer"),
     ({"exp": int(time.time()) - 1}, "expired")],
)  # fmt: skip
async def test_wrong_audience_issuer_or_expiry_is_invalid_token(client, login, runtime, changes,
                                                                 detail):  # fmt: skip
    _, tokens = await login()
    response = await client.get(
        "/api/v2/me", headers=bearer(await forged(runtime, tokens, **changes))
    )
    body = await response.get_json()
    assert (response.status_code, body["code"]) == (401, "invalid_token")
    assert detail in body["detail"]


async def test_revoked_access_token_is_refused_until_it_expires(client, login):
    oauth_client, tokens = await login()
    revoked = await post_form(
        client,
        "/api/v2/oauth/revoke",
        {"token": tokens["access_token"], "client_id": oauth_client.client_id},
    )
    assert revoked.status_code == 200 and await revoked.get_data() == b""
    response = await client.get("/api/v2/me", headers=bearer(tokens["access_token"]))
    assert await problem_code(response) == "invalid_token"


async def test_revoking_a_refresh_token_revokes_its_chain(client, login):
    oauth_client, tokens = await login()
    await post_form(
        client,
        "/api/v2/oauth/revoke",
        {"token": tokens["refresh_token"], "client_id": oauth_client.client_id},
    )
    response = await client.get("/api/v2/me", headers=bearer(tokens["access_token"]))
    assert await problem_code(response) == "invalid_token"
    refreshed = await refresh(client, oauth_client, tokens["refresh_token"])
    assert (await refreshed.get_json())["error"] == "invalid_grant"


async def test_revoking_unknown_tokens_is_200(client):
    oauth_client = await register(client)
    for token in ("nonsense", "rt_unknown", "a.b.c"):
        response = await post_form(
            client, "/api/v2/oauth/revoke", {"token": token, "client_id": oauth_client.client_id}
        )
        assert response.status_code == 200


# -- code and PKCE attacks (D33, spec 5.3) ----------------------------------------------------


async def start(client, user, oauth_client=None, **options):
    """Authorize and return (client, verifier, code)."""
    oauth_client = oauth_client or await register(client)
    verifier, challenge = pkce_pair()
    response = await sign_in_and_approve(
        client,
        f"{AUTHORIZE}?{authorize_query(oauth_client, challenge, **options)}",
        user.user.email,
    )
    return oauth_client, verifier, query_of(response.headers["Location"]).get("code")


async def exchange(client, oauth_client, code, verifier, **overrides):
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": oauth_client.redirect_uri,
        "client_id": oauth_client.client_id,
    }
    return await post_form(
        client, TOKEN, {k: v for k, v in (form | overrides).items() if v is not None}
    )


async def refresh(client, oauth_client, refresh_token, **extra):
    form = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": oauth_client.client_id,
    } | extra
    return await post_form(client, TOKEN, form)


async def test_pkce_plain_is_refused_at_authorize(client, user):
    oauth_client = await register(client)
    query = authorize_query(oauth_client, "x" * 43, code_challenge_method="plain")
    response = await sign_in_and_approve(client, f"{AUTHORIZE}?{query}", user.user.email)
    location = query_of(response.headers["Location"])
    assert location["error"] == "invalid_request"
    assert location["iss"] == BASE and location["state"].startswith("st-")


async def test_missing_challenge_is_refused_at_authorize(client, user):
    oauth_client = await register(client)
    query = authorize_query(oauth_client, None)
    response = await sign_in_and_approve(client, f"{AUTHORIZE}?{query}", user.user.email)
    assert query_of(response.headers["Location"])["error"] == "invalid_request"


@pytest.mark.parametrize("verifier", [None, "short", "x" * 129, "wrong" * 10])
async def test_missing_or_wrong_verifier_is_invalid_grant(client, user, verifier):
    oauth_client, _, code = await start(client, user)
    response = await exchange(client, oauth_client, code, verifier)
    assert (await response.get_json())["error"] == "invalid_grant"


async def test_a_code_works_once_and_its_second_use_revokes_the_first_tokens(client, user):
    oauth_client, verifier, code = await start(client, user)
    first = await exchange(client, oauth_client, code, verifier)
    access = (await first.get_json())["access_token"]
    assert (await client.get("/api/v2/me", headers=bearer(access))).status_code == 200
    second = await exchange(client, oauth_client, code, verifier)
    assert (await second.get_json())["error"] == "invalid_grant"
    assert (
        await problem_code(await client.get("/api/v2/me", headers=bearer(access)))
        == "invalid_token"
    )


async def test_a_failed_exchange_spends_the_code(client, user):
    oauth_client, verifier, code = await start(client, user)
    await exchange(client, oauth_client, code, "wrong" * 10)
    response = await exchange(client, oauth_client, code, verifier)
    assert (await response.get_json())["error"] == "invalid_grant"


async def test_a_code_of_another_client_is_invalid_grant(client, user):
    _, verifier, code = await start(client, user)
    thief = await register(client)
    response = await exchange(client, thief, code, verifier)
    assert (await response.get_json())["error"] == "invalid_grant"


async def test_the_redirect_uri_must_match_at_the_token_endpoint(client, user):
    oauth_client, verifier, code = await start(client, user)
    response = await exchange(client, oauth_client, code, verifier,
                              redirect_uri="http://127.0.0.1:9/other")  # fmt: skip
    assert (await response.get_json())["error"] == "invalid_grant"


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example/other",
        "https://app.example/cb?x=1",
        "https://evil.example/cb",
        "https://app.example.evil.example/cb",
        "https://app.example/cb/../cb2",
    ],
)
async def test_unregistered_redirect_uris_get_an_error_page_never_a_redirect(client, user, uri):
    oauth_client = await register(client, redirect_uri="https://app.example/cb")
    query = authorize_query(oauth_client, pkce_pair()[1], redirect_uri=uri)
    response = await client.get(f"{AUTHORIZE}?{query}")
    assert response.status_code == 400 and "Location" not in response.headers
    assert "not registered" in await response.get_data(as_text=True)


async def test_unknown_client_gets_an_error_page(client):
    response = await client.get(
        f"{AUTHORIZE}?client_id=client_nope&redirect_uri=https://evil.example"
    )
    assert response.status_code == 400 and "Location" not in response.headers


async def test_loopback_redirect_uris_match_on_any_port(client, user):
    oauth_client = await register(client, redirect_uri="http://127.0.0.1/cb")
    oauth_client.redirect_uri = "http://127.0.0.1:53123/cb"
    _, verifier, code = await start(client, user, oauth_client)
    assert (await exchange(client, oauth_client, code, verifier)).status_code == 200


async def test_sign_in_never_redirects_off_site(client, user):
    page = await client.get(
        f"{AUTHORIZE}?{authorize_query(await register(client), pkce_pair()[1])}"
    )
    fields = hidden_fields(await page.get_data(as_text=True))
    response = await post_form(
        client,
        "/api/v2/oauth/sign-in",
        fields | {"email": user.user.email, "next": "https://evil.example/"},
    )
    assert response.headers["Location"].startswith("/api/v2/oauth/authorize?")


async def test_consent_post_without_its_csrf_token_is_refused(client, user):
    oauth_client = await register(client)
    query = authorize_query(oauth_client, pkce_pair()[1])
    page = await client.get(f"{AUTHORIZE}?{query}")
    fields = hidden_fields(await page.get_data(as_text=True))
    await post_form(client, "/api/v2/oauth/sign-in", fields | {"email": user.user.email})
    consent = await client.get(f"{AUTHORIZE}?{query}")
    fields = hidden_fields(await consent.get_data(as_text=True))
    for token in (None, "forged"):
        form = {k: v for k, v in fields.items() if k != "csrf_token"} | {"decision": "approve"}
        if token:
            form["csrf_token"] = token
        response = await post_form(client, AUTHORIZE, form)
        assert response.status_code == 403 and "Location" not in response.headers


async def test_denying_consent_redirects_access_denied(client, user):
    oauth_client = await register(client)
    query = authorize_query(oauth_client, pkce_pair()[1])
    response = await sign_in_and_approve(client, f"{AUTHORIZE}?{query}", user.user.email,
                                         approve=False)  # fmt: skip
    assert query_of(response.headers["Location"])["error"] == "access_denied"


async def test_sign_in_and_consent_say_the_token_acts_in_live(client, user, login):
    """D13: OAuth tokens act in `live`; on `make run` the printed key is `test`, so the pages
    say where a sign-in lands (issue 31)."""
    unknown = await register(client)
    sign_in = await client.get(f"{AUTHORIZE}?{authorize_query(unknown, pkce_pair()[1])}")
    oauth_client, _ = await login()
    consent = await client.get(
        f"{AUTHORIZE}?{authorize_query(oauth_client, pkce_pair()[1], prompt='consent')}"
    )
    for page in (sign_in, consent):
        text = await page.get_data(as_text=True)
        assert "<strong>live</strong> environment" in text and "ak_test_" in text


async def test_later_approvals_skip_consent_unless_prompt_consent(client, user, login):
    oauth_client, _ = await login()
    query = authorize_query(oauth_client, pkce_pair()[1])
    assert (await client.get(f"{AUTHORIZE}?{query}")).status_code == 302
    again = await client.get(
        f"{AUTHORIZE}?{authorize_query(oauth_client, pkce_pair()[1], prompt='consent')}"
    )
    assert again.status_code == 200 and "Allow access?" in await again.get_data(as_text=True)


# -- scope escalation (D37) -------------------------------------------------------------------


async def test_write_scopes_asked_at_authorize_are_dropped(client, login):
    _, tokens = await login(scope="vault:read vault:write")
    assert tokens["scope"] == "vault:read"


async def test_only_unavailable_scopes_at_authorize_is_invalid_scope(client, user):
    oauth_client = await register(client)
    query = authorize_query(oauth_client, pkce_pair()[1], scope="vault:write")
    response = await sign_in_and_approve(client, f"{AUTHORIZE}?{query}", user.user.email)
    assert query_of(response.headers["Location"])["error"] == "invalid_scope"


async def test_refresh_may_narrow_but_not_widen_the_scope(client, login):
    oauth_client, tokens = await login()
    wider = await refresh(
        client, oauth_client, tokens["refresh_token"], scope="vault:read chat:read"
    )
    assert (await wider.get_json())["error"] == "invalid_scope"
    narrower = await refresh(client, oauth_client, tokens["refresh_token"], scope="meta:read")
    assert (await narrower.get_json())["scope"] == "meta:read"


# -- refresh rotation and replay (spec 3, D34) ------------------------------------------------


async def test_a_replayed_refresh_token_revokes_the_whole_chain(client, login):
    oauth_client, tokens = await login()
    rotated = await (await refresh(client, oauth_client, tokens["refresh_token"])).get_json()
    assert rotated["refresh_token"] != tokens["refresh_token"]
    replay = await refresh(client, oauth_client, tokens["refresh_token"])
    assert (await replay.get_json())["error"] == "invalid_grant"
    later = await refresh(client, oauth_client, rotated["refresh_token"])
    assert (await later.get_json())["error"] == "invalid_grant"
    me = await client.get("/api/v2/me", headers=bearer(rotated["access_token"]))
    assert await problem_code(me) == "invalid_token"


# -- client authentication (spec 5.3 rule 5, D32) --------------------------------------------


async def test_confidential_clients_need_their_secret_on_every_exchange(client, user, login):
    oauth_client = await register(client, auth_method="client_secret_post")
    _, verifier, code = await start(client, user, oauth_client)
    response = await exchange(client, oauth_client, code, verifier)  # no secret
    assert response.status_code == 401 and (await response.get_json())["error"] == "invalid_client"
    _, tokens = await login(oauth_client)
    without = await refresh(client, oauth_client, tokens["refresh_token"])
    assert without.status_code == 401
    wrong = await refresh(client, oauth_client, tokens["refresh_token"], client_secret="nope")
    assert wrong.status_code == 401
    good = await refresh(client, oauth_client, tokens["refresh_token"],
                         client_secret=oauth_client.client_secret)  # fmt: skip
    assert good.status_code == 200


async def test_basic_auth_failure_answers_a_basic_challenge(client, login):
    oauth_client = await register(client, auth_method="client_secret_basic")
    _, tokens = await login(oauth_client)
    ok = base64.b64encode(
        f"{oauth_client.client_id}:{oauth_client.client_secret}".encode()
    ).decode()
    bad = base64.b64encode(f"{oauth_client.client_id}:wrong".encode()).decode()
    form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    refused = await post_form(client, TOKEN, form, headers={"Authorization": f"Basic {bad}"})
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"].startswith("Basic")
    body = await refused.get_json()
    assert body["code"] == body["error"] == "invalid_client"
    assert refused.headers["Cache-Control"] == "no-store"
    accepted = await post_form(client, TOKEN, form, headers={"Authorization": f"Basic {ok}"})
    assert accepted.status_code == 200


async def test_unsupported_grants_are_refused(client):
    oauth_client = await register(client)
    for grant in ("password", "implicit", "client_credentials"):
        response = await post_form(
            client, TOKEN, {"grant_type": grant, "client_id": oauth_client.client_id}
        )
        assert (await response.get_json())["error"] == "unsupported_grant_type"


# -- found in review --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    ["http://evil.example\\@127.0.0.1:5555/cb", "http://evil.example@127.0.0.1/cb",
     "http://127.0.0.1:5/cb#x", "http://127.0.0.1/c b", "http://127.0.0.1/caf\u00e9",
     "http://127.0.0.1:1/" + "a" * 2100],
)  # fmt: skip
async def test_redirect_uris_a_browser_could_read_otherwise_never_match(client, user, uri):
    oauth_client = await register(client, redirect_uri="http://127.0.0.1/cb")
    query = authorize_query(oauth_client, pkce_pair()[1], redirect_uri=uri, response_type="token")
    response = await client.get(f"{AUTHORIZE}?{query}")
    assert response.status_code == 400 and "Location" not in response.headers


@pytest.mark.parametrize(
    "uri", ["http://evil.example\\@127.0.0.1/cb", "https://user@app.example/cb"]
)
async def test_redirect_uris_with_user_info_or_backslash_cannot_be_registered(client, uri):
    response = await client.post("/api/v2/oauth/register", json={
        "client_name": "x", "redirect_uris": [uri]})  # fmt: skip
    assert (await response.get_json())["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize("client_id", ["client_a\x00b", "x" * 5000, "client_\u00e9"])
async def test_odd_client_ids_are_invalid_client_or_an_error_page(client, client_id):
    token = await post_form(
        client,
        TOKEN,
        {"grant_type": "refresh_token", "refresh_token": "rt_x", "client_id": client_id},
    )
    assert token.status_code == 401 and (await token.get_json())["error"] == "invalid_client"
    revoke = await post_form(client, "/api/v2/oauth/revoke", {"token": "x", "client_id": client_id})
    assert revoke.status_code == 401
    query = urlencode({"client_id": client_id, "redirect_uri": "https://a.example/"})
    page = await client.get(f"{AUTHORIZE}?{query}")
    assert page.status_code == 400


async def test_nul_in_registration_and_sign_in_is_refused_cleanly(client, user):
    registered = await client.post("/api/v2/oauth/register", json={
        "client_name": "a\x00b", "redirect_uris": ["https://a.example/cb"]})  # fmt: skip
    assert registered.status_code == 400
    page = await client.get(
        f"{AUTHORIZE}?{authorize_query(await register(client), pkce_pair()[1])}"
    )
    fields = hidden_fields(await page.get_data(as_text=True))
    answer = await post_form(client, "/api/v2/oauth/sign-in", fields | {"email": "a\x00@b.c"})
    assert answer.status_code == 400


async def test_non_ascii_csrf_tokens_are_refused_not_500(client):
    for path in ("/api/v2/oauth/sign-in", AUTHORIZE):
        response = await post_form(client, path, {"csrf_token": "\u00e9", "email": "a@b.c"})
        assert response.status_code in (400, 403)


async def test_concurrent_revocations_of_one_access_token_are_both_200(client, login):
    import asyncio

    oauth_client, tokens = await login()
    form = {"token": tokens["access_token"], "client_id": oauth_client.client_id}
    answers = await asyncio.gather(*(post_form(client, "/api/v2/oauth/revoke", form)
                                     for _ in range(5)))  # fmt: skip
    assert [answer.status_code for answer in answers] == [200] * 5


async def test_clients_without_the_refresh_grant_get_no_refresh_token(client, login):
    oauth_client = await register(client, grant_types=["authorization_code"])
    _, tokens = await login(oauth_client)
    assert "refresh_token" not in tokens and tokens["access_token"]


async def test_a_second_use_during_the_first_exchange_still_revokes_its_tokens(
    client, user, runtime, monkeypatch
):
    """The chain exists from the moment the code is claimed, so a reuse that lands while the
    first exchange is still running revokes what that exchange then issues (D33)."""
    import asyncio

    oauth_client, verifier, code = await start(client, user)
    tokens = runtime.tokens
    slow_owner = tokens._active_owner
    reused = asyncio.Event()

    async def slow(session, user_id):
        await asyncio.wait_for(reused.wait(), 5)
        return await slow_owner(session, user_id)

    monkeypatch.setattr(tokens, "_active_owner", slow)
    first = asyncio.create_task(exchange(client, oauth_client, code, verifier))
    await asyncio.sleep(0.2)
    second = await exchange(client, oauth_client, code, verifier)
    reused.set()
    assert (await second.get_json())["error"] == "invalid_grant"
    issued = await (await first).get_json()
    me = await client.get("/api/v2/me", headers=bearer(issued["access_token"]))
    assert await problem_code(me) == "invalid_token"
