"""D29 signing keys: generated in the embedded default, read from a file in production,
rotated without invalidating the tokens already out."""

from __future__ import annotations

import asyncio
import json

from click.testing import CliRunner

from strongroom.app import create_app
from strongroom.cli import main
from strongroom.oauth.signing import load_signing_keys
from tests.oauth.conftest import AUTHORIZE, TOKEN
from tests.oauth.flow import (
    authorize_query,
    pkce_pair,
    post_form,
    query_of,
    register,
    sign_in_and_approve,
)
from tests.processes import environment_of


async def login(client, email):
    oauth_client = await register(client)
    verifier, challenge = pkce_pair()
    answer = await sign_in_and_approve(
        client, f"{AUTHORIZE}?{authorize_query(oauth_client, challenge)}", email
    )
    form, headers = oauth_client.authenticate({
        "grant_type": "authorization_code", "code": query_of(answer.headers["Location"])["code"],
        "redirect_uri": oauth_client.redirect_uri, "code_verifier": verifier})  # fmt: skip
    return await (await post_form(client, TOKEN, form, headers=headers)).get_json()


def kid_of(token: str) -> str:
    import base64

    return json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["kid"]


async def test_rotation_signs_with_the_new_key_and_still_accepts_the_old_tokens(
    settings, make_credential, tmp_path
):
    settings = settings.model_copy(update={"oauth_signing_keys_file": tmp_path / "keys.json"})
    path = settings.oauth_signing_keys_file
    path.write_text((settings.data_dir / "oauth-signing-keys.json").read_text())
    user = await make_credential(email="rotation@example.com")

    app = create_app(settings)
    async with app.test_app():
        old = await login(app.test_client(), user.user.email)

    runner = CliRunner()
    result = await asyncio.to_thread(
        runner.invoke, main, ["oauth", "rotate-key"], env=environment_of(settings)
    )
    assert result.exit_code == 0, result.output
    keys = load_signing_keys(path, create=False)
    assert len(keys.keys) == 2 and keys.keys[1].kid == kid_of(old["access_token"])

    app = create_app(settings)  # a restarted API reads the rotated file
    async with app.test_app():
        client = app.test_client()
        new = await login(client, user.user.email)
        assert kid_of(new["access_token"]) == keys.active.kid != kid_of(old["access_token"])
        for token in (old, new):
            response = await client.get(
                "/api/v2/me", headers={"Authorization": f"Bearer {token['access_token']}"}
            )
            assert response.status_code == 200
        jwks = await (await client.get("/.well-known/jwks.json")).get_json()
        assert {key["kid"] for key in jwks["keys"]} == {key.kid for key in keys.keys}


def test_embedded_default_generates_its_keys_once(tmp_path):
    from strongroom.settings import Settings

    settings = Settings(data_dir=tmp_path)
    first = load_signing_keys(settings.signing_keys_path, create=True)
    again = load_signing_keys(settings.signing_keys_path, create=True)
    assert first.active.kid == again.active.kid
    assert oct(settings.signing_keys_path.stat().st_mode)[-3:] == "600"


async def test_oauth_is_off_without_keys_on_a_shared_database(postgres_settings):
    settings = postgres_settings.model_copy(update={"oauth_signing_keys_file": None})
    app = create_app(settings)
    async with app.test_app():
        client = app.test_client()
        metadata = await client.get("/.well-known/oauth-authorization-server")
        assert metadata.status_code == 501
        assert (await metadata.get_json())["code"] == "not_implemented"
        refused = await client.get("/api/v2/me", headers={"Authorization": "Bearer a.b.c"})
        assert (await refused.get_json())["code"] == "invalid_token"


async def test_console_clients_may_hold_write_scopes(settings):
    runner = CliRunner()
    result = await asyncio.to_thread(runner.invoke, main, [
        "oauth", "create-client", "--name", "Console app", "--redirect-uri",
        "https://console.example/cb", "--scopes", "vault:read vault:write"],
        env=environment_of(settings))  # fmt: skip
    assert result.exit_code == 0, result.output
    created = json.loads(result.output)
    assert created["scope"] == "vault:read vault:write"
    assert created["client_secret"] and created["client_id"].startswith("client_")
