"""Read the rest of a request body the app refused before reading, so the client hears why.

An answer given before the body has arrived (401 for a bad key, 429, 413 for an upload too
large) leaves the client still sending. Hypercorn closes such a connection as soon as the
answer is out, and closing a socket with unread data makes the kernel send a TCP reset, which
can destroy the answer before the client reads it: the client sees "connection reset" and
cannot tell a refusal from a lost request. This is the problem web servers solve with a
"lingering close"; Hypercorn has none, and by the time the ASGI app returns it is too late.

So the last message of every response with a request body still unread waits while this
ASGI middleware reads and drops the rest, for up to `seconds` (reading and dropping is cheap;
the time bound is what stops a client that never ends). Past it the answer goes out anyway and
a very slow or endless client may still see a reset. Requests whose body has arrived, which
is almost all of them, pay one flag check.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("strongroom.api")

_BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

ASGIApp = Any  # (scope, receive, send) -> Awaitable[None]


class DrainUnreadBody:
    def __init__(self, app: ASGIApp, *, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] in _BODYLESS_METHODS:
            await self.app(scope, receive, send)
            return
        body = _BodyProgress(receive)

        async def send_after_body(message: dict) -> None:
            if (
                message["type"] == "http.response.body"
                and not message.get("more_body", False)
                and not body.ended.is_set()
            ):
                await self._drain(body)
            await send(message)

        await self.app(scope, body.receive, send_after_body)

    async def _drain(self, body: _BodyProgress) -> None:
        body.draining = True
        try:
            async with asyncio.timeout(self.seconds):
                while not body.ended.is_set():
                    # Quart's own receiver may take the last message first: wait for either.
                    pulling = asyncio.ensure_future(body.receive())
                    ending = asyncio.ensure_future(body.ended.wait())
                    try:
                        await asyncio.wait({pulling, ending}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        pulling.cancel()
                        ending.cancel()
        except TimeoutError:
            pass
        if not body.ended.is_set():
            log.info(
                "answering before the request body ended; the client may see a reset",
                extra={"dropped_bytes": body.dropped},
            )


class _BodyProgress:
    """`receive` that notes when the request body has ended (or the client has gone), and
    once the answer is decided (`draining`) passes on no more body bytes to anyone."""

    __slots__ = ("_receive", "draining", "dropped", "ended")

    def __init__(self, receive) -> None:
        self._receive = receive
        self.ended = asyncio.Event()
        self.draining = False
        self.dropped = 0

    async def receive(self) -> dict:
        message = await self._receive()
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            self.ended.set()
        if self.draining and message["type"] == "http.request":
            self.dropped += len(message.get("body", b""))
            message = {**message, "body": b""}
        return message
