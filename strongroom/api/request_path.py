"""The one request path every capability takes, top to bottom:

    credentials only in the header (D12) -> authenticate (5.2, D7, D10) -> scopes (5.4, D8)
    and OAuth writes (D15) -> rate limit (D17-D20) -> idempotency (4.1, D23-D28)
    -> validate input (D4, D5) -> handler -> bill (D21) and the idempotent response,
    committed with the handler's work

Every refusal is a `Problem`, rendered in one place by the app's error handler.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError
from quart import Quart, Response, g, request
from quart.wrappers.response import IterableBody
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.billing import settled, write_debit
from strongroom.api.capability import Call, Capability, Handler, Routes
from strongroom.api.multipart import MultipartForm, receive_multipart
from strongroom.api.openapi import document_capability
from strongroom.api.sse import CONTENT_TYPE as SSE_CONTENT_TYPE
from strongroom.api.sse import EventStream
from strongroom.api.unknown_fields import unknown_field_message
from strongroom.auth.authenticate import ApiKeyAuthenticator, bearer_credential
from strongroom.auth.keys import KEY_LIKE
from strongroom.auth.principal import Principal
from strongroom.billing.credits import InsufficientCredits, debit_alone
from strongroom.current import current_parts
from strongroom.db.reads import Reads
from strongroom.db.together import Closing
from strongroom.idempotency.durable import KeyAlreadyCommitted
from strongroom.idempotency.guard import Attempt, IdempotencyGuard
from strongroom.metrics import AUTH_FAILURES, IDEMPOTENCY_OUTCOMES
from strongroom.oauth.resources import AUDIENCE_SCOPE_KEY, metadata_url
from strongroom.oauth.verify import AccessTokenVerifier, looks_like_jwt
from strongroom.problems import Problem
from strongroom.ratelimit.limiter import RateLimiter
from strongroom.settings import Settings
from strongroom.storage import BlobStore
from strongroom.tenants.partition import Environment

_JSON_TYPES = ("application/json",)


def install(app: Quart, *areas: Routes) -> None:
    """Route every capability of `areas` through the request path."""
    for routes in areas:
        for capability, handler in routes.entries:
            app.add_url_rule(
                capability.path,
                endpoint=capability.name,
                view_func=_view(capability, handler),
                methods=[capability.method],
            )


def _view(capability: Capability, handler: Handler):
    async def view(**path: Any) -> Response:
        return await handle(capability, handler, path)

    view.__name__ = capability.name.replace(".", "_")
    view.__doc__ = f"{capability.summary}\n\n{capability.description}".strip()
    return document_capability(capability)(view)


class RequestParts(Protocol):
    """What the request path uses of its process. The app's process (strongroom.runtime.Runtime)
    passes all of strongroom.services.Services on to the handler as `call.services`."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    read_engine: AsyncEngine
    reads: Reads
    blobs: BlobStore
    authenticator: ApiKeyAuthenticator
    token_verifier: AccessTokenVerifier | None
    rate_limiter: RateLimiter
    idempotency: IdempotencyGuard

    async def announce(self, event: dict[str, str]) -> None: ...


def parts() -> RequestParts:
    """This app's process parts (strongroom.app.create_app puts them there)."""
    return current_parts(RequestParts)


async def handle(capability: Capability, handler: Handler, path: dict[str, Any]) -> Response:
    services = parts()
    await reject_credentials_outside_header()
    principal = await authenticate(services)
    g.principal = principal
    try:
        authorise(capability, principal)
    except Problem:
        await show_rate_limit(services, principal)
        raise
    attempt = await limit_then_begin(services, capability, principal)
    if isinstance(attempt, Response):
        return replayed(attempt)  # the handler does not run, nothing is billed
    try:
        return await run_handler(services, capability, handler, path, principal, attempt)
    except BaseException:
        if attempt is not None:
            await services.idempotency.abandon(attempt)
        raise


