"""Stalled request bodies against a running server (issue 28): open CONNECTIONS requests to
PATH at once, each declaring 500 bytes of body, sending 10 and stalling, with an API key
sent as `X-Request-Id` too; print how each was answered and how long all took, then whether
`/healthz` still answers. Run it against `strongroom dev` (the embedded default) and look at
its log for tracebacks and for the key.

    STRONGROOM_UPLOAD_IDLE_TIMEOUT_SECONDS=1 strongroom dev --port 18928   # elsewhere
    .venv/bin/python bench/stalled_bodies.py --port 18928 --key ak_test_... [--path /mcp]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter


async def stalled(port: int, path: str, key: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Length: 500\r\n"
        f"Authorization: Bearer {key}\r\nX-Request-Id: {key}\r\n\r\n"
    )
    writer.write(head.encode() + b'{"jsonrpc"')
    await writer.drain()
    answer = await reader.read(-1)
    writer.close()
    return answer.split(b"\r\n", 1)[0]


async def main(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    answers = await asyncio.gather(
        *(stalled(args.port, args.path, args.key) for _ in range(args.connections))
    )
    print(dict(Counter(answer.decode() for answer in answers)))
    print(f"{time.perf_counter() - started:.1f} s for {args.connections} stalled bodies")
    reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
    await writer.drain()
    print("healthz:", (await reader.read(-1)).split(b"\r\n", 1)[0].decode())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=18928)
    parser.add_argument("--key", required=True)
    parser.add_argument("--path", default="/mcp")
    parser.add_argument("--connections", type=int, default=200)
    asyncio.run(main(parser.parse_args()))
