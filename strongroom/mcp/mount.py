"""/mcp in the same ASGI app as the HTTP API: the MCP SDK's Streamable HTTP transport behind
an authentication gate, everything else to Quart.

Stateless transport (no MCP session kept between HTTP requests), so any replica answers any
request. A request with an `Origin` header other than the API's own is refused (403: DNS
rebinding). Every HTTP request to /mcp must carry an API key or an OAuth access token issued
for the MCP resource; without one it is answered 401 with `WWW-Authenticate: Bearer
resource_metadata=".../.well-known/oauth-protected-resource/mcp"` (MCP authorization, RFC
9728), as a problem document. The tool calls authenticate again on their way through the
request path (strongroom/mcp/forward.py): that is where scopes, limits and credits apply.

The MCP SDK, the tools' schemas and the forwarding client are loaded when the first request
passes the door, not when the app is made or starts (issue 29): a process that never serves
/mcp never imports them, and one that does pays it once, its other requests served meanwhile
(the import runs in a thread).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

from quart import Quart
from ulid import ULID

from strongroom.api.capability import Routes
from strongroom.api.request_path import authenticate_header
from strongroom.auth.principal import Principal
from strongroom.current import settings_of
from strongroom.lazy import LazyModule
from strongroom.metrics import latency_histogram, request_counter
from strongroom.oauth.resources import MCP_PATH, mcp_resource
from strongroom.problems import PROBLEM_CONTENT_TYPE, Problem

log = logging.getLogger("strongroom.mcp")

# starlette (with anyio and python-multipart: 25 modules) for the door's refusals, at the
# first one; the MCP SDK brings it anyway with the first request let through (issue 29).
starlette_responses = LazyModule("starlette.responses")


def client_went_away(record: logging.LogRecord) -> bool:
    """False for the MCP SDK's traceback of a request whose client went away before its
    body arrived (starlette's ClientDisconnect): a body cut off at its read deadline
    (strongroom/api/body_deadline.py) is answered 408 and logged once there; 20,000 stalled
    bodies logged 27,966 tracebacks (issue 28)."""
    error = record.exc_info[1] if record.exc_info else None
    return type(error).__name__ != "ClientDisconnect"


logging.getLogger("mcp.server.streamable_http").addFilter(client_went_away)


def mount(app: Quart, areas: Iterable[Routes]) -> None:
    """Serve the capabilities of `areas` as MCP tools at /mcp from `app`'s ASGI callable,
    started on its first request and stopped with `app`."""
    api = app.asgi_app
    areas = tuple(areas)
    state: dict = {}

    async def prepare_mcp() -> None:
        state["starting"] = asyncio.Lock()  # of this serving's event loop

    async def started_manager():
        """The running session manager, started now if this is the first MCP request."""
        async with state["starting"]:
            if "manager" not in state:
                await start_mcp()
            return state["manager"]

    async def start_mcp() -> None:
        # In a thread: the SDK takes a second or more to import, and the worker's other
        # requests go on meanwhile.
        await asyncio.to_thread(importlib.import_module, "strongroom.mcp.server")
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from strongroom.mcp.forward import Forwarder
        from strongroom.mcp.server import create_server
        from strongroom.mcp.tools import build_tools

        settings = settings_of(app)
        tools = build_tools(areas)
        forwarder = Forwarder(api, settings.base_url, mcp_resource(settings))
        manager = StreamableHTTPSessionManager(app=create_server(tools, forwarder), stateless=True)
        # The manager's task group lives in a task of its own, not in the server's lifespan
        # task: a cancel scope held open across the lifespan's steps would be cancelled
        # into whatever the lifespan awaits next.
        ready, stop = asyncio.Event(), asyncio.Event()

        async def serve_mcp() -> None:
            async with manager.run():
                ready.set()
                await stop.wait()

        task = asyncio.create_task(serve_mcp())
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiting.cancel()
            await forwarder.close()
            task.result()  # raises why it could not start

        async def stop_serving() -> None:
            stop.set()
            await task
            await forwarder.close()

        state.update(manager=manager, stop=stop_serving)

    async def stop_mcp() -> None:
        state.pop("manager", None)
        if (stop := state.pop("stop", None)) is not None:
            await stop()

    # Functions, not a while_serving generator: an app may be started again (the contract
    # fuzzing restarts it for every test). Stopped before the runtime closes.
    app.before_serving(prepare_mcp)
    app.after_serving_funcs.insert(0, stop_mcp)

    async def asgi(scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != MCP_PATH:
            await api(scope, receive, send)
            return
        started, status, request_id = time.perf_counter(), [0], f"req_{ULID()}"

        async def send_noting_status(message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        principal = await door(scope, receive, send_noting_status, request_id)
        duration = time.perf_counter() - started
        request_counter(MCP_PATH, scope["method"], str(status[0])).inc()
        latency_histogram(MCP_PATH, scope["method"]).observe(duration)
        log.info(
            "request",
            extra={
                "request_id": request_id,
                "method": scope["method"],
                "path": MCP_PATH,
                "status": status[0],
                "duration_ms": round(duration * 1e3, 2),
                "tenant_id": str(principal.tenant_id) if principal else None,
            },
        )

    async def door(scope, receive, send, request_id: str) -> Principal | None:
        """Origin and credential checks, then the MCP transport; the caller, if known."""
        runtime = app.extensions.get("strongroom")
        if runtime is None:
            problem = Problem("service_unavailable", "Starting up.")
            await _problem(problem, "", request_id, scope, receive, send)
            return None
        base_url = runtime.settings.base_url
        origin = _header(scope, b"origin")
        if origin is not None and origin.rstrip("/") != _origin(base_url):
            # A browser page of another origin (DNS rebinding: MCP transports, security);
            # assistants and IDEs send no Origin.
            problem = Problem("permission_denied", "Requests from this Origin are not allowed.")
            await _problem(problem, base_url, request_id, scope, receive, send)
            return None
        authorization = _header(scope, b"authorization")
        audience = mcp_resource(runtime.settings)
        try:
            principal = await authenticate_header(runtime, authorization, audience=audience)
        except Problem as problem:
            await _problem(problem, base_url, request_id, scope, receive, send)
            return None
        manager = await started_manager()
        await manager.handle_request(scope, receive, send)
        return principal

    app.asgi_app = asgi  # type: ignore[method-assign]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _header(scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _problem(problem: Problem, base_url: str, request_id: str, scope, receive, send) -> None:
    response = starlette_responses.Response(
        json.dumps(problem.body(base_url, request_id)),
        status_code=problem.status,
        media_type=PROBLEM_CONTENT_TYPE,
        headers={**problem.headers, "X-Request-Id": request_id},
    )
    await response(scope, receive, send)
