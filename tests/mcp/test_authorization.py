"""MCP authorization (issue 20): /mcp answers 401 with its RFC 9728 metadata, the official MCP
SDK's OAuth client completes the whole flow against it (discovery, dynamic registration,
PKCE, the dev sign-in and consent pages, token, refresh) and calls every tool, tokens are
bound to the resource they were asked for (RFC 8707), and OAuth tokens only read (D15).

The user's part in the browser is played by tests/oauth/flow.py on the dev sign-in page: the
upstream OpenID provider of production cannot run here."""

from __future__ import annotations

import time
import uuid
from urllib.parse import urlsplit

import httpx
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from prometheus_client import REGISTRY

from strongroom.mcp.tools import tool_name
from strongroom.oauth.clients import READ_SCOPES
from strongroom.tenants.models import RateLimitTier
from strongroom.tenants.partition import Environment
from tests.conftest import issue_credential
from tests.documents import make_pdf
from tests.mcp.test_tools import call, expected_tools, problem_of, until, upload
from tests.oauth.flow import (
    authorize_query,
    pkce_pair,
    query_of,
    register,
    sign_in_and_approve,
)
from tests.vault.conftest import unique_word

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
REDIRECT_URI = "http://127.0.0.1:8765/callback"


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """The user: signs in on the dev page and approves, as tests/oauth does."""

    def __init__(self, base: str, email: str) -> None:
        self.base, self.email = base, email
        self.visited: list[str] = []
        self.callback: dict[str, str] | None = None

    async def redirect(self, authorization_url: str) -> None:
        self.visited.append(authorization_url)
        parts = urlsplit(authorization_url)
        async with httpx.AsyncClient(base_url=self.base) as browser:
            answer = await sign_in_and_approve(browser, f"{parts.path}?{parts.query}", self.email)
        assert answer.status_code == 302, answer.text
        location = answer.headers["Location"]
        assert location.startswith(REDIRECT_URI)
        self.callback = query_of(location)

    async def wait_for_callback(self) -> AuthorizationCodeResult:
        assert self.callback is not None
        return AuthorizationCodeResult(
            code=self.callback["code"], state=self.callback.get("state"),
            iss=self.callback.get("iss"),
        )  # fmt: skip


async def test_mcp_without_a_credential_is_401_pointing_at_its_resource_metadata(served):
    metadata = f"{served.base}/.well-known/oauth-protected-resource/mcp"
    labels = {"route": "/mcp", "method": "POST", "status": "401"}
    before = REGISTRY.get_sample_value("strongroom_http_requests_total", labels) or 0
    async with httpx.AsyncClient() as http:
        missing = await http.post(served.mcp_url, json=INITIALIZE, headers=MCP_HEADERS)
        wrong = await http.post(
            served.mcp_url,
            json=INITIALIZE,
            headers=MCP_HEADERS | {"Authorization": "Bearer ak_test_nope"},
        )
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == (
        f'Bearer realm="strongroom", resource_metadata="{metadata}"'
    )
    assert missing.headers["Content-Type"] == "application/problem+json"
    assert missing.json()["code"] == "missing_api_key"
    assert missing.json()["request_id"] == missing.headers["X-Request-Id"]
    assert REGISTRY.get_sample_value("strongroom_http_requests_total", labels) == before + 2
    assert wrong.status_code == 401
    assert wrong.headers["WWW-Authenticate"] == (
        'Bearer realm="strongroom", error="invalid_token", '
        f'error_description="invalid_api_key", resource_metadata="{metadata}"'
    )


async def test_a_browser_page_of_another_origin_is_refused(served, owner):
    """DNS rebinding (MCP transports, security): only the API's own origin, or none."""
    credential, _ = owner
    headers = MCP_HEADERS | {"Authorization": f"Bearer {credential.key}"}
    async with httpx.AsyncClient() as http:
        other = await http.post(
            served.mcp_url, json=INITIALIZE, headers=headers | {"Origin": "http://evil.example"}
        )
        own = await http.post(
            served.mcp_url, json=INITIALIZE, headers=headers | {"Origin": served.base}
        )
    assert other.status_code == 403 and other.json()["code"] == "permission_denied"
    assert own.status_code == 200


