"""A read deadline for every request body (issue 28), `/mcp` included: ASGI middleware
around the whole app.

A client that opens a request and then sends its body slowly or never held a connection
(and its file descriptor, and a task) for as long as it liked: 20,000 stalled `/mcp` bodies
from one key exhausted the embedded server's descriptors, and a stalled JSON body ended in
a 500 after Quart's own 60 s. Here every read of a body waits at most `idle_seconds` for
its next piece, and the whole body may take at most `total_seconds` (`upload_seconds` for a
multipart form, an upload). Past either, the client is answered 408 `request_timeout` (a
problem, `Connection: close`) if nothing was answered yet, and the app below is told the
client has gone (`http.disconnect`), so it stops waiting and whatever it would still send
is dropped.

An upload (a multipart form) has the same deadlines in strongroom/api/multipart.py, which
answers with a detail saying which passed; for those this middleware waits a second more,
as a backstop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from strongroom.problems import Problem

log = logging.getLogger("strongroom.api")

ASGIApp = Any  # (scope, receive, send) -> Awaitable[None]

_BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
_DISCONNECT = {"type": "http.disconnect"}
# An upload (a multipart form) is cut off by strongroom/api/multipart.py at the same two
# settings, with a detail that says which; this middleware answers only if that did not.
UPLOAD_BACKSTOP_SECONDS = 1.0


class BodyDeadline:
    def __init__(
        self,
        app: ASGIApp,
        *,
        base_url: str,
        idle_seconds: float,
        total_seconds: float,
        upload_seconds: float,
    ) -> None:
        self.app = app
        self.base_url = base_url
        self.idle_seconds = idle_seconds
        self.total_seconds = total_seconds
        self.upload_seconds = upload_seconds

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] in _BODYLESS_METHODS:
            await self.app(scope, receive, send)
            return
        if _is_form(scope):  # an upload: its own deadlines answer, this one a backstop
            idle = self.idle_seconds + UPLOAD_BACKSTOP_SECONDS
            total = self.upload_seconds + UPLOAD_BACKSTOP_SECONDS
        else:
            idle, total = self.idle_seconds, self.total_seconds
        body = _TimedBody(scope, receive, send, self.base_url, idle, total)
        await self.app(scope, body.receive, body.send)


class _TimedBody:
    __slots__ = (
        "_receive",
        "_send",
        "answered",
        "base_url",
        "deadline",
        "ended",
        "idle",
        "scope",
        "started",
    )

    def __init__(
        self, scope: dict, receive, send, base_url: str, idle: float, total: float
    ) -> None:
        self.scope = scope
        self.base_url = base_url
        self.idle = idle
        self._receive = receive
        self._send = send
        self.deadline = asyncio.get_running_loop().time() + total
        self.ended = False  # the body has arrived whole (or the client has gone)
        self.started = False  # a response has begun
        self.answered = False  # this middleware answered 408

    async def receive(self) -> dict:
        if self.answered:
            return _DISCONNECT
        if self.ended:
            return await self._receive()  # waiting for a disconnect is the app's business
        loop = asyncio.get_running_loop()
        wait = min(self.idle, self.deadline - loop.time())
        try:
            async with asyncio.timeout(max(wait, 0.0)):
                message = await self._receive()
        except TimeoutError:
            await self._time_out()
            return _DISCONNECT
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.ended = True
        return message

    async def send(self, message: dict) -> None:
        if self.answered:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def _time_out(self) -> None:
        self.answered = True
        log.info("request body did not arrive in time", extra={"path": self.scope.get("path")})
        if self.started:
            return  # the app has begun answering: all that is left is to stop reading
        problem = Problem(
            "request_timeout",
            "The request body did not arrive in time; send it again.",
        )
        headers, payload = problem.closing_answer(self.base_url)
        await self._send({"type": "http.response.start", "status": 408, "headers": headers})
        await self._send({"type": "http.response.body", "body": payload})


def _is_form(scope: dict) -> bool:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-type":
            return value.lower().startswith(b"multipart/form-data")
    return False
