"""Server-Sent Events plumbing (strongroom/api/sse.py): keep-alives while the source is
idle, its errors passed on, and a closed stream stopping the source."""

from __future__ import annotations

import asyncio
import json

import pytest

from strongroom.api.sse import frame, with_keepalive


def test_a_frame_is_one_event_with_its_data_as_one_line_of_json():
    encoded = frame("delta", {"text": "two\nlines"})
    assert encoded == b'event: delta\ndata: {"text":"two\\nlines"}\n\n'
    assert json.loads(encoded.split(b"data: ")[1]) == {"text": "two\nlines"}


async def test_an_idle_source_gets_keepalives_between_its_items():
    kept_alive = asyncio.Event()

    async def slow():
        yield "first"
        await kept_alive.wait()  # silent until the reader has had a keep-alive
        yield "second"

    received = []
    async with asyncio.timeout(5):  # no keep-alive would leave the source silent for ever
        async for item in with_keepalive(slow(), interval=0.02):
            received.append(item)
            if item is None:
                kept_alive.set()
    assert received[0] == "first" and received[-1] == "second"
    assert None in received[1:-1]


async def test_an_error_of_the_source_reaches_the_reader():
    async def failing():
        yield 1
        raise RuntimeError("upstream broke")

    received = []
    with pytest.raises(RuntimeError, match="upstream broke"):
        async for item in with_keepalive(failing(), interval=1):
            received.append(item)
    assert received == [1]


async def test_closing_the_stream_stops_the_source():
    stopped = asyncio.Event()

    async def endless():
        try:
            while True:
                yield "tick"
                await asyncio.sleep(0.01)
        finally:
            stopped.set()

    stream = with_keepalive(endless(), interval=1)
    assert await anext(stream) == "tick"
    await stream.aclose()  # what the server does when the client goes away
    async with asyncio.timeout(1):
        await stopped.wait()