async def test_the_mcp_resource_metadata_names_the_mcp_resource(served):
    async with httpx.AsyncClient(base_url=served.base) as http:
        resource = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        server = (await http.get("/.well-known/oauth-authorization-server")).json()
    assert resource["resource"] == served.mcp_url
    assert resource["authorization_servers"] == [server["issuer"]] == [served.base]
    assert resource["scopes_supported"] == list(READ_SCOPES)
    assert resource["bearer_methods_supported"] == ["header"]


@pytest.fixture
async def owner(served):
    """A user with a live API key (what OAuth tokens see: D13) and data made with it."""
    credential = await issue_credential(
        served.runtime,
        email=f"mcp-{uuid.uuid4().hex[:8]}@example.com",
        environment=Environment.LIVE,
        tier=RateLimitTier.ENTERPRISE,
    )
    word = unique_word()
    async with served.client(f"Bearer {credential.key}") as client:
        project = await call(client, "vault_create_project", name=word, project_type="commercial")
        document = await upload(
            served, credential.key, project["id"],
            make_pdf([f"Contract {word}. The employer is Harbour Holdings Ltd."]), "c.pdf",
        )  # fmt: skip
        await until(
            client, "vault_get_document", lambda document: document["status"] == "ready",
            document_id=document["id"],
        )  # fmt: skip
        answer = await call(client, "chat_ask", query=f"Who is the employer of {word}?")
        run = await call(client, "workflows_start_run", workflow_id="wf_summarise_documents",
                         inputs={"document_ids": [document["id"]]})  # fmt: skip
    return credential, {
        "word": word, "project": project, "document": document, "answer": answer, "run": run,
    }  # fmt: skip


