"""Spec 2.2 and 5.2 (API keys), D7 (401 challenge), D9 (key shape), D10 (which 401 wins),
D12 (credentials outside the header)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from strongroom.admin import revoke_api_key, set_user_active, update_tenant
from strongroom.auth.keys import generate_key
from strongroom.auth.models import ApiKey
from strongroom.db.types import utcnow
from strongroom.tenants.models import BillingStatus
from strongroom.tenants.partition import Environment

ME = "/api/v2/me"


async def problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, await response.get_data(as_text=True)
    assert response.headers["Content-Type"] == "application/problem+json"
    body = await response.get_json()
    assert body["code"] == code
    return body


def challenge(response) -> str:
    return response.headers["WWW-Authenticate"]


async def test_missing_header_is_missing_api_key_without_error_attributes(client):
    response = await client.get(ME)
    await problem(response, 401, "missing_api_key")
    assert challenge(response) == (
        'Bearer realm="strongroom", resource_metadata='
        '"http://api.strongroom.test/.well-known/oauth-protected-resource/api/v2"'
    )


@pytest.mark.parametrize(
    "header", ["Basic dXNlcjpwYXNz", "Token abc", "Bearer", "Bearer   ", "ak_test_x"]
)
async def test_scheme_other_than_bearer_is_missing_api_key(client, header):
    await problem(await client.get(ME, headers={"Authorization": header}), 401, "missing_api_key")


async def test_bearer_scheme_is_case_insensitive(client, credential):
    response = await client.get(ME, headers={"Authorization": f"bearer {credential.key}"})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "candidate",
    [
        "ak_test_short",
        "ak_prod_" + "A" * 52,
        "ak_test_" + "a" * 52,  # lower case is not base32 as issued
        "ak_test_" + "1" * 52,  # 0, 1, 8, 9 are not in the base32 alphabet
        "ak_test_" + "A" * 53,
        "ak_test_" + "A" * 20 + "." + "B" * 10 + "." + "C" * 20,
    ],
)
async def test_malformed_key_is_invalid_api_key_with_challenge(client, candidate):
    response = await client.get(ME, headers={"Authorization": f"Bearer {candidate}"})
    await problem(response, 401, "invalid_api_key")
    assert 'error="invalid_token"' in challenge(response)
    assert 'error_description="invalid_api_key"' in challenge(response)


async def test_well_formed_unknown_key_is_invalid_api_key(client):
    unknown = generate_key(Environment.LIVE)
    response = await client.get(ME, headers={"Authorization": f"Bearer {unknown}"})
    await problem(response, 401, "invalid_api_key")


async def revoke(runtime, credential) -> None:
    await revoke_api_key(runtime, credential.api_key.id)


async def test_revoked_key_is_api_key_revoked(client, runtime, credential):
    await revoke(runtime, credential)
    response = await client.get(ME, headers=credential.headers)
    await problem(response, 401, "api_key_revoked")
    assert 'error_description="api_key_revoked"' in challenge(response)


async def test_expired_key_is_api_key_expired(client, make_credential):
    credential = await make_credential(expires_at=utcnow() - timedelta(seconds=1))
    await problem(await client.get(ME, headers=credential.headers), 401, "api_key_expired")


async def test_key_before_its_expiry_works(client, make_credential):
    credential = await make_credential(expires_at=utcnow() + timedelta(days=1))
    assert (await client.get(ME, headers=credential.headers)).status_code == 200


async def set_tenant(runtime, tenant_id, **values) -> None:
    await update_tenant(runtime, tenant_id, **values)


async def set_user(runtime, user_id, *, active: bool) -> None:
    await set_user_active(runtime, user_id, active)


async def test_suspended_tenant_is_tenant_disabled(client, runtime, credential):
    await set_tenant(runtime, credential.tenant.id, suspended=True)
    await problem(await client.get(ME, headers=credential.headers), 401, "tenant_disabled")


async def test_deactivated_user_is_user_inactive(client, runtime, credential):
    await set_user(runtime, credential.user.id, active=False)
    await problem(await client.get(ME, headers=credential.headers), 401, "user_inactive")


async def test_past_due_tenant_live_key_is_payment_required(client, runtime, make_credential):
    credential = await make_credential(environment=Environment.LIVE)
    await set_tenant(runtime, credential.tenant.id, billing_status=BillingStatus.PAST_DUE.value)
    await problem(await client.get(ME, headers=credential.headers), 401, "payment_required")


async def test_tenant_without_credits_live_key_is_payment_required(client, make_credential):
    credential = await make_credential(environment=Environment.LIVE, credits=0)
    await problem(await client.get(ME, headers=credential.headers), 401, "payment_required")


async def test_test_keys_are_free_so_never_payment_required(client, make_credential):
    credential = await make_credential(environment=Environment.TEST, credits=0)
    assert (await client.get(ME, headers=credential.headers)).status_code == 200


async def test_first_failing_check_wins_revoked_before_expired(client, runtime, make_credential):
    credential = await make_credential(expires_at=utcnow() - timedelta(days=1))
    await revoke(runtime, credential)
    await problem(await client.get(ME, headers=credential.headers), 401, "api_key_revoked")


async def test_first_failing_check_wins_expired_before_tenant(client, runtime, make_credential):
    credential = await make_credential(expires_at=utcnow() - timedelta(days=1))
    await set_tenant(runtime, credential.tenant.id, suspended=True)
    await problem(await client.get(ME, headers=credential.headers), 401, "api_key_expired")


async def test_first_failing_check_wins_tenant_before_user_before_payment(
    client, runtime, make_credential
):
    credential = await make_credential(environment=Environment.LIVE, credits=0)
    await set_user(runtime, credential.user.id, active=False)
    await problem(await client.get(ME, headers=credential.headers), 401, "user_inactive")
    await set_tenant(runtime, credential.tenant.id, suspended=True)
    await problem(await client.get(ME, headers=credential.headers), 401, "tenant_disabled")


async def test_key_is_60_chars_of_prefix_and_base32(credential):
    assert len(credential.key) == 60
    assert credential.key.startswith("ak_test_")
    assert set(credential.key[8:]) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


async def test_only_prefix_and_hash_are_stored(runtime, credential):
    async with runtime.engine.connect() as connection:
        row = (
            await connection.execute(
                select(ApiKey.__table__).where(ApiKey.__table__.c.id == credential.api_key.id)
            )
        ).one()
    stored = " ".join(str(value) for value in row)
    assert credential.key not in stored
    assert credential.key[12:] not in stored  # nothing past the four display characters
    assert row.prefix == credential.key[:12]


async def test_key_in_query_string_is_refused_even_with_valid_header(client, credential):
    response = await client.get(
        "/api/v2/vault/projects",
        query_string={"api_key": credential.key},
        headers=credential.headers,
    )
    body = await problem(response, 400, "credentials_in_request")
    assert credential.key not in body["detail"]


async def test_key_in_cookie_is_refused(client, credential):
    headers = {**credential.headers, "Cookie": f"session={credential.key}"}
    await problem(await client.get(ME, headers=headers), 400, "credentials_in_request")


async def test_key_in_json_body_is_refused(client, credential):
    response = await client.post(
        "/api/v2/vault/projects",
        headers=credential.headers,
        json={"name": "x", "project_type": "other", "api_key": credential.key},
    )
    await problem(response, 400, "credentials_in_request")


async def test_key_in_json_body_is_refused_without_header(client):
    response = await client.post(
        "/api/v2/vault/projects",
        json={"name": "x", "project_type": "other", "key": generate_key(Environment.LIVE)},
    )
    await problem(response, 400, "credentials_in_request")


async def test_the_raw_key_is_never_echoed_in_problems(client, runtime, credential):
    await revoke(runtime, credential)
    response = await client.get(ME, headers=credential.headers)
    assert credential.key not in await response.get_data(as_text=True)
    assert credential.key not in str(response.headers)
