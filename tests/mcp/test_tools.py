"""The MCP server's tools (issue 20) through the official MCP SDK's client with an API key:
generated from the capability declarations, each call taking the one request path (scopes,
rate limits, credits, idempotency) and its problems answered as tool errors."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest
from prometheus_client import REGISTRY

from strongroom.app import AREAS
from strongroom.mcp.tools import IDEMPOTENCY_ARGUMENT, is_tool, tool_name
from strongroom.tenants.models import RateLimitTier, Tenant
from strongroom.tenants.partition import Environment
from tests.conftest import issue_credential
from tests.documents import make_docx_template, make_pdf
from tests.vault.conftest import unique_word

# The protocol revisions the SDK speaks: the initialize handshake (2025-11-25, the successor
# of 2025-06-18) and the stateless 2026-07-28.
MODES = ["legacy", "2026-07-28"]
DEADLINE = 60


@pytest.fixture
async def credential(served):
    return await issue_credential(served.runtime, tier=RateLimitTier.ENTERPRISE)


async def call(client, name: str, /, **arguments) -> dict:
    """A tool's structured result; fails the test on a tool error."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def problem_of(client, name: str, /, **arguments) -> tuple[str, dict]:
    """(first line, problem document) of a tool error."""
    result = await client.call_tool(name, arguments)
    assert result.is_error, result.structured_content
    line, document = result.content
    return line.text, json.loads(document.text)


async def until(client, name: str, done, /, **arguments) -> dict:
    async with asyncio.timeout(DEADLINE):
        while True:
            answer = await call(client, name, **arguments)
            if done(answer):
                return answer
            await asyncio.sleep(0.2)


async def upload(served, key: str, project_id: str, content: bytes, filename: str) -> dict:
    """Documents are uploaded over HTTP: MCP has no file upload (docs/mcp.md)."""
    async with httpx.AsyncClient(base_url=served.base) as http:
        response = await http.post(
            "/api/v2/vault/documents",
            headers={"Authorization": f"Bearer {key}"},
            data={"project_id": project_id},
            files={"file": (filename, content)},
        )
    assert response.status_code == 202, response.text
    return response.json()


def expected_tools() -> set[str]:
    return {tool_name(c) for routes in AREAS for c, _ in routes.entries if is_tool(c)}


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_are_the_json_capabilities_with_their_models_schemas(served, credential,
                                                                             mode):  # fmt: skip
    async with served.client(f"Bearer {credential.key}", mode=mode) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == expected_tools()
    assert {  # the issue's list
        "vault_list_projects", "vault_get_project", "vault_create_project",
        "vault_list_documents", "vault_get_document", "vault_search", "chat_ask",
        "chat_list_conversations", "chat_get_conversation", "templates_fill_stored",
        "workflows_list", "workflows_start_run", "workflows_get_run",
    } <= set(listed)  # fmt: skip
    capabilities = {c.name: c for routes in AREAS for c, _ in routes.entries}
    for name, tool in listed.items():
        capability = capabilities[name.replace("_", ".", 1)]
        assert tool.description.startswith(capability.summary)
        assert tool.input_schema["type"] == "object"
        if capability.response is not None:
            schema = capability.response.model_json_schema(mode="serialization")
            assert tool.output_schema == {"type": "object", **schema}
        if capability.body is not None:
            fields = capability.body.model_json_schema()["properties"]
            assert fields.items() <= tool.input_schema["properties"].items()
        assert (IDEMPOTENCY_ARGUMENT in tool.input_schema["properties"]) == capability.idempotent
        assert tool.annotations.read_only_hint == (
            capability.method == "GET" or all(s.endswith(":read") for s in capability.scopes)
        )
    assert listed["vault_get_project"].input_schema["required"] == ["project_id"]
    assert listed["vault_create_project"].input_schema["additionalProperties"] is False