async def test_the_sdk_oauth_client_signs_in_refreshes_and_calls_every_tool(served, owner):
    credential, data = owner
    storage, browser = MemoryStorage(), Browser(served.base, credential.user.email)
    provider = OAuthClientProvider(
        server_url=served.mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="MCP SDK test client",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect,
        callback_handler=browser.wait_for_callback,
    )
    called = set()

    async def read(name, /, **arguments):
        called.add(name)
        return await call(client, name, **arguments)

    async with served.client(auth=provider) as client:
        me = await read("meta_me")
        # Discovery, dynamic registration, PKCE with the MCP resource, sign-in, consent:
        [authorization_url] = browser.visited
        asked = query_of(authorization_url)
        assert asked["resource"] == served.mcp_url
        assert asked["code_challenge_method"] == "S256"
        assert asked["client_id"] == storage.client_info.client_id
        assert set(asked["scope"].split()) == set(READ_SCOPES)
        assert me["auth_method"] == "oauth" and me["client_id"] == asked["client_id"]
        assert me["user_id"] == str(credential.user.id)

        project_id, document_id = data["project"]["id"], data["document"]["id"]
        assert (await read("vault_get_project", project_id=project_id))["id"] == project_id
        assert project_id in [p["id"] for p in (await read("vault_list_projects"))["data"]]
        assert (await read("vault_get_document", document_id=document_id))["status"] == "ready"
        listed = await read("vault_list_documents", project_id=project_id)
        assert [d["id"] for d in listed["data"]] == [document_id]
        job = await read("vault_get_ingestion_job", job_id=data["document"]["ingestion_job_id"])
        assert job["status"] == "succeeded"
        hits = await read("vault_search", query=f"employer {data['word']}")
        assert hits["data"][0]["document_id"] == document_id
        conversation_id = data["answer"]["conversation_id"]
        conversations = await read("chat_list_conversations")
        assert conversation_id in [c["id"] for c in conversations["data"]]
        assert (await read("chat_get_conversation", conversation_id=conversation_id))["id"]
        assert (await read("workflows_list"))["data"]
        run = await read("workflows_get_run", run_id=data["run"]["run_id"])
        assert run["run_id"] == data["run"]["run_id"]
        called.add("templates_get_fill")
        _, problem = await problem_of(client, "templates_get_fill", job_id=str(uuid.uuid4()))
        assert problem["code"] == "not_found"  # read, and allowed: none of this user's

        # Webhooks are not among the five read scopes a dynamic client gets (D37).
        for name, arguments in {
            "webhooks_list_endpoints": {},
            "webhooks_get_endpoint": {"endpoint_id": str(uuid.uuid4())},
            "webhooks_list_deliveries": {"endpoint_id": str(uuid.uuid4())},
        }.items():
            called.add(name)
            _, problem = await problem_of(client, name, **arguments)
            assert problem["code"] == "insufficient_scope"

        # Nor are routines (issue 43).
        for name, arguments in {
            "routines_list": {},
            "routines_get": {"routine_id": str(uuid.uuid4())},
            "routines_schedule": {"routine_id": str(uuid.uuid4())},
            "routines_list_runs": {"routine_id": str(uuid.uuid4())},
            "routines_get_run": {"run_id": str(uuid.uuid4())},
        }.items():
            called.add(name)
            _, problem = await problem_of(client, name, **arguments)
            assert problem["code"] == "insufficient_scope"

        # Writes need an API key (D15).
        some = str(uuid.uuid4())
        writes = {
            "webhooks_create_endpoint": {
                "url": "https://93.184.216.34/",
                "events": ["document.ready"],
            },
            "webhooks_update_endpoint": {"endpoint_id": some, "description": "d"},
            "webhooks_delete_endpoint": {"endpoint_id": some},
            "webhooks_rotate_secret": {"endpoint_id": some},
            "webhooks_retry_delivery": {"endpoint_id": some, "delivery_id": some},
            "vault_create_project": {"name": "x", "project_type": "commercial"},
            "vault_update_project": {"project_id": some, "name": "y"},
            "vault_delete_document": {"document_id": some},
            "vault_reprocess_document": {"document_id": some},
            "vault_delete_project": {"project_id": some},
            "chat_ask": {"query": "Who is the employer?"},
            "chat_update_conversation": {"conversation_id": some, "title": "t"},
            "chat_delete_conversation": {"conversation_id": some},
            "templates_fill_stored": {"template_document_id": document_id},
            "workflows_start_run": {"workflow_id": "wf_summarise_documents"},
            "routines_create": {"name": "r", "project_id": some},
            "routines_update": {"routine_id": some, "name": "r"},
            "routines_delete": {"routine_id": some},
            "routines_start_run": {"routine_id": some},
            "routines_approve_run": {"run_id": some},
            "routines_reject_run": {"run_id": some},
        }
        for name, arguments in writes.items():
            called.add(name)
            line, problem = await problem_of(client, name, **arguments)
            assert problem["code"] == "oauth_not_supported", line
        assert called == expected_tools()

        # Refresh: the access token has run out; the client rotates its refresh token.
        first = storage.tokens
        provider.context.token_expiry_time = time.time() - 1
        assert (await read("meta_me"))["auth_method"] == "oauth"
        assert storage.tokens.access_token != first.access_token
        assert storage.tokens.refresh_token != first.refresh_token
    assert len(browser.visited) == 1  # refreshed, not signed in again

    # The token is for the MCP server only (audience binding).
    async with httpx.AsyncClient(base_url=served.base) as http:
        me = await http.get(
            "/api/v2/me", headers={"Authorization": f"Bearer {storage.tokens.access_token}"}
        )
    assert me.status_code == 401
    assert me.json()["detail"] == "The access token is for another audience."


