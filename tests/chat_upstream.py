"""A stand-in for the LLM provider behind the `openai` answer engine (D44, issue 8).

A real provider (OpenAI or any OpenAI-compatible server with a model) cannot run here, so
the tests mock it, as the rules allow for something unavailable; but this is not a mock
object: it is a real HTTP server (Quart on Hypercorn, in the test's own event loop, on a
free 127.0.0.1 port) speaking the real chat-completions streaming protocol, `POST
/chat/completions` answered with Server-Sent Events (`data: {chat.completion.chunk}` lines,
an optional usage chunk, `data: [DONE]`), so the engine's HTTP client, timeouts and parser
all run for real.

Each test scripts it:

    async with FakeUpstream() as upstream:
        upstream.script(Reply(status=503), Reply(text="The fee is 5% [1].", usage=(40, 7)))
        engine = OpenAICompatibleEngine(base_url=upstream.base_url, model="m", api_key="k")
        ...
        assert len(upstream.requests) == 2
        assert passage.content in upstream.requests[0].prompt

`script(*replies)` gives the replies of the next calls in order; once they are used up the
last one answers every further call (without a script: `Reply()`). A `Reply` streams `text`
(or explicit `chunks`) one chunk per event with `delay` seconds between them; sends a usage
chunk when `usage=(prompt_tokens, completion_tokens)`; answers `status` with an
OpenAI-style error body instead when it is not 200; sends nothing at all with `hang=True`;
sends `hold_after` chunks and then waits for `upstream.release()` (never released: a stall
mid-answer); with `stepped=True` sends each chunk after the first only at an `upstream.step()`
(`upstream.sent` counts the content chunks sent: a test steps the answer token by token);
sends `drop_after` chunks and then breaks the connection; or sends `body` verbatim (garbage)
with `content_type`. Every request is recorded in `upstream.requests`
(path, headers, JSON body, `prompt`); `upstream.finished` counts the replies sent to
their end, `upstream.abandoned` those whose client went away mid-answer (`upstream.hung_up`
is set at the first). Hung and held replies are let go when the server stops.

The `chat_upstream` fixture below yields a running one per test; a test package opts in with
`from tests.chat_upstream import chat_upstream  # noqa: F401` in its conftest.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart, Response, request

from tests.processes import free_port


@dataclass
class Reply:
    """How the upstream answers one call (see the module docstring)."""

    text: str = "The documents say so [1]."
    chunks: list[str] | None = None
    delay: float = 0.0
    usage: tuple[int, int] | None = None
    status: int = 200
    hang: bool = False
    hold_after: int | None = None
    stepped: bool = False
    drop_after: int | None = None
    body: str | None = None
    content_type: str = "text/event-stream"
    done: bool = True

    def pieces(self) -> list[str]:
        """The text as tokens, each with its leading whitespace, as models stream them."""
        if self.chunks is not None:
            return list(self.chunks)
        return re.findall(r"\s*\S+", self.text)


@dataclass
class Received:
    """One request the upstream received."""

    path: str
    headers: dict[str, str]
    json: Any

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.json.get("messages", []) if isinstance(self.json, dict) else []

    @property
    def prompt(self) -> str:
        """Every message's content, one after the other."""
        return "\n".join(str(message.get("content", "")) for message in self.messages)


class _Dropped(Exception):
    """Raised inside a streamed reply to break the connection half-way."""


