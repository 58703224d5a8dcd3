"""Spec 5.4 (scopes) and D8 (the insufficient_scope challenge)."""

from __future__ import annotations


async def test_missing_scope_is_403_insufficient_scope_listing_it(client, make_credential):
    credential = await make_credential(scopes=["vault:write"])
    response = await client.get("/api/v2/vault/projects", headers=credential.headers)
    assert response.status_code == 403
    body = await response.get_json()
    assert body["code"] == "insufficient_scope"
    assert body["missing_scopes"] == ["vault:read"]
    assert response.headers["WWW-Authenticate"] == (
        'Bearer error="insufficient_scope", scope="vault:read"'
    )


async def test_vault_write_is_needed_to_create_projects(client, make_credential):
    credential = await make_credential(scopes=["vault:read"])
    response = await client.post(
        "/api/v2/vault/projects",
        headers=credential.headers,
        json={"name": "Tower", "project_type": "commercial"},
    )
    assert response.status_code == 403
    assert (await response.get_json())["missing_scopes"] == ["vault:write"]


async def test_vault_read_grants_list_and_get(client, make_credential):
    credential = await make_credential(scopes=["vault:read"])
    response = await client.get("/api/v2/vault/projects", headers=credential.headers)
    assert response.status_code == 200


async def test_scope_is_checked_after_authentication(client):
    response = await client.get("/api/v2/vault/projects")
    assert response.status_code == 401
