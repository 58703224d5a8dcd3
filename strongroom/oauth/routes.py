"""The OAuth endpoints (spec 4 OAuth rows, 5.3; D30-D40). They are not capabilities: they
authenticate clients and end users, not API credentials, and answer OAuth errors (D32).

The clients, tokens, tables and upstream sign-in are imported by the handlers that use them:
a process without signing keys has OAuth off and never needs them (issue 29)."""

from __future__ import annotations

import hmac
import re
import secrets
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlencode

from pydantic import ValidationError
from quart import Blueprint, Response, jsonify, redirect, request, session
from quart_schema import hide
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.auth.scopes import ALL_SCOPES
from strongroom.current import current_parts
from strongroom.oauth.errors import OAuthError
from strongroom.oauth.pages import consent_page, error_page, sign_in_page
from strongroom.oauth.resources import (
    MCP_PATH,
    mcp_resource,
    origin_resource,
    requested_audience,
    resources,
)
from strongroom.problems import Problem
from strongroom.settings import Settings
from strongroom.tenants.models import Tenant, User

if TYPE_CHECKING:
    from strongroom.oauth.models import OAuthClient
    from strongroom.oauth.tokens import TokenService
    from strongroom.oauth.upstream import UpstreamProvider

blueprint = Blueprint("oauth", __name__)
OAUTH = "/api/v2/oauth"
# Where sign-in may send the browser next: this server's authorize endpoint, its query
# percent-encoded (printable ASCII, no space: never a CR or LF to split the header with).
_SAFE_NEXT = re.compile(rf"{re.escape(OAUTH)}/authorize\?[\x21-\x7e]*")


@blueprint.after_request
async def _no_session_on_errors(response: Response) -> Response:
    """A request that fails with a 5xx never signs the browser in (issue 18): whatever the
    handler wrote into the session before it failed is not saved."""
    if response.status_code >= 500:
        session.modified = False
    return response


AUTHORIZE_PARAMS = (
    "client_id", "redirect_uri", "response_type", "scope", "state", "code_challenge",
    "code_challenge_method", "resource", "prompt",
)  # fmt: skip


