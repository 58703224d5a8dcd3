"""D17-D20 and spec 4 rule 3 / section 8: token buckets per credential, tiers, costs, headers."""

from __future__ import annotations

import math
import time

from strongroom.tenants.models import RateLimitTier

ME = "/api/v2/me"
PROJECTS = "/api/v2/vault/projects"
BODY = {"name": "Harbour Tower", "project_type": "commercial"}


async def test_every_authenticated_response_carries_rate_limit_headers(client, credential):
    before = time.time()
    response = await client.get(ME, headers=credential.headers)
    after = time.time()
    assert response.headers["X-RateLimit-Limit"] == "120"  # standard burst (D18)
    assert response.headers["X-RateLimit-Remaining"] == "119"
    assert response.headers["X-RateLimit-Cost"] == "1"
    reset = int(response.headers["X-RateLimit-Reset"])
    # Full again one token (a second at the standard 60 a minute) after the request was
    # taken, rounded up to the second: bracketed by clock readings around the request, so a
    # slow machine cannot fail it (issue 44).
    assert before + 1 - 0.001 <= reset <= math.ceil(after + 1)


async def test_error_responses_of_authenticated_calls_carry_them_too(client, credential):
    response = await client.get(f"{PROJECTS}/00000000-0000-0000-0000-000000000000",
                                headers=credential.headers)  # fmt: skip
    assert response.status_code == 404
    assert "X-RateLimit-Remaining" in response.headers


async def test_unauthenticated_responses_carry_none(client):
    response = await client.get(ME)
    assert not any(name.startswith("X-RateLimit") for name in response.headers.keys())


async def test_me_and_list_cost_one_token_and_create_two(client, credential):
    costs = []
    for method, path, body in (("GET", ME, None), ("GET", PROJECTS, None),
                               ("POST", PROJECTS, BODY)):  # fmt: skip
        response = await client.open(path, method=method, headers=credential.headers, json=body)
        costs.append(response.headers["X-RateLimit-Cost"])
    assert costs == ["1", "1", "2"]


async def test_burst_exhausted_is_429_rate_limited_with_retry_after(client, make_credential):
    credential = await make_credential(tier=RateLimitTier.FREE)  # 10/min, burst 20
    statuses = [(await client.get(ME, headers=credential.headers)).status_code for _ in range(20)]
    assert statuses == [200] * 20
    response = await client.get(ME, headers=credential.headers)
    assert response.status_code == 429
    body = await response.get_json()
    assert body["code"] == "rate_limited"
    assert int(response.headers["Retry-After"]) == body["retry_after_seconds"] >= 1
    assert body["retry_after_seconds"] <= 6  # one token of a 10-per-minute bucket
    assert response.headers["X-RateLimit-Remaining"] == "0"


async def test_buckets_are_per_credential(client, make_credential):
    first = await make_credential(tier=RateLimitTier.FREE)
    second = await make_credential(tier=RateLimitTier.FREE, tenant=first.tenant, email="b@x.io")
    for _ in range(21):
        await client.get(ME, headers=first.headers)
    assert (await client.get(ME, headers=first.headers)).status_code == 429
    assert (await client.get(ME, headers=second.headers)).status_code == 200


async def test_key_tier_defaults_to_the_tenants(client, make_credential):
    credential = await make_credential()
    assert (await client.get(ME, headers=credential.headers)).headers["X-RateLimit-Limit"] == "120"


async def test_pro_and_enterprise_tiers_have_their_bursts(client, make_credential):
    for tier, burst in ((RateLimitTier.PRO, "600"), (RateLimitTier.ENTERPRISE, "3000")):
        credential = await make_credential(tier=tier)
        response = await client.get(ME, headers=credential.headers)
        assert response.headers["X-RateLimit-Limit"] == burst
        assert (await response.get_json())["rate_limit_tier"] == tier.value