async def api_token(served, email: str, **authorize_options) -> tuple[int, dict]:
    """An authorization-code flow by hand; (token endpoint status, its JSON and the
    `client_id`), or (302, the error callback's parameters)."""
    async with httpx.AsyncClient(base_url=served.base) as http:
        client = await register(http, redirect_uri=REDIRECT_URI)
        verifier, challenge = pkce_pair()
        token_resource = authorize_options.pop("token_resource", None)
        answer = await sign_in_and_approve(
            http,
            f"/api/v2/oauth/authorize?{authorize_query(client, challenge, **authorize_options)}",
            email,
        )
        callback = query_of(answer.headers["Location"])
        if "code" not in callback:
            return 302, callback
        form = {
            "grant_type": "authorization_code", "code": callback["code"],
            "redirect_uri": REDIRECT_URI, "code_verifier": verifier,
            "client_id": client.client_id,
        }  # fmt: skip
        if token_resource:
            form["resource"] = token_resource
        token = await http.post("/api/v2/oauth/token", data=form)
    return token.status_code, token.json() | {"client_id": client.client_id}


async def test_a_token_for_the_http_api_is_refused_by_the_mcp_server(served, owner):
    credential, _ = owner
    status, token = await api_token(served, credential.user.email)
    assert status == 200
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            served.mcp_url,
            json=INITIALIZE,
            headers=MCP_HEADERS | {"Authorization": f"Bearer {token['access_token']}"},
        )
    assert answer.status_code == 401
    assert answer.json()["detail"] == "The access token is for another audience."
    assert "/.well-known/oauth-protected-resource/mcp" in answer.headers["WWW-Authenticate"]


async def test_resource_is_honoured_and_only_this_servers_resources_are_granted(served, owner):
    credential, _ = owner
    email = credential.user.email
    status, token = await api_token(served, email, resource=served.mcp_url)
    assert status == 200
    async with served.client(f"Bearer {token['access_token']}") as client:
        assert (await call(client, "meta_me"))["auth_method"] == "oauth"

    # A refresh keeps the resource; it may repeat it, never change it.
    async with httpx.AsyncClient(base_url=served.base) as http:
        refresh = {"grant_type": "refresh_token", "client_id": token["client_id"]}
        changed = await http.post(
            "/api/v2/oauth/token",
            data=refresh | {"refresh_token": token["refresh_token"],
                            "resource": f"{served.base}/api/v2"},
        )  # fmt: skip
        assert (changed.status_code, changed.json()["error"]) == (400, "invalid_target")
        refreshed = await http.post(
            "/api/v2/oauth/token",
            data=refresh | {"refresh_token": token["refresh_token"], "resource": served.mcp_url},
        )
        assert refreshed.status_code == 200, refreshed.text  # the refused one spent nothing
    async with served.client(f"Bearer {refreshed.json()['access_token']}") as client:
        assert (await call(client, "meta_me"))["auth_method"] == "oauth"

    status, error = await api_token(
        served, email, resource=served.mcp_url, token_resource=f"{served.base}/api/v2"
    )
    assert (status, error["error"]) == (400, "invalid_target")

    status, callback = await api_token(served, email, resource="https://elsewhere.example/mcp")
    assert (status, callback["error"]) == (302, "invalid_target")


async def test_a_token_asked_for_the_origin_is_the_http_apis(served, owner):
    """The bare well-known document names the origin (RFC 9728 3.3); a client that asks a
    token for that resource gets the HTTP API's (as when naming none), not a refusal."""
    credential, _ = owner
    for resource in (served.base, f"{served.base}/"):
        status, token = await api_token(served, credential.user.email, resource=resource,
                                        token_resource=resource)  # fmt: skip
        assert status == 200, token
        async with httpx.AsyncClient(base_url=served.base) as http:
            me = await http.get(
                "/api/v2/me", headers={"Authorization": f"Bearer {token['access_token']}"}
            )
        assert me.status_code == 200, me.text


def test_tool_names_are_what_assistants_accept():
    import re

    from strongroom.app import AREAS

    for routes in AREAS:
        for capability, _ in routes.entries:
            assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", tool_name(capability))
