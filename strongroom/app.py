"""The app factory: request ids, problem rendering, health probes, and the capabilities of
every area installed through the one request path."""

from __future__ import annotations

import atexit
import gc
import hmac
import json
import logging
import sys
import time

from pydantic import BaseModel
from quart import Quart, Request, Response, g, request
from quart_schema import QuartSchema, document_response
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from ulid import ULID
from werkzeug.exceptions import HTTPException

from strongroom import __version__
from strongroom.api import request_path
from strongroom.api.body_deadline import BodyDeadline
from strongroom.api.bounded_body import BoundedBody, BoundedConnection
from strongroom.api.client_request_id import loggable as loggable_request_id
from strongroom.api.error_pages import blueprint as error_pages
from strongroom.api.oauth_session import OAuthSessions
from strongroom.api.openapi import SECURITY_SCHEMES, StrongroomOpenAPIProvider
from strongroom.api.unread_body import DrainUnreadBody
from strongroom.auth.keys import redact_keys
from strongroom.chat.routes import routes as chat_routes
from strongroom.current import current_parts, current_settings, install_parts, install_settings
from strongroom.ingest.recognition import engine_description
from strongroom.mcp.mount import mount as mount_mcp
from strongroom.meta.routes import routes as meta_routes
from strongroom.metrics import latency_histogram, request_counter
from strongroom.oauth.errors import OAuthError
from strongroom.oauth.routes import blueprint as oauth_blueprint
from strongroom.problems import Problem, ProblemDocument
from strongroom.retrieval.vectors import search_readiness
from strongroom.routines.routes import routes as routines_routes
from strongroom.runtime import Runtime
from strongroom.settings import Settings
from strongroom.templates.routes import routes as templates_routes
from strongroom.vault.routes import routes as vault_routes
from strongroom.webhooks.routes import routes as webhooks_routes
from strongroom.workflows.routes import routes as workflows_routes

# A process that imported the app exits without the collector walking all the import made
# (its passes at exit cost about 0.27 s, a third of `python -c "import strongroom.app"`,
# issue 29): the objects go with the process anyway. The CLI does the same (cli.py).
atexit.register(gc.freeze)

log = logging.getLogger("strongroom.api")

AREAS = (
    meta_routes,
    vault_routes,
    chat_routes,
    templates_routes,
    workflows_routes,
    webhooks_routes,
    routines_routes,
)

# werkzeug HTTP errors raised by routing or body reading, as problems (D4).
_HTTP_CODES = {
    400: ("bad_request", "The request could not be understood."),
    404: ("not_found", "No resource at this path."),
    405: ("method_not_allowed", "This path does not accept the method."),
    408: ("request_timeout", "The request body did not arrive in time; send it again."),
    413: ("payload_too_large", "The request body is too large."),
    415: ("unsupported_media_type", "Unsupported media type."),
}


# How long an early answer waits for the rest of the request body (api/unread_body.py).
UNREAD_BODY_SECONDS = 10.0


class BackgroundTaskHealth(BaseModel):
    """One background task of the answering process (strongroom.background): times are
    ISO 8601; `failures` are rounds that failed in a row; `last_error` an exception's type."""

    started_at: str
    last_round_at: str | None
    last_success_at: str | None
    failures: int
    restarts: int
    last_error: str | None


class Health(BaseModel):
    status: str
    details: dict[str, str] | None = None  # /readyz: how search runs (issue 16)
    # /readyz: the answering process's background tasks (issue 54)
    background: dict[str, BackgroundTaskHealth] | None = None