async def run_handler(
    services: RequestParts,
    capability: Capability,
    handler: Handler,
    path: dict[str, Any],
    principal: Principal,
    attempt: Attempt | None,
) -> Response:
    """Validate, run the handler, bill and record the response for its Idempotency-Key, in
    one database transaction, then put that record in the idempotency store. Losing the key
    to an attempt that committed first rolls all of it back and replays that attempt's
    response."""
    call = Call(
        principal=principal,
        services=services,
        path=path,
        query=parse_query(capability),
        body=await parse_body(capability),
        reads_only=capability.method == "GET",
    )
    try:
        if capability.upload:
            call.upload = await receive_multipart(
                services.blobs.spool_dir, services.settings.upload_max_bytes
            )
            reject_credentials_in_form(call.upload)
        result = await handler(call)
        # Recorded with the response, replayed as they are.
        headers = {"X-Request-Id": g.request_id}
        if (decision := g.get("rate_limit")) is not None:
            headers.update(decision.headers())
        if isinstance(result, BaseModel):  # built with its headers: each one set costs a scan
            response = Response(
                result.model_dump_json(),
                status=capability.status,
                headers=headers,
                content_type="application/json",
            )
        else:
            if isinstance(result, EventStream):
                response = event_stream_response(services, result, attempt)
            else:
                response = result
            response.headers.update(headers)
        closing: list[Closing] = []
        record = None
        if attempt is not None and not capability.streams:  # a stream settles as it ends
            if (record := await services.idempotency.record(attempt, response)) is not None:
                closing.append(record)
        balance = debit = None
        if principal.environment is Environment.LIVE and call.reads_only:
            balance = await bill_read(call, capability)
        elif (debit := write_debit(principal, capability, g.request_id)) is not None:
            closing.append(debit)  # last: it locks the tenant's balance until the commit
        try:
            outcomes = await call.commit(*closing)
        except InsufficientCredits as error:
            raise payment_required(services) from error
        if debit is not None:
            balance = outcomes[closing.index(debit)]  # the debit's outcome: the new balance
    except KeyAlreadyCommitted:
        lost_to_another_attempt = True
    else:
        lost_to_another_attempt = False
    finally:
        await call.close()  # rolls back what was not committed
    if lost_to_another_attempt:
        assert attempt is not None
        return replayed(await services.idempotency.replay_after_conflict(attempt))
    # Committed: from here on nothing may turn the answer into an error (the client would
    # be told the work failed when it is done).
    await call.run_after_commit()
    if balance is not None:
        await settled(services, principal, capability, balance)
    if attempt is not None and not capability.streams:
        await services.idempotency.finish(attempt, record)
    return response


def replayed(response: Response) -> Response:
    """A replay keeps the original's X-RateLimit-* headers (4.1 rule 3, D26): the app's
    after-request step must not write this request's bucket over them. (A response recorded
    before they were recorded has none; it gets this request's, as every response does.)"""
    if "X-RateLimit-Limit" in response.headers:
        g.pop("rate_limit", None)
    return response


def event_stream_response(
    services: RequestParts, stream: EventStream, attempt: Attempt | None
) -> Response:
    """Send `stream` as it is produced; under an Idempotency-Key, recorded as it goes."""
    response = Response(b"", content_type=SSE_CONTENT_TYPE)
    frames = stream.frames
    assert frames is not None, "a streaming handler returns its frames"
    if attempt is not None:
        frames = services.idempotency.recording(attempt, frames, response, lambda: stream.succeeded)
    response.response = IterableBody(frames)
    del response.headers["Content-Length"]  # set for the empty body; a stream has none
    response.timeout = None  # as long as the answer takes
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"  # proxies: pass each event on at once
    return response


async def reject_credentials_outside_header() -> None:
    """D12: a key in the query string, a cookie or a top-level JSON field is refused (in a
    multipart form, once it is read: `reject_credentials_in_form`).
    Names are searched as well as values: a key pasted where a name goes leaks as well."""
    places: list[tuple[str, str]] = []
    if request.query_string:
        places += [
            ("query string", text)
            for name, values in request.args.lists()
            for text in (name, *values)
        ]
    # The names in one pass: werkzeug raises and catches an exception for each header it
    # looks up and does not find, and most requests have neither of these.
    names = {name.lower() for name, _ in request.headers}
    if "cookie" in names:
        places += [("cookie", text) for item in request.cookies.items() for text in item]
    body = await _json_body_or_none() if "content-type" in names else None
    if isinstance(body, dict):
        places += [
            ("JSON body", text)
            for name, value in body.items()
            for text in (name, value)
            if isinstance(text, str)
        ]
    _refuse_keys_in(places)


def reject_credentials_in_form(form: MultipartForm) -> None:
    """D12 for a multipart upload, once its body is read: a key in a form field's name or
    value, or in the file's name, would be stored as data (a project's or document's name)."""
    places = [("form field", text) for item in form.fields.items() for text in item]
    if form.file is not None:
        places.append(("file name", form.file.filename))
    _refuse_keys_in(places)


