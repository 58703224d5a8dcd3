"""The OpenAPI 3.1 document comes from the capability declarations and cannot drift."""

from __future__ import annotations

import re

from openapi_spec_validator import validate

from strongroom.app import AREAS


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
            assert path == re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", capability.path)


async def test_problems_are_documented_as_problem_json(client):
    spec = await document(client)
    responses = spec["paths"]["/api/v2/vault/projects"]["post"]["responses"]
    assert "application/problem+json" in responses["422"]["content"]
    assert "application/json" in responses["201"]["content"]
    assert {"400", "401", "403", "415", "422", "429"} <= set(responses)


async def test_document_is_public(client):
    assert (await client.get("/api/v2/openapi.json")).status_code == 200


async def test_streams_and_downloads_document_their_media_types(client):
    paths = (await document(client))["paths"]
    stream = paths["/api/v2/chat/stream"]["post"]["responses"]["200"]["content"]
    events = stream["text/event-stream"]["schema"]["oneOf"]
    assert [event["properties"]["event"]["const"] for event in events] == [
        "progress", "citation", "delta", "done", "error",
    ]  # fmt: skip
    done = events[3]["properties"]["data"]
    assert done["contentMediaType"] == "application/json"
    assert "conversation_id" in done["contentSchema"]["properties"]
    content = paths["/api/v2/vault/documents/{document_id}/content"]["get"]["responses"]["200"]
    assert "application/pdf" in content["content"]
    assert "text/plain" in content["content"]  # with the charset it was uploaded in
    result = paths["/api/v2/templates/fill/{job_id}/result"]["get"]["responses"]["200"]
    assert list(result["content"]) == [
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    ]


async def test_idempotency_key_is_documented_where_it_applies(client):
    paths = (await document(client))["paths"]

    def headers(path: str, method: str) -> list[str]:
        parameters = paths[path][method].get("parameters", [])
        return [p["name"] for p in parameters if p["in"] == "header"]

    assert headers("/api/v2/vault/projects", "post") == ["Idempotency-Key"]
    assert headers("/api/v2/chat/stream", "post") == ["Idempotency-Key"]
    assert headers("/api/v2/vault/documents", "post") == []  # uploads: spec 4.1 rule 9
    assert headers("/api/v2/vault/projects", "get") == []


async def test_statuses_a_handler_answers_are_documented(client):
    paths = (await document(client))["paths"]
    assert "404" in paths["/api/v2/vault/documents"]["post"]["responses"]  # the project
    assert "404" in paths["/api/v2/vault/documents"]["get"]["responses"]
    assert {"404", "502", "504"} <= set(paths["/api/v2/chat"]["post"]["responses"])
    assert "409" not in paths["/api/v2/vault/documents"]["post"]["responses"]  # no key there


# Issue 44 point 16: each operation names its problem responses, with the codes they carry.


def problem_responses(operation: dict) -> dict[int, dict]:
    return {
        int(status): response
        for status, response in operation["responses"].items()
        if int(status) >= 400
    }


def codes_of(response: dict) -> list[str]:
    schema = response["content"]["application/problem+json"]["schema"]
    return schema["properties"]["code"]["enum"]


async def test_every_problem_response_names_its_codes_and_they_carry_its_status(client):
    from strongroom.problems import PROBLEM_TYPES

    for path, item in (await document(client))["paths"].items():
        for method, operation in item.items():
            if "operationId" not in operation or path in ("/healthz", "/readyz"):
                continue
            for status, response in problem_responses(operation).items():
                codes = codes_of(response)
                assert codes, (method, path, status)
                for code in codes:
                    assert PROBLEM_TYPES[code].status == status, (method, path, code)
                    assert f"`{code}`" in response["description"], (method, path, code)


async def test_every_operation_documents_431_and_those_with_a_body_408(client):
    paths = (await document(client))["paths"]
    for routes in AREAS:
        for capability, _ in routes.entries:
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", capability.path)
            responses = problem_responses(paths[path][capability.method.lower()])
            assert codes_of(responses[431]) == ["headers_too_large"], capability.name
            assert codes_of(responses[503]) == ["service_unavailable"], capability.name
            has_body = capability.body is not None or capability.upload is not None
            assert (408 in responses) == has_body, capability.name


async def test_the_codes_docs_api_md_documents_are_named_where_they_apply(client):
    paths = (await document(client))["paths"]
    upload = problem_responses(paths["/api/v2/vault/documents"]["post"])
    assert {"bad_request", "unsupported_file_type", "credentials_in_request"} <= set(
        codes_of(upload[400])
    )
    assert codes_of(upload[413]) == ["file_too_large"]
    assert codes_of(upload[403]) == ["insufficient_scope", "oauth_not_supported"]
    assert codes_of(upload[408]) == ["request_timeout"]
    listing = problem_responses(paths["/api/v2/vault/documents"]["get"])
    assert set(codes_of(listing[422])) == {"validation_error", "invalid_cursor"}
    assert "invalid_token" in codes_of(listing[401])  # OAuth tokens may list
    assert "payment_required" in codes_of(listing[401])
    create = problem_responses(paths["/api/v2/vault/projects"]["post"])
    assert codes_of(create[409]) == ["idempotency_in_progress"]
    assert {"idempotency_key_reused", "invalid_idempotency_key", "validation_error"} == set(
        codes_of(create[422])
    )
    assert codes_of(create[413]) == ["payload_too_large"]
    chat = problem_responses(paths["/api/v2/chat"]["post"])
    assert codes_of(chat[502]) == ["upstream_error"]
    assert codes_of(chat[504]) == ["upstream_timeout"]
