"""Spec 2.1 (the principal), 5.4 (whoami needs no scope)."""

from __future__ import annotations

import uuid

from strongroom.tenants.partition import Environment

PRINCIPAL_FIELDS = {
    "user_id",
    "tenant_id",
    "auth_method",
    "email",
    "api_key_id",
    "api_key_name",
    "api_key_prefix",
    "environment",
    "rate_limit_tier",
    "scopes",
}


async def test_me_returns_the_api_key_principal(client, credential):
    response = await client.get("/api/v2/me", headers=credential.headers)
    assert response.status_code == 200
    body = await response.get_json()
    assert set(body) == PRINCIPAL_FIELDS
    assert body["user_id"] == str(credential.user.id)
    assert body["tenant_id"] == str(credential.tenant.id)
    assert body["auth_method"] == "api_key"
    assert body["email"] == "user@example.com"
    assert body["api_key_id"] == str(credential.api_key.id)
    assert body["api_key_name"] == "test key"
    assert body["api_key_prefix"] == credential.key[:12]
    assert body["environment"] == "test"
    assert body["rate_limit_tier"] == "standard"
    assert sorted(body["scopes"]) == sorted(credential.api_key.scopes)
    uuid.UUID(body["user_id"])


async def test_me_needs_no_scope(client, make_credential):
    credential = await make_credential(scopes=[])
    response = await client.get("/api/v2/me", headers=credential.headers)
    assert response.status_code == 200
    assert (await response.get_json())["scopes"] == []


async def test_me_reports_live_environment_for_live_key(client, make_credential):
    credential = await make_credential(environment=Environment.LIVE)
    body = await (await client.get("/api/v2/me", headers=credential.headers)).get_json()
    assert body["environment"] == "live"
    assert body["api_key_prefix"].startswith("ak_live_")
