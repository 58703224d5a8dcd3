"""Issue 44: an upload's body holds at most UNREAD_LIMIT bytes the handler has not read; the
ASGI receive loop waits meanwhile, so the server stops reading the socket (counts, no
clock)."""

from __future__ import annotations

import asyncio

from strongroom.api.bounded_body import UNREAD_LIMIT, BoundedBody, BoundedConnection

CHUNK = 64 * 1024


class Request:
    def __init__(self, max_content_length: int | None) -> None:
        self.body = BoundedBody(None, max_content_length)


def endless_body(received: list[int]):
    async def receive() -> dict:
        await asyncio.sleep(0)  # as a server's queue does: the loop may run others
        received.append(CHUNK)
        return {"type": "http.request", "body": b"x" * CHUNK, "more_body": True}

    return receive


async def test_an_unread_upload_body_stops_being_received_at_its_limit():
    request, received = Request(None), []
    loop = asyncio.create_task(
        BoundedConnection.handle_messages(None, request, endless_body(received))
    )
    for _ in range(200):
        await asyncio.sleep(0)
    assert request.body.unread == UNREAD_LIMIT
    assert sum(received) == UNREAD_LIMIT  # not one message more was taken from the server
    read = await anext(request.body)  # the handler reads: room again, and the loop goes on
    assert len(read) == UNREAD_LIMIT
    for _ in range(200):
        await asyncio.sleep(0)
    assert sum(received) == 2 * UNREAD_LIMIT
    loop.cancel()


async def test_a_body_with_a_length_limit_is_not_held_back():
    """A JSON body is read whole (`await request.get_data()`) and bounded by Quart itself."""
    request, received = Request(64 * 1024 * 1024), []
    loop = asyncio.create_task(
        BoundedConnection.handle_messages(None, request, endless_body(received))
    )
    for _ in range(200):
        await asyncio.sleep(0)
    assert sum(received) > UNREAD_LIMIT
    loop.cancel()


async def test_the_whole_body_still_arrives_in_order():
    request = Request(None)
    pieces = [bytes([i]) * CHUNK for i in range(100)]
    messages = iter(
        [{"type": "http.request", "body": p, "more_body": i < 99} for i, p in enumerate(pieces)]
        + [{"type": "http.disconnect"}]
    )

    async def receive() -> dict:
        return next(messages)

    loop = asyncio.create_task(BoundedConnection.handle_messages(None, request, receive))
    data = b"".join([chunk async for chunk in request.body])
    assert data == b"".join(pieces)
    await loop
