"""Spec 2.6 and rule 4.2 (cursor pagination), D5 (limits, order, cursors)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from strongroom.api.pagination import CursorCodec
from strongroom.tenants.models import RateLimitTier

PROJECTS = "/api/v2/vault/projects"


@pytest.fixture
async def credential(make_credential):
    """Seeding a hundred projects needs more than the standard burst."""
    return await make_credential(tier=RateLimitTier.ENTERPRISE)


async def seed_projects(client, credential, count: int) -> list[str]:
    ids = []
    for index in range(count):
        response = await client.post(
            PROJECTS,
            headers=credential.headers,
            json={"name": f"Project {index}", "project_type": "other"},
        )
        ids.append((await response.get_json())["id"])
    return ids


async def page(client, credential, **query) -> dict:
    response = await client.get(PROJECTS, headers=credential.headers, query_string=query)
    assert response.status_code == 200, await response.get_data(as_text=True)
    return await response.get_json()


async def test_pages_walk_every_project_newest_first_via_next_cursor(client, credential):
    ids = await seed_projects(client, credential, 7)
    seen, cursor = [], None
    while True:
        query = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        body = await page(client, credential, **query)
        seen += [item["id"] for item in body["data"]]
        assert (body["next_cursor"] is None) == (not body["has_more"])
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    assert seen == list(reversed(ids))


async def test_pages_are_stable_under_concurrent_inserts(client, credential):
    ids = await seed_projects(client, credential, 4)
    first = await page(client, credential, limit=2)
    await seed_projects(client, credential, 3)  # newer rows land before the cursor
    second = await page(client, credential, limit=2, cursor=first["next_cursor"])
    assert [item["id"] for item in first["data"] + second["data"]] == list(reversed(ids))


async def test_limit_defaults_to_25(client, credential):
    await seed_projects(client, credential, 26)
    body = await page(client, credential)
    assert len(body["data"]) == 25
    assert body["has_more"] is True


@pytest.mark.parametrize("limit", ["0", "-5"])
async def test_limit_at_or_below_zero_falls_back_to_25(client, credential, limit):
    await seed_projects(client, credential, 26)
    assert len((await page(client, credential, limit=limit))["data"]) == 25


async def test_limit_above_100_clamps_to_100(client, credential):
    await seed_projects(client, credential, 101)
    body = await page(client, credential, limit=1000)
    assert len(body["data"]) == 100
    assert body["has_more"] is True


@pytest.mark.parametrize("limit", ["abc", "1.5", ""])
async def test_non_integer_limit_is_validation_error(client, credential, limit):
    response = await client.get(PROJECTS, headers=credential.headers, query_string={"limit": limit})
    assert response.status_code == 422
    body = await response.get_json()
    assert body["code"] == "validation_error"
    assert body["errors"][0]["field"] == "limit"


async def test_last_page_has_null_cursor(client, credential):
    await seed_projects(client, credential, 2)
    body = await page(client, credential, limit=2)
    assert body == {"data": body["data"], "next_cursor": None, "has_more": False}


async def cursor_problem(client, credential, cursor: str) -> None:
    response = await client.get(
        PROJECTS, headers=credential.headers, query_string={"cursor": cursor}
    )
    assert response.status_code == 422
    assert (await response.get_json())["code"] == "invalid_cursor"


async def test_tampered_cursor_is_invalid_cursor(client, credential):
    await seed_projects(client, credential, 3)
    cursor = (await page(client, credential, limit=1))["next_cursor"]
    payload, mac = cursor.split(".")
    flipped = payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1]
    await cursor_problem(client, credential, f"{flipped}.{mac}")


@pytest.mark.parametrize("cursor", ["garbage", "a.b.c", "é.é", ".", "x" * 1025])
async def test_malformed_cursor_is_invalid_cursor(client, credential, cursor):
    await cursor_problem(client, credential, cursor)


async def test_cursor_signed_with_another_secret_is_invalid_cursor(client, credential):
    forged = CursorCodec(b"not the server secret").encode(
        "vault.list_projects", (datetime.now(UTC), uuid.uuid4())
    )
    await cursor_problem(client, credential, forged)


async def test_cursor_of_another_endpoint_is_invalid_cursor(client, credential, runtime):
    other = runtime.cursors.encode("vault.list_documents", (datetime.now(UTC), uuid.uuid4()))
    await cursor_problem(client, credential, other)