def _refuse_keys_in(places: list[tuple[str, str]]) -> None:
    for place, text in places:
        if KEY_LIKE.search(text):
            raise Problem(
                "credentials_in_request",
                f"An API key was found in the {place}. Send it only in the Authorization "
                "header, and revoke it if the request went through logs or proxies.",
            )


async def authenticate(services: RequestParts) -> Principal:
    # A tool call of the MCP server (strongroom/mcp) comes through here with the MCP
    # resource as its audience, set in the ASGI scope, which no client can reach.
    audience = request.scope.get(AUDIENCE_SCOPE_KEY)
    return await authenticate_header(
        services, request.headers.get("Authorization"), audience=audience
    )


async def authenticate_header(
    services: RequestParts, authorization: str | None, *, audience: str | None = None
) -> Principal:
    """The principal of an Authorization header: an API key, or an OAuth access token for
    `audience` (default: this API). A 401 carries the RFC 6750 challenge naming the
    resource's metadata (RFC 9728)."""
    try:
        credential = bearer_credential(authorization)
        if looks_like_jwt(credential):
            if services.token_verifier is None:
                raise Problem("invalid_token", "OAuth access tokens are not accepted here.")
            return await services.token_verifier.authenticate(credential, audience)
        return await services.authenticator.authenticate(credential)
    except Problem as problem:
        AUTH_FAILURES.labels(problem.code).inc()
        if problem.status == 401:
            problem.headers["WWW-Authenticate"] = _challenge(services, problem.code, audience)
        raise


def _challenge(services: RequestParts, code: str, audience: str | None = None) -> str:
    """D7: RFC 6750 challenge; no error attributes when no credential was sent."""
    settings = services.settings
    parts = ['Bearer realm="strongroom"']
    if code != "missing_api_key":
        parts += ['error="invalid_token"', f'error_description="{code}"']
    resource = audience or settings.api_audience
    parts.append(f'resource_metadata="{metadata_url(resource, settings)}"')
    return ", ".join(parts)


async def bill_read(call: Call, capability: Capability) -> int:
    """Debit a call that only read (D21); returns the new balance. It has no transaction:
    its debit and ledger entry commit together on their own (`debit_alone`), before the
    answer is sent, so it is still never answered without being billed. (A write's debit
    is the last statement of its transaction, `WriteDebit`.)"""
    services = call.services
    try:
        return await debit_alone(
            services.reads,
            services.sessions,
            call.principal.tenant_id,
            capability.cost,
            reason=capability.name,
            request_id=g.request_id,
        )
    except InsufficientCredits as error:
        raise payment_required(services) from error


def payment_required(services: RequestParts) -> Problem:
    return Problem(
        "payment_required",
        "The tenant has no credits left.",
        headers={"WWW-Authenticate": _challenge(services, "payment_required")},
    )


async def rate_limit(services: RequestParts, capability: Capability, principal: Principal) -> None:
    decision = await services.rate_limiter.take(principal, capability.cost)
    if decision is None:
        return  # the bucket store is down: fail open (D22)
    g.rate_limit = decision
    if not decision.allowed:
        raise Problem(
            "rate_limited",
            f"Rate limit of the {principal.rate_limit_tier} tier reached; retry after "
            f"{decision.retry_after} s.",
            headers={"Retry-After": str(decision.retry_after)},
            retry_after_seconds=decision.retry_after,
        )


async def limit_then_begin(
    services: RequestParts, capability: Capability, principal: Principal
) -> Attempt | Response | None:
    """The rate limit, then the Idempotency-Key's attempt (`begin_idempotency`), decided in
    that order but asked of Redis together: both scripts ride in one round trip
    (strongroom/redis_batch.py) instead of one each (issue 29), so the body is read first
    and nothing waits between the two. A request the rate limit refuses gives back the lock
    it took, and is answered 429 whatever the key's state."""
    header = request.headers.get("Idempotency-Key") if capability.idempotent else None
    body = None if header is None else await _body_to_fingerprint(services)
    if header is None or body is None:  # GET and friends ignore the header (4.1 rule 2)
        await rate_limit(services, capability, principal)
        return None
    beginning = asyncio.ensure_future(begin_idempotency(services, principal, header, body))
    try:
        await rate_limit(services, capability, principal)
    except BaseException:
        await _give_back(services, beginning)
        raise
    return await beginning