class OAuthParts(Protocol):
    """What the authorization server's routes use of their process (strongroom.runtime.Runtime
    in a running app)."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    upstream: UpstreamProvider | None  # the OpenID provider users sign in with (D39)

    def require_oauth(self) -> TokenService: ...


def _runtime() -> OAuthParts:
    return current_parts(OAuthParts)


# -- metadata (RFC 8414, RFC 9728, D30, D31) ----------------------------------------------


@blueprint.get("/.well-known/oauth-authorization-server")
@hide
async def authorization_server_metadata() -> Response:
    from strongroom.oauth.clients import AUTH_METHODS

    runtime = _runtime()
    runtime.require_oauth()
    base = runtime.settings.base_url
    return _json(
        {
            "issuer": base,
            "authorization_endpoint": f"{base}{OAUTH}/authorize",
            "token_endpoint": f"{base}{OAUTH}/token",
            "revocation_endpoint": f"{base}{OAUTH}/revoke",
            "registration_endpoint": f"{base}{OAUTH}/register",
            "jwks_uri": f"{base}/.well-known/jwks.json",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "scopes_supported": list(ALL_SCOPES),
            "authorization_response_iss_parameter_supported": True,
        }
    )


@blueprint.get("/.well-known/oauth-protected-resource")
@hide
async def origin_resource_metadata() -> Response:
    """RFC 9728 3.3: the document at the bare well-known path names the identifier its URL
    was built from, the origin (a token asked for it is the HTTP API's)."""
    return _api_metadata(origin_resource(_runtime().settings))


@blueprint.get("/.well-known/oauth-protected-resource/api/v2")
@hide
async def protected_resource_metadata() -> Response:
    return _api_metadata(_runtime().settings.api_audience)


def _api_metadata(resource: str) -> Response:
    settings = _runtime().settings
    return _json(
        {
            "resource": resource,
            "authorization_servers": [settings.base_url],
            "scopes_supported": list(ALL_SCOPES),
            "bearer_methods_supported": ["header"],
        }
    )


@blueprint.get(f"/.well-known/oauth-protected-resource{MCP_PATH}")
@hide
async def mcp_resource_metadata() -> Response:
    """The MCP server's metadata (MCP authorization, RFC 9728): OAuth tokens only read
    there (D15), so it offers the read scopes."""
    from strongroom.oauth.clients import READ_SCOPES

    settings = _runtime().settings
    return _json(
        {
            "resource": mcp_resource(settings),
            "resource_name": "Strongroom MCP server",
            "authorization_servers": [settings.base_url],
            "scopes_supported": list(READ_SCOPES),
            "bearer_methods_supported": ["header"],
        }
    )


@blueprint.get("/.well-known/jwks.json")
@hide
async def jwks() -> Response:
    return _json(_runtime().require_oauth().keys.public_jwks())


# -- registration (RFC 7591, D35, D37, D38) ------------------------------------------------


@blueprint.post(f"{OAUTH}/register")
@hide
async def register() -> Response:
    from strongroom.oauth.clients import RegistrationRequest, register_client

    runtime = _runtime()
    runtime.require_oauth()
    body = await request.get_json(force=True, silent=True)
    try:
        metadata = RegistrationRequest.model_validate(body)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"])
        code = (
            "invalid_redirect_uri"
            if field.startswith("redirect_uris")
            else ("invalid_client_metadata")
        )
        raise OAuthError(code, f"{field or 'body'}: {first['msg']}") from error
    async with runtime.sessions() as db:
        client, secret = await register_client(db, metadata)
        await db.commit()
    document = {
        "client_id": client.id,
        "client_id_issued_at": int(client.created_at.timestamp()),
        "client_name": client.client_name,
        "redirect_uris": client.redirect_uris,
        "grant_types": client.grant_types,
        "response_types": client.response_types,
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "application_type": client.application_type,
        "scope": client.scope,
    }
    if secret is not None:
        document |= {"client_secret": secret, "client_secret_expires_at": 0}
    return _json(document, 201)


# -- authorization (D36, D39) --------------------------------------------------------------


@dataclass(frozen=True)
class AuthorizationRequest:
    client: OAuthClient
    redirect_uri: str
    state: str | None
    scope: str
    code_challenge: str
    resource: str | None
    prompt: str | None

    def fields(self) -> dict[str, str]:
        values = {
            "client_id": self.client.id,
            "redirect_uri": self.redirect_uri,
            "response_type": "code",
            "scope": self.scope,
            "state": self.state,
            "code_challenge": self.code_challenge,
            "code_challenge_method": "S256",
            "resource": self.resource,
            "prompt": self.prompt,
        }
        return {name: value for name, value in values.items() if value is not None}


class _Refusal(Exception):
    """An authorization error that is sent back to the client's redirect URI (D36)."""

    def __init__(self, error: str, description: str) -> None:
        self.error, self.description = error, description


def _refuse(error: str, description: str) -> None:
    raise _Refusal(error, description)


async def _parse_authorization(db, params: dict[str, str]) -> AuthorizationRequest | Response:
    """The validated request, or the error page for what must not redirect (D36)."""
    from strongroom.oauth.clients import redirect_uri_matches
    from strongroom.oauth.tokens import CHALLENGE, find_client

    client = await find_client(db, params.get("client_id"))
    if client is None:
        return error_page("Unknown client.")
    redirect_uri = params.get("redirect_uri", "")
    if not redirect_uri_matches(client.redirect_uris, redirect_uri):
        return error_page("The redirect URI is not registered for this client.")
    state = params.get("state")
    try:
        if params.get("response_type") != "code":
            _refuse("unsupported_response_type", "response_type must be code")
        if params.get("code_challenge_method") != "S256":
            _refuse("invalid_request", "PKCE with code_challenge_method=S256 is required")
        challenge = params.get("code_challenge", "")
        if not CHALLENGE.fullmatch(challenge):
            _refuse("invalid_request", "code_challenge must be a base64url SHA-256 (43 chars)")
        allowed = client.scope.split()
        requested = params["scope"].split() if "scope" in params else allowed
        granted = [scope for scope in allowed if scope in requested]
        if not granted:
            _refuse("invalid_scope", "none of the requested scopes is allowed for this client")
        resource = requested_audience(params.get("resource"), _runtime().settings)
        if resource is not None and resource not in resources(_runtime().settings):
            _refuse("invalid_target", "resource must be this API or its MCP server")
    except _Refusal as refusal:
        return _redirect(redirect_uri, error=refusal.error,
                         error_description=refusal.description, state=state)  # fmt: skip
    return AuthorizationRequest(
        client=client,
        redirect_uri=redirect_uri,
        state=state,
        scope=" ".join(granted),
        code_challenge=challenge,
        resource=resource,
        prompt=params.get("prompt"),
    )


@blueprint.get(f"{OAUTH}/authorize")
@hide
async def authorize() -> Response:
    from strongroom.oauth.models import OAuthConsent

    runtime = _runtime()
    runtime.require_oauth()
    params = _single_values(request.args)
    async with runtime.sessions() as db:
        ready = await _request_and_user(db, params)
        if isinstance(ready, Response):
            return ready
        parsed, user = ready
        consent = await db.get(OAuthConsent, (user.id, parsed.client.id))
        if (
            consent
            and set(parsed.scope.split()) <= set(consent.scope.split())
            and (parsed.prompt != "consent")
        ):
            return await _approve(db, parsed, user)
        return consent_page(
            client_name=parsed.client.client_name,
            email=user.email,
            scopes=parsed.scope.split(),
            csrf=_csrf_token(),
            fields=parsed.fields(),
        )


@blueprint.post(f"{OAUTH}/authorize")
@hide
async def decide() -> Response:
    from strongroom.oauth.models import OAuthConsent

    runtime = _runtime()
    runtime.require_oauth()
    form = _single_values(await request.form)
    if not _csrf_ok(form.get("csrf_token")):
        return error_page("The form expired or did not come from this site; start again.", 403)
    async with runtime.sessions() as db:
        ready = await _request_and_user(db, form)
        if isinstance(ready, Response):
            return ready
        parsed, user = ready
        if form.get("decision") != "approve":
            return _redirect(parsed.redirect_uri, error="access_denied",
                             error_description="the user denied the request",
                             state=parsed.state)  # fmt: skip
        consent = await db.get(OAuthConsent, (user.id, parsed.client.id))
        scopes = set(parsed.scope.split()) | set(consent.scope.split() if consent else ())
        if consent is None:
            consent = OAuthConsent(user_id=user.id, client_id=parsed.client.id, scope="")
        consent.scope = " ".join(sorted(scopes))
        db.add(consent)
        return await _approve(db, parsed, user)


async def _request_and_user(
    db, params: dict[str, str]
) -> tuple[AuthorizationRequest, User] | Response:
    """The validated request and its signed-in user, or the page or redirect to answer
    instead (an error, or sign-in first and then back to this request)."""
    parsed = await _parse_authorization(db, params)
    if isinstance(parsed, Response):
        return parsed
    user = await _signed_in_user(db)
    if user is None:
        return await _sign_in(f"{OAUTH}/authorize?{urlencode(parsed.fields())}")
    return parsed, user


async def _approve(db, parsed: AuthorizationRequest, user: User) -> Response:
    code = (
        await _runtime()
        .require_oauth()
        .issue_code(
            db,
            client=parsed.client,
            user=user,
            redirect_uri=parsed.redirect_uri,
            code_challenge=parsed.code_challenge,
            scope=parsed.scope,
            resource=parsed.resource,
        )
    )
    await db.commit()
    return _redirect(parsed.redirect_uri, code=code, state=parsed.state)


# -- the dev sign-in page (D39) ------------------------------------------------------------


@blueprint.post(f"{OAUTH}/sign-in")
@hide
async def sign_in() -> Response:
    runtime = _runtime()
    if not runtime.settings.dev_sign_in:
        raise Problem("not_found", "No resource at this path.")
    form = _single_values(await request.form)
    next_url = form.get("next", "")
    if not _SAFE_NEXT.fullmatch(next_url):  # never an open redirect, nor a split header
        next_url = f"{OAUTH}/authorize?"
    if not _csrf_ok(form.get("csrf_token")):
        return error_page("The form expired or did not come from this site; start again.", 403)
    email = form.get("email", "").strip().lower()
    async with runtime.sessions() as db:
        user = await _provisioned_user(db, email)
    if user is None:
        return sign_in_page(csrf=_csrf_token(), next_url=next_url, status=400,
                            error="No active user with this e-mail.")  # fmt: skip
    session.clear()
    session["user_id"] = str(user.id)
    return redirect(next_url)


async def _sign_in(next_url: str) -> Response:
    """Send a browser that is not signed in to sign in, then back to `next_url`."""
    from strongroom.oauth.upstream import UpstreamError

    runtime = _runtime()
    if runtime.settings.dev_sign_in:
        return sign_in_page(csrf=_csrf_token(), next_url=next_url)
    if runtime.upstream is None:
        return error_page("No sign-in method is configured on this server.", 501)
    try:
        url, pending = await runtime.upstream.start(_callback_uri(), next_url)
    except UpstreamError as error:
        return error_page(f"Sign-in is unavailable: {error}.", 502)
    session["upstream"] = pending.as_dict()
    return redirect(url, 302)


@blueprint.get(f"{OAUTH}/callback")
@hide
async def upstream_callback() -> Response:
    """Where the OpenID provider sends the browser back (D39)."""
    from strongroom.oauth.upstream import PendingSignIn, UpstreamError

    runtime = _runtime()
    saved = session.pop("upstream", None)
    if runtime.upstream is None or not saved:
        return error_page("This sign-in has expired; start again.", 400)
    pending = PendingSignIn(saved["state"], saved["nonce"], saved["verifier"], saved["next"])
    state = request.args.get("state", "")
    if not hmac.compare_digest(state.encode(), pending.state.encode()):
        return error_page("This sign-in does not match the one started here.", 400)
    if "code" not in request.args:
        return error_page("The identity provider did not sign you in.", 403)
    try:
        email = await runtime.upstream.finish(pending, request.args["code"], _callback_uri())
    except UpstreamError as error:
        return error_page(f"Sign-in failed: {error}.", 403)
    async with runtime.sessions() as db:
        user = await _provisioned_user(db, email)
    if user is None:
        return error_page("There is no active account for this e-mail address.", 403)
    session.clear()
    session["user_id"] = str(user.id)
    return redirect(pending.next_url)


def _callback_uri() -> str:
    return f"{_runtime().settings.base_url}{OAUTH}/callback"


async def _provisioned_user(db, email: str) -> User | None:
    """The active user with this e-mail in a tenant that is not suspended (the oldest, if
    several tenants provisioned the same address)."""
    if not email or len(email) > 320 or "\x00" in email:
        return None
    statement = (
        select(User)
        .join(Tenant, Tenant.id == User.tenant_id)
        .where(User.email == email, User.active, Tenant.suspended == False)  # noqa: E712
        .order_by(User.created_at)
    )
    return (await db.exec(statement)).first()


async def _signed_in_user(db) -> User | None:
    try:
        user_id = uuid.UUID(session.get("user_id", ""))
    except ValueError:
        return None
    user = await db.get(User, user_id)
    if user is None or not user.active:
        return None
    tenant = await db.get(Tenant, user.tenant_id)
    return None if tenant is None or tenant.suspended else user


def _csrf_token() -> str:
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(24)
    return session["csrf"]


def _csrf_ok(token: str | None) -> bool:
    expected = session.get("csrf")
    return bool(token and expected and hmac.compare_digest(token.encode(), expected.encode()))


# -- token and revocation endpoints (D32-D34, D40) ---------------------------------------


@blueprint.post(f"{OAUTH}/token")
@hide
async def token() -> Response:
    from strongroom.oauth.clients import authenticate_client

    runtime = _runtime()
    tokens = runtime.require_oauth()
    form = await _oauth_form()
    async with runtime.sessions() as db:
        client = await authenticate_client(db, request.headers.get("Authorization"), form)
        grant = form.get("grant_type")
        if grant not in ("authorization_code", "refresh_token"):
            raise OAuthError("unsupported_grant_type", "use authorization_code or refresh_token")
        if grant not in client.grant_types:
            raise OAuthError("unauthorized_client", f"this client may not use {grant}")
        if grant == "authorization_code":
            issued = await tokens.exchange_code(
                db,
                client=client,
                code=_required(form, "code"),
                redirect_uri=form.get("redirect_uri"),
                verifier=form.get("code_verifier"),
                resource=requested_audience(form.get("resource"), runtime.settings),
            )
        else:
            issued = await tokens.refresh(
                db, client=client, refresh_token=_required(form, "refresh_token"),
                scope=form.get("scope"),
                resource=requested_audience(form.get("resource"), runtime.settings),
            )  # fmt: skip
        await db.commit()
    response = _json(issued.body())
    response.headers["Pragma"] = "no-cache"
    return response


@blueprint.post(f"{OAUTH}/revoke")
@hide
async def revoke() -> Response:
    from strongroom.oauth.clients import authenticate_client

    runtime = _runtime()
    tokens = runtime.require_oauth()
    form = await _oauth_form()
    async with runtime.sessions() as db:
        client = await authenticate_client(
            db, request.headers.get("Authorization"), form, registered_method_only=False
        )
        await tokens.revoke(db, client=client, token=_required(form, "token"))
        await db.commit()
    response = Response("", status=200)
    response.headers["Cache-Control"] = "no-store"
    return response


async def _oauth_form() -> dict[str, str]:
    if request.mimetype != "application/x-www-form-urlencoded":
        raise OAuthError("invalid_request", "send application/x-www-form-urlencoded")
    form = await request.form
    for name in form:
        if len(form.getlist(name)) > 1:
            raise OAuthError("invalid_request", f"{name} given more than once")
    return _single_values(form)


def _required(form: dict[str, str], name: str) -> str:
    value = form.get(name)
    if not value:
        raise OAuthError("invalid_request", f"{name} is required")
    return value


def _single_values(values) -> dict[str, str]:
    return {name: values.get(name) for name in values}


def _redirect(uri: str, **params: str | None) -> Response:
    """A redirect to the client with `params` and `iss` (RFC 9207) added to its query."""
    params["iss"] = _runtime().settings.base_url
    query = urlencode({name: value for name, value in params.items() if value is not None})
    response = redirect(f"{uri}{'&' if '?' in uri else '?'}{query}", 302)
    response.headers["Cache-Control"] = "no-store"
    return response


def _json(document: dict, status: int = 200) -> Response:
    response = jsonify(document)
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response
