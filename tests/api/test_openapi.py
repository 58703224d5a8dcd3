"""The OpenAPI 3.1 document comes from the capability declarations and cannot drift."""

from __future__ import annotations

from openapi_spec_validator import validate

from strongroom.api.app import AREAS


async def document(client) -> dict:
    response = await client.get("/api/v2/openapi.json")
    assert response.status_code == 200
    return await response.get_json()


async def test_document_is_valid_openapi_3_1(client):
    spec = await document(client)
    assert spec["openapi"].startswith("3.1")
    validate(spec)


async def test_every_capability_is_documented_under_its_name(client):
    spec = await document(client)
    operations = {
        operation["operationId"]: (method.upper(), path)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
    }
    for routes in AREAS:
        for capability, _ in routes.entries:
            assert capability.name in operations, capability.name
            method, path = operations[capability.name]
            assert method == capability.method
            assert path == capability.path.replace("<uuid:", "{").replace(">", "}")


async def test_problems_are_documented_as_problem_json(client):
    spec = await document(client)
    responses = spec["paths"]["/api/v2/vault/projects"]["post"]["responses"]
    assert "application/problem+json" in responses["422"]["content"]
    assert "application/json" in responses["201"]["content"]
    assert {"400", "401", "403", "415", "422", "429"} <= set(responses)


async def test_document_is_public(client):
    assert (await client.get("/api/v2/openapi.json")).status_code == 200
