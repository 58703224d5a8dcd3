"""/mcp in the same ASGI app as the HTTP API: the MCP SDK's Streamable HTTP transport behind
an authentication gate, everything else to Quart.

Stateless transport (no MCP session kept between HTTP requests), so any replica answers any
request. A request with an `Origin` header other than the API's own is refused (403: DNS
rebinding). Every HTTP request to /mcp must carry an API key or an OAuth access token issued
for the MCP resource; without one it is answered 401 with `WWW-Authenticate: Bearer
resource_metadata=".../.well-known/oauth-protected-resource/mcp"` (MCP authorization, RFC
9728), as a problem document. The tool calls authenticate again on their way through the
request path (strongroom/mcp/forward.py): that is where scopes, limits and credits apply.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from quart import Quart
from starlette.responses import Response
from ulid import ULID

from strongroom.api.capability import Routes
from strongroom.api.request_path import authenticate_header
from strongroom.mcp.forward import Forwarder
from strongroom.mcp.server import create_server
from strongroom.mcp.tools import build_tools
from strongroom.oauth.resources import MCP_PATH, mcp_resource
from strongroom.problems import PROBLEM_CONTENT_TYPE, Problem

log = logging.getLogger("strongroom.mcp")


def mount(app: Quart, areas: Iterable[Routes]) -> None:
    """Serve the capabilities of `areas` as MCP tools at /mcp from `app`'s ASGI callable,
    started and stopped with `app`."""
    api = app.asgi_app
    tools = build_tools(areas)
    state: dict = {}

    @app.while_serving
    async def run_mcp():
        runtime = app.extensions["strongroom"]
        settings = runtime.settings
        forwarder = Forwarder(api, settings.base_url, mcp_resource(settings))
        manager = StreamableHTTPSessionManager(app=create_server(tools, forwarder), stateless=True)
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(manager.run())
            stack.push_async_callback(forwarder.close)
            state["manager"] = manager
            yield
            state.pop("manager", None)

    async def asgi(scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != MCP_PATH:
            await api(scope, receive, send)
            return
        manager = state.get("manager")
        runtime = app.extensions.get("strongroom")
        if manager is None or runtime is None:
            await _problem(Problem("service_unavailable", "Starting up."), "", scope, receive, send)
            return
        base_url = runtime.settings.base_url
        origin = _header(scope, b"origin")
        if origin is not None and origin.rstrip("/") != _origin(base_url):
            # A browser page of another origin (DNS rebinding: MCP transports, security);
            # assistants and IDEs send no Origin.
            problem = Problem("permission_denied", "Requests from this Origin are not allowed.")
            await _problem(problem, base_url, scope, receive, send)
            return
        authorization = _header(scope, b"authorization")
        audience = mcp_resource(runtime.settings)
        try:
            await authenticate_header(runtime, authorization, audience=audience)
        except Problem as problem:
            await _problem(problem, runtime.settings.base_url, scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    app.asgi_app = asgi  # type: ignore[method-assign]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _header(scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _problem(problem: Problem, base_url: str, scope, receive, send) -> None:
    request_id = f"req_{ULID()}"
    response = Response(
        json.dumps(problem.body(base_url, request_id)),
        status_code=problem.status,
        media_type=PROBLEM_CONTENT_TYPE,
        headers={**problem.headers, "X-Request-Id": request_id},
    )
    await response(scope, receive, send)
