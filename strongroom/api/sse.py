"""Server-Sent Events for streaming capabilities (D44).

A streaming handler returns an `EventStream`; the request path sends its frames as they are
produced (`text/event-stream`, never buffered), holding an Idempotency-Key's lock until the
stream ends. When the client goes away, the server stops reading the stream, which closes
its generator: work that only serves that client stops with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

CONTENT_TYPE = "text/event-stream"
KEEPALIVE_SECONDS = 15.0
KEEPALIVE = b": keep-alive\n\n"


def frame(event: str, data: Any) -> bytes:
    """One event; `data` as compact JSON on one line."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@dataclass
class EventStream:
    """The frames of a streamed answer. The producer (given this object) sets `succeeded`
    once the stream has ended well, a cacheable 2xx for idempotency; an `error` event
    leaves it false."""

    frames: AsyncIterator[bytes] | None = None
    succeeded: bool = False


async def with_keepalive(source: AsyncIterator[T], interval: float) -> AsyncIterator[T | None]:
    """The items of `source`, and None whenever `interval` seconds pass without one (time
    for a keep-alive comment). `source` runs in its own task, so waiting with a timeout
    never interrupts it; closing this generator cancels that task."""
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
    done = object()

    async def pump() -> None:
        try:
            async for item in source:
                await queue.put(item)
        except Exception as error:  # handed to the reader, raised there
            await queue.put(_Raised(error))
            return
        await queue.put(done)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), interval)
            except TimeoutError:
                yield None
                continue
            if item is done:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


@dataclass(frozen=True)
class _Raised:
    error: Exception