@dataclass
class FakeUpstream:
    """An OpenAI-compatible chat-completions server; `base_url` ends in `/v1`."""

    requests: list[Received] = field(default_factory=list)
    finished: int = 0
    abandoned: int = 0
    sent: int = 0  # content chunks sent, over every reply

    def __post_init__(self) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._replies: list[Reply] = [Reply()]
        self._calls = 0
        self._released = asyncio.Event()
        self._steps = asyncio.Semaphore(0)
        self._closing = asyncio.Event()
        self.hung_up = asyncio.Event()  # set when a client goes away mid-answer
        self.app = self._app()

    def script(self, *replies: Reply) -> None:
        """The replies of the next calls, in order; the last one repeats."""
        assert replies, "script at least one reply"
        self._replies = list(replies)
        self._calls = 0

    def release(self) -> None:
        """Let every reply waiting at `hold_after` go on."""
        self._released.set()

    def step(self) -> None:
        """Let a `stepped` reply send its next chunk."""
        self._steps.release()

    def asking(self, question: str) -> list[Received]:
        """The requests whose prompt asks `question`. An app under test also answers what
        its background work asks (a due routine another test left in the shared database
        fires into whichever app is running), so a test picks its own request by question,
        never by position."""
        return [received for received in self.requests if question in received.prompt]

    def _next(self) -> Reply:
        reply = self._replies[min(self._calls, len(self._replies) - 1)]
        self._calls += 1
        return reply

    def _app(self) -> Quart:
        app = Quart("fake-chat-upstream")
        app.config["RESPONSE_TIMEOUT"] = None
        app.config["BODY_TIMEOUT"] = None

        @app.post("/v1/chat/completions")
        async def completions() -> Response:
            payload = await request.get_json(force=True, silent=True)
            self.requests.append(
                Received(request.path, {k.lower(): v for k, v in request.headers.items()}, payload)
            )
            reply = self._next()
            model = payload.get("model", "fake") if isinstance(payload, dict) else "fake"
            if reply.hang:
                await self._closing.wait()
                return Response("", status=503)
            if reply.status != 200:
                self.finished += 1
                error = {"message": f"fake upstream answers {reply.status}", "type": "fake"}
                return Response(
                    json.dumps({"error": error}), reply.status, content_type="application/json"
                )
            if reply.body is not None:
                self.finished += 1
                return Response(reply.body, 200, content_type=reply.content_type)
            response = Response(self._events(reply, model), 200, content_type=reply.content_type)
            response.timeout = None
            return response

        return app

    async def _events(self, reply: Reply, model: str) -> AsyncIterator[bytes]:
        created = int(time.time())

        def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            chunk = {
                "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created,
                "model": model, "choices": choices, **extra,
            }  # fmt: skip
            return f"data: {json.dumps(chunk)}\n\n".encode()

        def choice(delta: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
            return [{"index": 0, "delta": delta, "finish_reason": finish}]

        try:
            yield event(choice({"role": "assistant", "content": ""}))
            for index, piece in enumerate(reply.pieces()):
                if index == reply.hold_after:
                    await self._wait(self._released.wait)
                if index and reply.stepped:
                    await self._wait(self._steps.acquire)
                if index == reply.drop_after:
                    raise _Dropped
                if index and reply.delay:
                    await asyncio.sleep(reply.delay)
                self.sent += 1
                yield event(choice({"content": piece}))
            yield event(choice({}, "stop"))
            if reply.usage is not None:
                prompt, completion = reply.usage
                usage = {
                    "prompt_tokens": prompt, "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }  # fmt: skip
                yield event([], usage=usage)
            if reply.done:
                yield b"data: [DONE]\n\n"
        except (asyncio.CancelledError, GeneratorExit):
            self.abandoned += 1  # the client went away mid-answer
            self.hung_up.set()
            raise
        self.finished += 1

    async def _wait(self, until: Callable[[], Awaitable[object]]) -> None:
        """Until `until()` is done (a release, a step) or the server stops."""
        waits = [
            asyncio.ensure_future(until()),
            asyncio.ensure_future(self._closing.wait()),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        if self._closing.is_set():
            raise _Dropped

    async def __aenter__(self) -> FakeUpstream:
        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.accesslog = None
        config.errorlog = None  # `_Dropped` breaking a connection on purpose is not news
        config.graceful_timeout = 1.0
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(serve(self.app, config, shutdown_trigger=self._stop.wait))
        for _ in range(200):  # until it accepts connections
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                if self._task.done():
                    self._task.result()
                await asyncio.sleep(0.01)
                continue
            writer.close()
            await writer.wait_closed()
            return self
        raise RuntimeError("the fake chat upstream did not start")

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        self._stop.set()
        await self._task


@pytest.fixture
async def chat_upstream() -> AsyncIterator[FakeUpstream]:
    """A running `FakeUpstream` for one test (import this fixture into a conftest or test
    module to use it)."""
    async with FakeUpstream() as upstream:
        yield upstream