@pytest.mark.parametrize("mode", MODES)
async def test_every_tool_answers_with_an_api_key(served, credential, mode):
    word = unique_word()
    called = set()

    async def tool(name, /, **arguments):
        called.add(name)
        return await call(client, name, **arguments)

    async with served.client(f"Bearer {credential.key}", mode=mode) as client:
        me = await tool("meta_me")
        assert me["auth_method"] == "api_key" and me["tenant_id"] == str(credential.tenant.id)
        project = await tool(
            "vault_create_project", name=f"Harbour {word}", project_type="commercial"
        )
        assert (await tool("vault_get_project", project_id=project["id"]))["name"] == project[
            "name"
        ]
        listed = await tool("vault_list_projects", limit=50)
        assert project["id"] in [item["id"] for item in listed["data"]]

        uploaded = await upload(
            served, credential.key, project["id"],
            make_pdf([f"Contract {word}. The employer is Harbour Holdings Ltd."]), "c.pdf",
        )  # fmt: skip
        job = await until(
            client, "vault_get_ingestion_job", lambda job: job["status"] == "succeeded",
            job_id=uploaded["ingestion_job_id"],
        )  # fmt: skip
        called.add("vault_get_ingestion_job")
        assert job["document_id"] == uploaded["id"]
        document = await tool("vault_get_document", document_id=uploaded["id"])
        assert document["status"] == "ready"
        documents = await tool("vault_list_documents", project_id=project["id"])
        assert [item["id"] for item in documents["data"]] == [uploaded["id"]]

        hits = await tool("vault_search", query=f"employer {word}", project_ids=[project["id"]])
        assert hits["data"][0]["document_id"] == uploaded["id"]

        result = await client.call_tool(
            "chat_ask", {"query": f"Who is the employer of {word}?", "project_ids": [project["id"]]}
        )
        called.add("chat_ask")
        assert not result.is_error, result.content
        answer = result.structured_content
        assert "Harbour Holdings Ltd" in answer["answer"]
        assert answer["answer_type"] == "answered"  # as the API answers (issue 27)
        [citation] = answer["citations"]
        [link] = [block for block in result.content if block.type == "resource_link"]
        assert link.uri == (
            f"strongroom://documents/{uploaded['id']}/passages/{citation['chunk_id']}"
        )
        assert link.name == "c.pdf, page 1" and link.description == citation["content"]
        conversations = await tool("chat_list_conversations")
        assert answer["conversation_id"] in [item["id"] for item in conversations["data"]]
        conversation = await tool(
            "chat_get_conversation", conversation_id=answer["conversation_id"]
        )
        assert conversation["id"] == answer["conversation_id"]
        renamed = await tool(
            "chat_update_conversation", conversation_id=answer["conversation_id"], title="Employer"
        )
        assert renamed["title"] == "Employer"
        retitled = await tool("vault_update_project", project_id=project["id"], name="Renamed")
        assert retitled["name"] == "Renamed"

        template = await upload(
            served, credential.key, project["id"],
            make_docx_template(["Employer: {{ employer | Who is the employer? }}"]), "t.docx",
        )  # fmt: skip
        accepted = await tool(
            "templates_fill_stored",
            template_document_id=template["id"],
            document_ids=[uploaded["id"]],
        )
        fill = await until(
            client, "templates_get_fill", lambda fill: fill["status"] in {"succeeded", "failed"},
            job_id=accepted["job_id"],
        )  # fmt: skip
        called.add("templates_get_fill")
        assert fill["status"] == "succeeded", fill["error"]
        assert "Harbour Holdings Ltd" in fill["fields"][0]["value"]

        workflows = await tool("workflows_list")
        assert "wf_summarise_documents" in [item["id"] for item in workflows["data"]]
        run = await tool(
            "workflows_start_run",
            workflow_id="wf_summarise_documents",
            inputs={"document_ids": [uploaded["id"]]},
            project_id=project["id"],
        )
        finished = await until(
            client, "workflows_get_run", lambda run: run["status"] in {"succeeded", "failed"},
            run_id=run["run_id"],
        )  # fmt: skip
        called.add("workflows_get_run")
        assert finished["status"] == "succeeded", finished["error"]

        hook = await tool(
            "webhooks_create_endpoint", url="https://93.184.216.34/hook", events=["document.ready"]
        )
        assert hook["secret"].startswith("whsec_")
        assert [item["id"] for item in (await tool("webhooks_list_endpoints"))["data"]] == [
            hook["id"]
        ]
        assert (await tool("webhooks_get_endpoint", endpoint_id=hook["id"]))["url"] == hook["url"]
        changed = await tool("webhooks_update_endpoint", endpoint_id=hook["id"], description="d")
        assert changed["description"] == "d"
        rotated = await tool("webhooks_rotate_secret", endpoint_id=hook["id"])
        assert rotated["secret"] != hook["secret"]
        await upload(served, credential.key, project["id"], make_pdf(["Hooked."]), "h.pdf")
        deliveries = await until(
            client, "webhooks_list_deliveries", lambda page: page["data"], endpoint_id=hook["id"]
        )
        called.add("webhooks_list_deliveries")
        retried = await tool(
            "webhooks_retry_delivery",
            endpoint_id=hook["id"],
            delivery_id=deliveries["data"][0]["id"],
        )
        assert retried["status"] == "pending"
        assert await tool("webhooks_delete_endpoint", endpoint_id=hook["id"]) == {}
        gone = await tool("chat_delete_conversation", conversation_id=answer["conversation_id"])
        assert gone == {}

        # Routines (issue 43): a manual routine that waits for review before its one step.
        routine = await tool(
            "routines_create", name="r", project_id=project["id"], trigger={"type": "manual"},
            steps=[{"type": "chat", "query": "Who is the employer?"}], review={"before_step": 1},
        )  # fmt: skip
        assert (await tool("routines_get", routine_id=routine["id"]))["name"] == "r"
        assert [item["id"] for item in (await tool("routines_list"))["data"]] == [routine["id"]]
        weekly = {"type": "schedule", "cron": "0 7 * * 1", "timezone": "Australia/Sydney"}
        changed = await tool("routines_update", routine_id=routine["id"], trigger=weekly)
        assert changed["next_run_at"] is not None
        calendar = await tool("routines_schedule", routine_id=routine["id"], count=2)
        assert len(calendar["data"]) == 2
        for decision in ("routines_reject_run", "routines_approve_run"):
            started = await tool("routines_start_run", routine_id=routine["id"])
            await until(
                client, "routines_get_run", lambda run: run["status"] == "waiting_for_review",
                run_id=started["id"],
            )  # fmt: skip
            decided = await tool(decision, run_id=started["id"], comment="seen")
            assert decided["review"]["decision"] in {"rejected", "approved"}
        called.add("routines_get_run")
        await until(
            client, "routines_get_run", lambda run: run["status"] == "succeeded",
            run_id=started["id"],
        )  # fmt: skip
        runs = await tool("routines_list_runs", routine_id=routine["id"])
        assert [run["status"] for run in runs["data"]] == ["succeeded", "rejected"]
        assert await tool("routines_delete", routine_id=routine["id"]) == {}
        again = await tool("vault_reprocess_document", document_id=uploaded["id"])
        assert again["id"] == uploaded["id"] and again["status"] == "processing"
        assert await tool("vault_delete_document", document_id=uploaded["id"]) == {}
        deleting = await tool("vault_delete_project", project_id=project["id"])
        assert deleting["status"] == "deleting" and deleting["project_id"] == project["id"]
    assert called == expected_tools()


