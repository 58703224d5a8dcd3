"""One delivery attempt against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from strongroom.outbox.sender import Sender
from tests.processes import free_port


class Server:
    """Answers every POST with `status`, `body` and `headers`, after `delay` seconds."""

    def __init__(self, status=200, body=b"ok", headers=None, delay=0.0) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.requests.append(({k.lower(): v for k, v in self.headers.items()}, data))
                time.sleep(delay)
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/hook?x=1"

    def __enter__(self):
        # `shutdown` waits for the loop to look again: every 0.5 s by default (issue 54).
        serving = threading.Thread(target=self.http.serve_forever, args=(0.01,), daemon=True)
        serving.start()
        return self

    def __exit__(self, *exc):
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
async def sender():
    sender = Sender(timeout_seconds=1.0, allow_private=True)
    yield sender
    await sender.aclose()


async def test_a_2xx_succeeds_and_the_request_is_what_was_given(sender):
    with Server(status=204, body=b"") as server:
        attempt = await sender.post(server.url, b'{"a":1}', {"webhook-id": "msg_1"})
    assert attempt.succeeded and attempt.error is None
    ((headers, body),) = server.requests
    assert body == b'{"a":1}'
    assert headers["webhook-id"] == "msg_1"
    assert headers["host"] == server.url.split("/")[2]


async def test_a_500_fails_with_its_status_and_body(sender):
    with Server(status=500, body=b"broken") as server:
        attempt = await sender.post(server.url, b"{}", {})
    assert not attempt.succeeded
    assert (attempt.status_code, attempt.body, attempt.error) == (500, "broken", "answered 500")


async def test_a_redirect_is_not_followed(sender):
    with Server(status=302, headers={"Location": "http://169.254.169.254/"}) as server:
        attempt = await sender.post(server.url, b"{}", {})
    assert not attempt.succeeded
    assert attempt.error == "redirect not followed (302)"
    assert len(server.requests) == 1


async def test_only_the_first_kilobyte_of_the_answer_is_kept(sender):
    with Server(body=b"x" * 100_000) as server:
        attempt = await sender.post(server.url, b"{}", {})
    assert attempt.succeeded
    assert attempt.body == "x" * 1024


async def test_a_receiver_that_never_answers_times_out_within_the_timeout():
    quick = Sender(timeout_seconds=0.2, allow_private=True)
    try:
        with Server(delay=3) as server:
            attempt = await quick.post(server.url, b"{}", {})
    finally:
        await quick.aclose()
    # The sender's own 0.2 s timeout ended it: a receiver answering at 3 s would have made
    # it a success. (No stopwatch: a slow machine cannot fail this.)
    assert attempt.error == "timed out after 0.2 s"
    assert attempt.status_code is None


async def test_nothing_listening_is_a_failed_attempt_not_an_error(sender):
    attempt = await sender.post(f"http://127.0.0.1:{free_port()}/", b"{}", {})
    assert not attempt.succeeded
    assert attempt.error.startswith("could not connect")


async def test_a_private_address_is_refused_without_connecting():
    strict = Sender(timeout_seconds=1.0, allow_private=False)
    try:
        with Server() as server:
            attempt = await strict.post(server.url, b"{}", {})
    finally:
        await strict.aclose()
    assert attempt.error == "refused: the URL its host resolves to 127.0.0.1, a loopback address"
    assert server.requests == []
