"""The protected resources access tokens are issued for (RFC 8707, RFC 9728).

Two faces of the same capabilities: the HTTP API at `/api/v2` and the MCP server at `/mcp`.
The origin itself is named by the metadata at the bare well-known path (RFC 9728 3.3: a
document names the identifier its URL was built from); a token asked for the origin is the
HTTP API's, as one that names no resource (docs/oauth.md).
A token names exactly one of them in `aud`, the `resource` the client asked for (the API when
it named none), and each face accepts only its own: an MCP client's token cannot be replayed
against the HTTP API, nor the other way round (MCP authorization: audience binding).
"""

from __future__ import annotations

from strongroom.settings import Settings

MCP_PATH = "/mcp"
# The ASGI scope key naming the audience a request's access token must have, when it is not
# the HTTP API: set by the MCP server on the tool calls it sends through the request path.
AUDIENCE_SCOPE_KEY = "strongroom.audience"


def mcp_resource(settings: Settings) -> str:
    return f"{settings.base_url}{MCP_PATH}"


def resources(settings: Settings) -> tuple[str, ...]:
    """Every `resource` a client may ask a token for; the first is the default."""
    return (settings.api_audience, mcp_resource(settings))


def metadata_url(resource: str, settings: Settings) -> str:
    """Where RFC 9728 publishes `resource`'s metadata: the well-known prefix inserted
    before its path."""
    path = resource.removeprefix(settings.base_url)
    return f"{settings.base_url}/.well-known/oauth-protected-resource{path}"


def origin_resource(settings: Settings) -> str:
    """The resource identifier of `/.well-known/oauth-protected-resource` (no path)."""
    return settings.base_url


def requested_audience(resource: str | None, settings: Settings) -> str | None:
    """The audience a `resource` parameter asks for: the origin (with or without its
    trailing slash) means the HTTP API, the default; anything else is as given."""
    if resource is not None and resource.rstrip("/") == origin_resource(settings):
        return settings.api_audience
    return resource