async def test_problems_are_tool_errors_with_the_code_and_detail(served, credential):
    async with served.client(f"Bearer {credential.key}") as client:
        line, problem = await problem_of(client, "vault_get_project", project_id=str(uuid.uuid4()))
        assert line == "not_found: No such project."
        assert problem["status"] == 404 and problem["request_id"].startswith("req_")

        line, problem = await problem_of(client, "vault_create_project", name="x", colour="red")
        assert line.startswith("validation_error: ")
        assert {error["field"] for error in problem["errors"]} == {"project_type", "colour"}

        line, problem = await problem_of(client, "vault_get_project")
        assert problem["code"] == "validation_error"
        assert problem["errors"] == [{"field": "project_id", "message": "Field required"}]

        line, problem = await problem_of(client, "no_such_tool")
        assert line.startswith("not_found: ")

    reader = await issue_credential(served.runtime, scopes=["vault:read"])
    async with served.client(f"Bearer {reader.key}") as client:
        line, problem = await problem_of(
            client, "vault_create_project", name="x", project_type="commercial"
        )
        assert problem["code"] == "insufficient_scope"
        assert problem["missing_scopes"] == ["vault:write"]
        assert line == f"insufficient_scope: {problem['detail']}"


async def test_a_write_tool_retried_with_its_idempotency_key_runs_once(served, credential):
    key = f"mcp-{uuid.uuid4()}"
    arguments = {"name": "Once", "project_type": "commercial", IDEMPOTENCY_ARGUMENT: key}
    async with served.client(f"Bearer {credential.key}") as client:
        first = await call(client, "vault_create_project", **arguments)
        again = await call(client, "vault_create_project", **arguments)
        assert again == first
        listed = await call(client, "vault_list_projects", limit=100)
        assert [item["id"] for item in listed["data"]].count(first["id"]) == 1
        assert len(listed["data"]) == 1
        _, problem = await problem_of(
            client, "vault_create_project", **(arguments | {"name": "Other"})
        )
        assert problem["code"] == "idempotency_key_reused"
        # An HTTP retry with the same key is the same request: one path, one record.
    async with httpx.AsyncClient(base_url=served.base) as http:
        response = await http.post(
            "/api/v2/vault/projects",
            json={"name": "Once", "project_type": "commercial"},
            headers={"Authorization": f"Bearer {credential.key}", "Idempotency-Key": key},
        )
    assert response.json() == first


