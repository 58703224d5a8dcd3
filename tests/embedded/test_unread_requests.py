"""What Hypercorn refuses before the app sees a request is answered as every error (spec
7.1, 7.2; issue 31): an RFC 7807 problem with its `X-Request-Id`, not an empty 431. Against
`strongroom serve` with two workers (spawned processes, each installing the answer)."""

from __future__ import annotations

import asyncio
import json

from tests.processes import ServeProcess


async def raw_exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)  # the server closes the connection
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in
               (line.partition(":") for line in lines)}  # fmt: skip
    return int(status_line.split()[1]), headers, body


def _problem(status: int, headers: dict[str, str], body: bytes) -> dict:
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["status"] == status and problem["request_id"] == headers["x-request-id"]
    assert headers["x-request-id"].startswith("req_")
    return problem


async def test_headers_over_the_limit_get_a_431_problem_with_a_request_id(postgres_settings):
    async with ServeProcess(postgres_settings, workers=2) as server:
        huge_header = (b"GET /api/v2/me HTTP/1.1\r\nHost: x\r\nX-Padding: "
                       + b"a" * 100_000 + b"\r\n\r\n")  # fmt: skip
        boundary = b"b" * 100_000
        huge_boundary = (b"POST /api/v2/vault/projects/x/documents HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: multipart/form-data; boundary=" + boundary
                         + b"\r\nContent-Length: 0\r\n\r\n")  # fmt: skip
        for request in (huge_header, huge_boundary):
            status, headers, body = await raw_exchange(server.port, request)
            assert status == 431
            assert _problem(431, headers, body)["code"] == "headers_too_large"
        status, headers, body = await raw_exchange(server.port, b"NOT HTTP\r\n\r\n")
        assert status == 400 and _problem(400, headers, body)["code"] == "bad_request"
