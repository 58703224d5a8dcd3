"""DrainUnreadBody, driven as an ASGI server would: the final response message waits until
the request body has been read to its end, and no longer than its time bound."""

from __future__ import annotations

import asyncio

from strongroom.api.unread_body import DrainUnreadBody

SCOPE = {"type": "http", "method": "POST"}


def body_of(chunks: int | None):
    """A `receive` handing out 1 KiB chunks: `chunks` of them then the end, or for ever.
    After the end it waits, as a server's does until the client goes."""
    sent = 0

    async def receive() -> dict:
        nonlocal sent
        if chunks is not None and sent >= chunks:
            await asyncio.Event().wait()
        await asyncio.sleep(0)
        sent += 1
        more = chunks is None or sent < chunks
        return {"type": "http.request", "body": b"x" * 1024, "more_body": more}

    receive.count = lambda: sent
    return receive


async def refuse_at_once(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 401, "headers": []})
    await send({"type": "http.response.body", "body": b"{}", "more_body": False})


async def run(app, receive) -> list[tuple[str, int]]:
    sent: list[tuple[str, int]] = []

    async def send(message: dict) -> None:
        sent.append((message["type"], receive.count()))

    await app(SCOPE, receive, send)
    return sent


async def test_an_early_answer_ends_after_the_whole_body_is_read():
    receive = body_of(chunks=500)
    sent = await run(DrainUnreadBody(refuse_at_once, seconds=5), receive)
    assert sent[-1] == ("http.response.body", 500)


async def test_an_endless_body_is_read_no_longer_than_the_bound():
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with asyncio.timeout(10):  # a bound on waiting: the body never ends by itself
        sent = await run(DrainUnreadBody(refuse_at_once, seconds=0.05), body_of(chunks=None))
    assert sent[-1][0] == "http.response.body"
    assert loop.time() - started >= 0.05  # it was read for the bound (load cannot fail this)


async def test_a_body_another_reader_finishes_ends_the_wait():
    """Quart reads the body in a task of its own; the last message may reach it first."""
    receive = body_of(chunks=50)

    async def app_reading_beside(scope, receive, send) -> None:
        async def read_all() -> None:
            while (await receive())["more_body"]:
                pass

        reader = asyncio.create_task(read_all())
        await refuse_at_once(scope, receive, send)
        await reader

    async with asyncio.timeout(2):
        sent = await run(DrainUnreadBody(app_reading_beside, seconds=30), receive)
    assert sent[-1] == ("http.response.body", 50)
