"""A request body that holds at most `UNREAD_LIMIT` bytes that the handler has not read
(issue 44). Quart's `Body.append` keeps whatever arrives: while four 90 MB uploads came in
faster than they were parsed and spooled, the API process rose by 66-89 MiB. Here the ASGI
receive loop (`BoundedConnection.handle_messages`) waits while the body holds its limit
unread, so Hypercorn's bounded queue to the app (`max_app_queue_size` messages) fills, it
stops reading the socket, and TCP holds the client back.

Only bodies without a length limit wait (uploads, streamed by api/multipart.py): a JSON
body is held to `max_json_body_bytes` by Quart and read whole at once (`await
request.get_data()`), which waiting here would never let finish. A handler that returns
without reading ends its receive loop with it (Quart cancels the loop when the handler is
done), so nothing waits for ever."""

from __future__ import annotations

import asyncio

from quart.asgi import ASGIHTTPConnection
from quart.wrappers.request import Body

UNREAD_LIMIT = 4 * 1024 * 1024


class BoundedBody(Body):
    def __init__(self, expected_content_length: int | None, max_content_length: int | None):
        super().__init__(expected_content_length, max_content_length)
        self.streamed = max_content_length is None
        self._room = asyncio.Event()
        self._room.set()

    async def __anext__(self) -> bytes:
        try:
            return await super().__anext__()
        finally:
            self._room.set()  # what it held has been handed to the handler

    def append(self, data: bytes) -> None:
        super().append(data)
        if self.streamed and len(self._data) >= UNREAD_LIMIT:
            self._room.clear()

    def set_complete(self) -> None:
        super().set_complete()
        self._room.set()

    @property
    def unread(self) -> int:
        return len(self._data)

    async def room(self) -> None:
        """Wait until the body holds less than its limit unread."""
        await self._room.wait()


class BoundedConnection(ASGIHTTPConnection):
    async def handle_messages(self, request, receive) -> None:  # type: ignore[no-untyped-def]
        while True:
            message = await receive()
            if message["type"] == "http.request":
                request.body.append(message.get("body", b""))
                if not message.get("more_body", False):
                    request.body.set_complete()
                elif isinstance(request.body, BoundedBody):
                    await request.body.room()
            elif message["type"] == "http.disconnect":
                return
