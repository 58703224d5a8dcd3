"""A real HTTP receiver of webhooks on 127.0.0.1, for the tests: it keeps what it was sent,
answers the status it is told, can be down (nothing listening on its port) and come back on
the same port, and can hold a request open until released (a delivery cut off mid-way)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.processes import free_port


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


class Receiver:
    def __init__(self, status: int = 200) -> None:
        self.port = free_port()
        self.status = status
        self.received: list[Received] = []
        self.hold: threading.Event | None = None  # set: requests wait until it is set
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                headers = {name.lower(): value for name, value in self.headers.items()}
                receiver.received.append(Received(headers, body))
                if receiver.hold is not None:
                    receiver.hold.wait(30)
                self.send_response(receiver.status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"thanks")

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self.hold is not None:
            self.hold.set()

    async def until(self, count: int, seconds: float = 30) -> list[Received]:
        """What it received once it holds `count` requests; fails past `seconds`."""
        async with asyncio.timeout(seconds):
            while len(self.received) < count:  # noqa: ASYNC110  (filled by another thread)
                await asyncio.sleep(0.02)
        return self.received

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
