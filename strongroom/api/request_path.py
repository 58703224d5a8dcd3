"""The one request path every capability takes, top to bottom:

    credentials only in the header (D12) -> authenticate (5.2, D7, D10) -> scopes (5.4, D8)
    and OAuth writes (D15) -> [rate limit] -> [idempotency] -> validate input (D4, D5)
    -> handler -> [bill]

Bracketed steps arrive with their issue. Every refusal is a `Problem`, rendered in one place
by the app's error handler.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError
from quart import Quart, Response, current_app, g, request

from strongroom.api.capability import Call, Capability, Handler, Routes
from strongroom.api.openapi import document_capability
from strongroom.auth.authenticate import bearer_credential
from strongroom.auth.keys import KEY_LIKE
from strongroom.auth.principal import Principal
from strongroom.problems import Problem
from strongroom.runtime import Runtime

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


def runtime() -> Runtime:
    return current_app.extensions["strongroom"]


async def handle(capability: Capability, handler: Handler, path: dict[str, Any]) -> Response:
    services = runtime()
    await reject_credentials_outside_header()
    principal = await authenticate(services)
    g.principal = principal
    authorise(capability, principal)
    call = Call(
        principal=principal,
        runtime=services,
        path=path,
        query=parse_query(capability),
        body=await parse_body(capability),
    )
    result = await handler(call)
    return Response(
        result.model_dump_json(), status=capability.status, content_type="application/json"
    )


async def reject_credentials_outside_header() -> None:
    """D12: a key in the query string, a cookie or a top-level JSON field is refused."""
    places = [("query string", value) for values in request.args.lists() for value in values[1]]
    places += [("cookie", value) for value in request.cookies.values()]
    body = await _json_body_or_none()
    if isinstance(body, dict):
        places += [("JSON body", value) for value in body.values() if isinstance(value, str)]
    for place, value in places:
        if KEY_LIKE.search(value):
            raise Problem(
                "credentials_in_request",
                f"An API key was found in the {place}. Send it only in the Authorization "
                "header, and revoke it if the request went through logs or proxies.",
            )


async def authenticate(services: Runtime) -> Principal:
    try:
        credential = bearer_credential(request.headers.get("Authorization"))
        return await services.authenticator.authenticate(credential)
    except Problem as problem:
        if problem.status == 401:
            problem.headers["WWW-Authenticate"] = _challenge(services, problem.code)
        raise


def _challenge(services: Runtime, code: str) -> str:
    """D7: RFC 6750 challenge; no error attributes when no credential was sent."""
    base = services.settings.base_url
    parts = ['Bearer realm="strongroom"']
    if code != "missing_api_key":
        parts += ['error="invalid_token"', f'error_description="{code}"']
    parts.append(f'resource_metadata="{base}/.well-known/oauth-protected-resource/api/v2"')
    return ", ".join(parts)


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
    if request.mimetype not in _JSON_TYPES and not request.mimetype.endswith("+json"):
        raise Problem("unsupported_media_type", "Send the body as application/json.")
    try:
        body = await _json_body()
    except ValueError as error:
        raise Problem(
            "validation_error",
            "The body is not valid JSON.",
            errors=[{"field": "body", "message": str(error)}],
        ) from error
    return _validate(capability.body, body, location="body")


def _validate(model: type[BaseModel], data: Any, *, location: str) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        errors = [
            {
                "field": ".".join(str(part) for part in item["loc"]) or location,
                "message": item["msg"],
            }
            for item in error.errors(include_url=False)
        ]
        raise Problem(
            "validation_error", f"The request {location} is invalid.", errors=errors
        ) from error


async def _json_body() -> Any:
    """The request body parsed as JSON, once per request; raises ValueError."""
    if "json_body" not in g:
        raw = await request.get_data(cache=True)
        try:
            g.json_body = json.loads(raw) if raw else None
        except ValueError as error:  # includes UnicodeDecodeError
            g.json_body_error = error
            g.json_body = None
    if "json_body_error" in g:
        raise g.json_body_error
    return g.json_body


async def _json_body_or_none() -> Any:
    if not request.mimetype.endswith("json"):
        return None
    try:
        return await _json_body()
    except ValueError:
        return None
