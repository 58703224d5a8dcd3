"""Spec 2.7 and 7 (problem details, request ids), D2 (request id), D4 (error catalogue)."""

from __future__ import annotations

import re

import pytest
from quart import Quart

from strongroom.api import request_path
from strongroom.api.capability import Capability, Routes
from strongroom.app import create_app
from strongroom.problems import CATALOGUE

REQUEST_ID = re.compile(r"req_[0-9A-HJKMNP-TV-Z]{26}")
PROBLEM_FIELDS = {"type", "title", "status", "detail", "code", "request_id"}


async def assert_problem(response, status: int, code: str) -> dict:
    assert response.status_code == status
    assert response.headers["Content-Type"] == "application/problem+json"
    body = await response.get_json()
    assert PROBLEM_FIELDS <= set(body)
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"http://api.strongroom.test/errors/{code}"
    assert body["title"] and body["detail"]
    assert body["request_id"] == response.headers["X-Request-Id"]
    return body


async def test_every_response_carries_a_ulid_request_id(client, credential):
    for response in (
        await client.get("/api/v2/me", headers=credential.headers),
        await client.get("/api/v2/me"),
        await client.get("/healthz"),
        await client.get("/nowhere"),
    ):
        assert REQUEST_ID.fullmatch(response.headers["X-Request-Id"])


async def test_request_ids_are_unique(client):
    ids = {(await client.get("/healthz")).headers["X-Request-Id"] for _ in range(20)}
    assert len(ids) == 20


async def test_client_request_id_is_not_trusted_as_ours(client):
    response = await client.get("/healthz", headers={"X-Request-Id": "req_mine"})
    assert response.headers["X-Request-Id"] != "req_mine"
    assert REQUEST_ID.fullmatch(response.headers["X-Request-Id"])


async def test_unknown_route_is_not_found_problem(client):
    await assert_problem(await client.get("/api/v2/nothing-here"), 404, "not_found")


async def test_wrong_method_is_method_not_allowed_with_allow(client, credential):
    response = await client.delete("/api/v2/vault/projects", headers=credential.headers)
    await assert_problem(response, 405, "method_not_allowed")
    assert set(response.headers["Allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


async def test_401_is_a_problem(client):
    await assert_problem(await client.get("/api/v2/me"), 401, "missing_api_key")


async def test_validation_error_lists_field_errors(client, credential):
    response = await client.post(
        "/api/v2/vault/projects", headers=credential.headers, json={"name": ""}
    )
    body = await assert_problem(response, 422, "validation_error")
    assert all(set(error) == {"field", "message"} for error in body["errors"])


@pytest.fixture
async def crashing_app(settings) -> Quart:
    """The real app plus one capability whose handler raises, to see the 500 path."""
    routes = Routes()

    @routes.capability(
        Capability(
            name="test.crash", method="GET", path="/api/v2/crash", summary="Crash", tag="test"
        )
    )
    async def crash(call):
        raise RuntimeError("secret internals: password=hunter2")

    app = create_app(settings)
    request_path.install(app, routes)
    async with app.test_app():
        yield app


async def test_unexpected_error_is_internal_error_without_trace(crashing_app, make_credential):
    # make_credential uses the session app's runtime; the crashing app shares the database.
    credential = await make_credential()
    response = await crashing_app.test_client().get("/api/v2/crash", headers=credential.headers)
    body = await assert_problem(response, 500, "internal_error")
    text = str(body)
    assert "hunter2" not in text and "Traceback" not in text and "RuntimeError" not in text


def test_catalogue_statuses_match_their_class():
    for code, (status, title) in CATALOGUE.items():
        assert 400 <= status < 600 and title, code
    assert CATALOGUE["payment_required"][0] == 401  # D10: the spec keeps it under 401
    assert CATALOGUE["insufficient_scope"][0] == 403
