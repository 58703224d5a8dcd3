"""Issue 42: a project can be renamed and its type changed (`PATCH
/api/v2/vault/projects/{id}`, scope `vault:write`): only the fields sent change, a field
that may not be empty is refused as null, and another tenant's project is 404. Issue 52:
its status too."""

from __future__ import annotations

import uuid

from tests.vault.conftest import Vault


async def patch(vault: Vault, project_id: str, expected: int = 200, /, **body) -> dict:
    response = await vault.client.patch(
        f"/api/v2/vault/projects/{project_id}", json=body, headers=vault.headers
    )
    assert response.status_code == expected, await response.get_json()
    return await response.get_json()


async def test_only_the_fields_sent_change(vault):
    project_id = await vault.create_project("Harbour Tower")
    before = await vault.get(f"/api/v2/vault/projects/{project_id}")
    renamed = await patch(vault, project_id, name="  Harbour Tower Stage 2 ")
    assert renamed["name"] == "Harbour Tower Stage 2"
    assert renamed["project_type"] == before["project_type"] == "commercial"
    assert renamed["updated_at"] >= before["updated_at"]
    retyped = await patch(vault, project_id, project_type="residential", location="Pier 9")
    assert (retyped["name"], retyped["project_type"]) == ("Harbour Tower Stage 2", "residential")
    assert retyped["location"] == "Pier 9"
    assert await vault.get(f"/api/v2/vault/projects/{project_id}") == retyped
    listed = await vault.get("/api/v2/vault/projects?limit=100")
    assert {"id": project_id, "name": "Harbour Tower Stage 2"}.items() <= next(
        item for item in listed["data"] if item["id"] == project_id
    ).items()
    assert (await patch(vault, project_id, location=None))["location"] is None


async def test_bad_changes_are_422_and_change_nothing(vault):
    project_id = await vault.create_project("Harbour Tower")
    for body in (
        {"name": None},
        {"name": "   "},
        {"name": "x" * 256},
        {"project_type": "spaceport"},
        {"project_type": None},
        {"status": None},
        {"status": "deleting"},  # a deletion's own mark, set only by DELETE
        {"status": "paused"},
        {"owner_id": str(uuid.uuid4())},
    ):
        refused = await patch(vault, project_id, 422, **body)
        assert refused["code"] == "validation_error", body
    after = await vault.get(f"/api/v2/vault/projects/{project_id}")
    assert (after["name"], after["status"]) == ("Harbour Tower", "active")


async def test_the_listed_statuses_are_set_by_a_change(vault):
    """Issue 52: `on_hold`, `completed` and `archived` were listed, and no call set them."""
    project_id = await vault.create_project("Harbour Tower")
    for status in ("on_hold", "completed", "archived", "active", "archived"):
        changed = await patch(vault, project_id, status=status)
        assert changed["status"] == status
        assert changed["name"] == "Harbour Tower"
    assert (await vault.get(f"/api/v2/vault/projects/{project_id}"))["status"] == "archived"
    listed = await vault.get("/api/v2/vault/projects?limit=100")
    assert next(item for item in listed["data"] if item["id"] == project_id)["status"] == (
        "archived"
    )


async def test_an_unknown_project_is_404(vault):
    refused = await patch(vault, str(uuid.uuid4()), 404, name="Anything")
    assert refused["code"] == "not_found"
