"""A FAKE embeddings upstream for the `openai` provider's tests (issue 16).

An embedding model cannot run as a service here, so this stands in for one: a real HTTP
server (Quart on Hypercorn, on a free 127.0.0.1 port) speaking the OpenAI `POST
/v1/embeddings` protocol, so the provider's HTTP client, batching, timeouts and parsing run
for real. Its "embedding" of a text is the text's letter counts (26 numbers): texts sharing
letters are close, which is all a test needs. `statuses` scripts the next answers' status
codes (then 200); `delay` makes each answer wait; `requests` records every JSON body and
its headers.
"""

from __future__ import annotations

import asyncio
import json
import string
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart, Response, request

from tests.processes import free_port


def letter_counts(text: str) -> list[float]:
    lowered = text.lower()
    return [float(lowered.count(letter)) for letter in string.ascii_lowercase]


class FakeEmbeddingsUpstream:
    def __init__(self) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.requests: list[tuple[dict[str, str], Any]] = []
        self.statuses: list[int] = []
        self.delay = 0.0
        self.body: str | None = None
        self.app = Quart("fake-embeddings-upstream")

        @self.app.post("/v1/embeddings")
        async def embeddings() -> Response:
            payload = await request.get_json(force=True, silent=True)
            self.requests.append(({k.lower(): v for k, v in request.headers.items()}, payload))
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.statuses:
                status = self.statuses.pop(0)
                if status != 200:
                    return Response(json.dumps({"error": {"message": "fake"}}), status)
            if self.body is not None:
                return Response(self.body, 200, content_type="application/json")
            data = [
                {"object": "embedding", "index": index, "embedding": letter_counts(text)}
                for index, text in reversed(list(enumerate(payload["input"])))
            ]  # out of order on purpose: the provider must sort by `index`
            return Response(
                json.dumps({"object": "list", "data": data, "model": payload["model"]}),
                200,
                content_type="application/json",
            )

    async def __aenter__(self) -> FakeEmbeddingsUpstream:
        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = 0.5
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(serve(self.app, config, shutdown_trigger=self._stop.wait))
        for _ in range(200):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.01)
                continue
            writer.close()
            await writer.wait_closed()
            return self
        raise RuntimeError("the fake embeddings upstream did not start")

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await self._task
