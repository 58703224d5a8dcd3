"""Hypercorn with uvloop: the production server (`strongroom serve`) and the embedded one.

`strongroom serve`'s master process imports this module and starts the workers; it imports
only Hypercorn's configuration and runner, so the workers start sooner (issue 29). What only
a serving process uses (the app's problems, Quart, Hypercorn's HTTP/1.1 protocol) is imported
where it is used."""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING

from hypercorn.config import Config
from hypercorn.run import run

if TYPE_CHECKING:
    from hypercorn.protocol.h11 import H11Protocol

APPLICATION_PATH = "strongroom.asgi:app"

# What Hypercorn answers itself, before the app sees a request (h11's hint -> our code).
_UNREAD_REQUESTS = {
    431: ("headers_too_large", "The request's headers are larger than the server reads."),
    501: ("not_implemented", "The request's Transfer-Encoding is not supported."),
}
_UNREADABLE = ("bad_request", "The request could not be read as HTTP/1.1.")


def answer_unread_requests_with_problems(base_url: str) -> None:
    """A request Hypercorn refuses before the app sees it (headers too large, such as a
    100,000-character multipart boundary, or bytes that are not HTTP/1.1) is answered as
    every other error (spec 7.1, 7.2): an RFC 7807 problem with its `X-Request-Id`, not
    Hypercorn's empty 431 or 400. Hypercorn has no hook for it, so its one method that
    writes that answer is replaced, in each process that serves (asgi.py for the workers,
    embedded.py); tests/embedded/test_unread_requests.py holds it to the installed
    Hypercorn."""
    import h11
    from hypercorn.protocol.h11 import H11Protocol

    from strongroom.problems import Problem

    async def send_problem(self: H11Protocol, status_code: int) -> None:
        code, detail = _UNREAD_REQUESTS.get(status_code, _UNREADABLE)
        problem = Problem(code, detail)
        headers, body = problem.closing_answer(base_url)
        headers += self.config.response_headers("h11")
        await self._send_h11_event(h11.Response(status_code=problem.status, headers=headers))
        await self._send_h11_event(h11.Data(data=body))
        await self._send_h11_event(h11.EndOfMessage())

    H11Protocol._send_error_response = send_problem


def hypercorn_config(host: str, port: int) -> Config:
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.worker_class = "uvloop"
    config.accesslog = None  # the app writes one structured line per request
    config.graceful_timeout = 20
    return config


def serve_workers(*, host: str, port: int, workers: int, metrics_port: int | None) -> None:
    """Serve in `workers` processes sharing the listening socket, with their metrics summed
    on `metrics_port`; returns on shutdown."""
    if metrics_port:
        # Before any worker starts (and before this process imports prometheus metrics).
        directory = tempfile.mkdtemp(prefix="strongroom-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
        from strongroom.metrics import serve_multiprocess_metrics

        serve_multiprocess_metrics(host, metrics_port, directory)
    config = hypercorn_config(host, port)
    config.application_path = APPLICATION_PATH
    config.workers = workers
    run(config)
