"""The protected resources access tokens are issued for (RFC 8707, RFC 9728).

Two faces of the same capabilities: the HTTP API at `/api/v2` and the MCP server at `/mcp`.
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