async def test_live_tool_calls_bill_their_cost_in_credits(served):
    live = await issue_credential(served.runtime, environment=Environment.LIVE, credits=1000)
    async with served.client(f"Bearer {live.key}") as client:
        await call(client, "vault_create_project", name="Billed", project_type="commercial")
        await call(client, "vault_list_projects")
    async with served.runtime.sessions() as session:
        tenant = await session.get(Tenant, live.tenant.id)
    assert tenant.credits == 1000 - 2 - 1  # create project 2, a read 1 (D19)


async def test_tool_calls_are_rate_limited_with_the_retry_time(served):
    free = await issue_credential(served.runtime, tier=RateLimitTier.FREE)  # burst 20 (D18)
    async with served.client(f"Bearer {free.key}") as client:
        for _ in range(10):  # 10 x 2 tokens
            await call(client, "vault_create_project", name="p", project_type="commercial")
        line, problem = await problem_of(
            client, "vault_create_project", name="p", project_type="commercial"
        )
    assert line.startswith("rate_limited: ")
    assert problem["retry_after_seconds"] >= 1


async def test_tool_calls_are_counted_by_tool_and_outcome(served, credential):
    def count(tool: str, outcome: str) -> float:
        sample = REGISTRY.get_sample_value(
            "strongroom_mcp_tool_calls_total", {"tool": tool, "outcome": outcome}
        )
        return sample or 0.0

    before = count("vault_get_project", "ok"), count("vault_get_project", "not_found")
    async with served.client(f"Bearer {credential.key}") as client:
        project = await call(client, "vault_create_project", name="m", project_type="commercial")
        await call(client, "vault_get_project", project_id=project["id"])
        await problem_of(client, "vault_get_project", project_id=str(uuid.uuid4()))
        await problem_of(client, "vault_get_project", project_id=str(uuid.uuid4()))
    after = count("vault_get_project", "ok"), count("vault_get_project", "not_found")
    assert (after[0] - before[0], after[1] - before[1]) == (1, 2)


async def test_the_embedded_default_serves_the_tools(served_embedded):
    """SQLite and in-process jobs (`strongroom dev`): the same tools, the same path."""
    served = served_embedded
    credential = await issue_credential(served.runtime, tier=RateLimitTier.ENTERPRISE)
    word = unique_word()
    async with served.client(f"Bearer {credential.key}") as client:
        project = await call(client, "vault_create_project", name=word, project_type="commercial")
        uploaded = await upload(
            served, credential.key, project["id"],
            make_pdf([f"Contract {word}. The employer is Harbour Holdings Ltd."]), "c.pdf",
        )  # fmt: skip
        await until(
            client, "vault_get_document", lambda document: document["status"] == "ready",
            document_id=uploaded["id"],
        )  # fmt: skip
        answer = await call(client, "chat_ask", query=f"Who is the employer of {word}?")
        assert "Harbour Holdings Ltd" in answer["answer"]
        _, problem = await problem_of(client, "vault_get_project", project_id=str(uuid.uuid4()))
        assert problem["code"] == "not_found"


def test_tool_descriptions_speak_to_the_client_alone():
    """Issue 31: an assistant has neither the spec nor the decisions, so no description (nor
    argument description) cites "spec 4.1" or "D15"; each names a scope once."""
    import json
    import re

    from strongroom.mcp.tools import build_tools

    for name, tool in build_tools(AREAS).items():
        said = tool.description + json.dumps(tool.input_schema)
        assert not re.search(r"\bspec \d|\bD\d+\b", said), (name, said)
        for scope in tool.capability.scopes:
            assert tool.description.count(scope) == 1, (name, tool.description)