async def _body_to_fingerprint(services: RequestParts) -> bytes | None:
    """The body a keyed request is fingerprinted by; None when it is too large to be (4.1
    rule 8: it runs normally, nothing is cached)."""
    limit = services.settings.idempotency_max_body_bytes
    if (request.content_length or 0) > limit or len(body := await request.get_data()) > limit:
        IDEMPOTENCY_OUTCOMES.labels("bypassed").inc()
        return None
    return body


async def _give_back(services: RequestParts, beginning: asyncio.Future) -> None:
    """Wait for an attempt begun beside a refused request, and release its lock."""
    try:
        attempt = await asyncio.shield(beginning)
    except Exception:  # its own refusal (a bad key, in progress, ...): the 429 goes first
        return
    if isinstance(attempt, Attempt):
        await services.idempotency.abandon(attempt)


async def show_rate_limit(services: RequestParts, principal: Principal) -> None:
    """D20 headers for a refusal before the rate-limit step: the bucket as it is, uncharged."""
    decision = await services.rate_limiter.take(principal, 0)
    if decision is not None:
        g.rate_limit = decision


async def begin_idempotency(
    services: RequestParts, principal: Principal, header: str, body: bytes
) -> Attempt | Response:
    """The attempt to run under the Idempotency-Key `header`, or a replay."""
    return await services.idempotency.begin(
        namespace=principal.credential_id,
        method=request.method,
        path=request.path,
        header=header,
        body=body,
        mimetype=request.mimetype,
    )


def authorise(capability: Capability, principal: Principal) -> None:
    if principal.auth_method == "oauth" and not capability.oauth:
        raise Problem(
            "oauth_not_supported",
            "This capability needs an API key; OAuth access tokens cannot call it.",
        )
    missing = principal.missing_scopes(capability.scopes)
    if missing:
        listed = " ".join(missing)
        raise Problem(
            "insufficient_scope",
            f"The credential lacks the scopes: {listed}.",
            headers={"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{listed}"'},
            missing_scopes=missing,
        )


def parse_query(capability: Capability) -> BaseModel | None:
    if capability.query is None:
        return None
    values = {key: request.args.get(key) for key in request.args}
    return _validate(capability.query, values, location="query")


async def parse_body(capability: Capability) -> BaseModel | None:
    if capability.body is None:
        return None
    if capability.empty_body_is_object and await _sent_nothing():
        return _validate(capability.body, {}, location="body")
    if request.mimetype not in _JSON_TYPES and not request.mimetype.endswith("+json"):
        raise Problem("unsupported_media_type", "Send the body as application/json.")
    try:
        body = await _json_body()
    except (ValueError, RecursionError) as error:
        raise Problem(
            "validation_error",
            "The body is not valid JSON.",
            errors=[{"field": "body", "message": "not valid JSON (or nested too deeply)"}],
        ) from error
    return _validate(capability.body, body, location="body")


def _validate(model: type[BaseModel], data: Any, *, location: str) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        errors = [
            {
                "field": ".".join(str(part) for part in item["loc"]) or location,
                "message": field_message(item, location, model),
            }
            for item in error.errors(include_url=False)
        ]
        raise Problem(
            "validation_error", f"The request {location} is invalid.", errors=errors
        ) from error


def field_message(item: Any, location: str, model: type[BaseModel]) -> str:
    """Pydantic's message, but never the name of one of our classes: "Input should be a valid
    dictionary or instance of CreateProject" is said in the client's terms (issue 19); an
    unknown field names the one meant, if near (issue 31)."""
    if item["type"] == "extra_forbidden":
        return unknown_field_message(model, item["loc"], item["msg"])
    if item["type"] != "model_type":
        return item["msg"]
    if not item["loc"] and item["input"] is None:
        return f"the {location} is empty; send a JSON object"
    return "must be a JSON object"


async def _sent_nothing() -> bool:
    """No Content-Type and an empty body."""
    if "Content-Type" in request.headers:
        return False
    return not await request.get_data(cache=True)


async def _json_body() -> Any:
    """The request body parsed as JSON, once per request; raises ValueError."""
    if "json_body" not in g:
        raw = await request.get_data(cache=True)
        try:
            g.json_body = json.loads(raw) if raw else None
        except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
            g.json_body_error = error
            g.json_body = None
    if "json_body_error" in g:
        raise g.json_body_error
    return g.json_body


async def _json_body_or_none() -> Any:
    # A look at the header first: werkzeug parses it on every read of `mimetype`.
    if "json" not in request.headers.get("Content-Type", "").lower():
        return None
    if not request.mimetype.endswith("json"):
        return None
    try:
        return await _json_body()
    except (ValueError, RecursionError):
        return None
