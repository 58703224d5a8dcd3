"""Real HTTP receivers of webhooks on 127.0.0.1, for the tests. `Receiver` keeps what it was
sent, answers the status it is told, can be down (nothing listening on its port) and come
back on the same port, and can hold a request open until released (a delivery cut off
mid-way). `Hanging` never answers (an endpoint that hangs), on the test's event loop."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
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


class Hanging:
    """Receivers that take a request and never answer, one per path, on one port: each
    attempt at them lasts until the sender gives up (its timeout). Counts the requests each
    path has open (arrived, not yet abandoned by the sender) and the most it ever had, and
    notes the order of arrivals."""

    def __init__(self) -> None:
        self.port = free_port()
        self.arrived: list[str] = []  # the path of each request, in order of arrival
        self.open: Counter[str] = Counter()
        self.most_open: Counter[str] = Counter()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._changed = asyncio.Event()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def open_under(self, prefix: str) -> int:
        """The requests open at the paths under `prefix`."""
        return sum(count for path, count in self.open.items() if path.startswith(prefix))

    async def until_open(self, prefix: str, count: int, seconds: float = 60) -> None:
        async with asyncio.timeout(seconds):
            while self.open_under(prefix) < count:
                self._changed.clear()
                await self._changed.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            line = await reader.readline()  # b"POST /a/3 HTTP/1.1\r\n"
            if not line:
                return
            path = line.split()[1].decode().lstrip("/")
            self.arrived.append(path)
            self.open[path] += 1
            self.most_open[path] = max(self.most_open[path], self.open[path])
            self._changed.set()
            try:
                while await reader.read(65536):  # until the sender gives up and closes
                    pass
            finally:
                self.open[path] -= 1
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def __aenter__(self) -> Hanging:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()