def create_app(settings: Settings | None = None) -> Quart:
    settings = settings or Settings()
    app = Quart("strongroom")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_json_body_bytes
    app.asgi_http_class = BoundedConnection
    app.request_class = _request_class(
        {
            capability.path
            for routes in AREAS
            for capability, _ in routes.entries
            if capability.upload
        }
    )
    install_settings(app, settings)
    # The OAuth sign-in session (D39): signed, HttpOnly, SameSite=Lax, OAuth paths only.
    app.session_interface = OAuthSessions()
    app.secret_key = hmac.new(settings.secret("secret_key"), b"session", "sha256").hexdigest()
    app.config.update(
        SESSION_COOKIE_NAME="strongroom_session",
        SESSION_COOKIE_PATH="/api/v2/oauth",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.base_url.startswith("https://"),
    )
    QuartSchema(
        app,
        openapi_path="/api/v2/openapi.json",
        redoc_ui_path=None,
        scalar_ui_path=None,
        swagger_ui_path=None,
        info={"title": "Strongroom API", "version": __version__},
        servers=[{"url": settings.base_url}],
        security_schemes=SECURITY_SCHEMES,
        openapi_provider_class=StrongroomOpenAPIProvider,
    )
    app.make_response = _responses_as_they_are(app.make_response)  # type: ignore[method-assign]

    @app.before_serving
    async def open_runtime() -> None:
        if settings.is_embedded:  # the embedded default runs every kind of job here
            from strongroom.job_kinds import register_job_kinds

            register_job_kinds()  # (a worker registers them itself)
        runtime = Runtime.create(settings)
        await runtime.start()
        install_parts(app, runtime)
        # What start-up made lives as long as the process: out of the collector's way, so a
        # full collection does not walk it (a 655 ms pause was seen under load).
        gc.freeze()

    @app.after_serving
    async def close_runtime() -> None:
        await app.extensions.pop("strongroom").close()

    app.before_request(_assign_request_id)
    app.after_request(_finish_response)
    app.register_error_handler(Problem, _render_problem)
    app.register_error_handler(OAuthError, _render_oauth_error)
    app.register_error_handler(HTTPException, _render_http_error)
    app.register_error_handler(Exception, _render_unexpected)
    _add_health_routes(app)
    app.register_blueprint(oauth_blueprint)
    app.register_blueprint(error_pages)  # what problem `type` URLs lead to
    request_path.install(app, *AREAS)
    app.asgi_app = DrainUnreadBody(app.asgi_app, seconds=UNREAD_BODY_SECONDS)  # type: ignore[method-assign]
    mount_mcp(app, AREAS)  # /mcp: the same capabilities as MCP tools (docs/mcp.md)
    app.asgi_app = BodyDeadline(  # type: ignore[method-assign]
        app.asgi_app,  # every body, /mcp's too, has a read deadline (issue 28)
        base_url=settings.base_url,
        idle_seconds=settings.upload_idle_timeout_seconds,
        total_seconds=settings.request_body_timeout_seconds,
        upload_seconds=settings.upload_timeout_seconds,
    )
    return app


def _responses_as_they_are(converting):
    """quart-schema's make_response, except for a Response (all that our views and error
    handlers return), which it would pass through two model dumps to change nothing."""
    plain = converting.__wrapped__

    async def make_response(result):
        if isinstance(result, Response):
            return await plain(result)
        return await converting(result)

    return make_response


def _request_class(upload_paths: set[str]) -> type[Request]:
    """Requests whose body limit depends on the path: JSON bodies are held to
    `max_json_body_bytes` by Quart; uploads are streamed and held to `upload_max_bytes` by
    api/multipart.py, which answers 413 `file_too_large` itself."""

    class StrongroomRequest(Request):
        body_class = BoundedBody  # an upload's unread bytes are bounded (issue 44)

        def __init__(self, method: str, scheme: str, path: str, *args, **kwargs) -> None:
            if path in upload_paths:
                kwargs["max_content_length"] = None
            super().__init__(method, scheme, path, *args, **kwargs)

    return StrongroomRequest


