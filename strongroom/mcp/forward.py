"""Tool calls through the one request path (strongroom/api/request_path.py).

A tool call becomes the HTTP request its capability declares, sent in-process (no socket) to
the same ASGI app that serves /api/v2, with the caller's own Authorization header. So
authentication, scopes, OAuth writes (D15), rate limits, idempotency, validation, the handler
and billing are exactly those of the HTTP API, and so are the problems. The one difference is
the audience an OAuth access token must have: the MCP resource, named in the ASGI scope where
no client can set it (strongroom/oauth/resources.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from strongroom.mcp.tools import ToolSpec
from strongroom.oauth.resources import AUDIENCE_SCOPE_KEY
from strongroom.problems import Problem


@dataclass(frozen=True)
class Answer:
    """The capability's answer: its JSON body on success, else the problem document."""

    ok: bool
    body: Any

    @property
    def problem_code(self) -> str | None:
        if self.ok:
            return None
        return self.body.get("code", "internal_error") if isinstance(self.body, dict) else None


class Forwarder:
    def __init__(self, app, base_url: str, audience: str) -> None:
        async def with_audience(scope, receive, send) -> None:
            await app({**scope, AUDIENCE_SCOPE_KEY: audience}, receive, send)

        # In-process, no network: nothing to time out here; handlers bound their own
        # upstream calls (the chat engine's timeouts).
        self.base_url = base_url
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=with_audience),
            base_url=base_url,
            timeout=None,  # noqa: S113
        )

    async def call(self, tool: ToolSpec, arguments: dict[str, Any], authorization: str) -> Answer:
        try:
            path, query, body, idempotency_key = tool.request(arguments)
        except Problem as problem:
            return Answer(False, problem.body(self.base_url, None))
        headers = {"Authorization": authorization}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        response = await self._client.request(
            tool.capability.method,
            path,
            params=query,
            headers=headers,
            **({} if body is None else {"json": body}),
        )
        try:
            document = response.json() if response.content else {}  # 204: done, no content
        except ValueError:
            document = {"code": "internal_error", "detail": response.text[:200]}
        return Answer(response.is_success, document)

    async def close(self) -> None:
        await self._client.aclose()