def _add_health_routes(app: Quart) -> None:
    @app.get("/healthz")
    @document_response(Health)
    async def healthz() -> Response:
        """Liveness: the process answers."""
        return Response('{"status":"ok"}', content_type="application/json")

    @app.get("/readyz")
    @document_response(Health)
    @document_response(ProblemDocument, 503)
    async def readyz() -> Response:
        """Readiness: the database answers, and the embeddings model, loaded in the background
        at start, is loaded (issue 50: no first search waits for it). `details` say whether
        search is lexical or hybrid, and whether passages lack vectors (issue 16), and which
        OCR engine reads scans (`ocr`, issue 51); `background` the process's background
        tasks, each with its last round, last success, failures and restarts (issue 54)."""
        try:
            async with _runtime().read_engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except Exception as error:
            log.warning("readiness check failed: %s", type(error).__name__)
            raise Problem(
                "service_unavailable",
                "The database is not reachable.",
                headers={"Retry-After": "5"},
            ) from error
        runtime = _runtime()
        if getattr(runtime.embeddings, "loading", False):  # warmed at start (issue 50)
            raise Problem(
                "service_unavailable",
                "The embeddings model is loading.",
                headers={"Retry-After": "1"},
            )
        details = await search_readiness(runtime.embeddings, runtime.read_engine)
        details["ocr"] = engine_description(runtime.settings)
        health = {"status": "ok", "details": details, "background": runtime.background.state()}
        return Response(json.dumps(health), content_type="application/json")


async def _assign_request_id() -> None:
    g.request_id = f"req_{ULID()}"
    g.started = time.perf_counter()


async def _finish_response(response: Response) -> Response:
    request_id = g.get("request_id")
    if request_id and "X-Request-Id" not in response.headers:
        response.headers["X-Request-Id"] = request_id
    rate_limit = g.get("rate_limit")
    # Every authenticated response (D20); a handler's has them already (request_path.py).
    if rate_limit is not None and "X-RateLimit-Limit" not in response.headers:
        response.headers.update(rate_limit.headers())
    route = request.url_rule.rule if request.url_rule is not None else "unmatched"
    duration = time.perf_counter() - g.started
    request_counter(route, request.method, str(response.status_code)).inc()
    latency_histogram(route, request.method).observe(duration)
    if not log.isEnabledFor(logging.INFO):
        return response
    principal = g.get("principal")
    log.info(
        "request",
        extra={
            "request_id": request_id,
            "client_request_id": loggable_request_id(
                request.headers.get("X-Request-Id"),
                current_settings().log_client_request_id_max_chars,
            ),
            "method": request.method,
            # Never the query string, and no key pasted into the path (D9, D12).
            "path": redact_keys(request.path),
            "status": response.status_code,
            "duration_ms": round(duration * 1e3, 2),
            "tenant_id": str(principal.tenant_id) if principal else None,
        },
    )
    return response


# Hooks and handlers are coroutines: Quart runs plain functions in a thread pool.


def _problem_response(problem: Problem) -> Response:
    base_url = current_settings().base_url
    return problem.to_response(base_url, g.get("request_id"))


async def _render_problem(problem: Problem) -> Response:
    return _problem_response(problem)


async def _render_oauth_error(error: OAuthError) -> Response:
    base_url = current_settings().base_url
    return error.to_response(base_url, g.get("request_id"))


async def _render_http_error(error: HTTPException) -> Response:
    code, detail = _HTTP_CODES.get(error.code or 500, ("internal_error", "Unexpected error."))
    headers = {}
    if code == "method_not_allowed" and getattr(error, "valid_methods", None):
        headers["Allow"] = ", ".join(sorted(error.valid_methods))
    return _problem_response(Problem(code, detail, headers=headers))


async def _render_unexpected(error: Exception) -> Response:
    if _database_unreachable(error):
        log.warning(
            "database unreachable",
            extra={"request_id": g.get("request_id"), "error": type(error).__name__},
        )
        return _problem_response(
            Problem(
                "service_unavailable",
                "The database is unreachable; retry (with the same Idempotency-Key).",
                headers={"Retry-After": "5"},
            )
        )
    log.exception("unhandled error", extra={"request_id": g.get("request_id")})
    return _problem_response(
        Problem("internal_error", "An unexpected error occurred; retry with backoff.")
    )


def _database_unreachable(error: BaseException) -> bool:
    """A lost or refused database connection (a restart, a failover), not a bug: 503."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    if isinstance(error, OperationalError | InterfaceError):
        error = error.orig or error
    # psycopg is imported with a PostgreSQL database only (issue 29); without it no error
    # can be one of its.
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None and isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return True
    return isinstance(error, OSError)


def _runtime() -> Runtime:
    return current_parts(Runtime)
